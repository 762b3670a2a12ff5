"""The file layer: opening the SQLite file (pragmas, locks, error translation, the clock),
its schema and migrations (with the publish view they install), payload encoding, names
and payload limits. It imports neither wing (``streams``, ``queues``)."""
