"""A follower's load of an installed snapshot in steps (raft/node/driver_load.py; the rules are
in the driver's docstring): the listeners' new state is built aside between other work on the
loop and swapped in whole; commits that come meanwhile are held and applied after it, in order,
once; a second install drops the load in progress; a leader change is heard at once but the
node is not caught up until the load is done. In process: one driver on a real disk, its core
idle (no peer answers), the install made on its store as the core's install makes it and the
Readys that follow handed to the driver."""
import asyncio
import gc
import os
import threading
import uuid
import weakref

import pytest

from kafkawire.controller.frames import frame
from kafkawire.controller.loader import MetadataLoader
from kafkawire.controller.snapshot import image_records
from kafkawire.controller.state import ControllerState
from kafkawire.raft.config import RaftConfig
from kafkawire.raft.contract import SnapshotLoadInSteps
from kafkawire.raft.io import Append, Ready, WriteSnapshotChunk
from kafkawire.raft.node import driver_load, gc_pauses
from kafkawire.raft.node.disk_store import DiskLogStore
from kafkawire.raft.node.driver import RaftDriver
from kafkawire.raft.types import Endpoints, LeaderAndEpoch, OffsetAndEpoch
from kafkawire.raft.voters import VoterSet
from kafkawire.records import RecordBatchBuilder
from kafkawire.storage.snapshot import SnapshotBuilder, SnapshotFormatError, SnapshotId, stream_snapshot_data

from tests.controller.harness import bootstrap

ME = Endpoints((("CONTROLLER", "127.0.0.1", 2),))
VOTERS = VoterSet.static({1: Endpoints((("CONTROLLER", "127.0.0.1", 1),)), 2: ME})


def _topics(prefix: str, count: int, first_id: int) -> list[bytes]:
    values = []
    for i in range(count):
        topic_id = uuid.UUID(int=first_id + i)
        values += [frame("TopicRecord", name=f"{prefix}{i}", topic_id=topic_id),
                   frame("PartitionRecord", partition_id=0, topic_id=topic_id, replicas=[2], isr=[2], leader=2,
                         leader_epoch=0, partition_epoch=0)]
    return values


class Recorder:
    """A listener without begin_snapshot_load: it gets on_snapshot_loaded at the load's end."""

    def __init__(self):
        self.calls = []

    def on_snapshot_loaded(self, snapshot_id, records):
        self.calls.append(("snapshot", snapshot_id.offset, len(records)))

    def on_committed(self, base_offset, epoch, append_time_ms, records):
        self.calls.append(("committed", base_offset, len(records)))

    def on_leader_change(self, leader_id, epoch):
        if leader_id is not None:        # the idle core's own notices (no leader known) are left out
            self.calls.append(("leader", leader_id, epoch))


class NoPeer:
    async def connect(self, address, timeout_ms):
        await asyncio.Event().wait()


def _install(store: DiskLogStore, snapshot_id: OffsetAndEpoch, values: list[bytes], after: list[list[bytes]]) -> list[int]:
    """The store as a fetched snapshot's install leaves it, then batches fetched after it;
    returns the offset after each batch."""
    builder = SnapshotBuilder(SnapshotId(snapshot_id.offset, snapshot_id.epoch), last_contained_log_timestamp=0)
    for i in range(0, len(values), 500):
        builder.append(values[i:i + 500], timestamp=0)
    store.prepare_chunk(WriteSnapshotChunk(snapshot_id, 0, builder.finish()))()
    store.prepare_install(snapshot_id)()
    store.finish_install()
    offset, ends = snapshot_id.offset, []
    for values_ in after:
        batch = RecordBatchBuilder(base_offset=offset, partition_leader_epoch=snapshot_id.epoch)
        for value in values_:
            batch.append(None, value, (), 0)
        store.apply(Append(batch.build(), offset, offset + len(values_) - 1, snapshot_id.epoch))
        offset += len(values_)
        ends.append(offset)
    return ends


def _names(loader: MetadataLoader) -> frozenset:
    return frozenset(loader.image.topics_by_name)


