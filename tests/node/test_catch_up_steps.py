"""A long committed backlog applied in steps (raft/node/driver_load.py, ``_catch_up_in_steps``):
a node whose high watermark jumps far past what it applied (a cold start's log after its
snapshot) hands the batches to its listeners a few per loop turn, in order, once, each step
ending on a whole batch; the commits that come meanwhile are held as during a snapshot's load;
a new leader is not caught up until the backlog is in. A short backlog, and a caught-up
leader's own commits, are applied at once as before. In process, as test_snapshot_load_steps:
one driver on a real disk, its core idle, the Readys handed to it."""
import asyncio
import gc

import pytest

from kafkawire.raft.io import Ready
from kafkawire.raft.node import driver_load, gc_pauses
from kafkawire.raft.types import OffsetAndEpoch

from tests.controller.harness import bootstrap

from .test_snapshot_load_steps import _install, _names, _started, _topics, freeze_policy  # noqa: F401 (a fixture)

BATCHES = 12


@pytest.fixture
def small_backlog(monkeypatch):
    monkeypatch.setattr(driver_load, "LOAD_STEP_MS", 0.0)                 # a batch a step
    monkeypatch.setattr(driver_load, "CATCH_UP_IN_STEPS_OFFSETS", 5)      # 2 offsets a batch here


async def _loaded_with_backlog(tmp_path):
    """A driver that loaded a snapshot at offset 3000 and holds BATCHES batches after it in its
    log, none committed yet; returns it with the offset after each batch."""
    driver, loader, recorder = await _started(tmp_path)
    snapshot = OffsetAndEpoch(offset=3000, epoch=2)
    ends = _install(driver.store, snapshot, bootstrap() + _topics("s", 20, 10_000),
                    [_topics(f"b{i}_", 1, 20_000 + i) for i in range(BATCHES)])
    driver._apply_effects(Ready(load_snapshot=snapshot))
    async with asyncio.timeout(10):
        while driver._load is not None:
            await asyncio.sleep(0)
    recorder.calls.clear()
    return driver, loader, recorder, ends


def test_a_long_backlog_is_applied_in_steps_in_order_once_and_a_new_leader_waits_for_it(tmp_path, small_backlog):
    async def run():
        driver, loader, recorder, ends = await _loaded_with_backlog(tmp_path)
        try:
            driver.is_leader = lambda: True          # elected in an epoch that starts after the backlog
            status = driver.core.status
            driver.core.status = lambda: type("S", (), {"epoch_start_offset": ends[-2],
                                                        "__getattr__": lambda self, name: getattr(status(), name)})()
            seen, held = [], []
            driver._apply_effects(Ready(committed_through=ends[-2]))
            at_once = (list(recorder.calls), driver.leader_caught_up())
            driver._apply_effects(Ready(committed_through=ends[-1]))        # held, applied after the rest
            async with asyncio.timeout(10):
                while driver._load is not None:
                    seen.append((_names(loader), driver.applied_offset, driver.leader_caught_up()))
                    held.append(gc.get_threshold()[2])
                    await asyncio.sleep(0)
            return ends, at_once, seen, held, recorder.calls, driver.applied_offset, driver.leader_caught_up()
        finally:
            await driver.close()

    threshold = gc.get_threshold()
    ends, (calls_at_once, caught_up_at_once), seen, held, calls, applied, caught_up = asyncio.run(run())
    assert calls_at_once == [] and caught_up_at_once is False       # nothing applied in the commit's own turn
    assert len(seen) >= BATCHES - 1                                  # the loop ran between the batches
    applied_seen = [offset for _, offset, _ in seen]
    assert applied_seen == sorted(applied_seen) and not any(up for *_, up in seen)
    # each state a reader saw is the snapshot plus a prefix of the batches, whole
    for names, offset, _ in seen:
        batches_in = {n for n in names if n.startswith("b")}
        assert batches_in == {f"b{i}_0" for i in range(ends.index(offset) + 1 if offset in ends else 0)}
    assert calls == [("committed", end - 2, 2) for end in ends]      # every batch once, in order
    assert applied == ends[-1] and caught_up is True
    # no full collection while it ran (the state grows as during a load); the threshold given back
    assert min(held[1:]) > threshold[2] and gc.get_threshold() == threshold


def test_a_short_backlog_and_a_caught_up_leaders_commits_are_applied_at_once(tmp_path, small_backlog):
    async def run():
        driver, loader, recorder, ends = await _loaded_with_backlog(tmp_path)
        try:
            driver._apply_effects(Ready(committed_through=ends[1]))          # 4 offsets: at once
            short = (driver._load, driver.applied_offset)
            driver.is_leader = lambda: True
            driver.leader_caught_up = lambda: True
            driver._apply_effects(Ready(committed_through=ends[-1]))         # 20 offsets, a caught-up leader
            return ends, short, driver._load, driver.applied_offset, recorder.calls
        finally:
            await driver.close()

    ends, (load_short, applied_short), load_after, applied, calls = asyncio.run(run())
    assert load_short is None and applied_short == ends[1]
    assert load_after is None and applied == ends[-1] and len(calls) == BATCHES


@pytest.mark.usefixtures("freeze_policy")
def test_what_a_long_backlog_built_is_frozen_once_it_is_in(tmp_path, small_backlog):
    """As after a load (test_snapshot_load_steps): the first full collection after a catch-up
    would walk the whole image it built (634 ms at 100k partitions), so it is frozen once in."""
    async def run():
        driver, loader, recorder, ends = await _loaded_with_backlog(tmp_path)
        try:
            before = gc_pauses.freezes[0]
            driver._apply_effects(Ready(committed_through=ends[-1]))
            async with asyncio.timeout(10):
                while driver._load is not None:
                    assert gc_pauses.freezes[0] == before          # nothing frozen half-way
                    await asyncio.sleep(0)
            return driver.applied_offset, ends[-1], gc_pauses.freezes[0] - before, gc.get_freeze_count()
        finally:
            await driver.close()

    applied, last, frozen, freeze_count = asyncio.run(run())
    assert applied == last and frozen == 1 and freeze_count > 0
