"""AlterReplicaLogDirs as Kafka moves a replica (kafkawire.broker.log_dir_copy), in process on a
stand-in metadata image: the future log made at once and copied while the replica keeps serving
produce and fetch (never NOT_LEADER_OR_FOLLOWER), the records produced meanwhile in the moved log,
the swap leaving the same batches, the copy following the current log's truncation and log start,
a copy resumed after a restart, dropped when its replica goes, redirected or cancelled by a new
request, held by ``replica.alter.log.dirs.io.max.bytes.per.second``, and DescribeLogDirs' future entry.
"""
from __future__ import annotations

import asyncio
import os
import shutil
from types import SimpleNamespace

from kafkawire.broker.follower import FollowerReplica
from kafkawire.broker.log_dir_copy import find_future_logs
from kafkawire.messages.assign_replicas_to_dirs_response import (AssignReplicasToDirsResponse, DirectoryData,
                                                                 PartitionData, TopicData)
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.metadata.registrations import UNASSIGNED
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch
from kafkawire.storage.segment import LOG_SUFFIX

from .test_log_dirs import accepting, altered, image_of, make_broker, parent, registration

KEY = ("t", 0)


def log_bytes(directory) -> bytes:
    """The partition's batches as stored: its segments' .log files in offset order."""
    names = sorted(n for n in os.listdir(directory) if n.endswith(LOG_SUFFIX))
    return b"".join(open(os.path.join(directory, n), "rb").read() for n in names)


def futures_of(broker):
    return broker.alter_log_dirs.futures


async def produce(broker, value: bytes, *, producer_id=-1, sequence=-1):
    records = build_batch([(b"k", value)], producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                          base_sequence=sequence)
    request = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(name="t", partition_data=[
        PartitionProduceData(index=0, records=records)])])
    response = await broker.produce_api.produce(SimpleNamespace(api_version=9, listener_name="PLAINTEXT"), request)
    answer = response.responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset


