"""Kafka 4.3.1's Java KafkaShareConsumer (KIP-932) on kafkawire's broker (issue 29): the session's
embedded broker serves ShareGroupHeartbeat, ShareFetch and ShareAcknowledge to it.
tests/interop/java/share/ShareConsume.java (run by java's source launcher against the Kafka jars, one
JVM) creates a topic, sets the group's share.auto.offset.reset=earliest, produces 50 records, consumes
and acknowledges every one of them, then a second member of the group sees only a record produced
after: acknowledged records are not delivered again. Then Kafka's kafka-share-groups (in the shared
tool JVM) describes the group's start offsets and resets them to the earliest
(DescribeShareGroupOffsets, AlterShareGroupOffsets).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.interop import kafka_dist

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

SOURCE = Path(__file__).parent / "java" / "share" / "ShareConsume.java"
COUNT = 50


@pytest.mark.kafka
def test_a_java_share_consumer_consumes_acknowledges_and_does_not_see_records_again(kafka_libs, kafkawire_broker):
    command = kafka_dist.java_command(str(SOURCE), kafkawire_broker.bootstrap_servers, "java-share", "java-share-group",
                                      str(COUNT), "60000", "1500")
    result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.startswith(("consumed", "after")))
    assert lines.get("consumed") == f"{COUNT} distinct {COUNT} delivery-max 1", result.stdout + result.stderr[-3000:]
    assert lines.get("after") == "1 late", result.stdout + result.stderr[-3000:]
    _kafka_share_groups_describe_and_reset(kafkawire_broker)


SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"


def _offsets(broker) -> dict:
    """kafka-share-groups --describe (its default --offsets view): partition -> (start offset, lag)."""
    from tests.interop.broker_judges import kafka_tool, table
    out = kafka_tool(SHARE_GROUPS, "--bootstrap-server", broker.bootstrap_servers, "--describe",
                     "--group", "java-share-group")
    return {int(r["PARTITION"]): (int(r["START-OFFSET"]), int(r["LAG"])) for r in table(out, "GROUP")
            if r["TOPIC"] == "java-share"}


def _kafka_share_groups_describe_and_reset(broker):
    """Kafka's kafka-share-groups on the group the Java consumers left (Empty): --describe shows
    each share-partition's start and lag (every record but maybe the late one acknowledged: the
    start offset written with the last acknowledgement, its records in the delivery-complete
    count, as Kafka's leader writes them), and
    --reset-offsets --to-earliest --execute starts both again at 0, all COUNT + 1 records lagging
    (DescribeShareGroupOffsets and AlterShareGroupOffsets)."""
    from tests.interop.broker_judges import kafka_tool
    before = _offsets(broker)
    assert sorted(before) == [0, 1] and sum(lag for _, lag in before.values()) <= 1, before
    kafka_tool(SHARE_GROUPS, "--bootstrap-server", broker.bootstrap_servers, "--reset-offsets", "--to-earliest",
               "--execute", "--group", "java-share-group", "--topic", "java-share")
    after = _offsets(broker)
    assert [start for start, _ in after.values()] == [0, 0] and sum(lag for _, lag in after.values()) == COUNT + 1, \
        after
