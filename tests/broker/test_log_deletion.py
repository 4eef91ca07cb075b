"""A deleted topic's partition logs (kafkawire.broker.log_deletion), as Kafka's LogManager
removes them: closed and renamed ``<topic>-<partition>.<uuid>-delete`` at once, removed after
the delay in force then; ``-delete`` directories left from before a restart are removed the same
way; a stop leaves the waiting ones renamed. One delayed-delete mechanism: the directories wait
in the log manager's due-queue (PendingDeletes) beside the deleted segment files, and its
delete-file task removes them. With a fake clock."""
import asyncio
import os
import re
import time
from types import SimpleNamespace

from kafkawire.broker.log_deletion import LogDeleter, delete_dir_name, remove_deleted
from kafkawire.broker.log_manager import PendingDeletes


class StandInPartition:
    def __init__(self, log_dir, name):
        self.name = name
        self.closed = False
        self.log = SimpleNamespace(directory=os.path.join(log_dir, name))     # the log's directory, as LeaderPartition's
        os.makedirs(os.path.join(log_dir, name))
        with open(os.path.join(log_dir, name, "00000000000000000000.log"), "wb") as f:
            f.write(b"x" * 100)

    def close(self):
        self.closed = True


class Queue:
    """The log manager's due-queue and clock, and its delete-file task."""
    def __init__(self):
        self.pending, self.now = PendingDeletes(), [1_000]

    def deleter(self, log_dir, delay_ms):
        return LogDeleter(str(log_dir), delay_ms, self.pending, lambda: self.now[0])

    def run_due(self):
        for path in self.pending.due(self.now[0]):
            remove_deleted(path)


def test_a_deleted_partitions_directory_is_renamed_at_once_and_removed_by_the_due_queue(tmp_path):
    queue, delay = Queue(), {"ms": 60_000}
    deleter = queue.deleter(tmp_path, lambda: delay["ms"])
    waiting = StandInPartition(tmp_path, "orders-0")
    deleter.delete(waiting)
    renamed = os.listdir(tmp_path)
    assert waiting.closed and len(renamed) == 1 and re.fullmatch(r"orders-0\.[0-9a-f]{32}-delete", renamed[0])
    delay["ms"] = 5
    StandInPartition(tmp_path, "orders-1")
    deleter.delete(StandInPartition(tmp_path, "payments-0"))
    assert len(queue.pending) == 2
    queue.now[0] += 5
    queue.run_due()
    assert sorted(os.listdir(tmp_path)) == sorted(renamed + ["orders-1"])     # the 60 s one still waits
    queue.now[0] += 60_000
    queue.run_due()
    assert os.listdir(tmp_path) == ["orders-1"]


def test_delete_directories_found_at_start_are_scheduled_once(tmp_path):
    os.makedirs(tmp_path / delete_dir_name("old-3"))
    os.makedirs(tmp_path / "kept-0")
    queue = Queue()
    deleter = queue.deleter(tmp_path, lambda: 0)
    deleter.schedule_leftovers()
    deleter.schedule_leftovers()
    assert len(queue.pending) == 1
    queue.run_due()
    assert os.listdir(tmp_path) == ["kept-0"]


def test_a_directory_is_removed_off_the_event_loop_when_one_runs(tmp_path):
    queue = Queue()
    queue.deleter(tmp_path, lambda: 0).delete(StandInPartition(tmp_path, "orders-0"))

    async def go():
        queue.run_due()
        for _ in range(500):            # bounded: 5 s
            if not os.listdir(tmp_path):
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the directory is still there")
    asyncio.run(go())


def test_a_long_topic_names_delete_directory_fits_a_file_name():
    assert len(delete_dir_name("t" * 249 + "-0")) == 255


def test_a_due_file_or_directory_that_cannot_be_removed_reports_its_log_directory(tmp_path, monkeypatch):
    """LocalLog.deleteSegmentFiles' delete-file task ("Error while deleting segments for ...") and
    kafka-delete-logs' UnifiedLog.delete ("Error while deleting log for ..."): the removal's I/O
    error is handed on with the log directory (the broker takes it offline), the directory's on
    the event loop that scheduled it."""
    segment = tmp_path / "t-0" / "00000000000000000000.log.deleted"
    segment.parent.mkdir()
    segment.write_bytes(b"x")
    deleted_log = tmp_path / "t-1.0123456789abcdef0123456789abcdef-delete"
    deleted_log.mkdir()

    def fail(*args, **kwargs):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr("kafkawire.broker.log_deletion.os.remove", fail)
    monkeypatch.setattr("kafkawire.broker.log_deletion.shutil.rmtree", fail)
    failed = []

    def record(log_dir, error, *, message):
        failed.append((log_dir, error.errno, message))
    remove_deleted(str(segment), record)
    assert failed == [(str(tmp_path), 5, f"Error while deleting segments for t-0 in dir {tmp_path}")]

    async def go():
        remove_deleted(str(deleted_log), record)
        deadline = time.monotonic() + 30
        while len(failed) < 2:
            assert time.monotonic() < deadline, "the removal's failure was not reported"
            await asyncio.sleep(0.01)
    asyncio.run(go())
    assert failed[1] == (str(tmp_path), 5, f"Error while deleting log for t-1 in dir {tmp_path}")
    assert segment.exists() and deleted_log.exists()
