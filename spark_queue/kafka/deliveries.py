"""What Kafka answered for the records a link produced, each topic's answers checked in order.

The idempotent producer answers every record once, in order per partition, so a copy written
at known offsets can be vouched for by counting: each answer must name the offset its record
was meant for. :class:`TopicDeliveries` keeps, per topic, where the next record goes, the
offset the next answer must name, and the first answer that broke the order (Kafka did not
take the record, or took it elsewhere: another producer writes the topic). The producer's
delivery reports write it (:meth:`~spark_queue.kafka.link.KafkaLink.produce`); whoever
produced reads a :class:`Delivered` per call and per flush, not an answer per record. A record
the client refuses before sending it is :func:`refused_record`.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_queue.errors import KafkaError
from spark_queue.kafka.link_types import DeliveryFailure
from spark_queue.kafka.records import Content


@dataclass(frozen=True)
class Delivered:
    """One topic's records (partition 0) as Kafka answered them so far."""

    sent: int  # the offset meant for the next record handed to the producer
    upto: int  # the offset the next answer must name: the records before it are in place
    failure: DeliveryFailure | None = None  # Kafka did not take the record meant for ``upto``
    landed_at: int | None = None  # or it took that record at this other offset

    @property
    def stopped(self) -> bool:
        """An answer broke the order: nothing after ``upto`` is vouched for."""
        return self.failure is not None or self.landed_at is not None


class TopicDeliveries:
    """One topic's records on their way; the producer's delivery reports write it."""

    __slots__ = ("sent", "upto", "failure", "landed_at")

    def __init__(self, at: int) -> None:
        self.sent = at
        self.upto = at
        self.failure: DeliveryFailure | None = None
        self.landed_at: int | None = None

    def answered(self, offset: int, failure: DeliveryFailure | None) -> None:
        """Kafka's answer for the oldest unanswered record: at ``offset``, or ``failure``."""
        if self.failure is not None or self.landed_at is not None:
            return  # the first break ends what the answers vouch for
        if failure is not None:
            self.failure = failure
        elif offset != self.upto:
            self.landed_at = offset
        else:
            self.upto += 1

    def now(self) -> Delivered:
        return Delivered(self.sent, self.upto, self.failure, self.landed_at)


def refused_record(what: str, content: Content, reason: str) -> KafkaError:
    """The error for ``content``, which the producer's client refused before sending it (too
    large, ...) for ``reason`` (redacted); ``what`` names the record."""
    size = len(content.value or b"") + len(content.key or b"")
    return KafkaError(
        f"Kafka's client refused {what} ({size:,} bytes of key and value): {reason}. Events "
        "before it are in Kafka; for large events raise the topic's max.message.bytes and pass "
        "--kafka-config message.max.bytes=N, then rerun."
    )
