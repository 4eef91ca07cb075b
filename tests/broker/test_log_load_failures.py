"""A log that cannot be loaded when it opens (in process, on a stand-in metadata image), as Kafka
4.3.1's LogManager.loadLogs and LogLoader: its directory goes offline ("Error while loading log
dir"), its replica is answered KAFKA_STORAGE_ERROR and not opened elsewhere, the other
directories serve on; ``.deleted`` files left over from before a restart are removed at the open,
and one that cannot be removed fails the load the same way, a future log's as a log's.
"""
from __future__ import annotations

import asyncio
import os
import time
from types import SimpleNamespace

from kafkawire.broker.log_dir_copy import find_future_logs
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch

from .test_log_dir_copy_failures import moving
from .test_log_dirs import altered, image_of, make_broker, parent

STRAY = "00000000000000000000.log.deleted"


def two_replicas_written(dirs):
    """Partitions 0 and 1 of t, each in a directory of its own (dirs[1], dirs[2]) with a record,
    closed as by a kill; the image that assigns them there."""
    async def go():
        broker, state = make_broker(dirs, image_of({}))
        ids = broker.log_dirs.ids()
        state["image"] = image_of({i: SimpleNamespace(leader=1, leader_epoch=0, replicas=(1,), isr=(1,),
                                                      partition_epoch=0, directories=(ids[i + 1],))
                                   for i in (0, 1)})
        broker.dir_assignments.submit = lambda *args: None
        broker.on_metadata()
        for i in (0, 1):
            assert parent(broker.partitions[("t", i)]) == str(dirs[i + 1])
            broker.partitions[("t", i)].log.append(build_batch([(b"k", b"v")]), assign_offsets=True, leader_epoch=0)
        await broker.stop(graceful=False)
        return state["image"]
    return asyncio.run(go())


def restarted(dirs, image, caplog):
    """A broker started again on ``dirs`` with ``image``: the error codes of a produce to t-0 and
    t-1, its offline directories and offline replicas."""
    async def go():
        broker, state = make_broker(dirs, image)
        broker.dir_assignments.submit = lambda *args: None
        heartbeats = []
        broker.lifecycle.heartbeat_soon = lambda: heartbeats.append("now")
        with caplog.at_level("DEBUG", logger="kafkawire.broker.log_manager"):
            broker.on_metadata()
        now = int(time.time() * 1000)
        topic = image.topics_by_name["t"]

        def produce(index):
            records = SimpleNamespace(index=index, records=build_batch([(b"k", b"v", (), now)]))
            return broker.produce_api._produce_partition(image, topic, records, 1, 9, now).error_code
        codes = [produce(i) for i in (0, 1)]
        offline = (set(broker.log_dirs.offline), set(broker.offline_partitions), len(heartbeats))
        await broker.stop(graceful=False)
        return codes, offline
    return asyncio.run(go())


def test_a_log_that_cannot_be_opened_at_start_takes_its_directory_offline(tmp_path, caplog):
    """One log's segment cannot be read (its .log is a directory here): LogManager.loadLogs'
    "Error while loading log dir", the directory offline and reported, the replica answered
    KAFKA_STORAGE_ERROR, the other directory's replica served."""
    dirs = [tmp_path / "meta", tmp_path / "a", tmp_path / "b"]
    image = two_replicas_written(dirs)
    segment = dirs[1] / "t-0" / "00000000000000000000.log"
    os.remove(segment)
    segment.mkdir()
    codes, offline = restarted(dirs, image, caplog)
    assert f"Error while loading log dir {dirs[1]}" in caplog.text
    assert codes == [Errors.KAFKA_STORAGE_ERROR, Errors.NONE]
    assert offline == ({str(dirs[1])}, {("t", 0)}, 1)
    assert segment.is_dir() and not (dirs[2] / "t-0").exists()         # left as it is, not made elsewhere


def test_deleted_files_left_from_before_a_restart_are_removed_when_the_log_opens(tmp_path, caplog, monkeypatch):
    """LogLoader.removeTempFilesAndCollectSwapFiles: a ``.deleted`` file is removed before the log
    loads (debug: "Deleting stray temporary file"); one that cannot be removed fails the load:
    the directory goes offline ("Error while loading log dir") and the file stays."""
    dirs = [tmp_path / "meta", tmp_path / "a", tmp_path / "b"]
    image = two_replicas_written(dirs)
    for i in (0, 1):
        (dirs[i + 1] / f"t-{i}" / STRAY).write_bytes(b"x")
    removed = os.remove

    def remove_but_in_a(path, *args, **kwargs):
        if str(path).startswith(str(dirs[1])) and str(path).endswith(".deleted"):
            raise OSError(5, "Input/output error")
        return removed(path, *args, **kwargs)
    monkeypatch.setattr(os, "remove", remove_but_in_a)
    codes, offline = restarted(dirs, image, caplog)
    assert f"Error while loading log dir {dirs[1]}" in caplog.text
    assert (f"[LogLoader partition=t-1, dir={dirs[2]}] Deleting stray temporary file {dirs[2] / 't-1' / STRAY}"
            in caplog.text)
    assert codes == [Errors.KAFKA_STORAGE_ERROR, Errors.NONE] and offline == ({str(dirs[1])}, {("t", 0)}, 1)
    assert (dirs[1] / "t-0" / STRAY).exists() and not (dirs[2] / "t-1" / STRAY).exists()


def test_a_future_log_that_cannot_be_loaded_at_a_restart_takes_its_directory_offline(tmp_path, caplog, monkeypatch):
    """A future log of AlterReplicaLogDirs found at start loads as any log (LogManager.loadLogs):
    its ``.deleted`` file that cannot be removed takes its directory offline ("Error while
    loading log dir"); the replica serves on from its own directory, the copy not resumed."""
    async def cut_short():
        broker, state, dirs, current = moving(tmp_path)
        assert await altered(broker, dirs[2], 0) == {("t", 0): Errors.NONE}
        futures = broker.alter_log_dirs.futures
        futures._task.cancel()                          # the copy cut short before its first step
        future_dir = futures.futures[("t", 0)].log.directory
        await broker.stop(graceful=False)
        return state["image"], dirs, future_dir
    image, dirs, future_dir = asyncio.run(cut_short())
    with open(os.path.join(future_dir, STRAY), "wb") as f:
        f.write(b"x")
    removed = os.remove

    def remove_but_stray(path, *args, **kwargs):
        if str(path).endswith(".deleted"):
            raise OSError(5, "Input/output error")
        return removed(path, *args, **kwargs)
    monkeypatch.setattr(os, "remove", remove_but_stray)

    async def restart():
        broker, _ = make_broker(dirs, image)
        broker.dir_assignments.submit = lambda *args: None
        broker.lifecycle.heartbeat_soon = lambda: None
        broker.alter_log_dirs.futures.resumable.update(find_future_logs([str(d) for d in dirs]))
        broker.on_metadata()
        assert broker.log_dirs.offline == {str(dirs[2])} and not broker.alter_log_dirs.futures.futures
        assert parent(broker.partitions[("t", 0)]) == str(dirs[1])
        await broker.stop(graceful=False)
    asyncio.run(restart())
    assert f"Error while loading log dir {dirs[2]}" in caplog.text
    assert os.path.exists(os.path.join(future_dir, STRAY))
