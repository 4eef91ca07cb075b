"""``__consumer_offsets`` on the broker without a node (kafkawire.broker.group_log.OffsetsTopic
with a stand-in broker): the first FindCoordinator asks the controller to create it with Kafka's
topic configs and the offsets.topic.* settings, and is COORDINATOR_NOT_AVAILABLE until it exists;
a creation the controller refuses (three replicas on one node, Kafka's default) keeps it so,
warned about once."""
from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from kafkawire.broker.group_log import OffsetsTopic
from kafkawire.messages.create_topics_response import CreatableTopicResult, CreateTopicsResponse
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
    assert codes == [Errors.COORDINATOR_NOT_AVAILABLE] * 3
    topic = broker.sent[0].topics[0]
    assert (topic.name, topic.num_partitions, topic.replication_factor) == ("__consumer_offsets", 3, 3)
    assert {c.name: c.value for c in topic.configs} == {"cleanup.policy": "compact", "compression.type": "producer",
                                                        "segment.bytes": str(1 << 20)}
    warnings = [r.getMessage() for r in caplog.records if "INVALID_REPLICATION_FACTOR" in r.getMessage()]
    assert len(broker.sent) == 3 and len(warnings) == 1
