"""A daemon thread with a store connection of its own, doing one turn every few seconds
until stopped: what the housekeeper (:class:`spark_queue.store.floor.housekeeping.Housekeeper`)
and a Kafka exporter's lease renewal (:class:`spark_queue.store.streams.mirror_lease.
LeaseKeeper`) both are.

The connection is the thread's own (apsw connections are not shared across threads that
may block in a transaction), opened at the first turn, so a store that cannot be opened yet
is tried again at the next one, and closed when the thread ends. What a turn raises is the
subclass's to judge (:meth:`Daemon.failed`): a daemon's error must not reach its owner.
"""

from __future__ import annotations

import threading
from typing import Self

from spark_queue import defaults
from spark_queue.store.file.connection import StoreConnection
from spark_queue.store.file.opening import open_store_file


class Daemon:
    """Calls :meth:`turn` every ``every_s`` seconds from a daemon thread named ``name``
    until :meth:`stop`, or until :meth:`failed` answers True."""

    def __init__(self, path: str, *, every_s: float, name: str,
                 busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> Self:
        self._thread.start()
        return self

    @property
    def alive(self) -> bool:
        """Whether its thread runs (it ends on stop(), or when :meth:`failed` says so)."""
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop, waiting for the current turn (unless called from the turn itself)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def open(self) -> StoreConnection:
        """The thread's connection, opened at its first turn (the store must exist)."""
        return open_store_file(self.path, create=False, busy_timeout_ms=self.busy_timeout_ms)

    def turn(self, file: StoreConnection) -> None:
        raise NotImplementedError

    def failed(self, exc: Exception) -> bool:
        """Called in the ``except`` block of a turn that raised ``exc``: log it, and answer
        whether the thread ends. By default it does, with the error's traceback."""
        raise exc

    def _loop(self) -> None:
        file: StoreConnection | None = None
        try:
            while not self._stop.wait(self._every_s):
                try:
                    if file is None:
                        file = self.open()
                    self.turn(file)
                except Exception as exc:  # noqa: BLE001 - failed() judges it
                    if self.failed(exc):
                        return
        finally:
            if file is not None:
                file.close()
