"""One rule for a publish to a topic that does not exist (issue #59): it creates the topic on
every path, unless the store's create_topics_on_publish is off; then every path refuses it
and its transaction's other writes go with it, and topics are created only when asked."""

from __future__ import annotations

import json
import subprocess
import sys

import apsw
import pytest

from spark_queue.cli import main
from spark_queue.errors import UnknownTopicError
from spark_queue.store import Producer

VIEW_REFUSAL = "sq_publish: the topic does not exist, and this store creates topics only"

# A service's order and its event through the stdlib sqlite3 (never in a process holding
# apsw connections): prints the outcome as JSON.
OUTBOX_CLIENT = """
import json, sqlite3, sys
from spark_queue import outbox
conn = sqlite3.connect(sys.argv[1], timeout=5)
try:
    with conn:
        conn.execute("INSERT INTO orders (id) VALUES (1)")
        offset = outbox.publish(conn, "ordrs", {"id": 1})
    print(json.dumps({"offset": offset}))
except sqlite3.Error as exc:
    print(json.dumps({"error": str(exc)}))
"""


def with_orders(store):
    store.conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    store.topic("orders").create()


def topics(store):
    return [t.name for t in store.topics()]


def orders(store):
    return store.conn.execute("SELECT count(*) FROM orders").fetchall()[0][0]


def outbox_publish(path):
    result = subprocess.run([sys.executable, "-c", OUTBOX_CLIENT, path], capture_output=True,
                            text=True, timeout=60, check=True)
    return json.loads(result.stdout)


def tx_publish(store):
    with store.transaction() as tx:
        tx.execute("INSERT INTO orders (id) VALUES (1)")
        tx.publish("ordrs", {"id": 1})


def view_publish(store):
    with store.transaction() as tx:
        tx.execute("INSERT INTO orders (id) VALUES (1)")
        tx.execute("INSERT INTO sq_publish (topic, value) VALUES ('ordrs', '{\"id\": 1}')")


PATHS = {
    "tx.publish": tx_publish,
    "sq_publish": view_publish,
    "Store.publish": lambda store: store.publish("ordrs", {"id": 1}),
    "Store.publish_many": lambda store: store.publish_many("ordrs", [{"id": 1}]),
}


@pytest.mark.parametrize("path", PATHS)
def test_by_default_every_path_creates_the_misspelt_topic(store, path):
    """The default of every release so far: docs/transactions.md says so where users meet it."""
    with_orders(store)
    assert store.create_topics_on_publish
    PATHS[path](store)
    assert topics(store) == ["orders", "ordrs"]


@pytest.mark.parametrize("path", PATHS)
def test_with_the_setting_off_every_path_refuses_it_and_its_transaction_writes_nothing(
        store, path):
    with_orders(store)
    store.set_create_topics_on_publish(False)
    error = apsw.ConstraintError if path == "sq_publish" else UnknownTopicError
    with pytest.raises(error) as refused:
        PATHS[path](store)
    if path == "sq_publish":
        assert VIEW_REFUSAL in str(refused.value)
    else:
        assert "'ordrs' does not exist" in str(refused.value)
        assert "store.topic('ordrs').create()" in str(refused.value)
    assert topics(store) == ["orders"] and orders(store) == 0
    store.publish("orders", {"id": 1})  # an existing topic publishes as ever
    assert store.topic("orders").latest_offset() == 1


def test_outbox_publish_follows_the_setting_like_every_path(store, store_path):
    with_orders(store)
    assert outbox_publish(store_path) == {"offset": 0}
    store.conn.execute("DELETE FROM orders")
    store.topic("ordrs").delete()
    store.set_create_topics_on_publish(False)
    outcome = outbox_publish(store_path)
    assert VIEW_REFUSAL in outcome["error"]
    assert topics(store) == ["orders"] and orders(store) == 0


def test_the_producer_refuses_a_publish_to_a_missing_topic(store, store_path):
    store.topic("orders").create()
    store.set_create_topics_on_publish(False)
    with Producer(store_path) as producer:
        with pytest.raises(UnknownTopicError, match="'ordrs' does not exist"):
            producer.publish("ordrs", {"id": 1})
        assert producer.publish("orders", {"id": 1}) == 0
    assert topics(store) == ["orders"]


def test_asked_for_a_topic_is_created_with_the_setting_off(store, store_path, capsys):
    store.set_create_topics_on_publish(False)
    store.topic("made").create()
    store.topic("configured").configure(retention_rows=10)
    assert main(["topic", "create", store_path, "by-cli"]) == 0
    assert main(["publish", store_path, "by-publish", "x", "--create"]) == 0
    assert main(["publish", store_path, "missing", "x"]) == 1  # the CLI asks, as ever
    capsys.readouterr()
    assert topics(store) == ["by-cli", "by-publish", "configured", "made"]
    assert [e.value for e in store.read("by-publish")] == ["x"]
    # No leftover of the ask: the next foreign insert is refused again.
    with pytest.raises(apsw.ConstraintError, match="creates topics only when asked"):
        store.conn.execute("INSERT INTO sq_topics (name, created_ms) VALUES ('raw', 0)")
    # The hand-written protocol's create of an existing topic still passes (docs/file-format.md).
    store.conn.execute("INSERT INTO sq_topics (name, created_ms) VALUES ('made', 0) "
                       "ON CONFLICT (name) DO NOTHING")
    store.set_create_topics_on_publish(True)
    store.conn.execute("INSERT INTO sq_publish (topic, value) VALUES ('raw', 'y')")
    assert "raw" in topics(store) and store.check().ok


def test_the_setting_must_be_a_bool(store):
    with pytest.raises(TypeError, match="True or False"):
        store.set_create_topics_on_publish("no")
