"""``python -m benchmarks schema-chaos``: a topic's schema under a foreign producer's bad
events and kill -9 of the query reading it (issue 61's acceptance run).

Topic ``readings`` declares ``id BIGINT NOT NULL, device STRING NOT NULL, celsius DOUBLE``
with ``on_invalid="quarantine"``. Two processes:

- a producer in another SQLite library (Python's stdlib ``sqlite3``, no apsw in the
  process) inserting through the ``sq_publish`` view at ``--rate`` events/s, 100 per
  transaction; a share ``--malformed`` of them (seeded) is bad, the three kinds in turn: a
  wrong type (``"celsius": "hot"``), a missing required field (no ``device``), a value that
  is not JSON (sent as text). Every event's ``id`` is its sequence number;
- a Spark driver with one query, the topic's declared columns (``valueSchema=topic``) into a
  Delta table, restarted from its checkpoint each time it is SIGKILLed, every
  ``--kill-min-s``..``--kill-max-s`` seconds (uniformly drawn, seeded).

At the end the producer stops and reports what it sent; the driver catches up and compares
the Delta table's ids with the valid ids. The run holds when the query never stopped by
itself (only the kills ended it), the quarantine holds exactly the malformed events (as
many, and the topic exactly the others), and Delta holds every valid id exactly once.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time

from benchmarks import results
from benchmarks.children import Children, in_work_dir
from spark_queue.store import Store

SCHEMA = "id BIGINT NOT NULL, device STRING NOT NULL, celsius DOUBLE"
BAD_KINDS = ("wrong type", "missing field", "not JSON")

# Stdlib sqlite3 only (another SQLite library than apsw): the protocol of docs/file-format.md.
PRODUCER = """
import json, os, random, sqlite3, sys, time
path, rate, malformed, seed, out = (sys.argv[1], int(sys.argv[2]), float(sys.argv[3]),
                                    int(sys.argv[4]), sys.argv[5])
kinds = json.loads(sys.argv[6])  # BAD_KINDS
conn = sqlite3.connect(path, isolation_level=None, timeout=60)
for pragma in ("busy_timeout = 60000", "foreign_keys = ON", "synchronous = NORMAL"):
    conn.execute("PRAGMA " + pragma)
draw = random.Random(seed)
bad = {kind: [] for kind in kinds}

def row(i):
    if draw.random() >= malformed:
        return json.dumps({"id": i, "device": f"d{i % 50}", "celsius": 20 + i % 15}), 2
    kind = kinds[sum(map(len, bad.values())) % 3]
    bad[kind].append(i)
    if kind == "wrong type":
        return json.dumps({"id": i, "device": f"d{i % 50}", "celsius": "hot"}), 2
    if kind == "missing field":
        return json.dumps({"id": i, "celsius": 21.5}), 2
    # Cut short, and sent as text: typed JSON, sq_publish would refuse it before the schema.
    return '{"id": %d, "device": "d' % i, None

started, sent = time.monotonic(), 0
while not os.path.exists(out + ".stop"):
    rows = [("readings", *row(i)) for i in range(sent, sent + 100)]
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO sq_publish (topic, value, value_type) VALUES (?, ?, ?)", rows)
    conn.execute("COMMIT")
    sent += 100
    ahead = sent / rate - (time.monotonic() - started)
    if ahead > 0:
        time.sleep(ahead)
with open(out + ".tmp", "w") as f:
    json.dump({"sent": sent, "malformed": bad}, f)
os.replace(out + ".tmp", out)
"""

DRIVER = """
import json, os, sys, time
from spark_queue.spark.session import get_or_create
path, work = sys.argv[1], sys.argv[2]
spark = get_or_create("spark_queue schema chaos", delta=True)
spark.sparkContext.setLogLevel("ERROR")
table = os.path.join(work, "readings")
readings = (spark.readStream.format("sqliteq").option("path", path).option("topic", "readings")
            .option("valueSchema", "topic").option("maxRowsPerTrigger", 20000).load())
query = (readings.writeStream.format("delta")
         .option("checkpointLocation", os.path.join(work, "checkpoint"))
         .trigger(processingTime="1 second").start(table))
while not os.path.exists(os.path.join(work, "stop")):
    if query.exception() is not None:
        raise query.exception()
    time.sleep(0.5)
query.processAllAvailable()
with open(os.path.join(work, "sent.json")) as f:
    sent = json.load(f)
ids = spark.read.format("delta").load(table).select("id")
bad = [i for found in sent["malformed"].values() for i in found]
wanted = spark.range(sent["sent"]).join(
    spark.createDataFrame([(i,) for i in bad] or [(-1,)], "id BIGINT"), "id", "left_anti")
summary = {"rows": ids.count(), "distinct": ids.distinct().count(), "wanted": wanted.count(),
           "missing": wanted.join(ids, "id", "left_anti").count(),
           "extra": ids.join(wanted, "id", "left_anti").count()}
with open(os.path.join(work, "summary.json"), "w") as f:
    json.dump(summary, f)
query.stop()
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=int, default=2000, help="events per second")
    parser.add_argument("--malformed", type=float, default=0.001,
                        help="the share of the producer's events that are bad")
    parser.add_argument("--kill-min-s", type=float, default=20.0,
                        help="SIGKILL and restart the query every KILL_MIN_S..KILL_MAX_S "
                             "seconds (uniformly drawn)")
    parser.add_argument("--kill-max-s", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=61, help="of the bad events and the kills")
    parser.add_argument("--sample-s", type=float, default=30.0)


