"""The naming rule for topics, queues, consumers and sinks.

Names are bound as SQL parameters everywhere, never spliced into SQL; the rule
exists so names stay portable (file names, metric labels, CLI arguments).
"""

from __future__ import annotations

import re

from spark_queue.errors import InvalidNameError

MAX_NAME_LENGTH = 200
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


def validate_name(name: object, kind: str = "topic") -> str:
    """Return ``name`` if it is a valid ``kind`` name, else raise InvalidNameError."""
    if not isinstance(name, str):
        raise InvalidNameError(
            f"{kind} name must be a string; got {type(name).__name__} {name!r}."
        )
    if not name or len(name) > MAX_NAME_LENGTH or not _NAME.fullmatch(name):
        raise InvalidNameError(
            f"invalid {kind} name {name!r}: use 1 to {MAX_NAME_LENGTH} characters "
            "from letters, digits, '_', '.' and '-'."
        )
    return name
