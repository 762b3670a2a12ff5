"""Work queues: job types, the queue row, enqueue, dead letters and counters (claim:
:mod:`.claims`; ack/nack/extend: :mod:`.leases`).

Delivery is at-least-once. A claim is one ``UPDATE ... RETURNING`` that
leases up to N ready jobs, ordered ``priority DESC, available_at, id``, for a
visibility timeout and stamps them with a fresh random lease token. Ack, nack,
release and extend must present ``(job id, token)``: a worker whose lease
expired and whose job another worker re-claimed holds a stale token, and its
calls change nothing (fencing). A late ack whose token still matches (the
lease expired but nobody re-claimed the job yet) is accepted: the work is done.

Row states (one table, one claim index; see ``schema._V2_QUEUES``):

=========  ================================================================
state      condition
=========  ================================================================
ready      ``available_at <= now`` and no live lease
delayed    ``available_at > now`` (not leased)
leased     ``lease_token`` set and ``lease_expires_at > now``
=========  ================================================================

Every function here takes a connection whose caller holds the write
transaction (``write_transaction``); :class:`~spark_queue.store.queues.queue.Queue`
wraps them one transaction each.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, NamedTuple, overload

import apsw

from spark_queue.defaults import MAX_STORED
from spark_queue.errors import (
    PayloadError,
    QueueBatchTooLargeError,
    QueueConfigError,
    QueueFullError,
)
from spark_queue.setting_table import QUEUE_SETTING, check_setting
from spark_queue.store.file import carray
from spark_queue.store.file.arguments import check_int
from spark_queue.store.file.codec import encode_value
from spark_queue.store.file.connection import first_value, now_ms, now_or
from spark_queue.store.file.names import validate_name
from spark_queue.store.file.payload_limits import check_sizes
from spark_queue.store.queues.queue_config import CONFIG_COLUMNS, QueueConfig, config_from_row


class NewJob(NamedTuple):
    """One job to enqueue. ``None`` for ``max_attempts`` means the queue's setting.

    ``payload`` is stored as the codec stores event values (str as text, bytes
    as bytes, anything else as JSON). ``delay_ms`` holds the job back;
    ``ttl_ms`` drops it if it is not done that long after enqueue;
    ``idempotency_key`` makes a duplicate enqueue return the original id.
    """

    payload: Any
    priority: int = 0
    delay_ms: int = 0
    idempotency_key: str | None = None
    max_attempts: int | None = None
    ttl_ms: int | None = None


class Job(NamedTuple):
    """A claimed job. ``lease_token`` is what ack/nack/extend must present.

    A NamedTuple, not a dataclass: a claim builds one per job on the hot path.
    """

    id: int
    queue: str
    payload: Any
    priority: int
    attempts: int
    max_attempts: int
    enqueued_ms: int
    lease_token: int | None
    lease_expires_ms: int | None
    expires_ms: int | None = None
    idempotency_key: str | None = None
    last_error: str | None = None


class LeaseResult(NamedTuple):
    """What a batch ack/nack/release/extend did: ids changed, ids whose token was stale."""

    done: list[int]
    rejected: list[int]


class NackResult(NamedTuple):
    retried: list[int]
    dead: list[int]
    rejected: list[int]
    # When each of ``retried`` (same order) may be claimed again, epoch ms.
    retry_at_ms: tuple[int, ...] = ()


Lease = Job | tuple[int, int]

def get_queue(conn: apsw.Connection, queue: str) -> QueueConfig | None:
    row = conn.execute(
        f"SELECT {CONFIG_COLUMNS} FROM sq_queues WHERE name = ?", (validate_name(queue, "queue"),)
    ).fetchone()
    return None if row is None else config_from_row(row)


def ensure_queue(conn: apsw.Connection, queue: str) -> QueueConfig:
    """The queue's settings; created with the defaults if missing (caller holds the write lock)."""
    config = get_queue(conn, queue)
    if config is not None:
        return config
    conn.execute("INSERT INTO sq_queues (name, created_ms) VALUES (?, ?)", (queue, now_ms()))
    created = get_queue(conn, queue)
    assert created is not None, "the queue inserted above, in the same transaction"
    return created


# -- enqueue -------------------------------------------------------------
@overload
def int_option(
    job_index: int, name: str, value: Any, low: int, allow_none: Literal[False]
) -> int: ...
@overload
def int_option(job_index: int, name: str, value: Any, low: int, allow_none: bool) -> int | None: ...
def int_option(job_index: int, name: str, value: Any, low: int, allow_none: bool) -> int | None:
    if value is None and allow_none:
        return None
    return check_int(
        value, name, low=low, high=MAX_STORED, error=QueueConfigError,
        owner=f"job {job_index} of the batch:", or_none="" if allow_none else None,
    )


