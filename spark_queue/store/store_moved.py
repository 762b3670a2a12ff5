"""The Store methods that moved to ``store.topic(name)`` and ``store.housekeeping``: one
table, and the one mechanism that keeps each old name working for one release as a thin
delegate warning ``DeprecationWarning`` (CHANGELOG, "#53"). The delegates are not part of
the facade: ``tests/store/test_facade.py`` counts the Store's public methods without them,
and the test suite turns such a warning raised from inside ``spark_queue`` into an error
(pyproject.toml, ``filterwarnings``), so the package itself never calls one.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

_Class = TypeVar("_Class", bound=type)


class Moved(NamedTuple):
    """``Store.<old>`` is now ``<new>``; ``call(store, *args, **kwargs)`` does it."""

    old: str
    new: str
    call: Callable[..., Any]


def _on_topic(method: str) -> Callable[..., Any]:
    """``store.<old>(topic, *args)`` as ``store.topic(topic).<method>(*args)``."""

    def call(store: Any, *args: Any, **kwargs: Any) -> Any:
        if "topic" in kwargs:
            name = kwargs.pop("topic")
        elif args:
            name, args = args[0], args[1:]
        else:
            raise TypeError(f"Store.{method}() missing 1 required argument: 'topic'")
        return getattr(store.topic(name), method)(*args, **kwargs)

    return call


def _on_housekeeping(method: str) -> Callable[..., Any]:
    def call(store: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(store.housekeeping, method)(*args, **kwargs)

    return call


def _prune(store: Any, topic: str | None = None, **kwargs: Any) -> Any:
    """One topic's retention on its handle; every topic's (``topic=None``) on housekeeping."""
    if topic is None:
        return store.housekeeping.prune(**kwargs)
    return store.topic(topic).prune(**kwargs)


def _topic_row(old: str, method: str) -> Moved:
    return Moved(old, f"store.topic(name).{method}()", _on_topic(method))


def _housekeeping_row(old: str, method: str) -> Moved:
    return Moved(old, f"store.housekeeping.{method}()", _on_housekeeping(method))


MOVED = (
    _topic_row("create_topic", "create"),
    _topic_row("start_topic_at", "start_at"),
    _topic_row("bounds", "bounds"),
    _topic_row("earliest_offset", "earliest_offset"),
    _topic_row("latest_offset", "latest_offset"),
    _topic_row("offset_for_timestamp", "offset_for_timestamp"),
    _topic_row("set_topic_limits", "set_limits"),
    _topic_row("configure_topic", "configure"),
    _topic_row("delete_topic", "delete"),
    _topic_row("has_topic", "exists"),
    _topic_row("mirror_shift", "mirror_shift"),
    _topic_row("fix_mirror_shift", "fix_mirror_shift"),
    _topic_row("set_retention", "set_retention"),
    Moved("prune", "store.topic(name).prune() (every topic: store.housekeeping.prune())",
          _prune),
    _housekeeping_row("housekeeping_status", "status"),
    _housekeeping_row("retention_held_back", "held_back"),
    _housekeeping_row("set_housekeeping_interval", "set_interval"),
    _housekeeping_row("run_housekeeping", "run"),
    _housekeeping_row("sweep_expired", "sweep_expired"),
)
#: The old names, which the facade's count leaves out.
MOVED_NAMES = frozenset(moved.old for moved in MOVED)


def with_moved_delegates(cls: _Class) -> _Class:
    """Give ``cls`` a deprecated delegate for each row of :data:`MOVED`."""
    for moved in MOVED:
        setattr(cls, moved.old, _delegate(cls.__name__, moved))
    return cls


def _delegate(owner: str, moved: Moved) -> Callable[..., Any]:
    def delegate(self: Any, *args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"{owner}.{moved.old}() is deprecated and goes in the next release; "
                      f"use {moved.new}", DeprecationWarning, stacklevel=2)
        return moved.call(self, *args, **kwargs)

    delegate.__name__ = moved.old
    delegate.__qualname__ = f"{owner}.{moved.old}"
    delegate.__doc__ = f"Deprecated: use ``{moved.new}``."
    return delegate