async def _started(tmp_path, old_topics: int = 50):
    loader = MetadataLoader()
    loader.on_committed(0, 1, 0, bootstrap() + _topics("old", old_topics, 1))
    driver = RaftDriver(RaftConfig(node_id=2, cluster_id="c", endpoints=ME, static_voters=VOTERS,
                                   election_timeout_ms=60_000), DiskLogStore(tmp_path / "node"), client=NoPeer(),
                        seed=2, state_machine=loader)
    driver.start()
    recorder = Recorder()
    driver.register(recorder)
    return driver, loader, recorder


async def _watch(driver, loader, seen: list) -> None:
    """Every loop turn until the load is done: what a reader of the image sees."""
    while True:
        seen.append((_names(loader), driver.applied_offset))
        if driver._load is None:
            return
        await asyncio.sleep(0)


@pytest.fixture
def small_steps(monkeypatch):
    monkeypatch.setattr(driver_load, "LOAD_STEP_MS", 0.0)     # yield after every slice of records


def test_commits_during_a_load_apply_after_it_in_order_once_and_readers_see_old_then_new(tmp_path, small_steps):
    async def run():
        driver, loader, recorder = await _started(tmp_path)
        try:
            old = _names(loader)
            snapshot = OffsetAndEpoch(offset=5000, epoch=3)
            first, second = _install(driver.store, snapshot, bootstrap() + _topics("new", 600, 10_000),
                                     [_topics("after", 1, 20_000), _topics("later", 2, 30_000)])
            recorder.calls.clear()
            seen = []
            driver._apply_effects(Ready(load_snapshot=snapshot))
            watch = asyncio.ensure_future(_watch(driver, loader, seen))
            await asyncio.sleep(0)
            driver._apply_effects(Ready(committed_through=first))
            held_calls = list(recorder.calls)
            for _ in range(3):
                await asyncio.sleep(0)
            driver._apply_effects(Ready(committed_through=second))
            async with asyncio.timeout(10):
                await watch
            return old, seen, held_calls, recorder.calls, _names(loader), driver.applied_offset, second
        finally:
            await driver.close()

    old, seen, held_calls, calls, final, applied, second = asyncio.run(run())
    assert held_calls == []                          # nothing reached a listener during the load
    assert len(seen) > 10                            # the loop ran between the load's steps
    snapshot = frozenset(n for n in final if n.startswith("new"))
    # Readers see the old state, then the snapshot's whole, then each held batch on top, in order:
    # never a half-loaded state (the held batches are applied a step each here: LOAD_STEP_MS 0).
    states = [old, snapshot, snapshot | {"after0"}, final]
    order = [states.index(names) for names, _ in seen]       # raises on a state not in the list
    assert order == sorted(order) and order[0] == 0 and 2 in order and seen[-1] == (final, second)
    assert len(final) == 600 + 3 and all(n.startswith(("new", "after", "later")) for n in final)
    assert calls == [("snapshot", 5000, len(bootstrap()) + 1200), ("committed", 5000, 2), ("committed", 5002, 4)]
    assert applied == second


def test_a_second_install_during_a_load_drops_the_first_which_never_shows(tmp_path, small_steps):
    async def run():
        driver, loader, recorder = await _started(tmp_path)
        try:
            first = OffsetAndEpoch(offset=3000, epoch=2)
            (held,) = _install(driver.store, first, bootstrap() + _topics("a", 500, 10_000), [_topics("a_after", 1, 15_000)])
            recorder.calls.clear()
            seen = []
            driver._apply_effects(Ready(load_snapshot=first))
            watch = asyncio.ensure_future(_watch(driver, loader, seen))
            for _ in range(3):
                await asyncio.sleep(0)
            driver._apply_effects(Ready(committed_through=held))
            assert driver._load is not None and driver._load.snapshot_id == first      # still loading
            second = OffsetAndEpoch(offset=9000, epoch=4)
            (end,) = _install(driver.store, second, bootstrap() + _topics("b", 300, 20_000), [_topics("b_after", 2, 25_000)])
            driver._apply_effects(Ready(load_snapshot=second, committed_through=end))
            async with asyncio.timeout(10):
                await watch
            for _ in range(30):      # what a dropped load could still do shows in the turns after
                await asyncio.sleep(0)
                seen.append((_names(loader), driver.applied_offset))
            return seen, recorder.calls, seen[-31][0], driver.applied_offset, end, driver.failure
        finally:
            await driver.close()

    seen, calls, final, applied, end, failure = asyncio.run(run())
    assert failure is None
    assert not any(name.startswith("a") for names, _ in seen for name in names)    # the first load never showed
    assert len(final) == 302 and all(name.startswith("b") for name in final) and seen[-1][0] == final
    assert calls == [("snapshot", 9000, len(bootstrap()) + 600), ("committed", 9000, 4)]
    assert applied == end


