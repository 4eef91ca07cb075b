"""A deleted topic's partition logs (kafkawire.broker.log_deletion), as Kafka's LogManager
removes them: closed and renamed ``<topic>-<partition>.<uuid>-delete`` at once, removed after
the delay in force then; ``-delete`` directories left from before a restart are removed the same
way; a stop leaves the waiting ones renamed."""
import asyncio
import os
import re

from kafkawire.broker.log_deletion import LogDeleter, delete_dir_name


class StandInPartition:
    def __init__(self, log_dir, name):
        self.name = name
        self.closed = False
        os.makedirs(os.path.join(log_dir, name))
        with open(os.path.join(log_dir, name, "00000000000000000000.log"), "wb") as f:
            f.write(b"x" * 100)

    def close(self):
        self.closed = True


async def until(condition):
    for _ in range(500):            # bounded: 5 s
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met")


def test_a_deleted_partitions_directory_is_renamed_at_once_and_removed_after_the_delay(tmp_path):
    async def go():
        delay = {"ms": 60_000}
        deleter = LogDeleter(str(tmp_path), lambda: delay["ms"])
        waiting = StandInPartition(tmp_path, "orders-0")
        deleter.delete(waiting)
        renamed = os.listdir(tmp_path)
        assert waiting.closed and len(renamed) == 1 and re.fullmatch(r"orders-0\.[0-9a-f]{32}-delete", renamed[0])
        delay["ms"] = 0
        StandInPartition(tmp_path, "orders-1")
        deleter.delete(StandInPartition(tmp_path, "payments-0"))
        await until(lambda: not any(n.startswith("payments") for n in os.listdir(tmp_path)))
        assert sorted(os.listdir(tmp_path)) == sorted(renamed + ["orders-1"])     # the 60 s one still waits
        deleter.close()
        assert sorted(os.listdir(tmp_path)) == sorted(renamed + ["orders-1"])     # a stop removes nothing
    asyncio.run(go())


def test_delete_directories_found_at_start_are_removed(tmp_path):
    async def go():
        os.makedirs(tmp_path / delete_dir_name("old-3"))
        os.makedirs(tmp_path / "kept-0")
        deleter = LogDeleter(str(tmp_path), lambda: 0)
        deleter.schedule_leftovers()
        await until(lambda: os.listdir(tmp_path) == ["kept-0"])
    asyncio.run(go())


def test_a_long_topic_names_delete_directory_fits_a_file_name():
    assert len(delete_dir_name("t" * 249 + "-0")) == 255
