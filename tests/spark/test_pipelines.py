"""The declarative-pipeline test (tests/smoke/test_pipelines.py) in the main suite too, on
its pyspark and the checkout's install: the matrix alone runs tests/smoke."""

from tests.smoke.test_pipelines import (  # noqa: F401  (collected here as well)
    test_two_pipeline_runs_put_every_event_once_into_the_queue_and_the_topic,
)
