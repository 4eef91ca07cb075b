"""A coordinator topic deleted and created again, both seen in one metadata update, on a real
Broker (in process, a stand-in metadata image, no listener): Broker.on_metadata leads the
partition in both updates, but Broker._lead deletes the old log and opens a new one for the new
topic id, so the coordinator's state read from the old log is unloaded and the partition loaded
from the new one (Kafka's BrokerMetadataPublisher resigns the deleted topic's partitions and
elects the new ones): the old log's groups are gone, and a load under way on the old log is
replaced by one on the new log instead of stopping with none started.
"""
from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

from kafkawire.broker import Broker, group_log
from kafkawire.messages.list_groups_request import ListGroupsRequest
from kafkawire.messages.offset_commit_request import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                      OffsetCommitRequestTopic)
from kafkawire.net.config import parse_server_config
from kafkawire.protocol.error_codes import Errors

from .test_txn_state_topic import until

OFFSETS = "__consumer_offsets"
OFFSET_COMMIT, LIST_GROUPS = 8, 16
CLIENT = SimpleNamespace(api_version=8, client_id="c", peer=("127.0.0.1", 1))


def led_here(name: str) -> SimpleNamespace:
    """A topic of one partition led by this broker (node 1) alone, with a new topic id."""
    return SimpleNamespace(name=name, id=uuid.uuid4(), partitions={0: SimpleNamespace(
        leader=1, leader_epoch=0, replicas=(1,), isr=(1,), partition_epoch=0, directories=(uuid.UUID(int=0),))})


def image_of(*topics) -> SimpleNamespace:
    return SimpleNamespace(topics_by_name={t.name: t for t in topics}, topics_by_id={t.id: t for t in topics},
                           brokers={}, configs={}, metadata_version=17, finalized_features={},
                           provenance=SimpleNamespace(offset=0))


def started_broker(log_dir, image) -> Broker:
    """A broker on ``log_dir`` whose logs open (and coordinator partitions start loading) now."""
    config = parse_server_config("process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
                                 "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n"
                                 f"controller.quorum.bootstrap.servers=127.0.0.1:1\nlog.dirs={log_dir}\n")
    broker = Broker(config, cluster_id="c", directory_id=None, image=lambda: image, metadata_offset=lambda: 0,
                    send_to_controller=None, supported_features={})
    broker.lifecycle = SimpleNamespace(state="RUNNING", poke=lambda: None, broker_epoch=5)
    broker.dir_assignments.submit = lambda topic_id, index, directory: None
    broker._on_lifecycle_state("RECOVERY")
    return broker


async def commit(broker, group_id: str) -> int:
    answer = await broker.group_apis.handlers()[OFFSET_COMMIT].handle(CLIENT, OffsetCommitRequest(
        group_id=group_id, generation_id_or_member_epoch=-1, member_id="", topics=[OffsetCommitRequestTopic(
            name="t", partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=5,
                                                               committed_metadata="")])]))
    return answer.topics[0].partitions[0].error_code


async def listed(broker) -> tuple[int, list]:
    answer = await broker.group_apis.handlers()[LIST_GROUPS].handle(CLIENT, ListGroupsRequest(states_filter=[]))
    return answer.error_code, sorted(g.group_id for g in answer.groups)


def created_again(broker, image) -> None:
    """__consumer_offsets deleted and created again (another topic id), seen in one update."""
    topic = led_here(OFFSETS)
    del image.topics_by_id[image.topics_by_name[OFFSETS].id]
    image.topics_by_name[OFFSETS] = image.topics_by_id[topic.id] = topic
    broker.on_metadata()


def test_a_loaded_partition_of_a_topic_created_again_is_loaded_from_its_new_log(tmp_path):
    """Before, the partition stayed loaded with the old log's groups, listed and served from a log
    that no longer held them."""
    async def go():
        image = image_of(led_here("t"), led_here(OFFSETS))
        broker = started_broker(tmp_path, image)
        store = broker.group_apis.store
        await until(lambda: store.loaded)
        assert await commit(broker, "old") == Errors.NONE
        old_log = broker.partitions[(OFFSETS, 0)]

        created_again(broker, image)
        assert broker.partitions[(OFFSETS, 0)] is not old_log
        await until(lambda: not store.loading)
        assert store.loaded == {0} and await listed(broker) == (Errors.NONE, [])
        assert await commit(broker, "new") == Errors.NONE and await listed(broker) == (Errors.NONE, ["new"])
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_a_load_under_way_when_its_topic_is_created_again_is_replaced_by_a_load_of_the_new_log(
        tmp_path, monkeypatch):
    """Before, the load on the old log stopped at its next read and none started until the next
    metadata update: the partition's groups were answered COORDINATOR_LOAD_IN_PROGRESS meanwhile."""
    async def go():
        image = image_of(led_here("t"), led_here(OFFSETS))
        broker = started_broker(tmp_path, image)
        await until(lambda: broker.group_apis.store.loaded)
        for group_id in ("first", "second"):
            assert await commit(broker, group_id) == Errors.NONE
        await broker.stop(graceful=False)

        monkeypatch.setattr(group_log, "LOAD_READ_BYTES", 1)      # a batch (one group's commit) at a time
        broker = started_broker(tmp_path, image)
        store = broker.group_apis.store
        await asyncio.sleep(0)                          # the load replays its first batch, then yields
        assert 0 in store.loading
        created_again(broker, image)
        await until(lambda: not store.loading)
        assert store.loaded == {0} and store.coordinator_error("first") == Errors.NONE
        assert await listed(broker) == (Errors.NONE, [])
        await broker.stop(graceful=False)
    asyncio.run(go())
