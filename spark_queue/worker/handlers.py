"""The handler a worker runs, named as ``module:function`` (the CLI's HANDLER argument)."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from spark_queue.errors import QueueConfigError
from spark_queue.worker.task import Handler


def load_handler(spec: str) -> Handler:
    """Import ``module:function`` (the current directory is importable, like ``python -m``)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise QueueConfigError(
            f"handler must look like 'module:function' (e.g. 'tasks:send_email'); got {spec!r}."
        )
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise QueueConfigError(f"cannot import handler module {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise QueueConfigError(
                f"handler module {module_name!r} has no attribute {attr!r}."
            ) from exc
    if not callable(target):
        raise QueueConfigError(f"handler {spec!r} is not callable.")
    return target
