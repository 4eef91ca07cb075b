"""Stray logs (kafkawire.broker.stray_logs), as Kafka 4.3.1's LogManager.loadLog sets them aside at
start: a partition directory the metadata image does not assign to this broker (its topic id
unknown to the image: deleted, maybe created again under the same name; its replicas without this
broker; no ``partition.metadata``) is renamed ``<topic>-<partition>.<uuid>-stray`` and kept, never
opened nor deleted; a log the image assigns here is opened with its records. At run time a replica
moved away from this broker is deleted, as ReplicaManager.applyDelta deletes it. In process, on a
stand-in metadata image (tests/broker/test_replica_roles.py's)."""
from __future__ import annotations

import asyncio
import logging
import os
import re
import uuid
from types import SimpleNamespace

from kafkawire.broker.log_deletion import DELETE_SUFFIX, delete_dir_name
from kafkawire.broker.stray_logs import STRAY_SUFFIX, mark_stray_logs, retired_dir_name
from kafkawire.records.builder import build_batch
from kafkawire.storage.log import Log
from kafkawire.storage.state_files import write_partition_metadata

from .test_replica_roles import make_broker

T_ID, RE_OLD_ID, RE_NEW_ID, GONE_ID = (uuid.UUID(int=n) for n in (11, 21, 22, 31))
STRAY_NAME = re.compile(r"^(.+-\d+)\.[0-9a-f]{32}-stray$")


def write_log(log_dir, name: str, topic_id: uuid.UUID | None, records: int = 3) -> None:
    with Log(os.path.join(log_dir, name)) as log_:
        log_.append(build_batch([(b"old", b"v")] * records), assign_offsets=True)
    if topic_id is not None:
        write_partition_metadata(os.path.join(log_dir, name, "partition.metadata"), topic_id)


def topic(name: str, topic_id: uuid.UUID, partitions: dict):
    regs = {i: SimpleNamespace(leader=replicas[0], leader_epoch=0, replicas=tuple(replicas), isr=tuple(replicas),
                               partition_epoch=0) for i, replicas in partitions.items()}
    return SimpleNamespace(name=name, id=topic_id, partitions=regs)


def image_of(*topics):
    return SimpleNamespace(topics_by_name={t.name: t for t in topics}, topics_by_id={t.id: t for t in topics},
                           brokers={}, configs={})


def strays(log_dir) -> dict[str, list[str]]:
    """original name -> the -stray directories of that name."""
    found: dict[str, list[str]] = {}
    for name in os.listdir(log_dir):
        match = STRAY_NAME.match(name)
        if match:
            found.setdefault(match.group(1), []).append(name)
    return found


def stray_records(log_dir, original: str) -> int:
    (name,) = strays(log_dir)[original]
    with Log(os.path.join(log_dir, name)) as log_:
        return log_.log_end_offset


