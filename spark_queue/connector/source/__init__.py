"""The source side of ``sqliteq``: options, schemas, offsets, admission control, partition
planning and the stream, simple-stream and batch readers. Never imports ``sink``; importing
the package loads no pyspark (its options module neither)."""
