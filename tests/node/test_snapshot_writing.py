"""The driver writes the state machine's snapshots in a loop step of its own, on a worker
thread, never re-entering the core from inside _apply; a crash while a snapshot is written
leaves the log whole and no partial snapshot behind."""
import asyncio
import gc
import os
import threading

from kafkawire.raft.config import RaftConfig
from kafkawire.raft.node import driver_snapshots as driver_module
from kafkawire.raft.node import gc_pauses
from kafkawire.raft.node.disk_store import DiskLogStore
from kafkawire.raft.node.driver import RaftDriver
from kafkawire.raft.node.snapshot_writer import freeze_image, write_image
from kafkawire.raft.types import Endpoints, OffsetAndEpoch
from kafkawire.raft.voters import VoterSet
from kafkawire.storage.snapshot import PART_SUFFIX, SnapshotReader


class Machine:
    """A state machine whose snapshot is every value it applied."""
    in_transaction = False

    def __init__(self):
        self.values = []

    def on_committed(self, base_offset, epoch, append_time_ms, records):
        self.values += records

    def on_snapshot_loaded(self, snapshot_id, records):
        self.values = list(records)

    def on_leader_change(self, leader_id, epoch):
        pass

    def snapshot_records(self):
        return list(self.values)


def _driver(directory, machine, seed):
    endpoints = Endpoints((("CONTROLLER", "127.0.0.1", 1),))
    config = RaftConfig(node_id=1, cluster_id="c", endpoints=endpoints,
                        static_voters=VoterSet.static({1: endpoints}), election_timeout_ms=50)
    return RaftDriver(config, DiskLogStore(directory), client=None, seed=seed, state_machine=machine,
                      snapshot_min_bytes=1)


async def _until(predicate, what):
    async def poll():
        while not predicate():
            await asyncio.sleep(0.01)
    try:
        await asyncio.wait_for(poll(), 10)
    except asyncio.TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def test_a_snapshot_is_written_by_a_worker_thread_outside_apply(tmp_path, monkeypatch):
    writers, depth, deepest = [], [0], [0]
    real_write = driver_module.write_image

    def write_image(directory, image):
        writers.append(threading.get_ident())
        return real_write(directory, image)
    monkeypatch.setattr(driver_module, "write_image", write_image)

    async def run():
        machine = Machine()
        driver = _driver(tmp_path / "p", machine, 1)
        driver.start()
        step = driver.core.step

        def counting_step(event):
            depth[0] += 1
            deepest[0] = max(deepest[0], depth[0])
            try:
                return step(event)
            finally:
                depth[0] -= 1
        driver.core.step = counting_step
        try:
            await _until(driver.is_leader, "leadership")
            for i in range(10):
                await driver.append([f"v{i}".encode()])
            await _until(lambda: driver.store.snapshot_ids() and driver.store.snapshot_ids()[-1].offset
                         >= driver.applied_offset, "a snapshot at the applied offset")
            await _until(lambda: driver._snapshot_task is None, "the writer to finish")
            latest = driver.store.snapshot_ids()[-1]
            return latest, driver.store.snapshot_path(latest), list(machine.values), threading.get_ident()
        finally:
            await driver.close()

    latest, path, values, loop_thread = asyncio.run(run())
    assert writers and all(ident != loop_thread for ident in writers)
    assert deepest[0] == 1, f"the core was stepped from inside a step ({deepest[0]} deep)"
    assert [bytes(r.value) for r in SnapshotReader(path).records()] == values
    assert values == [f"v{i}".encode() for i in range(10)]
    assert not [n for n in os.listdir(tmp_path / "p") if n.endswith(PART_SUFFIX)]


