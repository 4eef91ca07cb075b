"""The torn-tail producer scenario (tests/broker/torn_tail_scenario.py, issue 29) against a
one-node combined Apache Kafka 4.3.1 and a one-node combined kafkawire, the same raw requests:
every answer after the SIGKILL and the cut is the same, and so is what librdkafka's transactional
producer sees; Kafka's are still the ones tests/broker/test_torn_tail_producer.py checks
kafkawire against without Java."""
from __future__ import annotations

import pytest

from tests.broker.test_torn_tail_producer import kafkawire_answers
from tests.broker.torn_tail_scenario import (KAFKA_4_3_1, LIBRDKAFKA_ON_KAFKA_4_3_1, after_the_kill,
                                             librdkafka_answers, torn_tail_answers)
from tests.interop.kafka_procs import KafkaNode

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

CLUSTER_ID = "VG9yblRhaWxQcm9kdWNlcg"


def kafka_answers(node: KafkaNode, scenario=torn_tail_answers):
    node.format(CLUSTER_ID, "--standalone")
    node.start()
    node.wait_ready()

    def restart(cut):
        node.kill()
        left = cut(str(node.data_dir))
        node.start()
        return left
    return scenario(node.broker_address, restart)


def test_kafka_and_kafkawire_answer_a_producer_after_a_torn_tail_alike(kafka_node_factory, tmp_path):
    theirs = after_the_kill(kafka_answers(kafka_node(kafka_node_factory)))
    ours = after_the_kill(kafkawire_answers(tmp_path / "kafkawire"))
    assert ours == theirs
    assert theirs == KAFKA_4_3_1


def test_librdkafka_meets_a_torn_tail_on_kafka_and_kafkawire_alike(kafka_node_factory, tmp_path):
    pytest.importorskip("confluent_kafka")
    theirs = kafka_answers(kafka_node(kafka_node_factory), librdkafka_answers)
    assert kafkawire_answers(tmp_path / "kafkawire", librdkafka_answers) == theirs
    assert theirs == LIBRDKAFKA_ON_KAFKA_4_3_1


def kafka_node(kafka_node_factory) -> KafkaNode:
    return kafka_node_factory(1, "broker,controller", properties={
        "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"})