def test_logs_the_image_does_not_assign_here_are_set_aside_as_stray_at_start_and_kept(tmp_path, caplog):
    log_dir = str(tmp_path)
    write_log(log_dir, "t-0", T_ID, records=3)          # assigned here (leader 1)
    write_log(log_dir, "t-1", T_ID, records=4)          # reassigned away while down: replicas (2, 3)
    write_log(log_dir, "t-7", T_ID)                     # a partition index the topic does not have
    write_log(log_dir, "gone-0", GONE_ID)               # topic deleted while down
    write_log(log_dir, "re-0", RE_OLD_ID, records=5)    # deleted and created again: another id
    write_log(log_dir, "nometa-0", None)                # no partition.metadata
    os.makedirs(os.path.join(log_dir, "old-2.0123456789abcdef0123456789abcdef-stray"))
    os.makedirs(os.path.join(log_dir, "__cluster_metadata-0"))
    os.makedirs(os.path.join(log_dir, "lost+found"))
    image = image_of(topic("t", T_ID, {0: (1, 2), 1: (2, 3)}), topic("re", RE_NEW_ID, {0: (1,)}),
                     topic("nometa", uuid.UUID(int=41), {0: (1,)}))

    async def go():
        broker, state = make_broker(log_dir)
        state["image"] = image
        with caplog.at_level(logging.INFO, logger="kafkawire.broker.stray_logs"):
            broker.on_metadata()
        opened = {key: p.log.log_end_offset for key, p in broker.partitions.items()}
        broker.on_metadata()                                # later images: no second scan
        for partition in broker.partitions.values():
            broker.close_partition(partition)
        await broker.replica_roles.close()
        broker.state_writes.close()
        return broker, opened
    broker, opened = asyncio.run(go())

    assert opened == {("t", 0): 3, ("re", 0): 0, ("nometa", 0): 0}    # new incarnations start empty
    assert sorted(strays(log_dir)) == ["gone-0", "nometa-0", "old-2", "re-0", "t-1", "t-7"]
    assert all(len(v) == 1 for v in strays(log_dir).values())
    assert stray_records(log_dir, "t-1") == 4 and stray_records(log_dir, "re-0") == 5    # kept, not deleted
    assert {"t-0", "re-0", "nometa-0", "__cluster_metadata-0", "lost+found"} <= set(os.listdir(log_dir))
    assert not any(name.endswith(DELETE_SUFFIX) for name in os.listdir(log_dir))
    assert len(broker.log_manager.pending) == 0                      # nothing scheduled for removal
    text = caplog.text
    assert "the current replica assignment [2, 3] does not contain the local brokerId 1" in text
    assert f"the topicId {RE_OLD_ID} does not exist in the metadata image" in text
    assert "the topicId does not exist in it, treat it as a stray log" in text
    assert "Loaded stray log: " in text and "marked stray and renamed to" in text


def test_an_unreadable_partition_metadata_is_stray_not_deleted(tmp_path):
    write_log(str(tmp_path), "t-0", T_ID)
    with open(tmp_path / "t-0" / "partition.metadata", "w") as f:
        f.write("version: 0\ntopic_id: not-a-uuid")
    renamed = mark_stray_logs(str(tmp_path), image_of(topic("t", T_ID, {0: (1,)})), node_id=1)
    assert [os.path.basename(p) for p in renamed] == strays(tmp_path)["t-0"]


def test_nothing_the_image_assigns_here_is_renamed(tmp_path):
    for index in range(3):
        write_log(str(tmp_path), f"t-{index}", T_ID)
    image = image_of(topic("t", T_ID, {0: (1,), 1: (2, 1), 2: (3, 2, 1)}))
    assert mark_stray_logs(str(tmp_path), image, node_id=1) == []
    assert sorted(os.listdir(tmp_path)) == ["t-0", "t-1", "t-2"]


def test_retired_names_keep_partition_and_fit_a_file_name():
    long_topic = "x" * 249
    for suffix in (STRAY_SUFFIX, DELETE_SUFFIX):
        name = retired_dir_name(long_topic, 12, suffix)
        assert len(name) == 255 and re.fullmatch(rf"x+-12\.[0-9a-f]{{32}}{suffix}", name)
    assert re.fullmatch(r"x+-3\.[0-9a-f]{32}-delete", delete_dir_name(f"{long_topic}-3"))
    assert len(delete_dir_name(f"{long_topic}-3")) == 255


def test_a_replica_moved_away_while_running_is_deleted_as_kafka_deletes_it(tmp_path):
    """ReplicaManager.applyDelta: a partition whose replicas no longer include this broker is in
    localChanges.deletes, its log deleted (``-delete``, removed file.delete.delay.ms later)."""
    async def go():
        broker, state = make_broker(tmp_path)
        state["image"] = image_of(topic("t", T_ID, {0: (1, 2), 1: (2, 1)}))
        broker.on_metadata()
        assert ("t", 0) in broker.partitions and ("t", 1) in broker.replica_roles.followers
        state["image"] = image_of(topic("t", T_ID, {0: (2, 3), 1: (2, 3)}))
        broker.on_metadata()
        assert broker.partitions == {} and broker.replica_roles.followers == {}
        await broker.replica_roles.close()
        broker.state_writes.close()
        return broker
    broker = asyncio.run(go())
    names = os.listdir(tmp_path)
    assert sorted(n.split(".")[0] for n in names if n.endswith(DELETE_SUFFIX)) == ["t-0", "t-1"]
    assert "t-0" not in names and "t-1" not in names and len(broker.log_manager.pending) == 2
