"""A job's options are declared once (spark_queue/job_options.py) and every enqueue of the
package takes them from there: Queue.enqueue, Producer.enqueue and enqueue_nowait,
Transaction.enqueue and outbox.enqueue."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import spark_queue
from spark_queue import outbox
from spark_queue.job_options import JOB_OPTION_NAMES
from spark_queue.store import Producer, Queue, Transaction
from spark_queue.store.queues.queue_jobs import NewJob

ENQUEUES = [Queue.enqueue, Producer.enqueue, Producer.enqueue_nowait, Transaction.enqueue,
            outbox.enqueue]


def test_the_declared_options_are_the_fields_of_the_job_record():
    assert set(JOB_OPTION_NAMES) == set(NewJob._fields) - {"payload"}


def test_every_enqueue_takes_the_one_declaration():
    for enqueue in ENQUEUES:
        parameters = inspect.signature(inspect.unwrap(enqueue)).parameters
        assert not set(JOB_OPTION_NAMES) & set(parameters), enqueue.__qualname__
        options = [p for p in parameters.values() if p.kind is p.VAR_KEYWORD]
        assert options and "Unpack[JobOptions]" in str(options[0].annotation), (
            enqueue.__qualname__)


def test_no_other_signature_of_the_package_spells_the_options_out():
    """A parameter list naming idempotency_key and max_attempts together is a second
    declaration of the options; only the job record (NewJob) and the declaration hold them."""
    found = []
    for path in Path(spark_queue.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = {a.arg for a in [*node.args.args, *node.args.kwonlyargs]}
                if {"idempotency_key", "max_attempts", "delay_ms"} <= names:
                    found.append(f"{path.name}:{node.name}")
    assert not found, found


def test_outbox_refuses_an_option_that_is_no_job_option():
    import pytest
    with pytest.raises(TypeError, match="unknown options \\['priorty'\\]"):
        outbox.enqueue(None, "q", "x", priorty=3)  # type: ignore[call-arg]
