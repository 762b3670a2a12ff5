"""The demo pipeline behind ``make demo`` (an application of the library; imports pyspark)."""
