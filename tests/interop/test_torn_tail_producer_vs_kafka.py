"""The torn-tail producer scenario (tests/broker/torn_tail_scenario.py, issue 29) against a
one-node combined Apache Kafka 4.3.1 and a one-node combined kafkawire, the same raw requests:
every answer after the SIGKILL and the cut is the same, and Kafka's are still the ones
tests/broker/test_torn_tail_producer.py checks kafkawire against without Java."""
from __future__ import annotations

import pytest

from tests.broker.test_torn_tail_producer import kafkawire_answers
from tests.broker.torn_tail_scenario import KAFKA_4_3_1, after_the_kill, torn_tail_answers
from tests.interop.kafka_procs import KafkaNode

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

CLUSTER_ID = "VG9yblRhaWxQcm9kdWNlcg"


def kafka_answers(node: KafkaNode) -> dict:
    node.format(CLUSTER_ID, "--standalone")
    node.start()
    node.wait_ready()

    def restart(cut):
        node.kill()
        left = cut(str(node.data_dir))
        node.start()
        return left
    return torn_tail_answers(("127.0.0.1", node.broker_port), restart)


def test_kafka_and_kafkawire_answer_a_producer_after_a_torn_tail_alike(kafka_node_factory, tmp_path):
    theirs = after_the_kill(kafka_answers(kafka_node_factory(1, "broker,controller", properties={
        "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"})))
    ours = after_the_kill(kafkawire_answers(tmp_path / "kafkawire"))
    assert ours == theirs
    assert theirs == KAFKA_4_3_1