def run(args: argparse.Namespace) -> int:
    return in_work_dir("sq-schema-chaos-", lambda work: _run(args, work))


def _run(args: argparse.Namespace, work: str) -> int:
    path = os.path.join(work, "edge.sqlite")
    sent_path = os.path.join(work, "sent.json")
    with Store(path) as store:
        store.topic("readings").set_schema(SCHEMA, on_invalid="quarantine")
    children = Children(work, {
        "producer": [sys.executable, "-c", PRODUCER, path, str(args.rate), str(args.malformed),
                     str(args.seed), sent_path, json.dumps(BAD_KINDS)],
        "driver": [sys.executable, "-c", DRIVER, path, work],
    })
    draw = random.Random(args.seed)
    print(f"{args.rate:,} events/s, {args.malformed:.2%} malformed, the query SIGKILLed every "
          f"{args.kill_min_s:g}-{args.kill_max_s:g} s; load {os.getloadavg()[0]:.1f}",
          flush=True)
    print(f"{'t_s':>6} {'topic':>10} {'quarantined':>11} {'kills':>6} {'stops':>6}", flush=True)
    kills = stops = 0
    started = time.monotonic()
    next_kill = started + draw.uniform(args.kill_min_s, args.kill_max_s)
    next_sample = started + args.sample_s
    try:
        with Store(path) as store:
            topic = store.topic("readings")
            while time.monotonic() - started < args.minutes * 60:
                time.sleep(0.2)
                exited = children.exited()
                if "producer" in exited:
                    raise RuntimeError(f"the producer exited ({exited['producer']}); see "
                                       "producer.log")
                if "driver" in exited:  # the query stopped by itself: what must never happen
                    stops += 1
                    children.restart("driver")
                if time.monotonic() >= next_kill:
                    children.kill("driver")
                    kills += 1
                    next_kill += draw.uniform(args.kill_min_s, args.kill_max_s)
                if time.monotonic() >= next_sample:
                    next_sample += args.sample_s
                    print(f"{round(time.monotonic() - started):>6} {topic.latest_offset():>10,} "
                          f"{len(topic.quarantine()):>11,} {kills:>6} {stops:>6}", flush=True)
            open(sent_path + ".stop", "w").close()
            children.wait("producer", 120)
            with open(sent_path) as f:
                sent = json.load(f)
            latest = topic.latest_offset()
            held = topic.quarantine()
        open(os.path.join(work, "stop"), "w").close()
        if children.wait("driver", 900) != 0:
            stops += 1
        with open(os.path.join(work, "summary.json")) as f:
            delta = json.load(f)
    finally:
        children.close()
    return _report(args, sent, latest, held, delta, kills, stops)


def quarantined_ids(held: list) -> list[int]:
    """The producer's ids of the quarantined events, in order (every value, the cut-short
    ones too, starts ``{"id": N``)."""
    return sorted(map(_id, (q.value for q in held)))


_ID = re.compile(r'\{"id": (\d+)')


def _id(value: str) -> int:
    found = _ID.match(value)
    return -1 if found is None else int(found.group(1))  # -1: no id of the producer's


def _report(args: argparse.Namespace, sent: dict, latest: int, held: list, delta: dict,
            kills: int, stops: int) -> int:
    bad = {kind: len(ids) for kind, ids in sent["malformed"].items()}
    malformed = sum(bad.values())
    quarantine_exact = quarantined_ids(held) == sorted(
        i for ids in sent["malformed"].values() for i in ids)
    topic_exact = latest == sent["sent"] - malformed
    delta_exact = (delta["rows"] == delta["distinct"] == delta["wanted"] == latest
                   and delta["missing"] == delta["extra"] == 0)
    print(f"\nsummary: {sent['sent']:,} events sent in {args.minutes:g} min by a stdlib sqlite3 "
          f"producer through sq_publish, {malformed:,} malformed "
          f"({', '.join(f'{n:,} {kind}' for kind, n in bad.items())})")
    print(f"  query: SIGKILLed {kills} times, restarted from its checkpoint; stopped by itself "
          f"{stops} times: {'never stopped' if stops == 0 else 'STOPPED'}")
    print(f"  quarantine: {len(held):,} events, malformed {malformed:,}: "
          f"{'the malformed ones exactly' if quarantine_exact else 'NOT the malformed ones'}")
    print(f"  topic: {latest:,} events: "
          f"{'the valid ones, offsets dense' if topic_exact else 'NOT the valid ones'}")
    print(f"  Delta: {delta['rows']:,} rows, {delta['distinct']:,} distinct ids of "
          f"{delta['wanted']:,} valid, {delta['missing']} missing, {delta['extra']} not valid: "
          f"{'every valid event exactly once' if delta_exact else 'NOT exactly once'}")
    results.record("a topic's schema under chaos", {
        "published events/s (setting)": args.rate, "malformed share (setting)": args.malformed,
        "events sent": sent["sent"], "malformed": malformed, "quarantined": len(held),
        "query kills": kills, "query stopped by itself": stops,
        "topic events": latest, "Delta rows, distinct ids": [delta["rows"], delta["distinct"]],
        "Delta ids missing, not valid": [delta["missing"], delta["extra"]],
        "quarantine == malformed": "yes" if quarantine_exact else "NO",
        "every valid event exactly once": "yes" if delta_exact else "NO"})
    return 0 if stops == 0 and quarantine_exact and topic_exact and delta_exact else 1
