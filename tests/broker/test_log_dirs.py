"""A broker with several log directories (JBOD, KIP-858), in process on a stand-in metadata image:
each directory's meta.properties and directory id, all registered; Kafka's placement of new logs
(an existing log stays, else the metadata's directory, else the directory with the fewest logs);
AssignReplicasToDirs for replicas not where the metadata says (kafkawire.broker.dir_assignments);
per-directory checkpoint files; DescribeLogDirs per directory; AlterReplicaLogDirs' errors in
Kafka's order and the move of a replica to another directory of the broker.
"""
from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.broker import Broker
from kafkawire.broker.dir_assignments import DirAssignments
from kafkawire.broker.log_dir_failure import BrokerHalted
from kafkawire.broker.log_dirs import LogDirs, LogDirsError
from kafkawire.broker.partition import LeaderPartition
from kafkawire.messages.alter_replica_log_dirs_request import (AlterReplicaLogDir, AlterReplicaLogDirsRequest,
                                                               AlterReplicaLogDirTopic)
from kafkawire.messages.assign_replicas_to_dirs_response import (AssignReplicasToDirsResponse, DirectoryData,
                                                                 PartitionData, TopicData)
from kafkawire.messages.describe_log_dirs_request import DescribeLogDirsRequest
from kafkawire.metadata.registrations import LOST, UNASSIGNED
from kafkawire.net.config import parse_server_config
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch
from kafkawire.storage.reader import read_log_directory
from kafkawire.storage.state_files import MetaProperties, read_meta_properties, read_offset_checkpoint, \
    write_meta_properties

TOPIC_ID = uuid.UUID(int=0x1234)


def registration(directory=UNASSIGNED):
    return SimpleNamespace(leader=1, leader_epoch=0, replicas=(1,), isr=(1,), partition_epoch=0,
                           directories=(directory,))


def image_of(partitions: dict, metadata_version=17):
    topic = SimpleNamespace(name="t", id=TOPIC_ID, partitions=partitions)
    return SimpleNamespace(topics_by_name={"t": topic}, topics_by_id={TOPIC_ID: topic}, brokers={}, configs={},
                           metadata_version=metadata_version)



def accepting(sent: list, held: list | None = None):
    """A stand-in for DirAssignments.submit: each directory assigned goes into ``sent``; a move's
    acceptance by the controller comes at once, or, with ``held``, when the test runs the callbacks
    kept there."""
    def submit(topic_id, index, directory, *, on_accepted=None):
        sent.append(directory)
        if on_accepted is not None:
            on_accepted() if held is None else held.append(on_accepted)
    return submit


def heartbeats_recorded(broker, **dirs) -> list:
    """A stand-in BrokerLifecycle on ``broker`` (epoch 5) whose heartbeats are kept in the list
    returned, each answered caught up and unfenced; ``dirs``: its offline or cordoned dirs."""
    from kafkawire.broker.lifecycle import BrokerLifecycle, Registration
    beats = []

    async def send(request, timeout_ms):
        beats.append(request)
        return SimpleNamespace(error_code=0, is_caught_up=True, is_fenced=False)
    broker.lifecycle = BrokerLifecycle(send, registration=Registration(1, "c", uuid.uuid4(), (), {}, ()),
                                       metadata_offset=lambda: 0, ready_to_unfence=lambda: True, **dirs)
    broker.lifecycle.broker_epoch = 5
    return beats

def make_broker(dirs, image):
    config = parse_server_config(f"process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
                                 f"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n"
                                 f"controller.quorum.bootstrap.servers=127.0.0.1:1\nlog.dirs={','.join(map(str, dirs))}\n")
    state = {"image": image}
    broker = Broker(config, cluster_id="c", directory_id=None, image=lambda: state["image"], metadata_offset=lambda: 0,
                    send_to_controller=None, supported_features={})
    broker.lifecycle = SimpleNamespace(state="RUNNING", poke=lambda: None, broker_epoch=5)
    broker.group_apis.on_metadata = broker.txn_apis.on_metadata = lambda: None      # not under test here
    return broker, state


def parent(partition) -> str:
    return os.path.dirname(partition.log.directory)


