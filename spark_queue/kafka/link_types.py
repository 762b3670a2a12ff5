"""What the Kafka link answers with, as plain typed data, and the librdkafka errors it
names by meaning (:mod:`~spark_queue.kafka.link` turns the names into the client's codes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from spark_queue.kafka.records import KafkaRecord

# librdkafka's errors that end when the broker or the network is back: a mirror waits them
# out. The idempotent producer's own fatal errors are among them: a new producer resumes
# after checking what Kafka holds, as a rerun does.
TRANSIENT_ERRORS = (
    "_MSG_TIMED_OUT", "_TIMED_OUT", "_TIMED_OUT_QUEUE", "_TRANSPORT", "_ALL_BROKERS_DOWN",
    "_FATAL", "_GAPLESS_GUARANTEE", "_PURGE_QUEUE", "_PURGE_INFLIGHT", "_RESOLVE",
    "_WAIT_COORD", "_UNKNOWN_PARTITION", "_DESTROY", "OUT_OF_ORDER_SEQUENCE_NUMBER",
    "UNKNOWN_PRODUCER_ID", "NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE",
    "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION", "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "BROKER_NOT_AVAILABLE", "INVALID_PRODUCER_EPOCH",
)
# Answers meaning "no broker to talk to": a call refused with one of them is an outage.
NO_BROKER_ERRORS = ("_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN")
# Answers while a new topic's or a moved leader's metadata spreads: a watermark read waits.
SETTLING_ERRORS = ("_UNKNOWN_PARTITION", "UNKNOWN_TOPIC_OR_PART", "NOT_LEADER_FOR_PARTITION",
                   "LEADER_NOT_AVAILABLE")


class Watermarks(NamedTuple):
    """A partition's first offset and the offset its next record will get."""

    low: int
    high: int


@dataclass(frozen=True)
class KafkaTopic:
    """A topic as the broker describes it."""

    name: str
    partitions: list[int]
    config: dict[str, str]  # its settings as the broker applies them (its own and defaults)


@dataclass(frozen=True)
class DeliveryFailure:
    """Why Kafka did not take a produced record (its text redacted)."""

    text: str
    transient: bool  # it ends once the broker is back


@dataclass(frozen=True)
class LogEnds:
    """A partition's watermarks and its records in a window at each end, from one answer of
    the watermarks (:meth:`~spark_queue.kafka.link.KafkaLink.log_ends`)."""

    watermarks: Watermarks
    # (start, end, the records of [start, end)), the head's first; one window if they meet
    windows: list[tuple[int, int, list[KafkaRecord]]]
