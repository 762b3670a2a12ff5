"""Streams: append-only topics with dense offsets (append, read, Arrow reads), consumers'
saved offsets, retention and topic administration. Never imports the ``queues`` wing."""
