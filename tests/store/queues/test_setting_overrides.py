"""A value given for one call in place of a stored setting is checked as that setting's
declaration (spark_queue/setting_table.py) checks it: what the setting refuses, the
override refuses too, naming the same range."""

from __future__ import annotations

import re

import pytest

from spark_queue.errors import OptionError, QueueConfigError
from spark_queue.store import Store


def _range(error: pytest.ExceptionInfo[Exception]) -> str:
    found = re.search(r"must be (.*); got", str(error.value))
    assert found, error.value
    return found.group(1)


@pytest.mark.parametrize("value", [0, -1, True, 1.5, "60"])
def test_a_claims_lease_is_refused_as_the_queue_setting_it_overrides(store: Store, value):
    queue = store.queue("q")
    queue.enqueue("job")
    with pytest.raises(QueueConfigError) as setting:
        queue.configure(visibility_timeout_ms=value)
    with pytest.raises(QueueConfigError) as override:
        queue.claim(visibility_timeout_ms=value)
    assert _range(override) == _range(setting)
    assert "visibility_timeout_ms" in str(override.value)


@pytest.mark.parametrize("value", [0, -3, False])
def test_a_jobs_max_attempts_is_refused_as_the_queue_setting_it_overrides(store: Store, value):
    queue = store.queue("q")
    with pytest.raises(QueueConfigError) as setting:
        queue.configure(max_attempts=value)
    with pytest.raises(QueueConfigError) as override:
        queue.enqueue("job", max_attempts=value)
    assert _range(override) == _range(setting)
    assert str(override.value).startswith("job 0 of the batch: max_attempts must be")
    assert not queue.exists()  # the batch failed whole: not even its queue was made


def test_prune_and_set_retention_agree_on_zero_rows(store: Store):
    store.publish_many("t", ["a", "b", "c"])
    with pytest.raises(OptionError) as setting:
        store.topic("t").set_retention(retention_rows=0)
    with pytest.raises(OptionError) as override:
        store.topic("t").prune(retention_rows=0)
    assert _range(override) == _range(setting)
    assert [e.offset for e in store.read("t", 0, 10)] == [0, 1, 2]
