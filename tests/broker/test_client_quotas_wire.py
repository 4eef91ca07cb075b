"""Byte-rate quotas set through AlterClientQuotas throttle confluent-kafka clients on a kafkawire
broker (kafkawire.broker.quotas): librdkafka hears nonzero throttle times (its throttle_cb), a
producer's acknowledged rate stays near its producer_byte_rate, and a consumer reads no faster
than its consumer_byte_rate allows."""
from __future__ import annotations

import asyncio
import time

import pytest

from kafkawire.messages.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.describe_client_quotas_request import ComponentData, DescribeClientQuotasRequest
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                 IncrementalAlterConfigsRequest)
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.net.client import NetworkClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.framing import encode_request
from kafkawire.testing import EmbeddedBroker

from .kafka_python_roundtrip import create_topic
from .wire import call

confluent_kafka = pytest.importorskip("confluent_kafka")

QUOTA = 100_000                  # bytes per second
SPAN_S = 4.0                     # how long the producer pushes as fast as it is let
VALUE = b"x" * 1000


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    # Two samples of one second: a first burst may take one second's worth of a quota.
    with EmbeddedBroker(tmp_path_factory.mktemp("quotas"),
                        properties={"quota.window.num": 2, "quota.window.size.seconds": 1,
                                    "controller.quota.window.num": 2}) as node:
        yield node


def set_quota(broker, client_id: str, key: str, value: float) -> None:
    altered = call(broker, AlterClientQuotasRequest(validate_only=False, entries=[EntryData(
        entity=[EntityData(entity_type="client-id", entity_name=client_id)],
        ops=[OpData(key=key, value=value, remove=False)])]), 1)
    assert [e.error_code for e in altered.entries] == [0]

    def described() -> bool:      # the broker answers DescribeClientQuotas from the image it enforces
        answer = call(broker, DescribeClientQuotasRequest(components=[
            ComponentData(entity_type="client-id", match_type=0, match=client_id)], strict=False), 1)
        return [[(v.key, v.value) for v in e.values] for e in answer.entries] == [[(key, value)]]
    _wait(described, 10, f"{key} of {client_id} in the broker's image")


def _wait(condition, bound_s: float, what: str) -> None:
    deadline = time.monotonic() + bound_s
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {bound_s} s"
        time.sleep(0.05)


def test_a_producer_over_its_quota_is_throttled_to_about_the_quota(broker):
    create_topic(broker.bootstrap_servers, "quota-produce", 1)
    set_quota(broker, "quota-producer", "producer_byte_rate", float(QUOTA))
    throttles: list[float] = []
    acked: list[int] = []
    producer = confluent_kafka.Producer({
        "bootstrap.servers": broker.bootstrap_servers, "client.id": "quota-producer", "acks": 1, "linger.ms": 5,
        "batch.size": 16384, "throttle_cb": lambda event: throttles.append(event.throttle_time * 1000)})

    def delivered(error, message):
        if error is None:
            acked.append(len(message.value()))

    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < SPAN_S:
        if sent - len(acked) < 32:         # a few batches in flight, not a queue to drain later
            producer.produce("quota-produce", VALUE, callback=delivered)
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


