"""A producer_byte_rate quota set through AlterClientQuotas throttles a confluent-kafka producer
on a kafkawire broker: librdkafka hears nonzero throttle times (its throttle_cb) and the rate it
gets acknowledged stays near the quota (kafkawire.broker.quotas)."""
from __future__ import annotations

import time

import pytest

from kafkawire.messages.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kafkawire.messages.describe_client_quotas_request import ComponentData, DescribeClientQuotasRequest
from kafkawire.testing import EmbeddedBroker

from .kafka_python_roundtrip import create_topic
from .wire import call

confluent_kafka = pytest.importorskip("confluent_kafka")

QUOTA = 100_000                  # bytes per second
CLIENT_ID = "quota-producer"
SPAN_S = 4.0                     # how long the producer pushes as fast as it is let
VALUE = b"x" * 1000


def _quota_described(broker) -> bool:
    described = call(broker, DescribeClientQuotasRequest(components=[
        ComponentData(entity_type="client-id", match_type=0, match=CLIENT_ID)], strict=False), 1)
    return [[(v.key, v.value) for v in e.values] for e in described.entries] == [[("producer_byte_rate", QUOTA)]]


def _wait(condition, bound_s: float, what: str) -> None:
    deadline = time.monotonic() + bound_s
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {bound_s} s"
        time.sleep(0.05)


def test_a_producer_over_its_quota_is_throttled_to_about_the_quota(tmp_path):
    # Two samples of one second: a first burst may take one second's worth of the quota.
    with EmbeddedBroker(tmp_path / "node", properties={"quota.window.num": 2, "quota.window.size.seconds": 1}) \
            as broker:
        create_topic(broker.bootstrap_servers, "quota-topic", 1)
        altered = call(broker, AlterClientQuotasRequest(validate_only=False, entries=[EntryData(
            entity=[EntityData(entity_type="client-id", entity_name=CLIENT_ID)],
            ops=[OpData(key="producer_byte_rate", value=float(QUOTA), remove=False)])]), 1)
        assert [e.error_code for e in altered.entries] == [0]
        _wait(lambda: _quota_described(broker), 10, "quota in the broker's image")

        throttles: list[int] = []
        acked: list[int] = []
        producer = confluent_kafka.Producer({
            "bootstrap.servers": broker.bootstrap_servers, "client.id": CLIENT_ID, "acks": 1, "linger.ms": 5,
            "batch.size": 16384, "throttle_cb": lambda event: throttles.append(event.throttle_time * 1000)})

        def delivered(error, message):
            if error is None:
                acked.append(len(message.value()))

        start = time.monotonic()
        sent = 0
        while time.monotonic() - start < SPAN_S:
            if sent - len(acked) < 32:         # a few batches in flight, not a queue to drain later
                producer.produce("quota-topic", VALUE, callback=delivered)
                sent += 1
            producer.poll(0.001)
        elapsed = time.monotonic() - start
        acked_in_span = sum(acked)
        producer.purge()
        producer.flush(5)

    assert throttles and max(throttles) > 0, "librdkafka heard no throttle time"
    rate = acked_in_span / elapsed
    # At most the quota over the span plus the one-window first burst, plus a batch past it;
    # request and batch headers count against the quota, so the values come a little under.
    assert rate <= QUOTA * (SPAN_S + 1) / SPAN_S + 16384 / SPAN_S, rate
    assert rate >= QUOTA * 0.6, rate
