"""Every queue and topic setting, declared once: its name, type, default, bounds, doc line
and CLI flag, and :func:`check_setting`, the one check of a value against its declaration. Imports
only :mod:`spark_queue.defaults`, which imports nothing, so every layer may read it.

What reads it: the store's check of a value (``Queue.configure``, ``Store.queue``, a
topic's retention and payload limit, each through :func:`check_setting`), the
CLI's flags (``sqliteq queue create|config``, ``topic create|config``) and the durations
its tables print, the docs' settings tables (``docs/queues.md``, ``docs/store.md``,
rendered by :func:`markdown_table`). What cannot read it, and is held to it by
``tests/test_setting_table.py``: the column defaults of ``sq_queues`` (forward-only
migrations in :mod:`spark_queue.store.file.schema`, so a queue any SQLite client creates
gets them too), and the static types mypy needs (``QueueConfig``, ``QueueSettings``).

The store's bound on integers, :data:`~spark_queue.defaults.MAX_STORED`: a duration is
added to epoch milliseconds in SQL, so every setting stays below 2**62 (any clock fits
beside it).
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypeGuard

from spark_queue.defaults import MAX_INT64, MAX_STORED

# A rate limit beyond this loses precision in the token bucket's arithmetic.
MAX_RATE_PER_S = 1e9


class Setting(NamedTuple):
    """One setting. ``kind`` is ``int``, ``float`` or ``bool``; ``low`` is the lowest
    value allowed (inclusive for ``int``, exclusive for ``float``: a rate above 0; unused
    for ``bool``);
    ``default`` None means no limit, and None switches the limit off again (``off_flag``
    in the CLI). ``duration``: milliseconds, which the CLI reads as ``30s``, ``5m``, ``1h``
    and its tables print so."""

    name: str
    kind: type
    default: int | float | bool | None
    low: int | float
    doc: str
    flag: str | None
    off_flag: str | None = None
    high: float = MAX_STORED
    duration: bool = False

    @property
    def nullable(self) -> bool:
        return self.default is None


QUEUE_SETTINGS: tuple[Setting, ...] = (
    Setting("visibility_timeout_ms", int, 30_000, 1,
            "how long a claim leases a job (its lease); a job not acked, nacked or extended "
            "by then is claimable again", "--visibility-timeout-ms", duration=True),
    Setting("max_attempts", int, 5, 1,
            "attempts before a failing job moves to the dead letters", "--max-attempts"),
    Setting("backoff_base_ms", int, 1_000, 0,
            "a nack's first retry delay, doubled per attempt (plus jitter)", "--backoff-base-ms",
            duration=True),
    Setting("backoff_cap_ms", int, 300_000, 0, "the longest retry delay", "--backoff-cap-ms",
            duration=True),
    Setting("max_size", int, None, 1,
            "the most jobs queued (ready, delayed, leased): an enqueue beyond waits or fails",
            "--max-size", "--no-max-size"),
    Setting("idempotency_window_ms", int, 86_400_000, 1,
            "how long an idempotency key is remembered after its enqueue",
            "--idempotency-window-ms", duration=True),
    Setting("paused", bool, False, 0,
            "claims return nothing; enqueues land (`sqliteq queue pause`, `resume`)", None),
    Setting("max_leased", int, None, 1,
            "the most jobs of the queue holding a live lease at once", "--max-leased",
            "--no-max-leased"),
    Setting("rate_limit_per_s", float, None, 0,
            "claims take at most this many jobs per second on average (a token bucket)",
            "--rate-limit-per-s", "--no-rate-limit", high=MAX_RATE_PER_S),
    Setting("rate_burst", int, None, 1,
            "the token bucket's size (default: the rate, at least 1)", "--rate-burst",
            "--no-rate-burst"),
    Setting("max_payload_bytes", int, None, 1,
            "an enqueue with a larger payload fails whole", "--max-payload-bytes",
            "--no-max-payload-bytes"),
    Setting("dead_retention_ms", int, None, 1,
            "housekeeping deletes dead letters older than this", "--dead-retention",
            "--no-dead-retention", duration=True),
    Setting("dead_retention_rows", int, None, 1,
            "housekeeping deletes all but the newest N dead letters", "--dead-retention-rows",
            "--no-dead-retention-rows"),
)

TOPIC_SETTINGS: tuple[Setting, ...] = (
    Setting("retention_ms", int, None, 1,
            "prune events older than this", "--retention", "--no-retention", duration=True),
    Setting("retention_rows", int, None, 1,
            "prune all but the newest N events", "--retention-rows", "--no-retention-rows"),
    Setting("max_payload_bytes", int, None, 1,
            "a publish with a larger value fails whole", "--max-payload-bytes",
            "--no-max-payload-bytes"),
)

#: Settings of the whole store, kept in its meta table (spark_queue/store/file/meta.py;
#: ``sqliteq housekeeping``).
STORE_SETTINGS: tuple[Setting, ...] = (
    Setting("housekeeping_interval_ms", int, 30_000, 0,
            "how often the store's long-running processes apply retention, dead-letter "
            "retention and the WAL bound (one at a time); 0 switches it off",
            "--interval", "--off", duration=True),
)

QUEUE_SETTING = {s.name: s for s in QUEUE_SETTINGS}
STORE_SETTING = {s.name: s for s in STORE_SETTINGS}
TOPIC_SETTING = {s.name: s for s in TOPIC_SETTINGS}


def is_int_within(value: Any, low: int | None, high: int | None) -> TypeGuard[int]:
    """Whether ``value`` is an int (never a bool) within ``[low, high]`` (None: unbounded)."""
    return (isinstance(value, int) and not isinstance(value, bool)
            and (low is None or value >= low) and (high is None or value <= high))


def describe_range(low: int | None, high: int | None) -> str:
    """An integer range in words, its store bounds by name: ``an integer from 1 to 2**62 - 1``."""
    def show(bound: int) -> str:
        named = {MAX_INT64: "2**63 - 1", MAX_STORED: "2**62 - 1",
                 -MAX_STORED: "-(2**62 - 1)"}
        return named.get(bound, str(bound))

    if low is None and high is None:
        return "an integer"
    if high is None:
        return f"an integer >= {show(low)}" if low is not None else "an integer"
    if low is None:
        return f"an integer <= {show(high)}"
    return f"an integer from {show(low)} to {show(high)}"


def check_setting(setting: Setting, value: Any, *, error: type[Exception], owner: str) -> Any:
    """``value`` as the store keeps it (a flag as 0 or 1, a rate as a float), if
    ``setting``'s declaration allows it; otherwise ``error`` naming ``owner`` (``queue 'q'
    setting``, ``retention``), the setting, what it allows and the value.

    The one check of a setting's value: queue settings, topic retention and payload
    limits alike, and a value given for one call in place of the stored one (a claim's
    lease for ``visibility_timeout_ms``, a job's ``max_attempts``, a prune's retention);
    ``error`` is the caller's (QueueConfigError, OptionError). ``owner`` "" names none."""
    name = f"{owner} {setting.name}" if owner else setting.name
    if value is None and setting.nullable:
        return None
    if setting.kind is bool:
        if not isinstance(value, bool):
            raise error(f"{name} must be True or False; got {value!r}.")
        return int(value)
    if setting.kind is float:
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not setting.low < value <= setting.high):
            raise error(f"{name} (jobs per second) must be {allowed(setting)}; "
                        f"got {value!r}.")
        return float(value)
    low, high = int(setting.low), int(setting.high)
    if not is_int_within(value, low, high):
        allowed_text = describe_range(low, high) + (" or None (no limit)" if setting.nullable
                                                    else "")
        raise error(f"{name} must be {allowed_text}; got {value!r}.")
    return value


