"""The worker's main thread: signals, the stop flag, and the wait for the slot threads to
end or the grace period after a stop to run out.

Signal handlers and the other threads only set flags and write a byte to a socket pair;
:meth:`Supervisor.supervise` (the main thread) wakes on it and acts (huey's consumer
keeps the same split).
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from spark_queue.times import format_duration_ms
from spark_queue.worker.task import one_line

log = logging.getLogger("spark_queue.worker")


class Supervisor:
    """The stop flag, the slots that ended, the first crash, and the wake-up channel."""

    def __init__(self) -> None:
        #: Set to stop claiming: by stop(), a signal (through supervise()) or a crash.
        self.stopping = threading.Event()
        #: The first thread that died and why, ``(where, exception)``.
        self.crash: tuple[str, BaseException] | None = None
        self._signal: int | None = None
        self._signals_seen = 0
        self._lock = threading.Lock()
        self._slots_done = 0
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)

    def stop(self) -> None:
        """Stop claiming (thread-safe); supervise() then gives the slots the grace period."""
        self.stopping.set()
        self._wake()

    def slot_ended(self) -> None:
        """A slot thread is about to end (called last in it, whatever happened)."""
        with self._lock:
            self._slots_done += 1
        self._wake()

    def record_crash(self, where: str, exc: BaseException) -> None:
        """A thread died: keep the first crash and say it; the worker then stops as for a
        signal (Worker.stop), gives back what it holds and raises."""
        with self._lock:
            if self.crash is None:
                self.crash = (where, exc)
        log.error("%s crashed: %s; stopping the worker", where, one_line(exc))
        log.debug("%s traceback", where, exc_info=exc)

    def supervise(self, slots: int, grace_ms: int) -> bool:
        """Wait for ``slots`` slot threads to end, or ``grace_ms`` after a stop (a second
        signal ends it at once); True if they all ended."""
        selector = selectors.DefaultSelector()
        selector.register(self._wake_r, selectors.EVENT_READ)
        deadline: float | None = None
        try:
            while True:
                if self._signal is not None and not self.stopping.is_set():
                    log.info("signal %d: stopping, grace %s", self._signal,
                             format_duration_ms(grace_ms))
                    self.stopping.set()
                if self.stopping.is_set() and deadline is None:
                    deadline = time.monotonic() + grace_ms / 1000
                if self._signals_seen > 1:
                    deadline = time.monotonic()
                # A counter, not is_alive(): a slot wakes us just before its thread ends.
                with self._lock:
                    if self._slots_done == slots:
                        return True
                timeout = None if deadline is None else deadline - time.monotonic()
                if timeout is not None and timeout <= 0:
                    log.warning("grace period of %s ended with jobs running",
                                format_duration_ms(grace_ms))
                    return False
                selector.select(timeout)
                with contextlib.suppress(BlockingIOError):
                    while self._wake_r.recv(4096):
                        pass
        finally:
            selector.close()

    @contextlib.contextmanager
    def signals_installed(self) -> Iterator[None]:
        """SIGTERM and SIGINT set a flag while inside (on the main thread only); the
        previous handlers come back on leaving."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
        old_fd = signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False)

        def on_signal(signum: int, frame: Any) -> None:
            # Only set flags: the supervisor loop (woken through the wakeup fd) acts.
            self._signal = signum
            self._signals_seen += 1

        try:
            for sig in previous:
                signal.signal(sig, on_signal)
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            signal.set_wakeup_fd(old_fd)

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            self._wake_w.send(b"\0")