def test_a_leader_change_during_a_load_is_heard_at_once_but_the_node_is_caught_up_only_after(tmp_path, small_steps):
    async def run():
        driver, loader, recorder = await _started(tmp_path)
        try:
            snapshot = OffsetAndEpoch(offset=4000, epoch=5)
            (epoch_start,) = _install(driver.store, snapshot, bootstrap() + _topics("new", 400, 10_000),
                                      [_topics("mine", 1, 20_000)])
            # The core elected in epoch 6, whose first offset is after the log fetched so far.
            driver.is_leader = lambda: True
            status = driver.core.status
            driver.core.status = lambda: type("S", (), {"epoch_start_offset": epoch_start,
                                                        "__getattr__": lambda self, name: getattr(status(), name)})()
            recorder.calls.clear()
            driver._apply_effects(Ready(load_snapshot=snapshot))
            await asyncio.sleep(0)
            driver._apply_effects(Ready(leader_change=LeaderAndEpoch(2, 6)))
            during = (list(recorder.calls), driver.leader_caught_up())
            driver._apply_effects(Ready(committed_through=epoch_start))
            async with asyncio.timeout(10):
                while driver._load is not None:
                    await asyncio.sleep(0)
            return during, recorder.calls, driver.leader_caught_up()
        finally:
            await driver.close()

    (heard, caught_up_during), calls, caught_up_after = asyncio.run(run())
    assert heard == [("leader", 2, 6)] and caught_up_during is False
    assert calls[1:] == [("snapshot", 4000, len(bootstrap()) + 800), ("committed", 4000, 2)]
    assert caught_up_after is True


def test_a_listener_registered_during_a_load_joins_at_its_end(tmp_path, small_steps):
    async def run():
        driver, loader, _ = await _started(tmp_path)
        try:
            snapshot = OffsetAndEpoch(offset=4000, epoch=5)
            (end,) = _install(driver.store, snapshot, bootstrap() + _topics("new", 300, 10_000), [_topics("x", 1, 20_000)])
            driver._apply_effects(Ready(load_snapshot=snapshot))
            await asyncio.sleep(0)
            late = Recorder()
            driver.register(late)
            during = list(late.calls)
            driver._apply_effects(Ready(committed_through=end))
            async with asyncio.timeout(10):
                while driver._load is not None:
                    await asyncio.sleep(0)
            return during, late.calls
        finally:
            await driver.close()

    during, calls = asyncio.run(run())
    assert during == []
    assert calls == [("snapshot", 4000, len(bootstrap()) + 600), ("committed", 4000, 2)]


def test_a_node_stopping_during_a_load_keeps_its_old_state(tmp_path, small_steps):
    async def run():
        driver, loader, recorder = await _started(tmp_path)
        old = _names(loader)
        snapshot = OffsetAndEpoch(offset=4000, epoch=5)
        _install(driver.store, snapshot, bootstrap() + _topics("new", 400, 10_000), [])
        recorder.calls.clear()
        driver._apply_effects(Ready(load_snapshot=snapshot))
        for _ in range(3):
            await asyncio.sleep(0)
        held_threshold = gc.get_threshold()
        await driver.close()
        await asyncio.sleep(0)
        return old, _names(loader), recorder.calls, driver.failure, held_threshold

    threshold = gc.get_threshold()
    old, after, calls, failure, held_threshold = asyncio.run(run())
    assert after == old and calls == [] and failure is None
    # no full collection during the load; the threshold given back when it is dropped
    assert held_threshold[2] > threshold[2] and gc.get_threshold() == threshold


