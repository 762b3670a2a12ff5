"""Where the next micro-batch ends: row limits, the trigger delay and the AvailableNow target.

Both stream readers (the default one and ``latencyMode=low``) plan their
batches here, on the driver, in the one long-lived planning process of a
query, so the state kept here (the delay clock, the AvailableNow target)
lasts for the query's run. Nothing here touches Spark: it is tested with a
fake clock (``tests/connector/source/test_source_admission.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from spark_queue.connector.source.lineage import behind_message
from spark_queue.connector.source.offsets import (
    Bounds,
    cap_rows,
    effective_start,
    sorted_offsets,
)
from spark_queue.connector.source.source_options import SourceOptions
from spark_queue.errors import StoreRewoundError


@dataclass(frozen=True)
class Limits:
    """The row limits of one trigger; ``None`` = no limit of that kind."""

    max_rows: int | None = None
    min_rows: int | None = None

    @classmethod
    def of(cls, options: SourceOptions) -> Limits:
        return cls(options.max_rows_per_trigger, options.min_rows_per_trigger)


ALL_AVAILABLE = Limits()


class TriggerAdmission:
    """Plans ``{topic: end}`` for a batch starting at ``start`` under the source's limits."""

    def __init__(
        self, options: SourceOptions, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.options = options
        self.clock = clock
        self.available_now_target: dict[str, int] | None = None
        self.last_latest: dict[str, int] | None = None
        self._last_trigger_s: float | None = None

    def prepare_available_now(self, bounds: Bounds) -> None:
        """Fix the run's end at the latest offsets now; topics created later are not part of it."""
        self.available_now_target = {t: latest for t, (_, latest) in bounds.items()}

    def next_end(self, start: dict[str, int], bounds: Bounds, limits: Limits) -> dict[str, int]:
        """The end of the next batch, or ``start`` itself when no batch should run now."""
        latest = {t: b[1] for t, b in bounds.items()}
        self.last_latest = sorted_offsets(latest)
        target = self.available_now_target
        available: dict[str, int] = {}
        begins: dict[str, int] = {}
        for topic, top in latest.items():
            requested = start.get(topic, 0)
            if requested > top:
                # HistoryGuard.plan_from checked the start Spark handed back; this is a
                # store put back under a running query.
                raise StoreRewoundError(behind_message(topic, requested, top, self.options))
            if target is not None:
                top = min(top, target.get(topic, requested))
            begin = effective_start(topic, requested, bounds[topic][0], self.options)
            begins[topic] = begin
            if top > begin:
                available[topic] = top - begin
        admitted = self._admit(available, limits)
        # Offsets skipped over lost data (failOnDataLoss=false) move on even
        # without rows, so the gap is reported once, not on every trigger.
        skipped = {t: b for t, b in begins.items() if b > start.get(t, 0)}
        if not admitted and not skipped:
            return start
        end = {**start, **skipped}
        for topic, rows in admitted.items():
            end[topic] = begins[topic] + rows
        if admitted:
            self._last_trigger_s = self.clock()
        return sorted_offsets(end)

    def _admit(self, available: dict[str, int], limits: Limits) -> dict[str, int]:
        """Rows to take per topic under ``limits``; empty means "no batch now"."""
        now = self.clock()
        if self._last_trigger_s is None:
            self._last_trigger_s = now
        total = sum(available.values())
        if total == 0:
            return {}
        # AvailableNow must finish: a min-rows wait there could last forever.
        if (
            limits.min_rows is not None
            and self.available_now_target is None
            and total < limits.min_rows
        ):
            waited_ms = (now - self._last_trigger_s) * 1000
            if waited_ms < self.options.max_trigger_delay_ms:
                return {}
        return available if limits.max_rows is None else cap_rows(available, limits.max_rows)
