"""The demo's settings: ``conf/demo.toml``, overridden by command-line flags."""

from __future__ import annotations

import dataclasses
import os
import sys
import tomllib
from typing import Any

from spark_queue.errors import OptionError


@dataclasses.dataclass(frozen=True)
class DemoConfig:
    dir: str = "spark_queue_demo"
    events: int = 30_000
    events_per_second: int = 500
    batch_size: int = 100
    devices: int = 50
    topic: str = "readings"
    trigger_seconds: float = 1.0
    max_rows_per_trigger: int = 5000
    queue: str = "alerts"
    window_seconds: int = 2
    threshold_celsius: float = 30.0
    workers: int = 2
    max_seconds: float = 240.0
    progress_seconds: float = 2.0
    # Where the store is replicated while the demo runs, and restored from at its start
    # when the file is missing (a wiped disk); empty: not replicated.
    replica_url: str = ""

    @property
    def store_path(self) -> str:
        return os.path.join(self.dir, "demo.sqlite")

    def bronze_path(self, table_format: str) -> str:
        """The bronze table: ``delta/readings_bronze``, or ``parquet/...`` without Delta."""
        return os.path.join(self.dir, table_format, "readings_bronze")

    def bronze_checkpoint(self, table_format: str) -> str:
        return self.checkpoint("bronze" if table_format == "delta" else f"bronze-{table_format}")

    def checkpoint(self, query: str) -> str:
        return os.path.join(self.dir, "checkpoints", query)


_SECTIONS = ("producer", "stream", "alerts", "run")


def load_config(path: str | None, overrides: dict[str, Any]) -> DemoConfig:
    """Read ``path`` (flattening its sections), apply non-None ``overrides``, validate."""
    values: dict[str, Any] = {}
    if path is not None and (path == "-" or os.path.exists(path)):
        try:
            if path == "-":  # stdin, as everywhere a file is read
                data = tomllib.load(sys.stdin.buffer)
            else:
                with open(path, "rb") as f:
                    data = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise OptionError(
                f"demo config {path!r} is not valid TOML ({exc}); fix it, or leave --config "
                "out to use conf/demo.toml."
            ) from exc
        except OSError as exc:
            raise OptionError(f"cannot read demo config {path!r}: {exc.strerror}.") from exc
        for key, value in data.items():
            if key in _SECTIONS and isinstance(value, dict):
                values.update(value)
            else:
                values[key] = value
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name: f for f in dataclasses.fields(DemoConfig)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise OptionError(
            f"demo config {path!r} has unknown settings {unknown}; allowed: {sorted(known)}."
        )
    config = DemoConfig(**values)
    for name in ("events", "events_per_second", "batch_size", "devices", "workers",
                 "max_rows_per_trigger", "window_seconds"):
        if not isinstance(getattr(config, name), int) or getattr(config, name) <= 0:
            raise OptionError(f"demo setting {name!r} must be a positive integer; "
                              f"got {getattr(config, name)!r}.")
    return config
