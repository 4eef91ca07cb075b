"""A coordinator partition's leadership lost and regained, without a node (the stand-in broker of
test_coordinator_replication, real logs, one follower played by calls): Kafka's runtime unloads
the partition's state when the broker stops leading it (GroupMetadataManager.onUnloaded, the share
coordinator's shard dropped, TransactionStateManager.removeTransactionsForTxnTopicPartition) and
rebuilds it from the log when it leads it again. A write the new leader never had (its record
truncated here when the broker follows) is gone when the partition comes back, and requests
meanwhile are answered NOT_COORDINATOR.

- Share groups (their records in ``__consumer_offsets``) with their members' session timers.
"""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from kafkawire.broker.share_groups import session_key
from kafkawire.messages.share_group_describe_request import ShareGroupDescribeRequest
from kafkawire.messages.share_group_heartbeat_request import ShareGroupHeartbeatRequest
from kafkawire.protocol.error_codes import Errors

from .test_coordinator_replication import FOLLOWER, answered, follower_fetches, handler, replicated_broker
from .test_txn_state_topic import GROUP, until

OFFSETS, TXN_STATE = "__consumer_offsets", "__transaction_state"
SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE = 76, 77
CLIENT = SimpleNamespace(api_version=1, client_id="c", peer=("127.0.0.1", 1))


def stores(broker) -> list:
    return [broker.group_apis.store, broker.txn_apis.store]


def lose_leadership(broker, topic: str):
    """The image names the follower leader of ``topic``-0 and this broker follows it (out of
    ``partitions``: its waiting answers NOT_LEADER_OR_FOLLOWER): the partition, for lead_again."""
    partition = broker.partitions.pop((topic, 0))
    broker.image().topics_by_name[topic].partitions[0].leader = FOLLOWER
    broker.replication.acks.step_down(broker.partitions)
    for store in stores(broker):
        store.on_metadata()
    return partition


async def lead_again(broker, topic: str, partition) -> None:
    """The follower's log is truncated to what the other leader held (the high watermark), and this
    broker leads the partition again: it is loaded from the log."""
    partition.log.truncate_to(partition.high_watermark())
    broker.image().topics_by_name[topic].partitions[0].leader = broker.node_id
    broker.partitions[(topic, 0)] = partition
    await broker.load()


def share_heartbeat(broker, member_id: str):
    return handler(broker.group_apis, SHARE_GROUP_HEARTBEAT)(CLIENT, ShareGroupHeartbeatRequest(
        group_id=GROUP, member_id=member_id, member_epoch=0, subscribed_topic_names=["t"]))


async def share_members(broker) -> tuple[int, list]:
    described = await handler(broker.group_apis, SHARE_GROUP_DESCRIBE)(CLIENT, ShareGroupDescribeRequest(
        group_ids=[GROUP]))
    group, = described.groups
    return group.error_code, sorted(m.member_id for m in group.members)


def test_a_share_group_is_unloaded_with_its_partition_and_only_its_logged_members_come_back(tmp_path):
    """A member whose joining records the new leader never had is not in the share group when the
    partition is led here again, and its session timer is gone with the unload (before, the group
    stayed in memory, the reload replayed the log over it and the lost member stayed, its timer
    running while the partition was led elsewhere); meanwhile the group's requests are answered
    NOT_COORDINATOR."""
    async def go():
        broker = replicated_broker(tmp_path, offsets_commit_timeout_ms=10_000)
        image = broker.image()
        image.finalized_features["share.version"] = 1
        image.provenance, image.configs = SimpleNamespace(offset=0), {}
        for registration in image.topics_by_name["t"].partitions.values():
            registration.replicas = [broker.node_id]
        await broker.load()
        timers = broker.group_apis.coordinator.timer
        kept = await answered(broker, share_heartbeat(broker, "kept"), replicated=True)
        assert kept.error_code == Errors.NONE
        lost = await answered(broker, share_heartbeat(broker, "lost"), replicated=False)
        partition = lose_leadership(broker, OFFSETS)
        await until(lost.done)
        assert lost.result().error_code == Errors.NOT_COORDINATOR
        assert session_key(GROUP, "lost") not in timers._handles
        assert (await share_members(broker))[0] == Errors.NOT_COORDINATOR
        await lead_again(broker, OFFSETS, partition)
        assert await share_members(broker) == (Errors.NONE, ["kept"])
        assert session_key(GROUP, "kept") in timers._handles and session_key(GROUP, "lost") not in timers._handles
        follower_fetches(broker, OFFSETS)
        broker.close()
    asyncio.run(go())
