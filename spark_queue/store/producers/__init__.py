"""The thread-safe :class:`~spark_queue.store.Producer`: calls from many threads, written
together in few transactions (group commit). Uses both wings, like the Store."""