def test_a_consumer_over_its_quota_reads_no_faster_than_the_quota(broker):
    stored = 500
    create_topic(broker.bootstrap_servers, "quota-consume", 1)
    # Batches of at most 10 records (10 kB), well under what the quota lets one fetch carry: a first
    # batch bigger than that goes whole (minOneMessage) and is throttled at every try, as in Kafka
    # (KafkaApis caps the fetch's max bytes to the quota window, not a batch), so the consumer would
    # never get past it. librdkafka batches by time, and 500 records in one batch happened.
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5,
                                         "batch.num.messages": 10})
    for _ in range(stored):
        producer.produce("quota-consume", VALUE)
    assert producer.flush(30) == 0
    quota = 2 * QUOTA
    set_quota(broker, "quota-consumer", "consumer_byte_rate", float(quota))
    throttles: list[float] = []
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": broker.bootstrap_servers, "client.id": "quota-consumer", "group.id": "quota-readers",
        "enable.auto.commit": False, "fetch.wait.max.ms": 100,
        "throttle_cb": lambda event: throttles.append(event.throttle_time * 1000)})
    try:
        consumer.assign([confluent_kafka.TopicPartition("quota-consume", 0, 0)])     # no group join
        got = 0
        start = time.monotonic()
        deadline = start + 20
        while got < stored and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                got += 1
        elapsed = time.monotonic() - start
    finally:
        consumer.close()

    assert got == stored
    assert throttles and max(throttles) > 0, "librdkafka heard no throttle time"
    # A fetch may take at most one window of the quota (maxValueInQuotaWindow), and the first
    # window's worth goes at once: the rest needs at least (stored - 2 windows) / quota.
    assert elapsed >= (stored * len(VALUE) - 2 * quota) / quota, elapsed


def test_topic_creation_through_the_broker_over_the_controller_mutation_rate_is_refused_and_throttled(broker):
    """The broker forwards CreateTopics with the client's id; the controller's mutation quota
    (2 windows x 1 s x 1 partition/s = 2 tokens) refuses the topic that finds it below zero."""
    set_quota(broker, "mutator", "controller_mutation_rate", 1.0)
    host, port = broker.bootstrap_servers.rsplit(":", 1)

    async def create(names):
        client = NetworkClient(client_id="mutator")
        try:
            return await client.send((host, int(port)), CreateTopicsRequest(topics=[
                CreatableTopic(name=n, num_partitions=p, replication_factor=1) for n, p in names], timeout_ms=10_000),
                api_version=7)
        finally:
            await client.close()
    answer = asyncio.run(create([("mutate-a", 2), ("mutate-b", 1), ("mutate-c", 1)]))
    assert [(t.name, t.error_code) for t in answer.topics] == [("mutate-a", 0), ("mutate-b", 0), ("mutate-c", 89)]
    assert 0 < answer.throttle_time_ms <= 1000      # -1 token at 1/s, less the time since


def test_an_ip_quota_in_the_brokers_image_closes_the_connection_over_its_rate_unserved(broker):
    """AlterClientQuotas sets connection_creation_rate=1 for 127.0.0.2 (the other tests connect
    from 127.0.0.1); the broker's listener reads it from its image: from 127.0.0.2 the first
    connection is served, the second, over 1 per second, is closed without an answer."""
    altered = call(broker, AlterClientQuotasRequest(validate_only=False, entries=[EntryData(
        entity=[EntityData(entity_type="ip", entity_name="127.0.0.2")],
        ops=[OpData(key="connection_creation_rate", value=1.0, remove=False)])]), 1)
    assert [e.error_code for e in altered.entries] == [0]

    def described() -> bool:
        answer = call(broker, DescribeClientQuotasRequest(components=[
            ComponentData(entity_type="ip", match_type=0, match="127.0.0.2")], strict=False), 1)
        return len(answer.entries) == 1
    _wait(described, 10, "the ip quota in the broker's image")
    host, port = broker.bootstrap_servers.rsplit(":", 1)

    async def from_other_address():
        # both opened back to back (the second well within the first's second), then asked
        streams = [await asyncio.open_connection(host, int(port), local_addr=("127.0.0.2", 0)) for _ in range(2)]
        answers = []
        for correlation_id, (reader, writer) in enumerate(streams):
            try:
                writer.write(encode_request(MetadataRequest(topics=[]), 12, correlation_id, client_id="ip-test"))
                await writer.drain()
                answers.append(len(await asyncio.wait_for(reader.read(4), 10)) == 4)
            except ConnectionError:
                answers.append(False)
            finally:
                writer.close()
        return answers
    assert asyncio.run(from_other_address()) == [True, False]


