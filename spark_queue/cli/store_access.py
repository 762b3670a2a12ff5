"""How a command reaches its store: the ``path`` argument, ``--create``, and opening the file
for a read (it must exist: a typo names the files beside it) or a write (created only when
asked). Shared by every command module.

Like the command modules, this one imports the store only when a command runs."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from spark_queue.cli.name_hints import closest
from spark_queue.errors import StoreError, StoreNotFoundError

if TYPE_CHECKING:
    from spark_queue.store import Store


def common(parser: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
    parser.add_argument("path", help="the store file")
    if json_flag:
        parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def open_store(path: str, **kwargs: Any) -> Store:
    from spark_queue.store import Store

    _require_file(path)
    return Store(path, create=False, **kwargs)


def say_replication_state(path: str, command: str) -> None:
    """On stderr, for a replicated store whose replicator is not running: readers see
    each topic only up to the replica's mark, and a write stays unseen until a replicator
    runs (and why the last one stopped, if it gave up). Nothing otherwise."""
    from spark_queue.store import replication_warnings

    for warning in replication_warnings(path):
        print(f"sqliteq {command}: note: {warning}", file=sys.stderr, flush=True)


def _require_file(path: str) -> None:
    """A missing PATH as the CLI says it: the store files beside it that look like it, and
    ``sqliteq init`` (the store's own message gives the Python fix, ``create=True``)."""
    if os.path.exists(path) or os.path.islink(path):
        return
    try:
        beside = [name for name in os.listdir(os.path.dirname(path) or ".")
                  if name.endswith((".sqlite", ".sqlite3", ".db"))]
    except OSError:
        beside = []
    near = [os.path.join(os.path.dirname(path), name)
            for name in closest(os.path.basename(path), beside)]
    hint = f" (did you mean {' or '.join(map(repr, near))}?)" if near else ""
    raise StoreNotFoundError(
        f"store file {path!r} does not exist{hint}; create it with `sqliteq init {path}`."
    )


def create_flag(parser: argparse.ArgumentParser, what: str = "") -> None:
    """``--create``: make a missing store file (and ``what``, a topic or queue, if given)."""
    also = f" and the {what}" if what else ""
    parser.add_argument(
        "--create", action="store_true",
        help=f"if missing, create the store file{also} (default: refuse, so a typo creates "
        "nothing)",
    )


def open_for_write(path: str, command: str, *, create: bool, **kwargs: Any) -> Store:
    """The store at ``path`` for a write: it must exist, unless ``create`` (``--create``, or
    ``init``) says so.

    A typo in PATH must not leave a new store behind (issue 12): creating one is
    asked for, its directory must already exist, and it is said on stderr.
    """
    from spark_queue.store import Store

    if os.path.exists(path) or os.path.islink(path):
        store = Store(path, create=False, **kwargs)
        try:
            say_replication_state(path, command)  # what it writes, readers may not see yet
        except BaseException:
            store.close()
            raise
        return store
    if not create:
        raise StoreNotFoundError(
            f"store file {path!r} does not exist; create it with `sqliteq init {path}`, "
            f"or add --create to `sqliteq {command}`."
        )
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise StoreError(
            f"cannot create store file {path!r}: its directory {parent!r} does not exist; "
            "create the directory first (sqliteq never makes directories)."
        )
    store = Store(path, create=True, **kwargs)
    print(f"sqliteq {command}: created store file {path!r}", file=sys.stderr)
    return store
