"""Kafka and back: copy topics, positions and captures between a store and Kafka.

The road for users who outgrow one machine (docs/outgrowing.md). Needs the Kafka
client, the ``kafka`` extra (``pip install 'spark-queue[kafka]'``); importing this
package does not, and every function that talks to Kafka names the extra when the
client is missing.
"""
