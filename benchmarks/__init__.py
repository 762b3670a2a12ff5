"""Benchmarks: `python -m benchmarks NAME`; each compares paths side by side in one run."""
