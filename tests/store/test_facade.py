"""The Store facade stays small: its everyday calls, plus ``topic(name)``, ``queue(name)``
and ``housekeeping`` handles (#53). The names that moved keep working for one release as
delegates from one table (spark_queue/store/store_moved.py), which warn and are not counted.
"""

from __future__ import annotations

import inspect
import warnings

import pytest

from spark_queue.store import HousekeepingRun, HousekeepingStatus, Store
from spark_queue.store.store_moved import MOVED, MOVED_NAMES

#: The bar of issue #53: at most 35 public methods (44 then, 47 counting ``conn``).
MAX_PUBLIC = 35


def facade() -> list[str]:
    """The Store's public methods and properties, as its class body defines them, without
    the deprecated delegates (which live in one table, not in the class body)."""
    return [
        name for name, member in vars(Store).items()
        if not name.startswith("_") and name not in MOVED_NAMES
        and (inspect.isfunction(member) or isinstance(member, property))
    ]


def test_the_store_has_at_most_35_public_methods():
    assert len(facade()) <= MAX_PUBLIC, facade()
    assert {"topic", "queue", "housekeeping", "publish", "read"} <= set(facade())


def test_every_moved_name_is_a_delegate_and_none_is_in_the_class_body():
    for moved in MOVED:
        delegate = vars(Store)[moved.old]
        assert delegate.__doc__ == f"Deprecated: use ``{moved.new}``."
    source = inspect.getsource(Store)
    assert not [name for name in MOVED_NAMES if f"def {name}(" in source]


# old call -> the new call it stands for; both run on the same store, in this order.
CALLS = {
    "create_topic": (lambda s: s.create_topic("u"), lambda s: s.topic("u").create()),
    "start_topic_at": (lambda s: s.start_topic_at("v", 10), lambda s: s.topic("v").start_at(10)),
    "bounds": (lambda s: s.bounds("t"), lambda s: s.topic("t").bounds()),
    "bounds.keyword": (lambda s: s.bounds(topic="t"), lambda s: s.topic("t").bounds()),
    "earliest_offset": (lambda s: s.earliest_offset("t"),
                        lambda s: s.topic("t").earliest_offset()),
    "latest_offset": (lambda s: s.latest_offset("t"), lambda s: s.topic("t").latest_offset()),
    "offset_for_timestamp": (lambda s: s.offset_for_timestamp("t", 0),
                             lambda s: s.topic("t").offset_for_timestamp(0)),
    "set_topic_limits": (lambda s: s.set_topic_limits("t", max_payload_bytes=1000),
                         lambda s: s.topic("t").set_limits(max_payload_bytes=1000)),
    "configure_topic": (lambda s: s.configure_topic("t", retention_rows=100),
                        lambda s: s.topic("t").configure(retention_rows=100)),
    "has_topic": (lambda s: s.has_topic("t"), lambda s: s.topic("t").exists()),
    "mirror_shift": (lambda s: s.mirror_shift("t"), lambda s: s.topic("t").mirror_shift()),
    "fix_mirror_shift": (lambda s: s.fix_mirror_shift("t", 3),
                         lambda s: s.topic("t").fix_mirror_shift(3)),
    "set_retention": (lambda s: s.set_retention("t", retention_rows=4),
                      lambda s: s.topic("t").set_retention(retention_rows=4)),
    "prune": (lambda s: s.prune("t", retention_rows=4, force=True),
              lambda s: s.topic("t").prune(retention_rows=4, force=True)),
    "prune.every_topic": (lambda s: s.prune(retention_rows=4, force=True),
                          lambda s: s.housekeeping.prune(retention_rows=4, force=True)),
    "delete_topic": (lambda s: s.delete_topic("u"), lambda s: s.topic("v").delete()),
    "housekeeping_status": (lambda s: s.housekeeping_status(),
                            lambda s: s.housekeeping.status()),
    "retention_held_back": (lambda s: s.retention_held_back(),
                            lambda s: s.housekeeping.held_back()),
    "set_housekeeping_interval": (lambda s: s.set_housekeeping_interval(0),
                                  lambda s: s.housekeeping.set_interval(0)),
    "run_housekeeping": (lambda s: s.run_housekeeping(), lambda s: s.housekeeping.run()),
    "sweep_expired": (lambda s: s.sweep_expired(), lambda s: s.housekeeping.sweep_expired()),
}
# Results that carry the time of the call: compared by type.
TIMED = {"housekeeping_status": HousekeepingStatus, "run_housekeeping": HousekeepingRun}


def test_the_walk_names_every_moved_method():
    assert {name.split(".")[0] for name in CALLS} == MOVED_NAMES


def test_each_moved_method_warns_and_does_what_the_new_call_does(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        store.publish_many("t", range(10))
        for name, (old, new) in CALLS.items():
            moved = next(m for m in MOVED if m.old == name.split(".")[0])
            with pytest.warns(DeprecationWarning, match=f"Store.{moved.old}") as caught:
                before = old(store)
            assert caught[0].filename == __file__, "the warning names the caller's line"
            assert moved.new in str(caught[0].message)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                after = new(store)
            if name in TIMED:
                assert isinstance(before, TIMED[name]) and isinstance(after, TIMED[name])
            elif name.startswith(("prune", "delete_topic")):
                assert type(before) is type(after), name  # the second one finds less to do
            else:
                assert before == after, name


def test_a_moved_method_called_without_its_topic_says_so(tmp_path):
    with Store(tmp_path / "s.sqlite") as store, pytest.warns(DeprecationWarning), \
            pytest.raises(TypeError, match="'topic'"):
        store.bounds()