def test_the_load_in_steps_and_the_load_in_one_call_make_the_same_state(tmp_path, small_steps):
    """The steps split the records at arbitrary places (slices of 100, batches of 500); the
    feature order must still be the one delta's of the whole snapshot."""
    features = bootstrap()
    values = features[:2] + _topics("t", 120, 10_000) + features[2:] + _topics("u", 100, 20_000)
    snapshot = OffsetAndEpoch(offset=7000, epoch=3)

    async def run():
        driver, loader, _ = await _started(tmp_path)
        try:
            _install(driver.store, snapshot, values, [])
            driver._apply_effects(Ready(load_snapshot=snapshot))
            async with asyncio.timeout(10):
                while driver._load is not None:
                    await asyncio.sleep(0)
            return loader
        finally:
            await driver.close()

    stepped = asyncio.run(run()).state
    whole = ControllerState(stepped.supported_features)
    whole.load_snapshot(snapshot.offset, snapshot.epoch, values)
    assert image_records(stepped.image, stepped.feature_order) == image_records(whole.image, whole.feature_order)
    assert stepped.feature_order == whole.feature_order and len(stepped.feature_order) >= 2
    assert (stepped.next_offset, stepped.image.provenance) == (whole.next_offset, whole.image.provenance)
    assert stepped.partition_index.as_sets() == whole.partition_index.as_sets()
    assert len(stepped.partition_index.as_sets()["isr"][2]) == 220


def test_a_loads_prepare_runs_off_the_loop_before_its_first_records(tmp_path, small_steps):
    """contract.SnapshotLoadInSteps.prepare (the controller's imports every record decoder): on
    the thread that reads the file, once, before any ``add``."""
    calls = []

    class Preparing(Recorder):
        def begin_snapshot_load(self, snapshot_id):
            return SnapshotLoadInSteps(lambda values: calls.append(("add", threading.get_ident())),
                                       lambda: calls.append(("finish", threading.get_ident())),
                                       lambda: calls.append(("prepare", threading.get_ident())))

    async def run():
        driver, loader, _ = await _started(tmp_path)
        try:
            driver.register(Preparing())
            snapshot = OffsetAndEpoch(offset=4000, epoch=3)
            _install(driver.store, snapshot, bootstrap() + _topics("t", 40, 10_000), [])
            driver._apply_effects(Ready(load_snapshot=snapshot))
            async with asyncio.timeout(10):
                while driver._load is not None:
                    await asyncio.sleep(0)
            return threading.get_ident()
        finally:
            await driver.close()

    loop_thread = asyncio.run(run())
    kinds = [kind for kind, _ in calls]
    assert kinds[0] == "prepare" and kinds.count("prepare") == 1 and kinds[-1] == "finish" and "add" in kinds
    assert calls[0][1] != loop_thread and {thread for kind, thread in calls[1:]} == {loop_thread}


def test_a_snapshot_file_damaged_after_its_install_stops_the_node_naming_where(tmp_path):
    async def run():
        driver, loader, _ = await _started(tmp_path)
        try:
            old = _names(loader)
            snapshot = OffsetAndEpoch(offset=4000, epoch=5)
            _install(driver.store, snapshot, bootstrap() + _topics("new", 300, 10_000), [])
            path = driver.store.snapshot_path(snapshot)
            with open(path, "r+b") as f:     # a byte of the second batch's records flipped
                f.seek(_batch_starts(open(path, "rb").read())[1] + 100)
                byte = f.read(1)
                f.seek(-1, 1)
                f.write(bytes([byte[0] ^ 0xFF]))
            driver._apply_effects(Ready(load_snapshot=snapshot))
            async with asyncio.timeout(10):
                await driver.failed.wait()
            return old, _names(loader), str(driver.failure), path
        finally:
            await driver.close()

    old, after, failure, path = asyncio.run(run())
    assert after == old                          # nothing of the damaged snapshot shows
    assert "CRC" in failure.upper() and os.path.basename(path) in failure, failure


def _batch_starts(data: bytes) -> list[int]:
    starts, position = [], 0
    while position < len(data):
        starts.append(position)
        position += 12 + int.from_bytes(data[position + 8:position + 12], "big")
    return starts