def test_topics_a_metadata_request_creates_count_against_the_clients_controller_mutation_rate(broker):
    """Auto-creation goes to the controller on behalf of the client (an Envelope with its client
    id, as Kafka's KRaftTopicCreator): with 0.1 token (2 windows x 1 s x 0.05/s), the first of four
    one-partition topics asked for one by one is created and takes the tokens below zero, and the
    others are refused, THROTTLING_QUOTA_EXCEEDED, until 18 s have refilled them. (At 1/s, 2 tokens,
    the fourth was refused only if the four creations took under a second: a loaded machine's
    creations refilled a token, and the fourth was created.) The tokens' arithmetic is the
    CreateTopics test's above."""
    set_quota(broker, "auto-mutator", "controller_mutation_rate", 0.05)
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    names = [f"auto-mutated-{i}" for i in range(4)]

    async def ask(client, name, auto):
        return await client.send((host, int(port)), MetadataRequest(
            topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=auto), api_version=12)

    async def scenario():
        client = NetworkClient(client_id="auto-mutator")
        try:
            for name in names:
                await ask(client, name, True)
                deadline = time.monotonic() + 60        # each creation done (or refused) before the next
                while time.monotonic() < deadline:
                    if (await ask(client, name, False)).topics[0].error_code == 0 or \
                            f"Auto topic creation failed for {name}" in broker.log_tail(200):
                        break
                    await asyncio.sleep(0.05)
            return [(await ask(client, name, False)).topics[0].error_code for name in names]
        finally:
            await client.close()
    assert asyncio.run(scenario()) == [0] + [int(Errors.UNKNOWN_TOPIC_OR_PARTITION)] * 3
    for name in names[1:]:
        assert f"Auto topic creation failed for {name} with error 'THROTTLING_QUOTA_EXCEEDED'" in broker.log_tail(200)


def test_streams_internal_topics_are_created_on_the_members_behalf_and_a_throttled_one_is_reported(broker):
    """A streams group's internal topics go to the controller in an Envelope on behalf of the
    member's client (AutoTopicCreationManager.createStreamsInternalTopics): they count against its
    controller_mutation_rate (2 tokens here). Group a's changelog (8 partitions) is created and takes
    the bucket to -6; group b's, asked for within the 6 s it takes to refill, is refused
    THROTTLING_QUOTA_EXCEEDED. The heartbeat answers are not throttled; b's later ones report the
    refusal in the MISSING_INTERNAL_TOPICS status for twice the heartbeat interval (10 s), during
    which the broker does not ask the controller again."""
    from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
    from kafkawire.messages.streams_group_heartbeat_request import (StreamsGroupHeartbeatRequest, Subtopology,
                                                                    TopicInfo, Topology)
    create_topic(broker.bootstrap_servers, "streams-quota-in", 8)
    set_quota(broker, "streams-app", "controller_mutation_rate", 1.0)
    host, port = broker.bootstrap_servers.rsplit(":", 1)

    def heartbeat(group: str, epoch: int):
        topology = Topology(epoch=1, subtopologies=[Subtopology(
            subtopology_id="0", source_topics=["streams-quota-in"],
            state_changelog_topics=[TopicInfo(name=f"{group}-store-changelog", topic_configs=[])])])
        return StreamsGroupHeartbeatRequest(
            group_id=group, member_id=f"{group}-member", member_epoch=epoch, rebalance_timeout_ms=30_000,
            topology=topology if epoch == 0 else None, process_id="process-1", active_tasks=[], standby_tasks=[],
            warmup_tasks=[])

    def missing_detail(answer) -> str:           # the MISSING_INTERNAL_TOPICS status's detail
        return next((s.status_detail for s in answer.status or [] if s.status_code == 3), "")

    async def exists(client, name) -> bool:
        answer = await client.send((host, int(port)), MetadataRequest(
            topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=False), api_version=12)
        return answer.topics[0].error_code == 0

    async def scenario():
        client = NetworkClient(client_id="streams-app")
        try:
            async def send(request, version):
                return await client.send((host, int(port)), request, api_version=version)
            deadline = time.monotonic() + 20          # the first FindCoordinator creates __consumer_offsets
            while (await send(FindCoordinatorRequest(key_type=0, coordinator_keys=["streams-quota-a"]),
                              4)).coordinators[0].error_code != 0:
                assert time.monotonic() < deadline, "no group coordinator"
                await asyncio.sleep(0.05)
            joined_a = await send(heartbeat("streams-quota-a", 0), 0)
            while not await exists(client, "streams-quota-a-store-changelog"):
                assert time.monotonic() < deadline, "group a's changelog topic not created"
                await asyncio.sleep(0.02)
            answers = [await send(heartbeat("streams-quota-b", 0), 0)]
            while "Creation failed" not in missing_detail(answers[-1]):
                assert time.monotonic() < deadline, f"no creation failure reported: {answers[-1]}"
                await asyncio.sleep(0.05)
                answers.append(await send(heartbeat("streams-quota-b", answers[0].member_epoch), 0))
            answers.append(await send(heartbeat("streams-quota-b", answers[0].member_epoch), 0))
            return joined_a, answers, await exists(client, "streams-quota-b-store-changelog")
        finally:
            await client.close()
    joined_a, answers, b_created = asyncio.run(scenario())
    assert (joined_a.error_code, missing_detail(joined_a)) == (0, "Internal topics are missing: "
                                                                  "streams-quota-a-store-changelog")
    assert [(a.error_code, a.throttle_time_ms) for a in answers] == [(0, 0)] * len(answers)
    missing = "Internal topics are missing: streams-quota-b-store-changelog"
    assert missing_detail(answers[0]) == missing
    assert [missing_detail(a) for a in answers[-2:]] == [
        missing + "; Creation failed: streams-quota-b-store-changelog (The throttling quota has been exceeded.)."] * 2
    assert not b_created
    assert broker.log_tail(400).count("Creating the streams internal topic streams-quota-b-store-changelog") == 1