def test_each_log_directory_gets_its_own_id_once_and_another_nodes_is_refused(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    first = LogDirs.load([str(a), str(b)], node_id=1, cluster_id="c")
    ids = first.ids()
    assert len(set(ids)) == 2 and all(i.int >= 100 for i in ids)
    assert [read_meta_properties(d / "meta.properties").directory_id for d in (a, b)] == list(ids)
    assert LogDirs.load([str(a), str(b)], node_id=1, cluster_id="c").ids() == ids        # read back, not new
    write_meta_properties(str(b / "meta.properties"), MetaProperties(1, cluster_id="c", node_id=2,
                                                                     directory_id=uuid.uuid4()))
    with pytest.raises(LogDirsError, match="node.id 2 does not match node.id 1"):
        LogDirs.load([str(a), str(b)], node_id=1, cluster_id="c")
    write_meta_properties(str(b / "meta.properties"), MetaProperties(1, cluster_id="c", node_id=1,
                                                                     directory_id=ids[0]))
    with pytest.raises(LogDirsError, match="the same directory.id"):
        LogDirs.load([str(a), str(b)], node_id=1, cluster_id="c")
    single = LogDirs.load([str(tmp_path / "one")], node_id=1, cluster_id="c", known={str(tmp_path / "one"): ids[0]})
    assert single.ids() == (ids[0],) and not (tmp_path / "one").exists()       # one directory: nothing written


def test_new_logs_go_to_the_fewest_filled_directory_unless_the_metadata_names_one_and_are_assigned(tmp_path):
    async def go():
        dirs = [tmp_path / "a", tmp_path / "b"]
        image = image_of({0: registration(), 1: registration(), 2: registration()})
        broker, state = make_broker(dirs, image)
        id_a, id_b = broker.log_dirs.ids()
        broker.servers = [SimpleNamespace(listener_name="PLAINTEXT", port=9092)]     # as if bound
        assert broker._registration().log_dirs == (id_a, id_b)
        broker.servers = []
        sent = []
        broker.dir_assignments.submit = lambda topic_id, index, directory: sent.append((topic_id, index, directory))
        broker._on_lifecycle_state("RECOVERY")       # the logs open (and a stop now writes the clean markers)
        placed = {index: parent(broker.partitions[("t", index)]) for index in range(3)}
        assert placed == {0: str(dirs[0]), 1: str(dirs[1]), 2: str(dirs[0])}      # fewest first, ties in order
        assert sorted(sent) == [(TOPIC_ID, 0, id_a), (TOPIC_ID, 1, id_b), (TOPIC_ID, 2, id_a)]
        # the metadata's directory wins for a new log; an assignment that matches is not sent again
        sent.clear()
        image.topics_by_name["t"].partitions = {
            **{i: registration(id_a if i != 1 else id_b) for i in range(3)}, 3: registration(id_b)}
        broker.on_metadata()
        assert parent(broker.partitions[("t", 3)]) == str(dirs[1]) and sent == []
        broker.partitions[("t", 3)].log.append(build_batch([(b"k", b"v")]), assign_offsets=True, leader_epoch=0)
        broker.log_manager.checkpoint_recovery_points()
        assert [sorted(read_offset_checkpoint(str(d / "recovery-point-offset-checkpoint"))) for d in dirs] == [
            [("t", 0), ("t", 2)], [("t", 1), ("t", 3)]]
        described = broker.log_dir_apis.log_dir_results(None)
        assert [(r.log_dir, [(t.name, sorted(p.partition_index for p in t.partitions)) for t in r.topics])
                for r in described] == [(str(dirs[0]), [("t", [0, 2])]), (str(dirs[1]), [("t", [1, 3])])]
        await broker.stop(graceful=False)
        assert all((d / ".kafka_cleanshutdown").exists() for d in dirs)
    asyncio.run(go())


def test_assignments_are_batched_sent_and_the_failed_ones_sent_again(tmp_path):
    async def go():
        directory = uuid.UUID(int=0xABC)
        image = image_of({0: registration(), 1: registration()})
        answers = [Errors.NOT_LEADER_OR_FOLLOWER, Errors.NONE]
        requests = []

        async def send(request, timeout_ms):
            requests.append(request)
            code = answers.pop(0) if answers else Errors.NONE
            return AssignReplicasToDirsResponse(directories=[DirectoryData(id=d.id, topics=[TopicData(
                topic_id=t.topic_id, partitions=[PartitionData(partition_index=p.partition_index,
                                                               error_code=code if p.partition_index == 0 else 0)
                                                 for p in t.partitions]) for t in d.topics])
                for d in request.directories])
        assignments = DirAssignments(1, send=send, broker_epoch=lambda: 7, image=lambda: image)
        assignments.submit(TOPIC_ID, 0, directory)
        assignments.submit(TOPIC_ID, 1, directory)
        assignments.submit(uuid.UUID(int=99), 0, directory)             # no such topic: dropped, never sent
        assignments.start()
        async with asyncio.timeout(10):
            while assignments.sent < 2:
                await asyncio.sleep(0.01)
        assignments.close()
        first, second = requests
        assert (first.broker_id, first.broker_epoch) == (1, 7)
        assert [(d.id, [(t.topic_id, [p.partition_index for p in t.partitions]) for t in d.topics])
                for d in first.directories] == [(directory, [(TOPIC_ID, [0, 1])])]
        assert [p.partition_index for p in second.directories[0].topics[0].partitions] == [0]     # only the failed one
        assert assignments.ready == {}
    asyncio.run(go())


def test_a_request_that_fails_unexpectedly_is_logged_and_its_assignments_sent_again(tmp_path, caplog):
    """Not a sender task dead with its exception unseen, its assignments never sent."""
    async def go():
        directory = uuid.UUID(int=0xABC)
        image = image_of({0: registration()})
        requests = []

        async def send(request, timeout_ms):
            requests.append(request)
            if len(requests) == 1:
                raise RuntimeError("a bug in the channel")
            return AssignReplicasToDirsResponse(directories=[DirectoryData(id=d.id, topics=[TopicData(
                topic_id=t.topic_id, partitions=[PartitionData(partition_index=p.partition_index, error_code=0)
                                                 for p in t.partitions]) for t in d.topics])
                for d in request.directories])
        assignments = DirAssignments(1, send=send, broker_epoch=lambda: 7, image=lambda: image)
        assignments.submit(TOPIC_ID, 0, directory)
        assignments.start()
        async with asyncio.timeout(10):
            while assignments.sent < 1:
                await asyncio.sleep(0.01)
        assignments.close()
        return requests, assignments
    requests, assignments = asyncio.run(go())
    assert len(requests) == 2 and assignments.ready == {} and assignments.inflight == {}
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        "Sending AssignReplicasToDirs to the controller failed"]