def test_a_snapshot_cut_short_or_framed_wrong_is_refused_where_it_shows():
    builder = SnapshotBuilder(SnapshotId(10, 1), last_contained_log_timestamp=0)
    builder.append(bootstrap(), timestamp=0)
    whole = builder.finish()
    header, data, footer = _batch_starts(whole)
    assert sum(len(b) for b in stream_snapshot_data(whole, "s")) == len(bootstrap())
    with pytest.raises(SnapshotFormatError, match="ends inside a batch"):
        list(stream_snapshot_data(whole[:-5], "s"))
    with pytest.raises(SnapshotFormatError, match="no SnapshotFooter"):
        list(stream_snapshot_data(whole[:footer], "s"))
    with pytest.raises(SnapshotFormatError, match="first batch is not a control batch"):
        list(stream_snapshot_data(whole[data:], "s"))
    with pytest.raises(SnapshotFormatError, match="a batch follows the SnapshotFooter"):
        list(stream_snapshot_data(whole + whole[data:footer], "s"))


@pytest.fixture
def freeze_policy():
    """The node's freeze policy on (kafkawire.gc.freeze.after.ms > 0) for the test, from unfrozen;
    what it froze goes back to the collected generations after, and gc's thresholds with it."""
    threshold = gc.get_threshold()
    gc.unfreeze()
    token = gc_pauses.log_long_pauses(freeze_after_ms=10**9)      # no full collection is that long
    yield
    gc_pauses.stop_logging_long_pauses(token)
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_full_collections_stay_held_until_the_replaced_state_is_let_go_then_what_survives_is_frozen(
        tmp_path, small_steps, freeze_policy):
    """contract.SnapshotLoadInSteps.finish may return an awaitable (the controller's release of the
    state it replaced, in steps): the load's hold of full collections lasts until it is done, then
    the process freezes what survived (gc_pauses.freeze_after_load), so that no full collection
    walks the image just loaded."""
    class Releasing(Recorder):
        def begin_snapshot_load(self, snapshot_id):
            return SnapshotLoadInSteps(lambda values: None, lambda: released)

    async def run():
        nonlocal released
        released = asyncio.get_running_loop().create_future()
        driver, loader, _ = await _started(tmp_path)
        try:
            driver.register(Releasing())
            snapshot = OffsetAndEpoch(offset=4000, epoch=3)
            _install(driver.store, snapshot, bootstrap() + _topics("t", 40, 10_000), [])
            freezes = gc_pauses.freezes[0]
            driver._apply_effects(Ready(load_snapshot=snapshot))
            async with asyncio.timeout(10):
                while driver._load is not None:
                    await asyncio.sleep(0)
                for _ in range(5):
                    await asyncio.sleep(0)
                while_releasing = (gc_pauses._holds[0], gc_pauses.freezes[0] - freezes, gc.get_freeze_count())
                released.set_result(None)
                while gc_pauses.freezes[0] == freezes:
                    await asyncio.sleep(0)
            return while_releasing, gc_pauses._holds[0], gc.get_freeze_count(), _names(loader)
        finally:
            await driver.close()

    released = None
    while_releasing, holds, frozen, names = asyncio.run(run())
    assert while_releasing == (1, 0, 0)            # loaded, the old state not let go yet: held, nothing frozen
    assert holds == 0 and frozen > 10_000          # then given back, and the process frozen
    assert len(names) == 40


def test_a_young_cycle_is_collected_before_the_freeze_after_a_load_and_the_thresholds_stay(freeze_policy):
    """freeze_after_load collects the young generations first: garbage made during the load's
    last steps is not frozen for good; gc's thresholds are left as they were (paced full
    collections, gc_pauses.py, keep each full collection small without raising threshold2)."""
    class Node:
        pass

    gc.set_threshold(100, 10, 10)
    gc.disable()                                   # no automatic collection moves the cycle meanwhile
    try:
        cycle = Node()
        cycle.me = cycle
        gone = weakref.ref(cycle)
        del cycle
        gc_pauses.hold_full_collections()
        gc_pauses.freeze_after_load()              # another load still holds: nothing happens
        held = (gc.get_freeze_count(), gone() is None)
        gc_pauses.give_back_full_collections()
        gc_pauses.freeze_after_load(4_000_000)
    finally:
        gc.enable()
    assert held == (0, False)
    assert gc.get_freeze_count() > 0 and gone() is None
    assert gc.get_threshold() == (100, 10, 10)
