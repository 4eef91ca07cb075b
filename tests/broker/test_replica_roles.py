"""Role changes of a broker's replicas (Broker.on_metadata with kafkawire.broker.replica_roles), in
process on a stand-in metadata image, as Kafka's ReplicaManager.applyDelta makes them: a partition
whose replicas include this broker and whose leader is another broker is followed (its log opened,
no leader epoch assigned), a leader made follower keeps its log (makeFollower), a follower made
leader keeps its log and gets the new epoch at its log end (makeLeader), a replica moved away is
closed and deleted (applyDelta's deletes), as is a deleted topic's follower log, and a leader of -1
leaves the partition followed but fetched by no fetcher. DescribeLogDirs lists followed replicas
as Kafka lists every replica.
"""
from __future__ import annotations

import asyncio
import os
import uuid
from types import SimpleNamespace

from kafkawire.broker import Broker
from kafkawire.broker.replica_fetcher import fetcher_id
from kafkawire.metadata.image import BROKER_RESOURCE
from kafkawire.net.config import parse_server_config
from kafkawire.records.builder import build_batch
from kafkawire.storage.state_files import EpochEntry

TOPIC_ID = uuid.UUID(int=11)


def image_with(leader: int, epoch: int, replicas=(1, 2, 3), *, topic: bool = True):
    registration = SimpleNamespace(leader=leader, leader_epoch=epoch, replicas=tuple(replicas), isr=tuple(replicas),
                                   partition_epoch=epoch)
    topics = {"t": SimpleNamespace(name="t", id=TOPIC_ID, partitions={0: registration})} if topic else {}
    return SimpleNamespace(topics_by_name=topics, topics_by_id={TOPIC_ID: t for t in topics.values()},
                           brokers={}, configs={})


def make_broker(tmp_path):
    config = parse_server_config(f"process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
                                 f"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n"
                                 f"controller.quorum.bootstrap.servers=127.0.0.1:1\nlog.dirs={tmp_path}\n")
    state = {"image": image_with(1, 0)}
    broker = Broker(config, cluster_id="c", directory_id=None, image=lambda: state["image"], metadata_offset=lambda: 0,
                    send_to_controller=None, supported_features={})
    broker.lifecycle = SimpleNamespace(state="RUNNING", poke=lambda: None, broker_epoch=5)
    broker.group_apis.on_metadata = broker.txn_apis.on_metadata = lambda: None      # not under test here
    return broker, state


def test_role_changes_keep_the_log_and_follow_kafkas_make_leader_and_make_follower(tmp_path):
    async def go():
        broker, state = make_broker(tmp_path)
        roles = broker.replica_roles
        broker.on_metadata()
        led = broker.partitions[("t", 0)]
        led.log.append(build_batch([(b"k", b"v")] * 3), assign_offsets=True, leader_epoch=0)

        state["image"] = image_with(2, 1)                 # another broker leads: makeFollower
        broker.on_metadata()
        assert ("t", 0) not in broker.partitions
        follower = roles.followers[("t", 0)]
        assert follower.partition is led and (follower.leader_id, follower.leader_epoch) == (2, 1)
        assert list(roles.manager.fetchers) == [(2, 0)]
        assert led.epochs.entries == [EpochEntry(0, 0)]          # a follower assigns no epoch
        described = broker.log_dir_apis._log_dir_result(None)   # DescribeLogDirs lists followed replicas too
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in described.topics] == [("t", [0])]

        state["image"] = image_with(1, 2)                 # led here again: makeLeader, same log
        broker.on_metadata()
        assert broker.partitions[("t", 0)] is led and roles.followers == {}
        assert led.epochs.entries == [EpochEntry(0, 0), EpochEntry(2, 3)]
        assert roles.manager.fetchers == {}

        state["image"] = image_with(-1, 3)                # offline: followed, fetched by no one
        broker.on_metadata()
        assert roles.followers[("t", 0)].partition is led and roles.manager.fetchers == {}

        state["image"] = image_with(2, 4, replicas=(2, 3))    # moved away: closed and deleted (applyDelta)
        broker.on_metadata()
        assert roles.followers == {} and ("t", 0) not in broker.partitions
        assert not os.path.exists(os.path.join(tmp_path, "t-0"))
        assert [n for n in os.listdir(tmp_path) if n.endswith("-delete")] and len(broker.log_manager.pending) == 1

        state["image"] = image_with(3, 5)                 # followed again: a new log, no epoch assigned
        broker.on_metadata()
        reopened = roles.followers[("t", 0)]
        assert reopened.log.log_end_offset == 0 and reopened.epochs.entries == []

        state["image"] = image_with(3, 5, topic=False)    # the topic deleted: the follower's log goes
        broker.on_metadata()
        assert roles.followers == {}
        assert not os.path.exists(os.path.join(tmp_path, "t-0"))
        await broker.replica_roles.close()
        broker.state_writes.close()
    asyncio.run(go())


