"""Share groups' metrics (kafkawire.broker.share_metrics) moving with real share-group traffic:
a combined node of this test alone with its Prometheus endpoint on, one share consumer's raw
requests (join, fetch, acknowledge with each type, a lock left to pass), then one scrape checked
against what the requests did: acknowledgements by type, share-partition loads, each fetch's
acquired share and time, the in-flight window and lock timeouts per share-partition, the
acquired ranges, the group coordinator's share-group counts and rebalances, the share
coordinator's writes, and the topic's share meters. Killed by pid at the end.
"""
from __future__ import annotations

import time
import uuid

import pytest

from kafkawire.broker.share_partition import ACCEPT, REJECT, RELEASE
from kafkawire.messages.share_acknowledge_request import (AcknowledgementBatch as AckBatch, AcknowledgePartition,
                                                          AcknowledgeTopic, ShareAcknowledgeRequest)
from kafkawire.messages.share_group_describe_request import ShareGroupDescribeRequest
from kafkawire.net.config import PROMETHEUS_REPORTER
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import free_ports
from kafkawire.testing import EmbeddedBroker

from .test_broker_only_node import scrape
from .test_share_groups_wire import (GROUP, assigned_once_initialized, create_topic, delivered, heartbeat, produce,
                                     share_fetch, wait_for_coordinator)
from .wire import call

pytest.importorskip("prometheus_client")
TOPIC = "share-metrics"
# The records' acquisition lock. Not the shortest Kafka allows (1 s): the acknowledgement must
# come within it of the fetch, and the scrape within it of the last delivery (or the locks pass
# once more), which a loaded machine's stall of a second broke.
LOCK_MS = 5000


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def test_share_group_metrics_move_with_a_consumers_traffic(tmp_path):
    port, = free_ports(1)
    with EmbeddedBroker(tmp_path / "node", properties={
            "metric.reporters": PROMETHEUS_REPORTER, "kafkawire.metrics.prometheus.listener": f"http://127.0.0.1:{port}",
            "group.share.min.record.lock.duration.ms": LOCK_MS, "group.share.record.lock.duration.ms": LOCK_MS}) as node:
        topic_id = create_topic(node, TOPIC, 2)
        member = str(uuid.uuid4())
        wait_for_coordinator(node)
        heartbeat(node, member, 0, [TOPIC])
        epoch = assigned_once_initialized(node, member, 1).member_epoch
        fetches = [share_fetch(node, member, 0, topic_id, [0, 1])]          # opens the session: nothing yet
        produce(node, TOPIC, 0, [b"a", b"b", b"c", b"d", b"e", b"f"])
        fetches.append(share_fetch(node, member, 1, topic_id, [], wait_ms=5_000))
        assert delivered(fetches[-1])[0] == ([b"a", b"b", b"c", b"d", b"e", b"f"], [(0, 5, 1)])
        acked = call(node, ShareAcknowledgeRequest(group_id=GROUP, member_id=member, share_session_epoch=2, topics=[
            AcknowledgeTopic(topic_id=topic_id, partitions=[AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                AckBatch(first_offset=0, last_offset=5, acknowledge_types=[ACCEPT, ACCEPT, RELEASE, REJECT, ACCEPT,
                                                                           RELEASE])])])]), 2)
        assert acked.responses[0].partitions[0].error_code == Errors.NONE
        fetches.append(share_fetch(node, member, 3, topic_id, [], wait_ms=5_000))
        assert delivered(fetches[-1])[0][1] == [(2, 2, 2), (5, 5, 2)]          # the released ones, again
        # left unacknowledged: their locks pass and they come back once more (bounded)
        deadline, session_epoch = time.monotonic() + 10 * LOCK_MS / 1000, 4
        while not delivered(fetches[-1]).get(0, ([], []))[1] or delivered(fetches[-1])[0][1][0][2] != 3:
            assert time.monotonic() < deadline, "the acquisition locks did not pass"
            fetches.append(share_fetch(node, member, session_epoch, topic_id, [], wait_ms=LOCK_MS))
            session_epoch += 1
        assert delivered(fetches[-1])[0][1] == [(2, 2, 3), (5, 5, 3)]
        group_epoch = call(node, ShareGroupDescribeRequest(group_ids=[GROUP]), 1).groups[0].group_epoch
        samples = scrape(port)

    group, p0, p1 = {"group": GROUP}, {"group": GROUP, "topic": TOPIC, "partition": "0"}, \
        {"group": GROUP, "topic": TOPIC, "partition": "1"}
    prefix = "kafka_server_sharegroupmetrics_"
    assert [value(samples, prefix + "recordacknowledgements_total", ackType=t)
            for t in ("Accept", "Release", "Reject", "Renew")] == [3.0, 2.0, 1.0, 0.0]
    assert value(samples, prefix + "partitionloadtimems_count") == 2.0           # the two share-partitions, once each
    # a fetch acquires from one of its two partitions at most: 50 % (the opening fetch: 0 %)
    assert value(samples, prefix + "requesttopicpartitionsfetchratio_count", **group) == len(fetches)
    assert value(samples, prefix + "requesttopicpartitionsfetchratio", **group, quantile="0.999") == 50.0
    assert value(samples, prefix + "topicpartitionsacquiretimems_count", **group) == len(fetches)
    partition = "kafka_server_sharepartitionmetrics_"
    assert value(samples, partition + "inflightmessagecount", **p0) == 4.0      # offsets 2-5: 0 and 1 accepted
    assert value(samples, partition + "inflightmessagecount", **p1) == 0.0
    assert value(samples, partition + "acquisitionlocktimeout_total", **p0) == 2.0
    assert value(samples, partition + "inflightbatchmessagecount_count", **p0) == 5.0     # (0-5), then 2 and 5 twice
    assert value(samples, partition + "inflightbatchmessagecount", **p0, quantile="0.999") == 6.0
    coordinator = "kafka_server_groupcoordinatormetrics_"
    assert value(samples, coordinator + "group_count", protocol="share") == 1.0
    assert [value(samples, coordinator + "share_group_count", state=s) for s in ("Empty", "Stable", "Dead")] == \
        [0.0, 1.0, 0.0]
    assert value(samples, coordinator + "share_group_rebalance_count") == float(group_epoch) == float(epoch)
    assert value(samples, coordinator + "share_group_rebalance_rate") > 0
    # the share coordinator (this node) wrote the share-partitions' state: the acknowledgements at least
    share_coordinator = "kafka_server_sharecoordinatormetrics_"
    assert value(samples, share_coordinator + "write_total") >= 2
    assert value(samples, share_coordinator + "write_rate") > 0
    assert 0 < value(samples, share_coordinator + "write_latency_avg") <= value(samples, share_coordinator +
                                                                                 "write_latency_max")
    meters = "kafka_server_brokertopicmetrics_"
    assert value(samples, meters + "totalsharefetchrequests_total", topic=TOPIC) == len(fetches)
    assert value(samples, meters + "failedsharefetchrequests_total", topic=TOPIC) == 0.0
    assert value(samples, meters + "totalshareacknowledgementrequests_total", topic=TOPIC) == 1.0
    assert value(samples, meters + "failedshareacknowledgementrequests_total") == 0.0