async def fetch(broker, offset: int):
    request = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[FetchTopic(topic="t", partitions=[
        FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])
    response = await broker.fetch_api.fetch(SimpleNamespace(api_version=12, listener_name="PLAINTEXT"), request)
    answer = response.responses[0].partitions[0]
    return answer.error_code, [b.base_offset for b in iter_batches(bytes(answer.records or b""))]


def two_dir_broker(tmp_path, partitions=None, held=None):
    dirs = [tmp_path / "a", tmp_path / "b"]
    broker, state = make_broker(dirs, image_of(partitions or {0: registration()}))
    sent = []
    broker.dir_assignments.submit = accepting(sent, held)
    broker.on_metadata()
    return broker, state, [str(d) for d in dirs], sent


def future_entries(broker):
    return [(r.log_dir, p.partition_index, p.is_future_key, p.offset_lag, p.partition_size)
            for r in broker.log_dir_apis.log_dir_results(None) for t in r.topics for p in t.partitions]


async def wait_for_swap(broker, timeout=10.0):
    async with asyncio.timeout(timeout):
        while futures_of(broker).busy():
            await asyncio.sleep(0.001)


def test_the_replica_serves_throughout_the_copy_and_the_swap_keeps_the_same_log(tmp_path):
    async def go():
        broker, state, dirs, sent = two_dir_broker(tmp_path)
        partition = broker.partitions[KEY]
        assert parent(partition) == dirs[0]
        for i in range(40):                         # ~1.3 MB, copied in 64 KiB steps
            assert await produce(broker, os.urandom(32 << 10), producer_id=7, sequence=i) == (Errors.NONE, i)
        futures_of(broker).step_bytes = 64 << 10
        assert await altered(broker, dirs[1], 0) == {KEY: Errors.NONE}      # answered once the future log exists
        future_dir = futures_of(broker).futures[KEY].log.directory
        assert os.path.dirname(future_dir) == dirs[1] and future_dir.endswith("-future")
        # DescribeLogDirs: the current replica in a, the future one in b, all of it still to copy
        assert future_entries(broker) == [(dirs[0], 0, False, 0, partition.log.size), (dirs[1], 0, True, 40, 0)]
        produced, answers, steps = 40, [], 0
        while futures_of(broker).busy():           # a produce and a fetch between the copier's steps
            answers.append(await produce(broker, os.urandom(1 << 10), producer_id=7, sequence=produced))
            answers.append(await fetch(broker, produced))
            produced += 1
            steps += 1
            assert steps < 500
            await asyncio.sleep(0)
        assert steps > 5                            # the copy took several turns of the loop
        assert {code for code, _ in answers} == {Errors.NONE}       # never NOT_LEADER_OR_FOLLOWER
        assert broker.partitions[KEY] is partition and parent(partition) == dirs[1]
        assert sent == list(broker.log_dirs.ids())      # AssignReplicasToDirs: the new log's a, then b (once)
        old = [n for n in os.listdir(dirs[0]) if n.startswith("t-0.") and n.endswith("-delete")]
        assert len(old) == 1 and not os.path.exists(os.path.join(dirs[0], "t-0"))
        # the same batches at the swap (the client went on producing to the moved log until the
        # controller accepted it), the ones produced during the copy among them
        before, after = log_bytes(os.path.join(dirs[0], old[0])), log_bytes(partition.log.directory)
        assert after.startswith(before) and 40 < [b.last_offset for b in iter_batches(before)][-1] + 1 < produced
        assert partition.log.log_end_offset == produced
        assert await produce(broker, b"after", producer_id=7, sequence=produced) == (Errors.NONE, produced)
        assert (await fetch(broker, produced))[1] == [produced]
        assert future_entries(broker) == [(dirs[1], 0, False, 0, partition.log.size)]
        await broker.stop(graceful=False)
        # the producer state and the epochs went with it: a restart reads them from b
        broker, state = make_broker([tmp_path / "a", tmp_path / "b"], state["image"])
        broker.on_metadata()
        reopened = broker.partitions[KEY]
        assert parent(reopened) == dirs[1] and reopened.log.log_end_offset == produced + 1
        assert reopened.producers.producers[7].last_seq == produced
        assert [(e.epoch, e.start_offset) for e in reopened.epochs.entries] == [(0, 0)]
        await broker.stop(graceful=False)
    asyncio.run(go())


def _stop_copier(broker):
    """Drive the copy by hand: the copier task is stopped (not its future logs)."""
    task = futures_of(broker)._task
    task.cancel()
    futures_of(broker)._ensure_task = lambda: None
    return task


def test_the_copy_follows_a_truncation_and_the_log_start_of_the_current_log(tmp_path):
    async def go():
        broker, _, dirs, _ = two_dir_broker(tmp_path)
        partition = broker.partitions[KEY]
        partition.log.segment_bytes = 4 << 10        # several segments, for retention to delete
        for i in range(30):
            await produce(broker, os.urandom(1 << 10))
        await altered(broker, dirs[1], 0)
        _stop_copier(broker)
        futures = futures_of(broker)
        futures.step_bytes = 3 << 10
        for _ in range(4):
            assert await futures.step(KEY)
        future = futures.futures[KEY]
        assert 0 < future.log.log_end_offset < 30
        # the current log is cut below what was copied and written again in a new leader epoch
        cut = future.log.log_end_offset - 2
        FollowerReplica(partition, leader_id=1, leader_epoch=0).truncate_to(cut)
        partition.leader_epoch = 1
        for _ in range(5):
            await produce(broker, os.urandom(1 << 10))
        assert await futures.step(KEY)
        # the diverging batches of epoch 0 were cut, the new ones of epoch 1 copied after them
        assert future.log.log_end_offset > cut and [e.epoch for e in future.partition.epochs.entries] == [0, 1]
        assert log_bytes(partition.log.directory).startswith(log_bytes(future.log.directory))
        # DeleteRecords and retention move the current log start past what the future has
        for _ in range(10):
            await produce(broker, os.urandom(1 << 10))
        partition.store_high_watermark(partition.log.log_end_offset)
        start = partition.log.log_end_offset - 3
        partition.maybe_increment_log_start_offset(start)
        broker.state_writes.wait(partition.log.directory)      # retention waits for the roll's snapshots
        assert broker.log_manager.cleanup_logs() > 0
        assert partition.log.segments[0].base_offset > future.log.log_end_offset
        async with asyncio.timeout(10):
            while KEY in futures.futures:
                await futures.step(KEY)
        assert parent(partition) == dirs[1] and partition.log.log_start_offset == start
        old = next(n for n in os.listdir(dirs[0]) if n.endswith("-delete"))
        # every batch of the current log from the one holding the log start on, byte for byte
        first_kept = partition.log.segments[0].base_offset
        assert first_kept <= start and log_bytes(partition.log.directory) == _bytes_from(dirs[0], old, first_kept)
        assert [e.epoch for e in partition.epochs.entries] == [1]
        await broker.stop(graceful=False)
    asyncio.run(go())


def _bytes_from(log_dir, name, offset) -> bytes:
    data = log_bytes(os.path.join(log_dir, name))
    for batch in iter_batches(data):
        if batch.last_offset >= offset:
            return data[batch.position:]
    return b""


def test_a_copy_cut_short_by_a_crash_resumes_from_its_future_log(tmp_path):
    async def go():
        broker, state, dirs, _ = two_dir_broker(tmp_path)
        for i in range(20):
            await produce(broker, os.urandom(4 << 10))
        original = log_bytes(broker.partitions[KEY].log.directory)
        await altered(broker, dirs[1], 0)
        _stop_copier(broker)
        futures_of(broker).step_bytes = 16 << 10
        for _ in range(2):
            await futures_of(broker).step(KEY)
        copied = futures_of(broker).futures[KEY].log.log_end_offset
        assert 0 < copied < 20
        # a crash now: the files as they are (the future log neither flushed nor closed)
        crashed = tmp_path / "crashed"
        broker.state_writes.wait_all()        # a checkpoint's .tmp renamed under copytree fails the copy
        for d in ("a", "b"):
            shutil.copytree(tmp_path / d, crashed / d)
        await broker.stop(graceful=False)
        dirs = [str(crashed / "a"), str(crashed / "b")]
        found = find_future_logs(dirs)
        assert list(found) == [KEY] and os.path.dirname(found[KEY]) == dirs[1]

        broker, _ = make_broker([crashed / "a", crashed / "b"], state["image"])
        broker.dir_assignments.submit = accepting([])
        futures_of(broker).resumable.update(found)
        broker.on_metadata()                         # the replica opens in a; its copy goes on
        assert futures_of(broker).futures[KEY].log.log_end_offset == copied
        await wait_for_swap(broker)
        assert parent(broker.partitions[KEY]) == dirs[1] and log_bytes(broker.partitions[KEY].log.directory) == original
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_a_future_log_goes_with_its_replica_or_a_new_destination_and_the_quota_holds_it(tmp_path):
    async def go():
        broker, state, dirs, _ = two_dir_broker(tmp_path, {0: registration(), 1: registration()})
        for _ in range(5):
            await produce(broker, os.urandom(1 << 10))
        source = parent(broker.partitions[KEY])
        target = dirs[1] if source == dirs[0] else dirs[0]
        assert await altered(broker, target, 0) == {KEY: Errors.NONE}
        _stop_copier(broker)
        futures = futures_of(broker)
        first = futures.futures[KEY].log.directory
        assert await altered(broker, target, 0) == {KEY: Errors.NONE} and futures.futures[KEY].log.directory == first
        assert await altered(broker, source, 0) == {KEY: Errors.NONE}    # back to where it is: the copy is dropped
        assert KEY not in futures.futures and not os.path.exists(first)
        assert [n for n in os.listdir(target) if n.startswith("t-0.") and n.endswith("-delete")]
        # replica.alter.log.dirs.io.max.bytes.per.second: no step while the rate is above it
        state["image"].configs[(4, "")] = {"replica.alter.log.dirs.io.max.bytes.per.second": "100"}
        await altered(broker, target, 0)
        futures.step_bytes = 1 << 10
        assert await futures.step(KEY) and not await futures.step(KEY)
        assert futures.futures[KEY].log.log_end_offset == 1
        # the replica leaves this broker mid-copy: its future log goes too
        state["image"].topics_by_name["t"].partitions.pop(0)
        broker.on_metadata()
        assert KEY not in futures.futures and KEY not in broker.partitions
        assert not [n for n in os.listdir(target) if n.startswith("t-0") and not n.endswith("-delete")]
        assert not [n for n in os.listdir(source) if n.startswith("t-0") and not n.endswith("-delete")]
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_future_logs_at_start_only_resume_where_the_current_log_is(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    (dirs[0] / "t-0").mkdir()
    first, second = dirs[1] / f"t-0.{'1' * 32}-future", dirs[1] / f"t-0.{'2' * 32}-future"
    first.mkdir()
    second.mkdir()
    orphan = dirs[1] / f"t-1.{'3' * 32}-future"          # no t-1 anywhere: kept as it is
    orphan.mkdir()
    found = find_future_logs([str(d) for d in dirs])
    assert found == {KEY: str(first)}                    # one per partition; the other goes
    assert not second.exists() and orphan.exists()
    assert [n for n in os.listdir(dirs[1]) if n.endswith("-delete")]


def test_a_followed_replica_moves_while_its_leaders_batches_are_appended(tmp_path):
    """A follower's log moves as a leader's does: the batches the replica fetcher appends during
    the copy (the leader's offsets and epochs) are in the moved log, and it is followed on after."""
    async def go():
        followed = SimpleNamespace(leader=2, leader_epoch=3, replicas=(2, 1), isr=(2, 1), partition_epoch=0,
                                   directories=(UNASSIGNED, UNASSIGNED))
        broker, _, dirs, sent = two_dir_broker(tmp_path, {0: followed})
        follower = broker.replica_roles.followers[KEY]
        offset = 0

        def leaders_batch():
            nonlocal offset
            batch = build_batch([(b"k", os.urandom(2048))], base_offset=offset, partition_leader_epoch=3)
            offset += 1
            return batch
        for _ in range(30):
            follower.append(leaders_batch())
        futures_of(broker).step_bytes = 8 << 10
        assert await altered(broker, dirs[1], 0) == {KEY: Errors.NONE}
        async with asyncio.timeout(10):
            while futures_of(broker).busy():
                follower.append(leaders_batch())           # the fetcher goes on between the copier's steps
                await asyncio.sleep(0)
        moved = broker.replica_roles.followers[KEY]
        assert moved is follower and parent(follower.partition) == dirs[1] and sent[-1] == broker.log_dirs.ids()[1]
        follower.append(leaders_batch())
        assert follower.log.log_end_offset == offset > 31
        assert [b.base_offset for b in iter_batches(log_bytes(follower.log.directory))] == list(range(offset))
        assert [(e.epoch, e.start_offset) for e in follower.epochs.entries] == [(3, 0)]
        await broker.stop(graceful=False)
    asyncio.run(go())


async def until_told(held: list, count: int):
    async with asyncio.timeout(10):
        while len(held) < count:
            await asyncio.sleep(0.001)


def test_the_swap_waits_for_the_controller_the_future_log_kept_caught_up_meanwhile(tmp_path):
    """ReplicaAlterLogDirsThread.maybePromoteFutureReplica: the caught-up future log is told to the
    controller first and swapped only once it accepted; meanwhile the replica serves from its
    directory, the future log follows what is produced, and the metadata naming the new directory
    is not assigned back. A move stopped before the acceptance is assigned back (removePartitions)."""
    async def go():
        held = []
        broker, state, dirs, sent = two_dir_broker(tmp_path, held=held)
        partition = broker.partitions[KEY]
        ids = list(broker.log_dirs.ids())
        for _ in range(10):
            await produce(broker, os.urandom(4 << 10))
        futures = futures_of(broker)
        assert await altered(broker, dirs[1], 0) == {KEY: Errors.NONE}
        await until_told(held, 1)
        # cancelled (moved back where it is) before the answer: assigned back to a, the late answer ignored
        assert await altered(broker, dirs[0], 0) == {KEY: Errors.NONE} and not futures.futures
        assert sent == [ids[0], ids[1], ids[0]]
        held.pop()()
        assert not futures.futures and parent(partition) == dirs[0] and len(sent) == 3

        assert await altered(broker, dirs[1], 0) == {KEY: Errors.NONE}
        await until_told(held, 1)
        future = futures.futures[KEY]
        assert future.log.log_end_offset == partition.log.log_end_offset and futures.waiting() == {KEY}
        assert parent(partition) == dirs[0] and sent[-1] == ids[1]
        state["image"] = image_of({0: registration(ids[1])})     # the controller's record before its answer
        broker.on_metadata()
        assert len(sent) == 4 and broker.partitions[KEY] is partition and parent(partition) == dirs[0]
        for _ in range(5):
            await produce(broker, os.urandom(4 << 10))
        async with asyncio.timeout(10):         # the copier's next turn (replica.fetch.backoff.ms) copies them
            while future.log.log_end_offset != partition.log.log_end_offset:
                await asyncio.sleep(0.001)
        assert parent(partition) == dirs[0] and futures.futures[KEY] is future and len(held) == 1
        held.pop()()                            # the controller's answer: accepted
        await wait_for_swap(broker)
        assert parent(partition) == dirs[1] and partition.log.log_end_offset == 15 and len(sent) == 4
        old = next(n for n in os.listdir(dirs[0]) if n.startswith("t-0.") and n.endswith("-delete"))
        assert log_bytes(os.path.join(dirs[0], old)) == log_bytes(partition.log.directory)
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_a_refused_move_stays_in_its_directory_caught_up_until_the_controller_accepts_it(tmp_path):
    """AssignmentsManager: a partition answered with an error is sent again after a backoff; the
    replica stays in its directory (its future log caught up) until an answer NONE, then swaps."""
    async def go():
        broker, state, dirs, _ = two_dir_broker(tmp_path)
        partition = broker.partitions[KEY]
        assignments = broker.dir_assignments
        del assignments.submit                  # the real one from here on, over a stand-in controller
        requests, refusing = [], [True]

        async def send(request, timeout_ms):
            requests.append(request)
            code = Errors.NOT_LEADER_OR_FOLLOWER if refusing[0] else Errors.NONE
            return AssignReplicasToDirsResponse(directories=[DirectoryData(id=d.id, topics=[TopicData(
                topic_id=t.topic_id, partitions=[PartitionData(partition_index=p.partition_index, error_code=code)
                                                 for p in t.partitions]) for t in d.topics])
                for d in request.directories])
        assignments.send, assignments.broker_epoch = send, lambda: 5
        assignments.start()
        for _ in range(5):
            await produce(broker, os.urandom(4 << 10))
        assert await altered(broker, dirs[1], 0) == {KEY: Errors.NONE}
        await until_told(requests, 2)           # refused, and refused again after the backoff
        future = futures_of(broker).futures[KEY]
        assert parent(partition) == dirs[0] and future.log.log_end_offset == partition.log.log_end_offset == 5
        assert [d.id for r in requests for d in r.directories] == [broker.log_dirs.ids()[1]] * 2
        refusing[0] = False
        await wait_for_swap(broker)
        assert parent(partition) == dirs[1] and len(requests) == 3 and assignments.sent == 1
        assignments.close()
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_without_directory_assignment_the_swap_follows_the_catch_up(tmp_path):
    """Before metadata.version 3.7-IV2 the controller takes no AssignReplicasToDirs (Kafka's
    answers UNSUPPORTED_VERSION): nothing is asked, the caught-up future log is swapped at once."""
    async def go():
        held = []
        dirs = [tmp_path / "a", tmp_path / "b"]
        broker, state = make_broker(dirs, image_of({0: registration()}, metadata_version=16))
        sent = []
        broker.dir_assignments.submit = accepting(sent, held)
        broker.on_metadata()
        for _ in range(3):
            await produce(broker, os.urandom(1 << 10))
        assert await altered(broker, dirs[1], 0) == {KEY: Errors.NONE}
        await wait_for_swap(broker)
        assert parent(broker.partitions[KEY]) == str(dirs[1]) and sent == [] and held == []
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_a_crash_after_the_controller_accepted_and_before_the_swap_asks_again_after_the_restart(tmp_path):
    """The metadata names the new directory, the log is still in the old one and the future log
    in the new: at the restart the log opens where it is and is assigned back there (Kafka's
    maybeUpdateTopicAssignment), the copy resumes, and once caught up the controller is asked
    again and the swap waits for it. A waiting move does not hold the next partition's copy."""
    async def go():
        held = []
        broker, state, dirs, _ = two_dir_broker(tmp_path, {0: registration(), 1: registration()}, held=held)
        for _ in range(5):
            await produce(broker, os.urandom(4 << 10))
        source = parent(broker.partitions[KEY])
        target = dirs[1] if source == dirs[0] else dirs[0]
        assert await altered(broker, target, 0) == {KEY: Errors.NONE}
        await until_told(held, 1)
        other_source = parent(broker.partitions[("t", 1)])
        assert await altered(broker, source if other_source == target else target, 1) == {("t", 1): Errors.NONE}
        await until_told(held, 2)               # partition 1 copied and waiting too, while 0 waits
        ids = dict(zip(dirs, broker.log_dirs.ids()))
        state["image"] = image_of({0: registration(ids[target]), 1: registration(ids[other_source])})
        broker.on_metadata()                    # the controller's record of 0; then a crash
        crashed = tmp_path / "crashed"
        broker.state_writes.wait_all()
        for d in ("a", "b"):
            shutil.copytree(tmp_path / d, crashed / d)
        await broker.stop(graceful=False)
        crashed_dirs = {d: str(crashed / os.path.basename(d)) for d in dirs}
        broker, _ = make_broker([crashed / "a", crashed / "b"], state["image"])
        sent, held = [], []
        broker.dir_assignments.submit = accepting(sent, held)
        futures_of(broker).resumable.update(find_future_logs(list(crashed_dirs.values())))
        broker.on_metadata()
        partition = broker.partitions[KEY]
        assert parent(partition) == crashed_dirs[source] and sent[:1] == [ids[source]]     # assigned back
        await until_told(held, 2)
        assert ids[target] in sent[1:] and parent(partition) == crashed_dirs[source]
        for accepted in held:
            accepted()
        await wait_for_swap(broker)
        assert parent(partition) == crashed_dirs[target] and partition.log.log_end_offset == 5
        await broker.stop(graceful=False)
    asyncio.run(go())