def test_a_crash_while_a_snapshot_is_written_leaves_the_log_whole_and_no_partial_file(tmp_path, monkeypatch):
    real_write = driver_module.write_image

    def crashing_write(directory, image):
        if len(image.values) < 5:
            return real_write(directory, image)
        # What a process killed mid-write leaves: part of the .part file, nothing renamed.
        name = f"{image.snapshot_id.offset:020d}-{image.snapshot_id.epoch:010d}.checkpoint{PART_SUFFIX}"
        with open(os.path.join(directory, name), "wb") as f:
            f.write(b"\0" * 100)
        raise OSError("the disk went away while the snapshot was written")
    monkeypatch.setattr(driver_module, "write_image", crashing_write)

    async def crash():
        driver = _driver(tmp_path / "p", Machine(), 1)
        driver.start()
        try:
            await _until(driver.is_leader, "leadership")
            acknowledged = [await driver.append([f"v{i}".encode()]) for i in range(5)]
            await _until(lambda: driver.failure is not None, "the failed snapshot to stop the node")
            return acknowledged, str(driver.failure)
        finally:
            await driver.close()

    acknowledged, failure = asyncio.run(crash())
    assert "the disk went away" in failure
    assert any(n.endswith(PART_SUFFIX) for n in os.listdir(tmp_path / "p"))
    monkeypatch.undo()

    async def restart():
        machine = Machine()
        driver = _driver(tmp_path / "p", machine, 2)
        driver.start()
        try:
            await _until(lambda: len(machine.values) >= 5, "the committed records replayed")
            return list(machine.values), driver.store.snapshot_ids()
        finally:
            await driver.close()

    values, snapshots = asyncio.run(restart())
    assert values[:5] == [f"v{i}".encode() for i in range(5)]       # every acknowledged record is there
    assert snapshots     # the snapshots written before the crash are still there
    assert not [n for n in os.listdir(tmp_path / "p") if n.endswith(PART_SUFFIX)]


def test_the_worker_writes_the_records_as_they_are_produced_and_keeps_none(tmp_path):
    """At 1M partitions all the values kept to the end were freed in one go wherever the last
    reference went (the loop's thread: ~35 ms); the worker now streams them in batches."""
    produced = []

    def produce():
        for i in range(1201):
            produced.append(i)
            yield f"v{i}".encode()
    image = freeze_image(OffsetAndEpoch(offset=1201, epoch=1), 0, None, produce, 0)
    assert produced == []                       # nothing produced on the loop
    path = write_image(str(tmp_path), image)
    assert image.count == 1201 and image._values is None and image._produce is None
    assert [bytes(r.value) for r in SnapshotReader(path).records()] == [f"v{i}".encode() for i in range(1201)]


def test_what_a_written_snapshot_holds_is_frozen_out_of_the_collections(tmp_path):
    """Once a snapshot is written, the state machine's image it holds is long-lived: the node
    freezes what survives (gc_pauses.freeze_after_load), so that full collections walk only
    what is made after it (a fencing at 1M partitions right after the build had a full
    collection of 0.5-0.8 s on each voter, walking what the build left unfrozen)."""
    gc.unfreeze()
    token = gc_pauses.log_long_pauses(500)       # a node's default kafkawire.gc.freeze.after.ms
    threshold = gc.get_threshold()

    async def run():
        machine = Machine()
        driver = _driver(tmp_path / "p", machine, 1)
        driver.start()
        try:
            await _until(driver.is_leader, "leadership")
            for i in range(10):
                await driver.append([f"v{i}".encode()])
            kept = [["made before the snapshot"]]       # a container, as the image's objects are
            freezes = gc_pauses.freezes[0]
            await _until(lambda: gc_pauses.freezes[0] > freezes, "a freeze after the snapshot's write")
            assert driver.store.snapshot_ids(), "frozen before any snapshot was written"
            return kept
        finally:
            await driver.close()
    try:
        kept = asyncio.run(run())
        assert not any(o is kept[0] for o in gc.get_objects()), "an object older than the snapshot was not frozen"
    finally:
        gc_pauses.stop_logging_long_pauses(token)      # the last watcher: unfreezes what the policy froze
        gc.set_threshold(*threshold)
