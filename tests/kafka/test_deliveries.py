"""A topic's delivery answers vouch for a prefix: each must name the offset its record was meant
for, and the first that does not (refused, or landed elsewhere) ends what they vouch for.
No broker: the link's producer writes these answers; tests/kafka/test_export*.py run it."""

from __future__ import annotations

from spark_queue.kafka.deliveries import Delivered, TopicDeliveries
from spark_queue.kafka.link_types import DeliveryFailure


def test_answers_count_up_from_where_the_first_record_was_meant_to_land():
    track = TopicDeliveries(40)
    track.sent += 3
    for offset in (40, 41):
        track.answered(offset, None)
    assert track.now() == Delivered(sent=43, upto=42)
    assert not track.now().stopped


def test_a_record_landing_elsewhere_stops_the_count_at_the_offset_it_was_meant_for():
    track = TopicDeliveries(0)
    for offset in (0, 5, 1, 2):  # another producer took offset 1: ours landed at 5
        track.answered(offset, None)
    assert track.now() == Delivered(sent=0, upto=1, landed_at=5)
    assert track.now().stopped


def test_the_first_refusal_is_kept_and_later_answers_change_nothing():
    track = TopicDeliveries(7)
    timed_out = DeliveryFailure("Local: Message timed out", transient=True)
    track.answered(-1, timed_out)
    track.answered(7, None)
    track.answered(-1, DeliveryFailure("another", transient=False))
    assert track.now() == Delivered(sent=7, upto=7, failure=timed_out)
    assert track.now().stopped
