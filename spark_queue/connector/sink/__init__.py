"""The sink side of ``sqliteq``: options, the layout planned from the DataFrame's schema, row
encoding, the commit message and the batch and stream writers. Never imports ``source``;
importing the package loads no pyspark (its options module neither)."""