def test_the_checkpoints_list_followed_replicas_with_the_followers_high_watermark(tmp_path):
    """replication-offset-checkpoint, recovery-point-offset-checkpoint and log-start-offset-checkpoint
    list every replica of the directory, followed ones too (a follower's high watermark is the one its
    leader sent, capped at its log end), as Kafka's ReplicaManager and LogManager write them."""
    from kafkawire.storage.state_files import read_offset_checkpoint

    async def go():
        broker, state = make_broker(tmp_path)
        state["image"] = image_with(2, 1)
        broker.on_metadata()
        follower = broker.replica_roles.followers[("t", 0)]
        follower.append(build_batch([(b"k", b"v")] * 4, partition_leader_epoch=1))
        follower.log.segment_bytes = follower.log.size + 10    # the next append rolls: a log start can move
        follower.append(build_batch([(b"k", b"v")] * 2, base_offset=4, partition_leader_epoch=1))
        follower.update_from_leader(high_watermark=3, log_start_offset=5)     # above the high watermark: not yet
        follower.update_from_leader(high_watermark=5, log_start_offset=5)
        broker.log_manager.checkpoint_high_watermarks()
        broker.log_manager.checkpoint_recovery_points()
        broker.log_manager.checkpoint_log_start_offsets()
        await broker.replica_roles.close()
        broker.state_writes.close()
    asyncio.run(go())

    def read(name):
        return read_offset_checkpoint(os.path.join(tmp_path, name))
    assert read("replication-offset-checkpoint") == {("t", 0): 5}
    # the active segment's base (4), moved up with the log start (UnifiedLog.updateLogStartOffset)
    assert read("recovery-point-offset-checkpoint") == {("t", 0): 5}
    assert read("log-start-offset-checkpoint") == {("t", 0): 5}


def following(broker, state, *, records: int, high_watermark: int):
    """The broker follows t-0 from broker 2, with ``records`` copied and the leader's high watermark."""
    state["image"] = image_with(2, 1)
    broker.on_metadata()
    follower = broker.replica_roles.followers[("t", 0)]
    follower.append(build_batch([(b"k", b"v")] * records, partition_leader_epoch=1))
    follower.update_from_leader(high_watermark=high_watermark, log_start_offset=0)
    return follower


def test_a_follower_made_leader_keeps_the_high_watermark_it_had_as_follower(tmp_path):
    """Partition.makeLeader leaves the replica's high watermark as it was: a follower that had
    high watermark 2 of a log ending at 5 leads with 2, not its log end (the records above 2 may
    not be on the other replicas), and not 0."""
    async def go():
        broker, state = make_broker(tmp_path)
        following(broker, state, records=5, high_watermark=2)
        state["image"] = image_with(1, 2)                 # led here now
        broker.on_metadata()
        led = broker.partitions[("t", 0)]
        assert (led.log.log_end_offset, led.high_watermark()) == (5, 2)
        await broker.replica_roles.close()
        broker.replication.close()
        broker.state_writes.close()
    asyncio.run(go())


def test_a_clean_stop_checkpoints_the_followed_replicas_high_watermarks_before_closing_them(tmp_path):
    """Broker.stop writes the last checkpoints (LogManager.shutdown) while the followed logs are
    still open, so a follower restarted after a clean stop finds its high watermark there."""
    from kafkawire.storage.state_files import read_offset_checkpoint

    async def go():
        broker, state = make_broker(tmp_path)
        following(broker, state, records=4, high_watermark=3)
        await broker.stop(graceful=False)
    asyncio.run(go())
    assert read_offset_checkpoint(os.path.join(tmp_path, "replication-offset-checkpoint")) == {("t", 0): 3}


def test_a_dynamic_num_replica_fetchers_moves_the_partitions_to_their_new_fetchers(tmp_path):
    """ReplicaManager.resizeFetcherThreadPool: num.replica.fetchers set for this broker changes the
    fetcher id of each followed partition at the next publish (``t-0`` hashes to fetcher 2 of 3)."""
    async def go():
        broker, state = make_broker(tmp_path)
        roles = broker.replica_roles
        state["image"] = image_with(2, 1)
        broker.on_metadata()
        assert list(roles.manager.fetchers) == [(2, 0)]
        follower = roles.followers[("t", 0)]
        state["image"] = image_with(2, 1)
        state["image"].configs = {(BROKER_RESOURCE, "1"): {"num.replica.fetchers": "3"}}
        broker.on_metadata()
        assert roles.manager.settings.num_fetchers == 3
        assert list(roles.manager.fetchers) == [(2, fetcher_id("t", 0, 3))] == [(2, 2)]
        assert roles.manager.fetchers[(2, 2)].partitions[("t", 0)].follower is follower     # the same replica
        await roles.stop_fetchers()
    asyncio.run(go())
