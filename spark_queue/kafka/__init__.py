"""Kafka and back: copy topics, positions and captures between a store and Kafka.

The road for users who outgrow one machine (docs/outgrowing.md)::

    from spark_queue.kafka import export_topics, kafka_starting_offsets

    export_topics("app.sqlite", "kafka-1:9092")                  # every topic, verified
    start = kafka_starting_offsets("checkpoints/clicks", "app.sqlite")
    start.starting_offsets                                       # '{"clicks":{"0":300}}'

Each function that talks to Kafka takes a bootstrap string or :class:`KafkaSettings`
(timeout, client settings; :func:`~spark_queue.kafka.client_config.client_settings` reads
them from a properties file and the environment). They need the Kafka client, the ``kafka`` extra
(confluent-kafka); importing this package does not, and a missing client is a
:class:`~spark_queue.errors.KafkaClientMissingError` naming the extra.
"""

from spark_queue.kafka.checkpoints import KafkaStart, kafka_starting_offsets
from spark_queue.kafka.client_config import KafkaSettings
from spark_queue.kafka.export import ExportResult, TopicOptions, export_topics
from spark_queue.kafka.importing import ImportResult, import_topic
from spark_queue.kafka.mirror import MirrorStatus, TopicLag
from spark_queue.kafka.positions import GroupOffset, commit_consumer_offsets

__all__ = [
    "ExportResult",
    "GroupOffset",
    "ImportResult",
    "KafkaSettings",
    "KafkaStart",
    "MirrorStatus",
    "TopicLag",
    "TopicOptions",
    "commit_consumer_offsets",
    "export_topics",
    "import_topic",
    "kafka_starting_offsets",
]