def test_a_dynamic_max_connections_per_ip_override_applies_without_a_restart_and_goes_when_deleted(broker):
    """``max.connections.per.ip.overrides=127.0.0.3:0`` set for every broker through
    IncrementalAlterConfigs (as `kafka-configs --entity-type brokers --entity-default` sets it):
    the broker's listener takes it from its image with no restart, and a connection from 127.0.0.3
    is closed unanswered (the other tests connect from 127.0.0.1, untouched); deleted, 127.0.0.3 is
    served again."""
    def alter(operation: int) -> None:
        answer = call(broker, IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=4, resource_name="", configs=[AlterableConfig(
                name="max.connections.per.ip.overrides", config_operation=operation, value="127.0.0.3:0")])]), 1)
        assert [r.error_code for r in answer.responses] == [0], answer
    host, port = broker.bootstrap_servers.rsplit(":", 1)

    def served_from_127_0_0_3() -> bool:
        async def ask():
            reader, writer = await asyncio.open_connection(host, int(port), local_addr=("127.0.0.3", 0))
            try:
                writer.write(encode_request(MetadataRequest(topics=[]), 12, 1, client_id="per-ip-test"))
                await writer.drain()
                async with asyncio.timeout(10):
                    return len(await reader.read(4)) == 4      # b"" when the broker closed it
            except ConnectionError:
                return False
            finally:
                writer.close()
        return asyncio.run(ask())

    assert served_from_127_0_0_3()
    alter(0)                                                             # SET
    _wait(lambda: not served_from_127_0_0_3(), 10, "the dynamic override refusing 127.0.0.3")
    assert call(broker, MetadataRequest(topics=[]), 12).brokers             # 127.0.0.1 still served
    alter(1)                                                             # DELETE
    _wait(served_from_127_0_0_3, 10, "127.0.0.3 served again once the override is deleted")
