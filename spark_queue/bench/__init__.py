"""Benchmarks: `python -m spark_queue.bench NAME`; each compares paths side by side in one run."""
