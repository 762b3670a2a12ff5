"""Topic and queue names as the CLI checks them: a typo creates nothing and gets the closest
names (``thumbnail`` beside ``thumbnails``), and the hint is a command, not a Python call."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NoReturn

from spark_queue.errors import UnknownQueueError, UnknownTopicError

if TYPE_CHECKING:
    from spark_queue.store import Store


def closest(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``known`` that look like ``name``, the closest first."""
    import difflib  # only on an unknown name: not for every command's start

    return difflib.get_close_matches(name, list(known), n=n, cutoff=0.6)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'a' or 'b'?)``, or nothing when no name is close."""
    near = closest(name, known)
    if not near:
        return ""
    return f" (did you mean {' or '.join(map(repr, near))}?)"


def require_known_topic(store: Store, topic: str, *, create_hint: str | None = None) -> None:
    """Raise :class:`UnknownTopicError` unless ``topic`` exists: the closest topic names,
    ``sqliteq topics PATH`` to list them, and ``create_hint`` (how to create it), if given."""
    if not store.topic(topic).exists():
        _missing(store, "topic", topic, [t.name for t in store.topics()], "topics",
                 UnknownTopicError, create_hint)


def require_known_queue(store: Store, queue: str, *, create_hint: str | None = None) -> None:
    """Raise :class:`UnknownQueueError` unless ``queue`` exists, as :func:`require_known_topic`."""
    if not store.queue(queue).exists():
        _missing(store, "queue", queue, [q.name for q in store.queues()], "queues",
                 UnknownQueueError, create_hint)


def _missing(store: Store, kind: str, name: str, known: list[str], listing: str,
             error: type[Exception], create_hint: str | None) -> NoReturn:
    create = f", or {create_hint}" if create_hint else ""
    raise error(
        f"{kind} {name!r} does not exist in {store.path!r}{did_you_mean(name, known)}; "
        f"list {listing} with `sqliteq {listing} {store.path}`{create}."
    )
