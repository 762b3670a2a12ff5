"""A query that failed on a checkpoint a power cut tore: the error says how to repair it.

Spark reads the checkpoint before any of the connector's code runs, so it fails with its
own words (``Incomplete log file``, ``No content to map due to end-of-input``, the latter
from ``start()`` without the path). :func:`raise_if_torn` finds the query's checkpoint,
checks it read-only (:func:`spark_queue.checkpoint_repair.diagnose`) and, where it is
torn, raises :class:`~spark_queue.errors.CheckpointTornError` naming the torn files and
``sqliteq checkpoint repair PATH``, chained from Spark's error. Anything else is left
for the caller to re-raise unchanged.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from spark_queue.checkpoint_repair import diagnose, repair_advice
from spark_queue.errors import CheckpointError, CheckpointTornError

log = logging.getLogger(__name__)

# Where Spark names a checkpoint file in its error: "Failed to read log file
# file:/ckpt/offsets/5. Incomplete log file", "... from file:/ckpt/metadata".
_FILE_IN_ERROR = re.compile(r"(?:file:)?(/\S*?)/(?:offsets/\d+|commits/\d+|metadata)\b")
_OPTION = "checkpointlocation"


def writer_checkpoint(writer: Any) -> str | None:
    """The ``checkpointLocation`` option of a ``DataStreamWriter``, or None where it has none
    or it cannot be read (pyspark keeps a classic writer's options in the JVM only)."""
    proto = getattr(writer, "_write_proto", None)  # Spark Connect keeps them in its request
    if proto is not None:
        return next((v for k, v in proto.options.items() if k.lower() == _OPTION), None)
    jwrite = getattr(writer, "_jwrite", None)
    if jwrite is None:
        return None
    try:
        # A private field of Spark's DataStreamWriter (a case-insensitive map), read the
        # one way pyspark leaves open; on a Spark where it differs, the error text is left.
        kind = jwrite.getClass()
        while kind is not None:
            names = [field.getName() for field in kind.getDeclaredFields()]
            if "extraOptions" in names:
                field = kind.getDeclaredField("extraOptions")
                field.setAccessible(True)
                option = field.get(jwrite).get(_OPTION)
                return str(option.get()) if option.isDefined() else None
            kind = kind.getSuperclass()
    except Exception as exc:  # py4j: any JVM-side failure means "not known"
        log.debug("could not read the writer's checkpointLocation: %s", exc)
    return None


def error_checkpoint(error: BaseException) -> str | None:
    """The checkpoint directory a Spark error names through one of its files, or None."""
    found = _FILE_IN_ERROR.search(str(error))
    return found.group(1) if found else None


def raise_if_torn(error: Exception, checkpoint: str | None) -> None:
    """Raise :class:`CheckpointTornError` from ``error`` when the query's checkpoint
    (``checkpoint``, else the one ``error`` names) is torn; return otherwise."""
    for location in dict.fromkeys([checkpoint, error_checkpoint(error)]):
        if location is None:
            continue
        try:
            found = diagnose(location)
        except CheckpointError as exc:  # not local, or damaged beyond what a cut leaves
            log.warning("checkpoint %s: %s", location, exc)
            continue
        if found.torn:
            torn = tuple(line.split(":", 1)[0] for line in found.why)
            raise CheckpointTornError(
                repair_advice(found), checkpoint=found.checkpoint, torn=torn
            ) from error
