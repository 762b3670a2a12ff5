"""``valueSchema=topic``: the columns a topic declared (docs/schemas.md), as the read's schema.

At ``load()`` the source answers Spark's ``schema()`` with the subscribed topics' declared
DDL (every subscribed topic must declare the same one), and the read decodes each value into
those columns as it decodes a ``.schema(...)`` given by the user. A stream records each
topic's schema version when it starts and fails, naming both versions, once one of them
has another: a query's columns are fixed for its life, as in Spark, so a changed schema means
a restart (from the same checkpoint), never columns shifted under a running query.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from spark_queue.connector.source.offsets import open_source_store
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.defaults import FORMAT_NAME
from spark_queue.errors import OptionError, SchemaChangedError

if TYPE_CHECKING:
    from spark_queue.store import Store, TopicSchema


def declared(options: SourceOptions) -> tuple[str, SourceOptions]:
    """The subscribed topics' DDL, and ``options`` carrying each topic's version."""
    store = open_source_store(options)
    try:
        with store.snapshot():
            schemas = _schemas(store, options)
    finally:
        store.close()
    ddls = {s.ddl for s in schemas.values()}
    if len(ddls) > 1:
        listed = "; ".join(f"{t}: {s.ddl}" for t, s in sorted(schemas.items()))
        raise OptionError(
            f"{FORMAT_NAME} option 'valueSchema'='topic' needs one schema for every subscribed "
            f"topic; they declare different ones ({listed}). Read them in separate queries, or "
            "give .schema(...) yourself.")
    versions = tuple(sorted((t, s.version) for t, s in schemas.items()))
    return ddls.pop(), dataclasses.replace(options, value_schema_versions=versions)


def _schemas(store: Store, options: SourceOptions) -> dict[str, TopicSchema]:
    topics = ([t.name for t in store.topics() if options.subscribes(t.name)]
              if options.topic_pattern is not None else list(options.topics))
    if not topics:
        raise OptionError(
            f"{FORMAT_NAME} option 'valueSchema'='topic': no topic matches {options.subscription}"
            " yet, so there is no schema to read; create the topic and declare its schema "
            "(`sqliteq topic schema set PATH TOPIC 'DDL'`) first.")
    found = {}
    for topic in topics:
        schema = store.topic(topic).schema()
        if schema is None:
            raise OptionError(
                f"{FORMAT_NAME} option 'valueSchema'='topic': topic {topic!r} declares no "
                f"schema; declare it (`sqliteq topic schema set {options.path} {topic} "
                "'DDL'`), or read with .schema(...) or valueSchema=kafka.")
        found[topic] = schema
    return found


def check_unchanged(store: Store, options: SourceOptions) -> None:
    """SchemaChangedError once a topic's schema is not the version the query started with
    (the planner calls it in each batch's snapshot)."""
    for topic, version in options.value_schema_versions:
        now = store.topic(topic).schema()
        if now is not None and now.version != version:
            raise SchemaChangedError(
                f"{FORMAT_NAME} source: topic {topic!r}'s schema changed from version "
                f"{version} to version {now.version} ({now.ddl}) while the query read it "
                "with valueSchema=topic; a query's columns are fixed while it runs, as in "
                f"Spark. Restart the query (the same checkpoint) to read version "
                f"{now.version}'s columns.")
