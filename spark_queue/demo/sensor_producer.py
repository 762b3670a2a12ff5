"""A background producer: the application that publishes sensor readings.

It is what a real service next to Spark would be: plain Python, the store
library only, its own connection, publishing small batches at a steady rate.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from spark_queue.store import Record, Store

#: The readings' shape, declared once: the demo sets it on its topic (run.py), so every
#: writer is held to it and the queries read their columns from the topic (pipeline.py).
READING_SCHEMA = "device STRING NOT NULL, celsius DOUBLE, ts_ms BIGINT NOT NULL"


class SensorProducer(threading.Thread):
    """Publish ``events`` readings to ``topic`` at ``events_per_second``, then stop."""

    def __init__(self, path: str, topic: str, *, events: int, events_per_second: int,
                 batch_size: int, devices: int, seed: int | None = None) -> None:
        super().__init__(name="demo-producer", daemon=True)
        self.path, self.topic = path, topic
        self.events, self.rate, self.batch_size = events, events_per_second, batch_size
        self.devices = devices
        self.rng = random.Random(seed)
        self.published = 0
        self.stop_requested = threading.Event()
        self.error: BaseException | None = None

    def reading(self, device: int) -> dict[str, Any]:
        # A few devices run hot so the alert query has something to find.
        base = 34.0 if device % 10 == 0 else 22.0
        return {"device": f"dev-{device:03d}", "celsius": round(self.rng.gauss(base, 2.0), 2),
                "ts_ms": int(time.time() * 1000)}

    def run(self) -> None:
        try:
            with Store(self.path, busy_timeout_ms=30_000) as store:
                started = time.monotonic()
                while self.published < self.events and not self.stop_requested.is_set():
                    size = min(self.batch_size, self.events - self.published)
                    batch = []
                    for _ in range(size):
                        device = self.rng.randrange(self.devices)
                        batch.append(Record(self.reading(device), key=f"dev-{device:03d}"))
                    store.publish_many(self.topic, batch)
                    self.published += size
                    ahead = self.published / self.rate - (time.monotonic() - started)
                    if ahead > 0:
                        self.stop_requested.wait(ahead)
        except BaseException as exc:  # reported by the demo's summary, never swallowed
            self.error = exc
