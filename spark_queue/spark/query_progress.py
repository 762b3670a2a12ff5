"""Reading what Spark reports about a streaming query, the same way on pyspark 4.0 to 4.3.

A ``StreamingQueryProgress`` carries each source's offsets as text that Spark
got from the source. pyspark 4.2+ hands back the source's JSON
(``{"orders": 250}``); pyspark 4.0 and 4.1 hand back the Python ``repr`` of
the parsed value (``{'orders': 250}``), which ``json.loads`` refuses.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from spark_queue.connector.offset_json import SourceOffset


def offsets(value: Any) -> dict[str, int]:
    """``{topic: next_offset}`` from a progress report's ``startOffset``, ``endOffset`` or
    ``latestOffset``: a mapping, JSON text, the Python ``repr`` pyspark 4.0/4.1 give, or None
    or JSON ``null`` (no offset yet: a new query's first batch starts from nothing) for an
    empty mapping. A topic whose offset is null (``latestOffset`` of a named topic that does
    not exist yet) has no offset and is left out, and so are the store's identity (``@store``),
    the last events' fingerprints (``@last``) and the query's id (``@reader``), which the source
    records beside the topics."""
    parsed = _parsed(value)
    if parsed is None:
        return {}
    reported = SourceOffset.from_report(parsed)
    if reported is None:
        raise ValueError(f"not a source offset ({{topic: offset}}): {value!r}")
    return reported.positions


def _parsed(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ValueError(f"not a source offset: {value!r}") from None


def end_offset(progress: Any, topic: str, source: int = 0) -> int:
    """The offset up to which a query's last batch read ``topic`` (0 before its first batch).

    ``progress`` is ``query.lastProgress``: None, a dict, or pyspark's progress object.
    """
    return _source_offset(progress, "endOffset", topic, source)


def start_offset(progress: Any, topic: str, source: int = 0) -> int:
    """The offset of ``topic`` a batch started from: where the checkpoint stood for the first
    batch of a restarted query, 0 for a new query's first batch (Spark reports None)."""
    return _source_offset(progress, "startOffset", topic, source)


def _source_offset(progress: Any, field: str, topic: str, source: int) -> int:
    if not progress:
        return 0
    sources = progress["sources"]
    if len(sources) <= source:
        return 0
    return offsets(sources[source][field]).get(topic, 0)


def query_id(progress: Any, source: int = 0) -> str | None:
    """The id a sqliteq source gave its query (``@reader`` in the last batch's ``endOffset``):
    under ``consumer``, the one its own position is saved under
    (``Store.commit_offsets(..., reader=)``); None in offsets written before ids."""
    if not progress or len(progress["sources"]) <= source:
        return None
    reported = SourceOffset.from_report(_parsed(progress["sources"][source]["endOffset"]))
    return None if reported is None else reported.reader


def input_rows(progress: Any) -> int:
    """Rows a micro-batch read, over all of its sources. A classic session's progress
    carries the total; a Spark Connect one's (serverless) only each source's count."""
    total = progress["numInputRows"]
    if total is None:
        return sum(int(source["numInputRows"] or 0) for source in progress["sources"])
    return int(total)
