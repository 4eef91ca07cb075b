"""I/O errors of AlterReplicaLogDirs' copy (kafkawire.broker.log_dir_copy), in process on a stand-in
metadata image, as Kafka 4.3.1's ReplicaAlterLogDirsThread, LogManager and UnifiedLog handle them:
an error writing the future log (creating it, appending, rolling, flushing, its partition.metadata
or leader-epoch checkpoint) takes the future's directory offline and closes the future log there,
the replica going on where it is; an error reading the current log takes the current log's
directory offline, the future log left idle (listed without a lag) until the replica goes.
"""
from __future__ import annotations

import asyncio
import os
import re
from types import SimpleNamespace

import pytest

import kafkawire.broker.log_dir_copy as log_dir_copy
from kafkawire.messages.describe_log_dirs_request import DescribeLogDirsRequest
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch

from .test_log_dirs import accepting, altered, failing, image_of, make_broker, parent, until_offline


def moving(tmp_path):
    """A broker with log dirs meta (the metadata log's), a and b; partition t-0 led in a with 3
    batches of 2 records (leader epoch 0); its directory ids."""
    dirs = [tmp_path / "meta", tmp_path / "a", tmp_path / "b"]
    broker, state = make_broker(dirs, image_of({}))
    broker.dir_assignments.submit = accepting([])
    broker.lifecycle.heartbeat_soon = lambda: None
    ids = broker.log_dirs.ids()
    state["image"] = image_of({0: SimpleNamespace(leader=1, leader_epoch=0, replicas=(1,), isr=(1,),
                                                  partition_epoch=0, directories=(ids[1],))})
    broker.on_metadata()
    current = broker.partitions[("t", 0)]
    assert parent(current) == str(dirs[1])
    for _ in range(3):
        current.log.append(build_batch([(b"k", b"v"), (b"k2", b"v2")]), assign_offsets=True, leader_epoch=0)
    current.store_high_watermark(6)
    return broker, state, dirs, current


def future_dirs(path) -> list[str]:
    return [n for n in os.listdir(path) if n.startswith("t-0.")]


def break_future(step: str, future, monkeypatch) -> None:
    """``future``'s ``step`` made to fail with an I/O error (its first step has not run yet)."""
    if step == "append":
        future.log.active_segment.append = failing()
    elif step == "roll":
        future.log.roll = failing()
        future.log.segment_bytes = 100                  # a batch (81 bytes) a segment: the second rolls
    elif step == "flush":
        future.log.prepare_flush = lambda: failing()    # the fsyncs, off the loop, before the swap
    elif step == "metadata":
        monkeypatch.setattr(log_dir_copy, "_fsync_file", failing())
    elif step == "snapshot":                             # the producer snapshot of the roll
        monkeypatch.setattr("kafkawire.broker.partition.atomic_write", failing())
        future.log.segment_bytes = 100
    else:
        monkeypatch.setattr("kafkawire.storage.leader_epoch_cache.write_leader_epoch_checkpoint", failing())


@pytest.mark.parametrize("step", ["append", "roll", "flush", "metadata", "checkpoint", "snapshot"])
def test_an_io_error_writing_the_future_log_takes_its_directory_offline(step, tmp_path, caplog, monkeypatch):
    """The future log's write fails: its directory goes offline with UnifiedLog's (or the
    checkpoint file's) message, the fetcher marks the partition failed (not for a flush, Kafka's
    flusher's), the future log is closed where it is (not renamed: the directory failed) and the
    replica serves on in its own directory, the metadata unchanged (nothing was sent)."""
    async def go():
        broker, state, dirs, current = moving(tmp_path)
        sent = []
        broker.dir_assignments.submit = accepting(sent)
        assert await altered(broker, dirs[2], 0) == {("t", 0): Errors.NONE}
        future = broker.alter_log_dirs.futures.futures[("t", 0)]
        assert future.log.log_end_offset == 0                    # not stepped yet
        break_future(step, future, monkeypatch)
        await until_offline(broker, dirs[2])
        name = os.path.basename(future.log.directory)
        expected = {"append": f"Error while appending records to t-0 in dir {dirs[2]}",
                    "roll": f"Error while rolling log segment for t-0 in dir {dirs[2]}",
                    "snapshot": f"Error while rolling log segment for t-0 in dir {dirs[2]}",
                    "flush": f"Error while flushing log for t-0 in dir {dirs[2]}",
                    "metadata": f"Error while writing partition metadata file {dirs[2] / name / 'partition.metadata'}",
                    "checkpoint": f"Error while writing to checkpoint file "
                                  f"{dirs[2] / name / 'leader-epoch-checkpoint'}"}[step]
        assert expected in caplog.text
        assert ("[ReplicaAlterLogDirsThread-0]: Partition t-0 marked as failed" in caplog.text) == (
            step in ("append", "roll"))
        assert f"stopped moving logs for partitions t-0 because they are in the failed log directory {dirs[2]}" \
            in caplog.text
        futures = broker.alter_log_dirs.futures
        assert not futures.futures and not futures.stalled and future_dirs(dirs[2]) == [name]
        assert broker.partitions[("t", 0)] is current and parent(current) == str(dirs[1]) and sent == []
        assert current.log.read(0, 1 << 20).data                 # still readable, still served
        assert broker.log_dirs.offline == {str(dirs[2])}
        await broker.stop(graceful=False)
    asyncio.run(go())


