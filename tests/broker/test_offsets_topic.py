"""``__consumer_offsets`` on the broker without a node (kafkawire.broker.group_log.OffsetsTopic
with a stand-in broker): the first FindCoordinator asks the controller to create it with Kafka's
topic configs and the offsets.topic.* settings, and is COORDINATOR_NOT_AVAILABLE until it exists;
a creation the controller refuses (three replicas on one node, Kafka's default) keeps it so,
warned about once. Once it exists any broker answers FindCoordinator with the endpoint of the
leader of the group's partition."""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from types import SimpleNamespace

from kafkawire.broker.group_apis import GroupApis
from kafkawire.broker.group_log import OffsetsTopic
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.create_topics_response import CreatableTopicResult, CreateTopicsResponse
from kafkawire.net.config import ServerConfig
from kafkawire.protocol.error_codes import Errors


class StandInBroker:
    def __init__(self, answer_code: int):
        self.config = SimpleNamespace(offsets_topic_num_partitions=3, offsets_topic_replication_factor=3,
                                      offsets_topic_segment_bytes=1 << 20)
        self.node_id = 1
        self.partitions: dict = {}
        self.unfenced = True
        self.sent: list = []
        self.answer_code = answer_code

    def image(self):
        return SimpleNamespace(topics_by_name={}, brokers={})

    async def send_to_controller(self, request, timeout_ms):
        self.sent.append(request)
        return CreateTopicsResponse(topics=[CreatableTopicResult(
            name=t.name, error_code=self.answer_code, error_message="Unable to replicate the partition 3 time(s)")
            for t in request.topics])


def test_find_coordinator_creates_the_topic_and_a_refused_creation_is_warned_about_once(caplog):
    async def go():
        broker = StandInBroker(Errors.INVALID_REPLICATION_FACTOR)
        store = OffsetsTopic(broker, coordinator=None, offsets=None)
        codes = []
        for _ in range(3):
            codes.append(store.find("group"))
            await store._creating
        return broker, codes
    with caplog.at_level(logging.WARNING, logger="kafkawire.broker.group_log"):
        broker, codes = asyncio.run(go())
    assert codes == [(Errors.COORDINATOR_NOT_AVAILABLE, -1)] * 3
    topic = broker.sent[0].topics[0]
    assert (topic.name, topic.num_partitions, topic.replication_factor) == ("__consumer_offsets", 3, 3)
    assert {c.name: c.value for c in topic.configs} == {"cleanup.policy": "compact", "compression.type": "producer",
                                                        "segment.bytes": str(1 << 20)}
    warnings = [r.getMessage() for r in caplog.records if "INVALID_REPLICATION_FACTOR" in r.getMessage()]
    assert len(broker.sent) == 3 and len(warnings) == 1


class TwoBrokerImage:
    """This broker (1) and broker 2, which leads the one __consumer_offsets partition."""

    def __init__(self, leader_fenced: bool):
        endpoint = SimpleNamespace(host="127.0.0.1", port=9192)
        self.node_id, self.unfenced, self.partitions = 1, True, {}
        self.config = SimpleNamespace(**{f.name: f.default for f in dataclasses.fields(ServerConfig)
                                         if f.default is not dataclasses.MISSING}, node_id=1)
        self._image = SimpleNamespace(
            topics_by_name={"__consumer_offsets": SimpleNamespace(partitions={0: SimpleNamespace(leader=2)})},
            brokers={1: SimpleNamespace(fenced=False, listeners={"PLAINTEXT": SimpleNamespace(host="h1", port=1)}),
                     2: SimpleNamespace(fenced=leader_fenced, listeners={"PLAINTEXT": endpoint})})

    def image(self):
        return self._image


def _find_coordinator(broker, version: int):
    apis = GroupApis(broker)
    context = SimpleNamespace(api_version=version, listener_name="PLAINTEXT")
    request = FindCoordinatorRequest(key="readers", key_type=0, coordinator_keys=["readers"])
    return asyncio.run(apis.find_coordinator(context, request))


def test_find_coordinator_at_any_broker_answers_the_endpoint_of_the_leader_of_the_groups_partition():
    """Kafka's getCoordinator: the leader of the group's __consumer_offsets partition, whichever
    broker is asked (a client asking a broker that does not coordinate the group is sent on)."""
    response = _find_coordinator(TwoBrokerImage(leader_fenced=False), version=4)
    assert [(c.error_code, c.node_id, c.host, c.port) for c in response.coordinators] == \
        [(Errors.NONE, 2, "127.0.0.1", 9192)]
    response = _find_coordinator(TwoBrokerImage(leader_fenced=False), version=3)
    assert (response.error_code, response.node_id, response.port) == (Errors.NONE, 2, 9192)


def test_find_coordinator_is_not_available_while_the_leader_of_the_groups_partition_is_fenced():
    """MetadataCache.getAliveBrokerNode: a fenced broker is no coordinator."""
    response = _find_coordinator(TwoBrokerImage(leader_fenced=True), version=4)
    assert [(c.error_code, c.node_id) for c in response.coordinators] == [(Errors.COORDINATOR_NOT_AVAILABLE, -1)]