def stored_problem(setting: Setting, value: Any) -> str | None:
    """What is wrong with ``value`` as the store's column of ``setting`` holds it (a flag as 0
    or 1, NULL for no limit), or None. Another SQLite client can store what the schema's
    CHECK constraints let through (text compares above every number): housekeeping skips
    such a row and ``sqliteq check`` names it."""
    if value is None:
        return None if setting.nullable else "holds NULL, which is not allowed"
    if setting.kind is bool:
        ok = value in (0, 1) and not isinstance(value, (str, bytes, float))
    elif setting.kind is float:
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and setting.low < value <= setting.high)
    else:
        ok = is_int_within(value, int(setting.low), int(setting.high))
    if ok:
        return None
    return f"holds {value!r} ({type(value).__name__}), not {allowed(setting)}"


def allowed(setting: Setting) -> str:
    """What a setting takes, in words: ``an integer >= 1``, ``True or False``, ..."""
    if setting.kind is bool:
        return "True or False"
    if setting.kind is float:
        text = f"a number > {setting.low:g} and <= {setting.high:.0e}"
    else:
        text = f"an integer >= {setting.low}"
    return text + (" or None (no limit)" if setting.nullable else "")


def default_text(setting: Setting) -> str:
    """The default as the docs say it: ``30000`` (``30s``), ``no limit``, ``False``."""
    if setting.default is None:
        return "no limit"
    if setting.duration:
        return f"{setting.default} ms"
    return str(setting.default)


def markdown_table(settings: tuple[Setting, ...]) -> str:
    """The docs' table of ``settings``, one row each, as the docs hold it."""
    rows = [
        "| setting | CLI flag | default | allowed | what it does |",
        "|---|---|---|---|---|",
    ]
    for s in settings:
        flags = " ".join(f"`{f}`" for f in (s.flag, s.off_flag) if f) or "—"
        rows.append(
            f"| `{s.name}` | {flags} | {default_text(s)} | {allowed(s)} | {s.doc} |"
        )
    return "\n".join(rows) + "\n"