def _encode_payload(index: int, payload: Any) -> tuple[Any, int]:
    try:
        return encode_value(payload)
    except PayloadError as exc:
        raise PayloadError(f"job {index} of the batch: {exc}") from exc


#: A job as inserted: (queue_id, priority, available_ms, max_attempts, expires_ms,
#: idempotency_key, created_ms, value, value_type).
JobRow = tuple[int, int, int, int | None, int | None, str | None, int, Any, int]


def _encode_row(index: int, job: Any, queue_id: int, now: int) -> JobRow:
    # ``type(x) is int`` checks are deliberate: they are fast and reject bool.
    if type(job) is not NewJob:  # a bare payload: every option at its default
        value, vtype = _encode_payload(index, job)
        return (queue_id, 0, now, None, None, None, now, value, vtype)
    payload, priority, delay, key, max_attempts, ttl = job
    value, vtype = _encode_payload(index, payload)
    if type(priority) is not int or not -MAX_STORED <= priority <= MAX_STORED:
        check_int(priority, "priority", low=-MAX_STORED, high=MAX_STORED,
                  error=QueueConfigError, owner=f"job {index} of the batch:")
    if delay:
        delay = int_option(index, "delay_ms", delay, 0, False)
    if ttl is not None:
        ttl = now + int_option(index, "ttl_ms", ttl, 1, False)
    if max_attempts is not None:
        # A job's max_attempts overrides its queue's: checked as the declared setting.
        check_setting(QUEUE_SETTING["max_attempts"], max_attempts, error=QueueConfigError,
                      owner=f"job {index} of the batch:")
    if key is not None and (type(key) is not str or not key):
        raise QueueConfigError(
            f"job {index} of the batch: idempotency_key must be a non-empty str or None; "
            f"got {key!r}."
        )
    return (queue_id, priority, now + (delay or 0), max_attempts, ttl, key, now, value, vtype)


def check_job(job: NewJob | Any) -> None:
    """Raise the PayloadError or QueueConfigError enqueueing ``job`` would raise; no I/O."""
    _encode_row(0, job, 0, 0)


_INSERT_PACKED = (
    "INSERT INTO sq_jobs (queue_id, priority, available_at, max_attempts, expires_at, "
    "idempotency_key, enqueued_ms, value_type, value) "
    "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, value FROM carray(?9)"
)
_INSERT = (
    "INSERT INTO sq_jobs (queue_id, priority, available_at, max_attempts, expires_at, "
    "idempotency_key, enqueued_ms, value, value_type) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def enqueue_rows(
    conn: apsw.Connection, queue: str, rows: Iterable[NewJob | Any], *, now_ms: int | None = None
) -> list[int]:
    """Insert jobs into ``queue`` inside the caller's write transaction; return their ids.

    The queue is created with the default settings if missing. Rows are
    :class:`NewJob` items or bare payloads. A row whose ``idempotency_key``
    this queue remembers (see :func:`_job_id_for_key`), from earlier calls or
    an earlier row of the same batch, is not inserted; its id is the original's.
    Raises :class:`QueueFullError` if the queue has a ``max_size`` that the
    batch would exceed (the caller's transaction is untouched: nothing was
    inserted), :class:`QueueBatchTooLargeError` if it could never fit, and
    :class:`PayloadTooLargeError` naming the row if a payload is over the
    queue's ``max_payload_bytes`` (nothing inserted either).
    """
    config = ensure_queue(conn, queue)
    now = now_or(now_ms)
    encoded = [_encode_row(i, job, config.id, now) for i, job in enumerate(rows)]
    if not encoded:
        return []
    if config.max_payload_bytes is not None:
        check_sizes(
            (row[7] for row in encoded), config.max_payload_bytes, f"queue {config.name!r}",
            f"sqliteq queue config PATH {config.name} --max-payload-bytes N",
        )
    if config.max_size is not None:
        check_capacity(conn, config, len(encoded))
    if all(row[5] is None for row in encoded):
        # No RETURNING (it materializes every row and halved enqueue throughput):
        # sq_jobs is AUTOINCREMENT and we hold the write lock, so the batch's
        # ids are consecutive and end at last_insert_rowid().
        _insert_without_keys(conn, encoded)
        last = conn.last_insert_rowid()
        return list(range(last - len(encoded) + 1, last + 1))
    ids = []
    for row in encoded:
        key = row[5]
        if key is not None:
            existing = _job_id_for_key(conn, config, key, now)
            if existing is not None:
                ids.append(existing)
                continue
        conn.execute(_INSERT, row)
        job_id = conn.last_insert_rowid()
        ids.append(job_id)
        if key is not None:
            conn.execute(
                "INSERT OR REPLACE INTO sq_job_keys "
                "(queue_id, idempotency_key, job_id, created_ms) VALUES (?, ?, ?, ?)",
                (config.id, key, job_id, now),
            )
    return ids


