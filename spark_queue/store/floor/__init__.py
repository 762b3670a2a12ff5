"""The floor: what spans both wings of the store, streams and queues.

A feature that reads or writes the tables of both wings lives here, so the wings stay
about their own tables and never import each other: housekeeping (a topic's retention, a
queue's dead letters and TTL sweep, in one run), the sink's exactly-once ledger (a batch
published to a topic or enqueued to a queue, under one ledger row), ``store.transaction()``
(publish and enqueue in one transaction). The next ones belong here too: a bridge from a
topic to a queue, message groups fed from a topic, lineage from an event to its jobs. The
Producer uses both wings too, but through a Store of its own: it stands beside the face,
on the floor.

The rule (tests/test_layers.py): the floor imports the file layer, both wings and itself,
never the store's face above it (``store.py``, ``maintenance.py``, ``__init__``) nor the
connector, the CLI or the worker; the file layer and the wings never import the floor.
"""
