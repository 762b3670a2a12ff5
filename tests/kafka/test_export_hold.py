"""The export's position is a hold on the store's retention: prune never deletes an event the
Kafka copy has not got (unless forced), ``sqliteq consumers`` shows it, and one command
removes it."""

from __future__ import annotations

import json

from spark_queue.cli import main
from spark_queue.kafka.export import export_topics
from spark_queue.kafka.records import from_store_row
from spark_queue.metrics import render
from spark_queue.store import Record
from tests.kafka.test_export import kafka_contents


def test_retention_never_deletes_what_the_copy_lacks_so_kafka_gets_every_event(
        kafka, prefix, store, store_path, capsys):
    events = [Record({"i": i}, key=f"k{i % 5}", timestamp_ms=1_700_000_000_000 + i)
              for i in range(2000)]
    store.publish_many("t", events[:1000])
    ever = [from_store_row(row) for row in store.read_arrow("t").to_pylist()]
    export_topics(store_path, kafka, ["t"], prefix=prefix)
    store.publish_many("t", events[1000:])
    ever += [from_store_row(row) for row in store.read_arrow("t", 1000).to_pylist()]

    [pruned] = store.topic("t").prune(retention_rows=100)  # not forced

    hold = f"sqliteq.mirror.{prefix}"
    assert (pruned.earliest_after, pruned.held_by) == (1000, hold)
    [result] = export_topics(store_path, kafka, ["t"], prefix=prefix)
    assert (result.kafka_start, result.kafka_end, result.written) == (0, 2000, 1000)
    theirs = kafka_contents(kafka, prefix + "t")
    assert [offset for offset, _ in theirs] == list(range(2000))
    assert [content for _, content in theirs] == ever  # every event the store ever held

    # Shown as a consumer (lag 0: the copy has everything), and as the mirror's gauges.
    assert main(["consumers", store_path, "--json"]) == 0
    [row] = [r for r in json.loads(capsys.readouterr().out) if r["consumer"] == hold]
    assert (row["topic"], row["next_offset"], row["lag"]) == ("t", 2000, 0)
    text = render(store)
    assert f'sqliteq_mirror_lag{{mirror="{hold}",topic="t",kafka_topic="{prefix}t"}} 0' in text
    assert (f'sqliteq_mirror_offset{{mirror="{hold}",topic="t",kafka_topic="{prefix}t"}} 2000'
            in text)

    # Removing the hold is one command; retention then applies.
    store.publish_many("t", ["more"] * 10)
    assert main(["consumer", "delete", store_path, hold]) == 0, capsys.readouterr()
    assert store.topic("t").prune(retention_rows=100)[0].earliest_after == 1910
