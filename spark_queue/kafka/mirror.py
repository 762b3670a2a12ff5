"""``export --follow`` as a service: a mirror that waits out broker outages, and its lag.

A mirror repeats export passes (send what the store has past Kafka's end, wait for
every delivery, save the position) every ``poll_ms``. Any failure that ends when the
broker or the network is back (:class:`~spark_queue.errors.KafkaUnavailableError`: no
answer within the client's timeouts, a delivery that timed out, a lost connection)
does not end it: the clients are dropped with whatever they still held, and after a
backoff (1 s, doubling, at most 10 s) new ones read Kafka's end and check the records
both sides hold there, as a rerun does, so the copy goes on with no gap and no
duplicate. The first pass after an outage also verifies the copy (end offsets and the
first and last records). ``give_up_after_s`` ends an outage that lasts longer with its
error. Every other error (a foreign target, a refused event, a store topic deleted and
created anew, events the copy lacks pruned by force, its lease lost to another exporter)
ends the mirror at once. The whole mirror holds the copy's lease, during outages too: a
second exporter of its prefix is refused (:mod:`~spark_queue.store.streams.mirror_lease`).

State changes (mirroring, waiting for Kafka) go to ``on_status`` once each, with every
topic's lag as the store's hold rows record it (:func:`lags`); each failed attempt is an
INFO line of the ``spark_queue.kafka.mirror`` logger. A stop (``stop`` set, SIGTERM in
the CLI) ends the mirror after its pass, or at once while it waits for Kafka.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from spark_queue.errors import KafkaUnavailableError
from spark_queue.store import Store, hold_name

BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 10.0  # an outage's end is noticed within this long (plus one attempt)
MIRRORING = "mirroring"
WAITING = "waiting"  # for Kafka: an outage
log = logging.getLogger("spark_queue.kafka.mirror")


@dataclass(frozen=True)
class TopicLag:
    """One topic's copy as the store's hold records it."""

    topic: str
    kafka_topic: str
    position: int  # the store offset of the first event the copy lacks
    latest: int  # the store offset the next event will get
    lag: int  # events the copy lacks: latest - position
    last_delivery_ms: int  # when Kafka last confirmed the position (epoch ms)


@dataclass(frozen=True)
class MirrorStatus:
    """A change of the mirror's state, for a log line or a status JSON."""

    state: str  # MIRRORING or WAITING
    message: str
    at_ms: int
    topics: list[TopicLag]
    error: str | None = None  # what the broker did, while WAITING


def lags(store: Store, prefix: str, topics: Sequence[str] | None = None) -> list[TopicLag]:
    """The copy's position, the store's latest offset and the difference for each topic the
    hold ``sqliteq.mirror[.<prefix>]`` covers (only ``topics`` if given)."""
    hold = hold_name(prefix)
    wanted = None if topics is None else set(topics)
    return [
        TopicLag(c.topic, prefix + c.topic, c.next_offset, c.latest, c.lag, c.updated_ms)
        for c in store.consumers()
        if c.consumer == hold and (wanted is None or c.topic in wanted)
    ]


class Pass(Protocol):
    """What the mirror drives: :class:`~spark_queue.kafka.export.Exporter`."""

    def send(self, topic: str) -> int: ...

    def flush(self) -> None: ...

    def verify(self, topic: str) -> object: ...

    def close(self) -> None: ...


P = TypeVar("P", bound=Pass)


def _wait(stop: threading.Event, seconds: float) -> bool:
    """Wait until ``stop`` is set or ``seconds`` pass; Ctrl-C sets it. True if stopped."""
    try:
        return stop.wait(seconds)
    except KeyboardInterrupt:
        stop.set()
        return True


class Mirror:
    """The loop of :func:`follow`, with its outage state."""

    def __init__(
        self,
        store: Store,
        prefix: str,
        topics: Sequence[str] | None,
        on_status: Callable[[MirrorStatus], None] | None,
    ) -> None:
        self.store = store
        self.prefix = prefix
        self.topics = topics
        self.on_status = on_status
        self.outage_since: float | None = None
        self.attempts = 0
        self.reported: str | None = None

    def report(self, state: str, message: str, error: str | None = None) -> None:
        self.reported = state
        if self.on_status is not None:
            status = MirrorStatus(state, message, int(time.time() * 1000),
                                  lags(self.store, self.prefix, self.topics), error)
            self.on_status(status)

    def failed(self, exc: KafkaUnavailableError, give_up_after_s: float | None) -> float:
        """Record a failed attempt; the backoff before the next one."""
        now = time.monotonic()
        if self.outage_since is None:
            self.outage_since = now
        self.attempts += 1
        if self.reported != WAITING:
            limit = "" if give_up_after_s is None else f", for at most {give_up_after_s:g} s"
            self.report(WAITING, f"waiting for Kafka (retrying with backoff{limit}; Ctrl-C or "
                        f"SIGTERM stops): {exc}", str(exc))
        if give_up_after_s is not None and now - self.outage_since >= give_up_after_s:
            raise KafkaUnavailableError(
                f"gave up after Kafka was unavailable for {now - self.outage_since:.0f} s "
                f"(--give-up-after {give_up_after_s:g}s): {exc}"
            ) from exc
        delay: float = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** min(self.attempts - 1, 10))
        log.info("attempt %d failed (%s); next in %g s", self.attempts, exc, delay)
        return delay

    def recovered(self) -> None:
        if self.outage_since is None:
            if self.reported is None:
                self.report(MIRRORING, "following new events until interrupted (Ctrl-C)")
            return
        lasted = time.monotonic() - self.outage_since
        self.report(MIRRORING, f"Kafka answers again after {lasted:.0f} s ({self.attempts} "
                    "failed attempts): the copy is verified and mirroring goes on")
        self.outage_since, self.attempts = None, 0


def follow(
    mirror: Mirror,
    open_pass: Callable[[], P],
    names_of: Callable[[], list[str]],
    *,
    stop: threading.Event,
    poll_ms: int,
    give_up_after_s: float | None = None,
) -> tuple[P, list[str]]:
    """Run passes until ``stop``; return the live pass and the topics of its last round
    for the caller to verify and close (see the module doc)."""
    current: P | None = None
    try:
        while True:
            try:
                if current is None:
                    current = open_pass()
                names = names_of()
                for name in names:
                    current.send(name)
                current.flush()
                if mirror.outage_since is not None:
                    for name in names:
                        current.verify(name)
            except KafkaUnavailableError as exc:
                if current is not None:
                    current.close()  # before the backoff: its requests end with its sockets
                    current = None
                delay = mirror.failed(exc, give_up_after_s)
                if _wait(stop, delay):
                    raise KafkaUnavailableError(
                        f"stopped while waiting for Kafka: {exc} The copy holds what the "
                        "store's hold names (sqliteq consumers); rerun the export to continue."
                    ) from exc
                continue
            mirror.recovered()
            if stop.is_set():
                return current, names
            _wait(stop, poll_ms / 1000)
    except BaseException:
        if current is not None:
            current.close()
        raise
