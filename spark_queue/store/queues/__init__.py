"""Work queues: the :class:`~spark_queue.store.Queue` handle, jobs (enqueue, claim), leases
(ack, nack, extend), controls (pause, lease cap, rate limit), settings and administration.
Never imports the ``streams`` wing."""
