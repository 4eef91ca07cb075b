"""A producer after its partition's leader lost the tail of its log (issue 29): a one-node
combined `kafkawire server-start` killed with SIGKILL, each partition's active segment cut inside
a batch, restarted; what the idempotent and transactional producers of
tests/broker/torn_tail_scenario.py are then answered is what Apache Kafka 4.3.1 answered the same
requests (KAFKA_4_3_1, written down from tests/interop/test_torn_tail_producer_vs_kafka.py's run):
OUT_OF_ORDER_SEQUENCE_NUMBER for a sequence past the last kept batch, a retry of a lost batch
appended again, one of a kept batch a duplicate, an unknown producer free to start anywhere but
under transaction version 2, and no error message in a refused batch's answer. librdkafka's
transactional producer whose acknowledged batch was lost meets the same fatal
OUT_OF_ORDER_SEQUENCE_NUMBER as against Kafka (LIBRDKAFKA_ON_KAFKA_4_3_1)."""
from __future__ import annotations

import pytest

from .test_combined_node import combined_node
from .torn_tail_scenario import (KAFKA_4_3_1, LIBRDKAFKA_ON_KAFKA_4_3_1, after_the_kill, librdkafka_answers,
                                 torn_tail_answers)

pytestmark = pytest.mark.slow       # 16-60 s: two restarts of a node on the loaded machine


def kafkawire_answers(base, scenario=torn_tail_answers):
    """``scenario`` (torn_tail_answers, librdkafka_answers) against a one-node combined kafkawire."""
    with combined_node(base, offsets_topic_replication_factor=1, offsets_topic_num_partitions=1,
                       transaction_state_log_replication_factor=1, transaction_state_log_min_isr=1,
                       transaction_state_log_num_partitions=1) as node:
        def restart(cut):
            node.quorum.kill(1)
            left = cut(node.data_dir)
            node.quorum.start(1)
            node.wait_unfenced()
            return left
        return scenario(node.bootstrap, restart)


def test_after_a_torn_tail_producers_are_answered_as_kafka_answers(tmp_path):
    assert after_the_kill(kafkawire_answers(tmp_path)) == KAFKA_4_3_1


def test_librdkafkas_transactional_producer_meets_the_lost_batch_as_against_kafka(tmp_path):
    pytest.importorskip("confluent_kafka")
    assert kafkawire_answers(tmp_path, librdkafka_answers) == LIBRDKAFKA_ON_KAFKA_4_3_1
