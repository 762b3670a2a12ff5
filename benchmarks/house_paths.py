"""One path of the connector, run in this process through Spark's Python Data Source
interface, for ``python -m benchmarks house`` to count its instructions under callgrind.

A standalone file: ``house`` runs it with PYTHONPATH at the tree under test, so it imports
that tree's spark_queue and nothing of this checkout, and it calls only what Spark calls
(``schema``, ``streamReader``, ``latestOffset``, ``partitions``, ``read``, ``commit``,
``writer``, ``write``), which every tree since the connector began answers alike. No
JVM: pyspark's Python classes only, so the count is our code's, not Spark's.
"""

from __future__ import annotations

import argparse
import sys

PHASES = ("setup", "stream", "batch", "sink")


def _value(i: int) -> str:
    return f"{i:010d}-" + "x" * 89  # 100 bytes, as the source and sink benchmarks'


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="house_paths")
    parser.add_argument("phase", choices=PHASES)
    parser.add_argument("--store", required=True)
    parser.add_argument("--sink-store", required=True)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--batch-rows", type=int, default=1_000)
    parser.add_argument("--base", action="store_true", help="the warm-up only")
    args = parser.parse_args(argv)
    if args.phase == "setup":
        from spark_queue.store import Store

        with Store(args.store) as store:
            store.publish_many("warm", (_value(i) for i in range(args.events // 10)))
            store.publish_many("bench", (_value(i) for i in range(args.events)))
        with Store(args.sink_store) as store:
            store.publish_many("warm", ["first"])
            store.publish_many("bench", ["first"])
        return 0

    import pyarrow as pa
    from pyspark.sql.types import StringType, StructField, StructType

    from spark_queue.connector.datasource import SqliteQueueDataSource

    def arrow_batches(events: int) -> list[pa.RecordBatch]:
        values = pa.array([_value(i) for i in range(events)], pa.string())
        return [pa.RecordBatch.from_arrays([values.slice(i, args.batch_rows)], ["value"])
                for i in range(0, events, args.batch_rows)]

    # Built before either run (the base run too), so neither count holds the building.
    sink_rows = {"warm": arrow_batches(args.events // 10), "bench": arrow_batches(args.events)}

    def path(topic: str, events: int) -> int:
        """Run the phase's path over ``topic``; return the rows it read or wrote."""
        source = SqliteQueueDataSource({"path": args.store, "topic": topic,
                                        "maxRowsPerTrigger": str(args.batch_rows)})
        schema = source.schema()
        assert isinstance(schema, StructType), schema
        done = 0
        if args.phase == "stream":
            reader = source.streamReader(schema)
            start = reader.initialOffset()
            limit = reader.getDefaultReadLimit()
            while True:
                end = reader.latestOffset(start, limit)
                if end == start:
                    return done
                for partition in reader.partitions(start, end):
                    done += sum(len(batch) for batch in reader.read(partition))
                reader.commit(end)
                start = end
        if args.phase == "batch":
            whole = SqliteQueueDataSource({"path": args.store, "topic": topic}).reader(schema)
            for partition in whole.partitions():
                done += sum(len(batch) for batch in whole.read(partition))
            return done
        batches = sink_rows[topic]
        sink = SqliteQueueDataSource({"path": args.sink_store, "topic": topic})
        writer = sink.writer(StructType([StructField("value", StringType())]), False)
        writer.commit([writer.write(iter(batches[i:i + 4])) for i in range(0, len(batches), 4)])
        return events

    # The warm-up is the base run: imports, the first store opening, the first plans. A
    # phase's count less the base's is the path's steady cost over --events.
    warm = args.events // 10
    if path("warm", warm) != warm:
        print(f"{args.phase}: the warm-up read the wrong count", file=sys.stderr)
        return 1
    if args.base:
        return 0
    done = path("bench", args.events)
    if done != args.events:
        print(f"{args.phase}: {done} rows, expected {args.events}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
