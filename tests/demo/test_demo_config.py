"""The demo's producer runs alongside the stream: at its defaults it keeps publishing well
past the time Spark takes to run its first batch, so the live progress lines show events
produced and read at once, not a stalled start followed by a backlog drain."""

from __future__ import annotations

from pathlib import Path

from spark_queue.demo.config import DemoConfig, load_config

CONF = Path(__file__).resolve().parents[2] / "conf" / "demo.toml"
# start() to the first completed micro-batch of the demo's bronze query on this project's
# 2-core machine: ~27 s (issue 52), with Delta's first commit. Twice that of publishing
# leaves at least as long again of publishing beside running batches.
FIRST_BATCH_S = 27


def test_the_shipped_settings_publish_for_twice_sparks_first_batch():
    config = load_config(str(CONF), {})
    assert config.events / config.events_per_second >= 2 * FIRST_BATCH_S
    # Each trigger then has some events to read, never a whole backlog at once.
    assert config.events_per_second * config.trigger_seconds <= config.max_rows_per_trigger


def test_the_embedded_defaults_are_the_shipped_settings():
    shipped = load_config(str(CONF), {})
    assert shipped == DemoConfig()