@pytest.mark.parametrize("step", ["directory", "metadata"])
def test_an_io_error_creating_the_future_log_takes_its_directory_offline(step, tmp_path, caplog, monkeypatch):
    """LogManager.createLogDirectory and PartitionMetadataFile.maybeFlush: AlterReplicaLogDirs is
    answered KAFKA_STORAGE_ERROR and the destination goes offline with Kafka's message."""
    async def go():
        broker, state, dirs, current = moving(tmp_path)
        with monkeypatch.context() as patch:
            if step == "directory":
                patch.setattr(os, "makedirs", failing())
            else:
                patch.setattr(log_dir_copy, "write_partition_metadata", failing())
            assert await altered(broker, dirs[2], 0) == {("t", 0): Errors.KAFKA_STORAGE_ERROR}
        expected = (rf"Error while creating log for t-0\.[0-9a-f]{{32}}-future in dir {re.escape(str(dirs[2]))}"
                    if step == "directory" else
                    rf"Error while writing partition metadata file {re.escape(str(dirs[2]))}/t-0\.[0-9a-f]{{32}}"
                    r"-future/partition\.metadata")
        assert re.search(expected, caplog.text)
        assert broker.log_dirs.offline == {str(dirs[2])} and not broker.alter_log_dirs.futures.busy()
        assert broker.partitions[("t", 0)] is current
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_an_io_error_reading_the_current_log_takes_its_directory_offline_and_leaves_the_future_idle(
        tmp_path, caplog):
    """LocalLeaderEndPoint's fetch of the current log fails (UnifiedLog.read): the current log's
    directory goes offline and its replica is offline here; the future log stays in its directory,
    idle, listed by DescribeLogDirs without a lag (-1); AlterReplicaLogDirs of the replica is
    answered KAFKA_STORAGE_ERROR (HostedPartition.Offline); the replica gone from the metadata,
    the future log is deleted (LogManager.asyncDelete)."""
    async def go():
        broker, state, dirs, current = moving(tmp_path)
        assert await altered(broker, dirs[2], 0) == {("t", 0): Errors.NONE}
        futures = broker.alter_log_dirs.futures
        future = futures.futures[("t", 0)]
        current.log.read = failing()
        await until_offline(broker, dirs[1])
        assert f"Exception while reading from t-0 in dir {dirs[1]}" in caplog.text
        assert "[ReplicaAlterLogDirsThread-0]: Error for partition t-0 at offset 0" in caplog.text
        assert ("t", 0) not in broker.partitions and not futures.futures and futures.stalled == {("t", 0): future}
        assert broker.log_dirs.offline == {str(dirs[1])}
        described = await broker.log_dir_apis.describe_log_dirs(None, DescribeLogDirsRequest(topics=None))
        (in_b,) = [r for r in described.results if r.log_dir == str(dirs[2])]
        assert [(p.partition_index, p.is_future_key, p.offset_lag) for t in in_b.topics for p in t.partitions] == [
            (0, True, -1)]
        assert await altered(broker, dirs[0], 0) == {("t", 0): Errors.KAFKA_STORAGE_ERROR}
        assert "Unable to alter log dirs for t-0: Partition t-0 is offline" in caplog.text
        broker.on_metadata()                                  # still assigned here: kept
        assert futures.stalled and future_dirs(dirs[2]) == [os.path.basename(future.log.directory)]
        state["image"] = image_of({})
        broker.on_metadata()
        assert not futures.stalled and [n.endswith("-delete") for n in future_dirs(dirs[2])] == [True]
        await broker.stop(graceful=False)
    asyncio.run(go())