async def altered(broker, path, *partitions, topic="t"):
    request = AlterReplicaLogDirsRequest(dirs=[AlterReplicaLogDir(path=str(path), topics=[
        AlterReplicaLogDirTopic(name=topic, partitions=list(partitions))])])
    response = await broker.alter_log_dirs.alter_replica_log_dirs(None, request)
    return {(t.topic_name, p.partition_index): p.error_code for t in response.results for p in t.partitions}


def alter(broker, path, *partitions, topic="t"):
    return asyncio.run(altered(broker, path, *partitions, topic=topic))


def test_alter_replica_log_dirs_answers_kafkas_errors_in_kafkas_order(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    broker, state = make_broker(dirs, image_of({0: registration(), 1: SimpleNamespace(
        leader=2, leader_epoch=0, replicas=(2,), isr=(2,), partition_epoch=0, directories=(UNASSIGNED,))}))
    broker.dir_assignments.submit = lambda *a: None
    broker.on_metadata()
    assert alter(broker, tmp_path / "elsewhere", 0) == {("t", 0): Errors.LOG_DIR_NOT_FOUND}
    assert alter(broker, "a", 0) == {("t", 0): Errors.LOG_DIR_NOT_FOUND}             # compared as an absolute path
    assert alter(broker, dirs[1], 0, topic="x" * 250) == {("x" * 250, 0): Errors.INVALID_TOPIC_EXCEPTION}
    assert alter(broker, dirs[0], 0) == {("t", 0): Errors.NONE}                      # already there
    # not hosted here: REPLICA_NOT_AVAILABLE, its directory noted for when its log is created
    assert alter(broker, dirs[1], 1, 7) == {("t", 1): Errors.REPLICA_NOT_AVAILABLE, ("t", 7): Errors.REPLICA_NOT_AVAILABLE}
    assert broker.log_dirs.preferred == {("t", 1): str(dirs[1])}         # 7 is not in the metadata: not kept
    state["image"].topics_by_name["t"].partitions[1] = registration()      # now a replica here
    broker.on_metadata()
    assert parent(broker.partitions[("t", 1)]) == str(dirs[1]) and broker.log_dirs.preferred == {}
    asyncio.run(broker.stop(graceful=False))


def test_alter_replica_log_dirs_moves_a_replica_with_its_records_and_assigns_it(tmp_path):
    async def go():
        dirs = [tmp_path / "a", tmp_path / "b"]
        two_replicas = SimpleNamespace(leader=1, leader_epoch=0, replicas=(1, 2), isr=(1, 2), partition_epoch=0,
                                       directories=(UNASSIGNED, UNASSIGNED))     # the high watermark waits for 2
        broker, state = make_broker(dirs, image_of({0: two_replicas}))
        sent = []
        broker.dir_assignments.submit = accepting(sent)
        broker.on_metadata()
        before = broker.partitions[("t", 0)]
        for _ in range(3):
            before.log.append(build_batch([(b"k", b"v"), (b"k2", b"v2")]), assign_offsets=True, leader_epoch=0)
        before.store_high_watermark(4)
        before.maybe_increment_log_start_offset(1)
        high_watermark = before.high_watermark()
        assert parent(before) == str(dirs[0]) and sent == [broker.log_dirs.ids()[0]]
        answer = await broker.alter_log_dirs.alter_replica_log_dirs(None, AlterReplicaLogDirsRequest(dirs=[
            AlterReplicaLogDir(path=str(dirs[1]), topics=[AlterReplicaLogDirTopic(name="t", partitions=[0])])]))
        assert answer.results[0].partitions[0].error_code == Errors.NONE
        async with asyncio.timeout(10):            # copied by the future log's task (kafkawire.broker.log_dir_copy)
            while broker.alter_log_dirs.futures.busy():
                await asyncio.sleep(0.001)
        after = broker.partitions[("t", 0)]
        assert after is before and parent(after) == str(dirs[1])
        assert (after.log.log_start_offset, after.log.log_end_offset, after.high_watermark()) == (1, 6, 4) == (
            1, 6, high_watermark)
        assert sent[-1] == broker.log_dirs.ids()[1]                      # AssignReplicasToDirs to the new one
        assert not (dirs[0] / "t-0").exists() and [n for n in os.listdir(dirs[0]) if n.endswith("-delete")]
        assert not [n for n in os.listdir(dirs[1]) if n.endswith("-future")]
        records = [r.offset for r in read_log_directory(str(dirs[1])).partition("t", 0).records()]
        assert records == list(range(6))            # every record copied (the log start only hides offset 0)
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_a_failed_directory_stops_its_replicas_and_is_reported_in_heartbeats(tmp_path):
    """KIP-858's offline directory: a checkpoint that cannot be written in a directory takes it
    offline (Kafka's LogDirFailureChannel); its replicas stop being served and are not opened
    again elsewhere, the other directory's go on, DescribeLogDirs answers KAFKA_STORAGE_ERROR
    for it, AlterReplicaLogDirs refuses it, and the heartbeats carry its id in OfflineLogDirs."""
    async def go():
        dirs = [tmp_path / "a", tmp_path / "b"]
        broker, state = make_broker(dirs, image_of({0: registration(), 1: registration()}))
        broker.dir_assignments.submit = lambda *a: None
        beats = heartbeats_recorded(broker, offline_log_dirs=broker.log_dirs.offline_ids)
        broker.lifecycle.state = "RUNNING"
        broker.on_metadata()
        assert [parent(broker.partitions[("t", i)]) for i in (0, 1)] == [str(dirs[0]), str(dirs[1])]
        os.rename(dirs[1], tmp_path / "gone")                # the disk under b fails
        broker.log_manager.checkpoint_high_watermarks()
        assert broker.log_dirs.offline == {str(dirs[1])}
        assert list(broker.partitions) == [("t", 0)]
        broker.on_metadata()                                  # not opened again in a
        assert list(broker.partitions) == [("t", 0)] and not (dirs[0] / "t-1").exists()
        described = broker.log_dir_apis.log_dir_results(None)
        assert [r.error_code for r in described] == [Errors.NONE, Errors.KAFKA_STORAGE_ERROR]
        assert await altered(broker, dirs[1], 0) == {("t", 0): Errors.KAFKA_STORAGE_ERROR}
        # the offline replica's requests: KAFKA_STORAGE_ERROR (Kafka's HostedPartition.Offline)
        image, topic = state["image"], state["image"].topics_by_name["t"]
        assert [broker.fetch_api._replica(topic, i, 13)[0] for i in (0, 1)] == [Errors.NONE, Errors.KAFKA_STORAGE_ERROR]
        one = SimpleNamespace(index=1, records=build_batch([(b"k", b"v")]))
        assert broker.produce_api._produce_partition(image, topic, one, 1, 9, 0).error_code == Errors.KAFKA_STORAGE_ERROR
        assert broker.delete_records_api._delete(image, topic, "t", 1, 0)[0] == Errors.KAFKA_STORAGE_ERROR
        await broker.lifecycle._heartbeat_once()
        assert beats[-1].offline_log_dirs == [broker.log_dirs.ids()[1]]
        # the last directory online fails: the broker halts (its task ends with BrokerHalted), as Kafka's LogManager
        broker._halted = asyncio.get_running_loop().create_future()         # what a started broker's task waits on
        broker.fail_log_dir(str(dirs[0]), OSError("the disk under a failed"))
        with pytest.raises(BrokerHalted, match=f"all log dirs in {dirs[0]}, {dirs[1]} have failed"):
            await broker._halted
        broker.lifecycle = SimpleNamespace(state="RUNNING", poke=lambda: None, broker_epoch=5)
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_a_directory_that_cannot_be_read_at_start_starts_offline_with_kafkas_log_lines(tmp_path, caplog):
    """MetaPropertiesEnsemble and LogManager.createAndValidateLogDirs: a log directory that is not
    a readable directory, or whose meta.properties cannot be read, is left offline (no id
    registered, no log opened there) and the start goes on; with none left it stops, in Kafka's words."""
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    b.write_text("not a directory")
    (c / "meta.properties").mkdir(parents=True)            # a meta.properties that cannot be read
    with caplog.at_level("ERROR", logger="kafkawire.broker.log_dirs"):
        dirs = LogDirs.load([str(a), str(b), str(c)], node_id=1, cluster_id="c")
    assert dirs.offline == {str(b), str(c)} and dirs.online_paths == [str(a)] and len(dirs.ids()) == 1
    assert f"Failed to create or validate data directory {b}: {b} is not a readable log directory." in caplog.text
    assert f"Error while reading meta.properties file {c / 'meta.properties'}" in caplog.text
    assert f"Failed to create or validate data directory {c}: Failed to load {c} during broker startup" in caplog.text
    assert dirs.place("t", 0, UNASSIGNED, {}) == str(a)
    with pytest.raises(LogDirsError, match=f"Shutdown broker because none of the specified log dirs from {b}, {c} "
                                           "can be created or validated"):
        LogDirs.load([str(b), str(c)], node_id=1, cluster_id="c")

    async def go():
        broker, _ = make_broker([a, b], image_of({0: registration(), 1: registration()}))
        broker.dir_assignments.submit = lambda *args: None
        broker.lifecycle.state = "RUNNING"
        broker.on_metadata()
        assert {parent(broker.partitions[("t", i)]) for i in (0, 1)} == {str(a)}
        assert broker.log_dirs.offline == {str(b)}
        await broker.stop(graceful=False)
    asyncio.run(go())


def failing(error=OSError(5, "Input/output error")):
    def fail(*args, **kwargs):
        raise error
    return fail


def test_an_io_error_appending_rolling_reading_or_flushing_takes_the_directory_offline(tmp_path, caplog):
    """UnifiedLog / LocalLog's maybeHandleIOException: an I/O error of a log's append, roll, read or
    flush takes its directory offline (LogDirFailureChannel, with Kafka's message, logged) and the
    request is answered KAFKA_STORAGE_ERROR (without a message, as Kafka's); the other directory's
    replicas go on."""
    async def go():
        dirs = [tmp_path / "meta", tmp_path / "a", tmp_path / "b", tmp_path / "c", tmp_path / "d"]
        broker, state = make_broker(dirs, image_of({i: registration() for i in range(5)}))
        broker.dir_assignments.submit = lambda *args: None
        heartbeats = []
        broker.lifecycle.heartbeat_soon = lambda: heartbeats.append("now")       # each failure reported at once
        broker.on_metadata()
        image, topic = state["image"], state["image"].topics_by_name["t"]
        in_dir = {parent(broker.partitions[("t", i)]): broker.partitions[("t", i)] for i in range(5)}
        assert sorted(in_dir) == sorted(map(str, dirs))

        def produce(index):
            now = int(time.time() * 1000)
            records = SimpleNamespace(index=index, records=build_batch([(b"k", b"v", (), now)]))
            answer = broker.produce_api._produce_partition(image, topic, records, 1, 9, now)
            return answer.error_code, answer.error_message

        healthy, appended, rolled, read, flushed = (in_dir[str(d)] for d in dirs)   # the metadata log's stays
        appended.log.active_segment.append = failing()
        # Kafka's answer to a KafkaStorageException carries no message; the log says it
        assert produce(appended.partition) == (Errors.KAFKA_STORAGE_ERROR, None)
        assert f"Error while appending records to t-{appended.partition} in dir {dirs[1]}" in caplog.text
        assert produce(rolled.partition) == (Errors.NONE, None)
        rolled.log.roll = failing()
        rolled.log.segment_bytes = rolled.log.active_segment.size + 1      # the next append rolls
        assert produce(rolled.partition) == (Errors.KAFKA_STORAGE_ERROR, None)
        assert f"Error while rolling log segment for t-{rolled.partition} in dir {dirs[2]}" in caplog.text
        assert produce(read.partition) == (Errors.NONE, None)
        read.log.read_extent = failing()        # Partition.read reads through it (a fetch may send from the file)
        request = SimpleNamespace(partition=read.partition, fetch_offset=0, partition_max_bytes=1 << 20,
                                  current_leader_epoch=-1, last_fetched_epoch=-1)
        params = SimpleNamespace(version=13, only_leader=False, follower=None, client=None, isolation_level=0, in_file=False)
        answer = broker.fetch_api._fetch_partition(image, topic, request, params, 1 << 20, True)
        assert (answer.error_code, answer.high_watermark) == (Errors.KAFKA_STORAGE_ERROR, -1)
        assert produce(flushed.partition) == (Errors.NONE, None)
        flushed.log.flush = failing()
        broker.log_manager.clock = lambda: flushed.log.last_flush_ms + 10**12
        broker.log_manager.settings = lambda image, name: SimpleNamespace(flush_ms=0)
        broker.log_manager.flush_dirty_logs()
        assert broker.log_dirs.offline == set(map(str, dirs[1:])) and len(heartbeats) == 4
        assert list(broker.partitions) == [("t", healthy.partition)]
        assert produce(healthy.partition) == (Errors.NONE, None)
        assert produce(read.partition)[0] == Errors.KAFKA_STORAGE_ERROR       # offline: answered before any read
        for text in (f"Exception while reading from t-{read.partition} in dir {dirs[3]}",
                     f"Error while flushing log for t-{flushed.partition} in dir {dirs[4]} with offset 1 (exclusive) "
                     "and recovery point 1", f"Stopping serving replicas in dir {dirs[4]}"):
            assert text in caplog.text
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_an_io_error_appending_to_a_followed_replica_takes_its_directory_offline(tmp_path, caplog):
    """AbstractFetcherThread: a KafkaStorageException appending the leader's batches marks the
    partition failed (it is fetched no more) and the log's directory goes offline."""
    async def go():
        dirs = [tmp_path / "meta", tmp_path / "data"]
        broker, state = make_broker(dirs, image_of({}))
        broker.dir_assignments.submit = lambda *args: None
        broker.lifecycle.heartbeat_soon = lambda: None
        data_dir = broker.log_dirs.ids()[1]
        state["image"] = image_of({0: SimpleNamespace(leader=2, leader_epoch=1, replicas=(1, 2), isr=(1, 2),
                                                      partition_epoch=1, directories=(data_dir, UNASSIGNED))})
        broker.on_metadata()
        follower = broker.replica_roles.followers[("t", 0)]
        assert parent(follower.partition) == str(dirs[1])
        fetcher = broker.replica_roles.manager.fetchers[(2, 0)]
        fetch_state = fetcher.partitions[("t", 0)]
        follower.partition.log.active_segment.append = failing()
        fetched = SimpleNamespace(error_code=0, diverging_epoch=None, high_watermark=1, log_start_offset=0,
                                  records=build_batch([(b"k", b"v")], partition_leader_epoch=1))
        fetcher.process_partition(fetch_state, fetched)
        assert broker.log_dirs.offline == {str(dirs[1])}
        assert fetcher.partitions == {} and broker.replica_roles.followers == {}
        assert f"Error while appending records to t-0 in dir {dirs[1]}" in caplog.text
        await broker.stop(graceful=False)
    asyncio.run(go())


async def until_offline(broker, path, seconds: float = 30) -> None:
    """Until ``path`` is an offline directory of ``broker`` (bounded): a state file's failure is
    reported from the disk thread."""
    deadline = time.monotonic() + seconds
    while str(path) not in broker.log_dirs.offline:
        assert time.monotonic() < deadline, f"gave up waiting for {path} to go offline"
        await asyncio.sleep(0.01)


def test_an_io_error_creating_a_log_deleting_segments_or_writing_state_files_takes_the_directory_offline(
        tmp_path, caplog, monkeypatch):
    """LogManager.getOrCreateLog ("Error while creating log for ..."), UnifiedLog.deleteSegments
    (retention) and the leader-epoch checkpoint (CheckpointFileWithFailureHandler, written when
    DeleteRecords moves the log start): an I/O error takes the directory offline with Kafka's
    message; the replica is answered KAFKA_STORAGE_ERROR, and a log not created is not created in
    another directory instead."""
    dirs = [tmp_path / "meta", tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    opened = LeaderPartition.open

    def open_but_in_a(log_dir, *args, **kwargs):
        if log_dir == str(dirs[1]):
            raise OSError(13, "Permission denied")
        return opened(log_dir, *args, **kwargs)
    monkeypatch.setattr(LeaderPartition, "open", open_but_in_a)

    async def go():
        broker, state = make_broker(dirs, image_of({i: registration() for i in range(4)}))
        broker.dir_assignments.submit = lambda *args: None
        broker.lifecycle.heartbeat_soon = lambda: None
        broker.on_metadata()
        image, topic = state["image"], state["image"].topics_by_name["t"]
        assert broker.log_dirs.offline == {str(dirs[1])}
        (not_created,) = [key for key in broker.offline_partitions]
        assert not_created not in broker.partitions and len(broker.partitions) == 3
        assert f"Error while creating log for t-{not_created[1]} in dir {dirs[1]}" in caplog.text
        broker.on_metadata()                     # again: not opened in another directory
        assert not_created not in broker.partitions
        now = int(time.time() * 1000)

        def produce(index):
            records = SimpleNamespace(index=index, records=build_batch([(b"k", b"v", (), now)]))
            return broker.produce_api._produce_partition(image, topic, records, 1, 9, now).error_code
        assert produce(not_created[1]) == Errors.KAFKA_STORAGE_ERROR
        in_dir = {parent(p): p for p in broker.partitions.values()}
        retained, start_moved = in_dir[str(dirs[2])], in_dir[str(dirs[3])]
        assert produce(retained.partition) == produce(start_moved.partition) == Errors.NONE
        monkeypatch.setattr("kafkawire.storage.leader_epoch_cache.write_leader_epoch_checkpoint", failing())
        answer = broker.delete_records_api._delete(image, topic, "t", start_moved.partition, 1)
        assert answer == (Errors.NONE, 1, 1)                 # the checkpoint is written on the disk thread
        await until_offline(broker, dirs[3])
        checkpoint = os.path.join(start_moved.log.directory, "leader-epoch-checkpoint")
        assert f"Error while writing to checkpoint file {checkpoint}" in caplog.text
        retained.log.retire_oldest_segments = failing()
        settings = broker.log_manager.settings
        broker.log_manager.settings = lambda image, name: dataclasses.replace(settings(image, name), retention_ms=0)
        broker.log_manager.clock = lambda: now + 10_000
        broker.state_writes.wait(retained.log.directory)     # retention waits for the state files written
        broker.log_manager.cleanup_logs()
        assert broker.log_dirs.offline == set(map(str, dirs[1:]))
        assert f"Error while deleting segments for t-{retained.partition} in dir {dirs[2]}" in caplog.text
        assert list(broker.partitions) == [("t", in_dir[str(dirs[0])].partition)]
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_an_io_error_truncating_a_followed_replica_takes_its_directory_offline(tmp_path, caplog):
    """UnifiedLog.truncateTo and truncateFullyAndStartAt (a diverging epoch; a log ending below
    its leader's start; a log without epochs truncated to its high watermark as its fetching
    starts): an I/O error marks the partition failed and its directory offline, with Kafka's message."""
    async def go():
        dirs = [tmp_path / "meta", tmp_path / "a", tmp_path / "b", tmp_path / "c"]
        broker, state = make_broker(dirs, image_of({}))
        broker.dir_assignments.submit = lambda *args: None
        broker.lifecycle.heartbeat_soon = lambda: None
        ids = broker.log_dirs.ids()
        state["image"] = image_of({i: SimpleNamespace(leader=2, leader_epoch=1, replicas=(1, 2), isr=(1, 2),
                                                      partition_epoch=1, directories=(ids[i + 1], UNASSIGNED))
                                   for i in (0, 1, 2)})
        broker.on_metadata()
        fetcher = broker.replica_roles.manager.fetchers[(2, 0)]
        cut, emptied, restarted = (broker.replica_roles.followers[("t", i)] for i in (0, 1, 2))
        for follower in (cut, emptied, restarted):
            fetched = SimpleNamespace(error_code=0, diverging_epoch=None, high_watermark=0, log_start_offset=0,
                                      records=build_batch([(b"k", b"v"), (b"k", b"w")], partition_leader_epoch=1))
            fetcher.process_partition(fetcher.partitions[follower.key], fetched)
            assert follower.log.log_end_offset == 2
            follower.log.truncate_to = follower.log.truncate_fully_and_start_at = failing()
        fetcher.truncate(fetcher.partitions[cut.key], 1, 1)          # the leader's epoch 1 ends at 1
        assert broker.log_dirs.offline == {str(dirs[1])}
        assert f"Error while truncating log to offset 1 for t-0 in dir {dirs[1]}" in caplog.text

        async def list_offset(peer, fetch_state, timestamp):
            return Errors.NONE, 5                   # the leader's log starts and ends at 5
        fetcher._list_offset = list_offset
        await fetcher.handle_out_of_range(None, fetcher.partitions[emptied.key])
        assert broker.log_dirs.offline == {str(dirs[1]), str(dirs[2])}
        assert f"Error while truncating the entire log for t-1 in dir {dirs[2]}" in caplog.text
        restarted.latest_epoch = lambda: -1                 # no epochs: truncated to the high watermark first
        restarted.leader_epoch = 2
        fetcher.set_partitions({restarted.key: (restarted, TOPIC_ID)})
        assert fetcher.partitions == {}
        await until_offline(broker, dirs[3])                # after the metadata update that started it
        assert f"Error while truncating log to offset 0 for t-2 in dir {dirs[3]}" in caplog.text
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_followed_replicas_of_a_directory_failing_while_their_logs_open_are_not_opened_elsewhere(
        tmp_path, caplog, monkeypatch):
    """A follower's log that cannot be created takes its directory offline (LogManager.getOrCreateLog);
    the other replicas the same metadata update assigns there are not created in another directory."""
    dirs = [tmp_path / "meta", tmp_path / "a"]
    opened = LeaderPartition.open

    def open_but_in_a(log_dir, *args, **kwargs):
        if log_dir == str(dirs[1]):
            raise OSError(28, "No space left on device")
        return opened(log_dir, *args, **kwargs)
    monkeypatch.setattr(LeaderPartition, "open", open_but_in_a)

    async def go():
        broker, state = make_broker(dirs, image_of({}))
        broker.dir_assignments.submit = lambda *args: None
        broker.lifecycle.heartbeat_soon = lambda: None
        in_a = broker.log_dirs.ids()[1]
        state["image"] = image_of({i: SimpleNamespace(leader=2, leader_epoch=1, replicas=(1, 2), isr=(1, 2),
                                                      partition_epoch=1, directories=(in_a, UNASSIGNED))
                                   for i in (0, 1)})
        broker.on_metadata()
        assert broker.log_dirs.offline == {str(dirs[1])} and broker.replica_roles.followers == {}
        assert f"Error while creating log for t-0 in dir {dirs[1]}" in caplog.text
        assert not os.path.exists(dirs[0] / "t-1") and not os.path.exists(dirs[0] / "t-0")
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_replicas_assigned_to_a_directory_not_online_are_not_created_while_one_is_offline(tmp_path, caplog):
    """Partition.createLogInAssignedDirectoryId: with a directory offline (here: unreadable at start,
    so its id is unknown), a replica the metadata assigns to a directory that is not online here
    (unknown, or LOST) is not created in another one, warned once, and answered NOT_LEADER_OR_FOLLOWER;
    UNASSIGNED and online ones are; with no directory offline an unknown one is placed as usual."""
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    b.write_text("not a directory")
    unknown = uuid.uuid4()

    async def go(dirs, expected_opened):
        broker, state = make_broker(dirs, image_of({}))
        broker.dir_assignments.submit = lambda *args: None
        state["image"] = image_of({0: registration(unknown), 1: registration(broker.log_dirs.ids()[0]),
                                   2: registration(), 3: registration(LOST)})
        broker.on_metadata()
        broker.on_metadata()
        assert sorted(index for _, index in broker.partitions) == expected_opened
        assert all(parent(p) in map(str, dirs) for p in broker.partitions.values())
        image, topic = state["image"], state["image"].topics_by_name["t"]
        now = int(time.time() * 1000)
        records = SimpleNamespace(index=0, records=build_batch([(b"k", b"v", (), now)]))
        answer = broker.produce_api._produce_partition(image, topic, records, 1, 9, now)
        await broker.stop(graceful=False)
        return answer.error_code
    assert asyncio.run(go([a, b], [1, 2])) == Errors.NOT_LEADER_OR_FOLLOWER
    warning = (f"[Partition t-0 broker=1] Skipping creation of log because there are potentially offline log "
               f"directories and log may already exist there. directoryId={unknown}")
    assert caplog.text.count(warning) == 1 and "[Partition t-3 broker=1] Skipping creation" in caplog.text
    assert not (a / "t-0").exists() and not (a / "t-3").exists()
    assert asyncio.run(go([a, c], [0, 1, 2, 3])) == Errors.NONE


def test_an_io_error_renaming_a_deleted_partitions_log_takes_its_directory_offline(tmp_path, caplog, monkeypatch):
    """LogManager.asyncDelete's UnifiedLog.renameDir: a deleted partition's log that cannot be renamed
    "-delete" takes its directory offline ("Error while renaming dir for ..."); the other is deleted."""
    dirs = [tmp_path / "meta", tmp_path / "a"]
    renamed = os.rename

    def rename_but_in_a(source, target):
        if os.path.dirname(source) == str(dirs[1]):
            raise OSError(5, "Input/output error")
        renamed(source, target)
    monkeypatch.setattr("kafkawire.broker.log_deletion.os.rename", rename_but_in_a)

    async def go():
        broker, state = make_broker(dirs, image_of({i: registration() for i in (0, 1)}))
        broker.dir_assignments.submit = lambda *args: None
        broker.lifecycle.heartbeat_soon = lambda: None
        broker.on_metadata()
        in_a = [p for p in broker.partitions.values() if parent(p) == str(dirs[1])][0]
        state["image"] = image_of({})                      # the topic's partitions gone
        broker.on_metadata()
        assert broker.log_dirs.offline == {str(dirs[1])} and broker.partitions == {}
        assert f"Error while renaming dir for t-{in_a.partition} in log dir {dirs[1]}" in caplog.text
        assert [n.endswith("-delete") for n in os.listdir(dirs[0]) if n.startswith("t-")] == [True]
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_an_io_error_truncating_a_future_log_takes_its_directory_offline(tmp_path, caplog):
    """ReplicaAlterLogDirsThread: the future log of AlterReplicaLogDirs that cannot be truncated
    (here: started again at the current log's start) takes its directory offline with UnifiedLog's
    message; the future log is closed there and the replica goes on in its directory."""
    async def go():
        dirs = [tmp_path / "a", tmp_path / "b"]
        two_replicas = SimpleNamespace(leader=1, leader_epoch=0, replicas=(1, 2), isr=(1, 2), partition_epoch=0,
                                       directories=(UNASSIGNED, UNASSIGNED))
        broker, state = make_broker(dirs, image_of({0: two_replicas}))
        broker.dir_assignments.submit = lambda *args: None
        broker.lifecycle.heartbeat_soon = lambda: None
        broker.on_metadata()
        current = broker.partitions[("t", 0)]
        for _ in range(3):
            current.log.append(build_batch([(b"k", b"v"), (b"k2", b"v2")]), assign_offsets=True, leader_epoch=0)
        current.store_high_watermark(4)
        current.maybe_increment_log_start_offset(2)       # the future log starts again at 2 first
        answer = await broker.alter_log_dirs.alter_replica_log_dirs(None, AlterReplicaLogDirsRequest(dirs=[
            AlterReplicaLogDir(path=str(dirs[1]), topics=[AlterReplicaLogDirTopic(name="t", partitions=[0])])]))
        assert answer.results[0].partitions[0].error_code == Errors.NONE
        future = broker.alter_log_dirs.futures.futures[("t", 0)]
        assert future.log.log_end_offset == 0                    # not stepped yet
        future.log.truncate_fully_and_start_at = failing()
        await until_offline(broker, dirs[1])
        assert f"Error while truncating the entire log for t-0 in dir {dirs[1]}" in caplog.text
        assert not broker.alter_log_dirs.futures.busy() and broker.partitions[("t", 0)] is current
        assert parent(current) == str(dirs[0])
        await broker.stop(graceful=False)
    asyncio.run(go())
