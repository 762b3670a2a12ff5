"""The events and the 10-field schema both halves of ``bench schema`` use (the writers'
rows in :mod:`benchmarks.schema_cost`, the readers' in :mod:`benchmarks.schema_reads`)."""

from __future__ import annotations

SCHEMA = ("device STRING NOT NULL, site STRING, seq BIGINT NOT NULL, temp DOUBLE, "
          "humidity DOUBLE, battery INT, ok BOOLEAN, ts TIMESTAMP, tags ARRAY<STRING>, "
          "loc STRUCT<lat: DOUBLE, lon: DOUBLE>")


def event(i: int) -> dict:
    return {"device": f"d{i % 50}", "site": "north", "seq": i, "temp": 20.5 + i % 7,
            "humidity": 0.4, "battery": 80, "ok": True, "ts": "2026-12-02T06:00:00Z",
            "tags": ["roof", "east"], "loc": {"lat": 52.1, "lon": 4.3}}