def _insert_without_keys(conn: apsw.Connection, encoded: list[JobRow]) -> None:
    """Insert rows that carry no idempotency key, in order.

    When a chunk's rows differ only in their payloads (bare payloads, or jobs
    with the same options) its payloads go in as one carray: one statement per
    chunk instead of one step per row (see :mod:`spark_queue.store.streams.packed_insert`).
    """
    for start in range(0, len(encoded), carray.CHUNK):
        chunk = encoded[start : start + carray.CHUNK]
        shared = chunk[0][:7] + chunk[0][8:]
        array = None
        if all(row[:7] + row[8:] == shared for row in chunk):
            array = carray.value_array([row[7] for row in chunk])
        if array is None:
            conn.executemany(_INSERT, chunk)
        else:
            conn.execute(_INSERT_PACKED, (*shared, array))


def _job_id_for_key(conn: apsw.Connection, config: QueueConfig, key: str, now: int) -> int | None:
    """The job that holds ``key``, if the queue still remembers it.

    A key is remembered for ``idempotency_window_ms`` after its enqueue (so a
    job that was done and acked is not enqueued again by a retried producer),
    and beyond that as long as its job is queued, leased or dead.
    """
    row = conn.execute(
        "SELECT job_id, created_ms FROM sq_job_keys WHERE queue_id = ? AND idempotency_key = ?",
        (config.id, key),
    ).fetchone()
    if row is None:
        return None
    job_id, created_ms = row
    if created_ms > now - config.idempotency_window_ms or _job_exists(conn, job_id):
        return job_id
    return None


def _job_exists(conn: apsw.Connection, job_id: int) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM sq_jobs WHERE id = ? UNION ALL SELECT 1 FROM sq_dead_jobs WHERE id = ?",
            (job_id, job_id),
        ).fetchone()
        is not None
    )


def queue_size(conn: apsw.Connection, queue_id: int) -> int:
    """Jobs in the queue (ready, delayed and leased; not dead letters)."""
    return first_value(conn.execute("SELECT count(*) FROM sq_jobs WHERE queue_id = ?", (queue_id,)))


def check_capacity(conn: apsw.Connection, config: QueueConfig, adding: int) -> None:
    if config.max_size is None:
        return
    if adding > config.max_size:
        raise QueueBatchTooLargeError(
            f"a batch of {adding} jobs can never fit queue {config.name!r} (max_size "
            f"{config.max_size}); split it into batches of at most {config.max_size}."
        )
    size = queue_size(conn, config.id)
    if size + adding > config.max_size:
        raise QueueFullError(
            f"queue {config.name!r} holds {size} of max_size {config.max_size} jobs; no room "
            f"for {adding} more. Wait for workers to drain it (enqueue with wait_ms), or "
            "raise max_size."
        )


def bury(
    conn: apsw.Connection,
    queue_id: int,
    job_ids: Iterable[int],
    error: str | None,
    now: int,
    *,
    attempts: int | None = None,
) -> int:
    """Move jobs to the dead letters with ``error`` as their last error; returns how many moved."""
    moved = 0
    for job_id in job_ids:
        conn.execute(
            "INSERT INTO sq_dead_jobs (id, queue_id, priority, attempts, max_attempts, expires_at, "
            "idempotency_key, enqueued_ms, dead_ms, value, value_type, last_error) "
            "SELECT id, queue_id, priority, coalesce(?, attempts), max_attempts, expires_at, "
            "idempotency_key, enqueued_ms, ?, value, value_type, coalesce(?, last_error) "
            "FROM sq_jobs WHERE id = ?",
            (attempts, now, error, job_id),
        )
        conn.execute("DELETE FROM sq_jobs WHERE id = ?", (job_id,))
        moved += conn.changes()
    if moved:
        add_to_counter(conn, queue_id, "dead_total", moved)
    return moved


# The queue's counters (schema version 5), each a column of its sq_queues row.
_COUNT = {
    "acked_total": "UPDATE sq_queues SET acked_total = acked_total + ? WHERE id = ?",
    "failed_total": "UPDATE sq_queues SET failed_total = failed_total + ? WHERE id = ?",
    "dead_total": "UPDATE sq_queues SET dead_total = dead_total + ? WHERE id = ?",
}


def add_to_counter(conn: apsw.Connection, queue_id: int, column: str, n: int) -> None:
    """Add ``n`` to one of the queue's counters, inside the caller's transaction: one row
    update per transaction, not per job."""
    conn.execute(_COUNT[column], (n, queue_id))