@pytest.mark.parametrize("renamed", ["future", "current"])
def test_an_io_error_of_the_swaps_renames_takes_that_logs_directory_offline(renamed, tmp_path, caplog, monkeypatch):
    """LogManager.replaceCurrentWithFutureLog (after the controller accepted the move): the future
    log's rename to the partition's name fails: its directory goes offline, the future log closed
    there, the replica serving on in its own; the current log's rename to ``-delete`` fails (the
    future log renamed in place already): the current log's directory goes offline with its
    replica, the new log closed where it is. Either way the replica is assigned back to the current
    log's directory (ReplicaAlterLogDirsThread.removePartitions)."""
    async def go():
        broker, state, dirs, current = moving(tmp_path)
        sent = []
        broker.dir_assignments.submit = accepting(sent)
        source = current.log.directory
        assert await altered(broker, dirs[2], 0) == {("t", 0): Errors.NONE}
        future = broker.alter_log_dirs.futures.futures[("t", 0)]
        name = os.path.basename(future.log.directory)
        if renamed == "future":
            future.log.rename_dir = failing()
        else:
            rename = os.rename
            monkeypatch.setattr(os, "rename", lambda src, dst, *args, **kwargs: (
                failing()() if os.fspath(src) == source else rename(src, dst, *args, **kwargs)))
        failed = dirs[2] if renamed == "future" else dirs[1]
        await until_offline(broker, failed)
        assert f"Error while renaming dir for t-0 in log dir {failed}" in caplog.text
        assert "[ReplicaAlterLogDirsThread-0]: Partition t-0 marked as failed" in caplog.text
        futures = broker.alter_log_dirs.futures
        assert not futures.futures and not futures.stalled
        # the controller accepted b before the swap; the move failed: assigned back to a
        ids = broker.log_dirs.ids()
        assert sent == [ids[2], ids[1]]
        assert broker.log_dirs.offline == {str(failed)} and os.path.isdir(source)
        if renamed == "future":
            assert broker.partitions[("t", 0)] is current and parent(current) == str(dirs[1])
            assert future_dirs(dirs[2]) == [name]
        else:
            assert ("t", 0) not in broker.partitions and future_dirs(dirs[2]) == []
            assert (dirs[2] / "t-0").is_dir() and future.log.directory == str(dirs[2] / "t-0")
        await broker.stop(graceful=False)
    asyncio.run(go())


def test_the_destination_failing_while_the_controller_is_asked_assigns_the_replica_back(tmp_path, caplog):
    """ReplicaAlterLogDirsThread.removePartitions: the future log's directory fails after the
    controller was told of the move (its answer not applied yet): the future log is closed there,
    the replica serves on from its directory and is assigned back to it; the late acceptance is
    ignored."""
    async def go():
        broker, state, dirs, current = moving(tmp_path)
        sent, held = [], []
        broker.dir_assignments.submit = accepting(sent, held)
        assert await altered(broker, dirs[2], 0) == {("t", 0): Errors.NONE}
        async with asyncio.timeout(10):
            while not held:
                await asyncio.sleep(0.001)
        ids = broker.log_dirs.ids()
        assert sent == [ids[2]] and parent(current) == str(dirs[1])
        broker.fail_log_dir(str(dirs[2]), OSError(5, "Input/output error"))
        futures = broker.alter_log_dirs.futures
        assert not futures.futures and not futures.stalled and sent == [ids[2], ids[1]]
        held.pop()()
        assert broker.partitions[("t", 0)] is current and parent(current) == str(dirs[1])
        assert current.log.read(0, 1 << 20).data and broker.log_dirs.offline == {str(dirs[2])}
        await broker.stop(graceful=False)
    asyncio.run(go())
