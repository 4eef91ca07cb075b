"""Logs CPython's long garbage collections, and freezes what survived a long full one.

A full (generation 2) collection walks every container object the process tracks and holds
the event loop for all of it: at a million partitions the controller's image is a million
objects or more, and a pause longer than controller.quorum.fetch.timeout.ms costs the leader
its followers' fetches (issue 28). The log line says how long and which generation, so such a
pause can be told from other stalls in the node's log.

``kafkawire.gc.freeze.after.ms``: after a full collection that took at least this long, the
node calls ``gc.freeze()``: every object that survived it moves to CPython's permanent
generation, which later collections do not walk, so the next full collections walk only what
was made since (the image a snapshot load or a cluster's growth made is walked once, not at
every full collection). 0 turns it off.

The trade-off: an object frozen while alive that later becomes part of a reference cycle with
nothing else referring to it is never collected (objects freed by their reference count, as
the image's partitions and topics are, go as before). What leaks is what was alive at a freeze
and dies in a cycle afterwards (asyncio's transports and protocols of a connection open at the
freeze and closed later, an exception caught with its traceback); a freeze happens only after a
full collection as long as the setting, i.e. once the objects made since the last freeze are
as many as a long collection walks, so at most once per several hundred thousand objects that
survive into the oldest generation. benchmarks/README.md ("Garbage collection and the image")
measures it.

After a freeze, full collections are spaced as if the frozen objects were still counted. CPython
3.11 runs a full collection when threshold2 (10) young-generation collections have run since the
last one and the objects moved into the oldest generation since then number a quarter of those
it held after the last one; frozen objects leave that count, so after a freeze the quarter is of
the few objects made since, and each full collection then comes after 25% more of those only:
walks growing by 1.25x (a cProfile'd fencing at 1M partitions ran nine in a row, of 125 to
593 ms; issue 28). So at each freeze threshold2 is
raised to the young collections in which a quarter of the frozen objects could have been
allocated (at most threshold0 * threshold1 net allocations each): at 1.2M frozen objects 43
(never below what it was); a full collection then waits for the process to grow by about a
quarter of what it holds, as it would without freezing. Cyclic garbage that reaches the oldest
generation waits that long to be collected; the threshold goes back with the last node's stop.
Measured (benchmarks/README.md, "Fencing at 1M within 2 s"): 2-3 full collections during a
fencing at 1M partitions against 5-8 before, their CPU about the same there (the first ones walk
what the build left unfrozen).
"""
from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger(__name__)

LONG_PAUSE_MS = 100
_started: list[float] = []
_freeze_after_ms: list[int] = [0]          # 0: never freeze
freezes: list[int] = [0]                   # how many freezes this process made (for checks and metrics)
_freezes_before: list[int] = [0]           # freezes made before the first of the running nodes started
_watchers: dict[int, int] = {}             # a running node's token -> its freeze setting, in start order
_next_token: list[int] = [0]
_threshold_before: list[tuple] = []        # gc.get_threshold() before the first freeze raised it
_NO_FULL_COLLECTIONS = 1 << 30
_holds: list[int] = [0]                    # snapshot loads running (hold_full_collections)
_held_oldest: list[int] = [0]              # threshold2 to give back when the last hold ends
RECOUNT_EVERY = 16                         # freezes between two exact counts of the frozen objects
_frozen: list[int] = [0]                   # the frozen objects, as last counted plus what froze since
_since_count: list[int] = [0]              # freezes since the last exact count (0: count at the next)


def _on_collection(phase: str, info: dict) -> None:
    if phase == "start":
        _started[:] = [time.perf_counter()]
        return
    if not _started:
        return
    took_ms = (time.perf_counter() - _started.pop()) * 1000
    generation = info.get("generation", -1)
    if took_ms >= LONG_PAUSE_MS:
        log.warning("garbage collection of generation %d took %.0f ms (%d objects collected, %d uncollectable)",
                    generation, took_ms, info.get("collected", 0), info.get("uncollectable", 0))
    freeze_after = _freeze_after_ms[0]
    if freeze_after and generation == 2 and took_ms >= freeze_after:
        # The collection has finished (phase "stop"): what is tracked now survived it.
        freeze_started = time.perf_counter()
        # After a full collection every tracked object is in the oldest generation: these are
        # what the freeze moves (a walk of them only, not of all the frozen ones).
        moving = len(gc.get_objects(generation=2))
        gc.freeze()
        freezes[0] += 1
        frozen = _count_frozen(moving)
        _space_full_collections(frozen)
        # the freeze's own time, on the loop after the collection's (the stall is the two)
        freeze_ms = (time.perf_counter() - freeze_started) * 1000
        log.info("froze %d objects after a full collection of %.0f ms (kafkawire.gc.freeze.after.ms=%d; "
                 "freeze %d of this process; %d objects moved; the freeze itself %.1f ms)", frozen, took_ms,
                 freeze_after, freezes[0], moving, freeze_ms)


def _count_frozen(moved: int) -> int:
    """The objects frozen now, after a freeze that moved ``moved``. gc.get_freeze_count() walks
    every frozen object (48-394 ms on the loop at 1M partitions under load: benchmarks/README.md,
    "Where the fence's wall time goes"), so it is asked at the first freeze and then once every
    RECOUNT_EVERY freezes; in between, the last count plus what each freeze moved (frozen objects
    freed since are still counted until the next exact count: full collections spaced a little
    wider meanwhile)."""
    if _since_count[0] == 0 or _since_count[0] >= RECOUNT_EVERY:
        _frozen[0], _since_count[0] = gc.get_freeze_count(), 1
    else:
        _frozen[0] += moved
        _since_count[0] += 1
    return _frozen[0]


def _space_full_collections(frozen: int) -> None:
    """threshold2 raised for the ``frozen`` objects (see above)."""
    if not _threshold_before:
        young, middle, oldest = gc.get_threshold()
        _threshold_before.append((young, middle, _held_oldest[0] if _holds[0] else oldest))
    young, middle, oldest = _threshold_before[0]
    per_young_collection = max(young, 1) * max(middle, 1)
    _set_oldest(max(oldest, frozen // (4 * per_young_collection)))


def _set_oldest(threshold2: int) -> None:
    """gc's third threshold, unless a snapshot load holds full collections off: then the value
    its end gives back."""
    if _holds[0]:
        _held_oldest[0] = threshold2
    else:
        young, middle, _ = gc.get_threshold()
        gc.set_threshold(young, middle, threshold2)


def hold_full_collections() -> None:
    """No full (generation 2) collection until the matching ``give_back_full_collections``
    (nested holds counted): a snapshot load (kafkawire.raft.node.driver_load) builds a state as
    large as the old one, which in CPython's rule means full collections during it, each walking
    the whole heap on the loop. The young generations are collected as ever. A freeze meanwhile
    (its raised threshold) takes effect at the last hold's end."""
    if _holds[0] == 0:
        _held_oldest[0] = gc.get_threshold()[2]
        young, middle, _ = gc.get_threshold()
        gc.set_threshold(young, middle, _NO_FULL_COLLECTIONS)
    _holds[0] += 1


def give_back_full_collections() -> None:
    if _holds[0] == 0:
        return
    _holds[0] -= 1
    if _holds[0] == 0:
        _set_oldest(_held_oldest[0])


def freeze_after_load(records: int = 0, what: str = "a snapshot load") -> None:
    """A snapshot's load of ``records`` records is done and the state it replaced let go
    (driver_load.py): freeze what survives, so that the next full collections do not walk the
    image it loaded (the first full collection after a load at 1M partitions walked it all:
    0.5-3 s on the loop). Only when the policy freezes (``kafkawire.gc.freeze.after.ms`` > 0) and
    no other load holds full collections off. The young generations are collected first (a few
    thousand objects at most: cyclic garbage there is not frozen); cyclic garbage that reached the
    oldest generation during the load is frozen with the rest (benchmarks/README.md measures how
    much: the trade-off of any freeze, above). threshold2 is raised as after any freeze, for
    ``records`` objects (the image keeps about one tracked object per record: 1.09M frozen after
    a load of 1.01M records), not gc.get_freeze_count(), which walks every frozen object (25 ms
    of CPU at 1M partitions). ``what`` names the load in the log line (a long catch-up of the
    committed log is frozen after as a load is)."""
    if not _freeze_after_ms[0] or _holds[0]:
        return
    started = time.perf_counter()
    gc.collect(1)
    gc.freeze()
    freezes[0] += 1
    _frozen[0] += records                  # an estimate, as for the threshold: the next count corrects it
    _since_count[0] = max(_since_count[0], 1)
    _space_full_collections(records)
    log.info("froze what survived %s of %d records in %.1f ms (kafkawire.gc.freeze.after.ms=%d; "
             "freeze %d of this process)", what, records, (time.perf_counter() - started) * 1000, _freeze_after_ms[0],
             freezes[0])


def log_long_pauses(freeze_after_ms: int = 0) -> int:
    """Install the callback (once per process) for a node that starts; returns the token its
    ``stop_logging_long_pauses`` gives back. ``freeze_after_ms`` (kafkawire.gc.freeze.after.ms)
    is the process's, the last node started in it setting it (0: no freezing)."""
    if not _watchers:
        _freezes_before[0] = freezes[0]
    token = _next_token[0] = _next_token[0] + 1
    _watchers[token] = freeze_after_ms
    _freeze_after_ms[0] = freeze_after_ms
    if _on_collection not in gc.callbacks:
        gc.callbacks.append(_on_collection)
    return token


def stop_logging_long_pauses(token: int) -> None:
    """The node that got ``token`` has stopped. When it was the process's last running node the
    callback goes, and what the policy froze goes back to the collected generations: a process
    that runs nodes in process for a while (a test run's ControllerNodes) keeps no
    permanent generation of theirs, so their objects that die in cycles are collected."""
    if _watchers.pop(token, None) is None:
        return
    if _watchers:
        _freeze_after_ms[0] = next(reversed(_watchers.values()))
        return
    _freeze_after_ms[0] = 0
    if _on_collection in gc.callbacks:
        gc.callbacks.remove(_on_collection)
    # Only when the policy froze while they ran: an application's own gc.freeze() is its business
    # (gc has one permanent generation, so when both froze, both are undone).
    if freezes[0] > _freezes_before[0]:
        gc.unfreeze()
    _frozen[0] = _since_count[0] = 0
    if _threshold_before:
        _set_oldest(_threshold_before.pop()[2])
