"""Logs CPython's long garbage collections, and freezes what survived a long full one.

A full (generation 2) collection walks every container object the process tracks and holds
the event loop for all of it: at a million partitions the controller's image is a million
objects or more, and a pause longer than controller.quorum.fetch.timeout.ms costs the leader
its followers' fetches (issue 28). The log line says how long and which generation, so such a
pause can be told from other stalls in the node's log.

``kafkawire.gc.freeze.after.ms``: after a full collection that took at least this long (its
CPU time, since 2026-12-01: at load 30-50 on the shared machine a full collection of 1-4 ms of
CPU took 50-250 ms of wall time, and a freeze then catches what is alive for no walk saved), the
node calls ``gc.freeze()``: every object that survived it moves to CPython's permanent
generation, which later collections do not walk, so the next full collections walk only what
was made since (the image a snapshot load or a cluster's growth made is walked once, not at
every full collection). 0 turns it off.

The trade-off: an object frozen while alive that later becomes part of a reference cycle with
nothing else referring to it is never collected (objects freed by their reference count, as
the image's partitions and topics are, go as before). What leaks is what was alive at a freeze
and dies in a cycle afterwards (asyncio's transports and protocols of a connection open at the
freeze and closed later, an exception caught with its traceback); a freeze happens only after a
full collection that took the setting's CPU time or left PACED_OBJECTS alive (below), so at most
once per about 16k objects that survive into the oldest generation, and in a cluster whose image
stays tracked by nothing new, rarely (a 10-minute churn at 100k partitions: twice).
benchmarks/README.md ("Garbage collection and the image", "Paced full collections") measures it.

Paced full collections (issue 28: "no loop stall above 20 ms"): a full collection walks every
object made since the last freeze. At 1M partitions those were nearly all PartitionRegistrations
(a fence makes one for each of the 100k-400k partitions it changes: 227,699 of the 228,496
objects one full collection walked, benchmarks/README.md "Paced full collections"), which the C
extension now untracks when made (kafkawire.metadata.registrations); whatever else piles up
(the pure path's registrations, other objects) is paced here. Left to CPython's thresholds, a
full collection came after hundreds of thousands of objects: 0.5-1.1 s on the loop. So while the
policy freezes, after every young-generation (1) collection the objects in the oldest generation
are counted (a list of at most about PACED_OBJECTS: well under a millisecond); once they are
PACED_OBJECTS, a full collection is queued on the node's loop, and a full collection that leaves
PACED_OBJECTS or more alive freezes them as a long one does. Each object is then walked by one
full collection (or a few small ones) before it is frozen, and no full collection walks much
more than PACED_OBJECTS objects (1.4 ms of CPU for 16,384 new registrations beside 1M frozen
ones). Not while a snapshot load holds full collections off (hold_full_collections): its end
freezes what survived.

The frozen objects are not counted (gc.get_freeze_count() walks all of them: 48-394 ms on the
loop at 1M partitions under load); gc's thresholds are CPython's own but while a load holds full
collections off. The cost of freezing more often is the leak above: objects alive at a freeze
that later die in a cycle; benchmarks/README.md ("Paced full collections") measures a long
churn's memory.
"""
from __future__ import annotations

import asyncio
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
_NO_FULL_COLLECTIONS = 1 << 30
_holds: list[int] = [0]                    # snapshot loads running (hold_full_collections)
_held_oldest: list[int] = [0]              # threshold2 to give back when the last hold ends
PACED_OBJECTS = 16_384                     # unfrozen objects in the oldest generation that queue a full collection
_loop: list = []                           # the loop paced collections run on (the last started node's)
_paced: list[bool] = [False]               # a paced collection is queued and has not run yet


def _on_collection(phase: str, info: dict) -> None:
    if phase == "start":
        _started[:] = [time.perf_counter(), time.thread_time()]
        return
    if not _started:
        return
    # wall and the thread's CPU: on a loaded machine the wall is mostly waiting for a core
    cpu_ms = (time.thread_time() - _started.pop()) * 1000
    took_ms = (time.perf_counter() - _started.pop()) * 1000
    generation = info.get("generation", -1)
    if took_ms >= LONG_PAUSE_MS:
        log.warning("garbage collection of generation %d took %.0f ms (%.1f ms of CPU; %d objects collected, "
                    "%d uncollectable)", generation, took_ms, cpu_ms, info.get("collected", 0),
                    info.get("uncollectable", 0))
    freeze_after = _freeze_after_ms[0]
    if not freeze_after:
        return
    if generation == 2:
        # The collection has finished (phase "stop"): what is tracked now survived it, and is
        # all in the oldest generation (a walk of those only, not of the frozen ones).
        survivors = len(gc.get_objects(generation=2))
        if cpu_ms >= freeze_after or survivors >= PACED_OBJECTS:
            _freeze(survivors, took_ms, cpu_ms)
    elif generation == 1 and not _paced[0] and not _holds[0]:
        if len(gc.get_objects(generation=2)) >= PACED_OBJECTS:
            _queue_paced_collection()


def _freeze(moving: int, took_ms: float, cpu_ms: float) -> None:
    freeze_started = time.perf_counter()
    gc.freeze()
    freezes[0] += 1
    # the freeze's own time, on the loop after the collection's (the stall is the two)
    freeze_ms = (time.perf_counter() - freeze_started) * 1000
    log.info("froze %d objects after a full collection of %.0f ms (%.1f ms of CPU; kafkawire.gc.freeze.after.ms=%d; "
             "freeze %d of this process; the freeze itself %.1f ms)", moving, took_ms, cpu_ms, _freeze_after_ms[0],
             freezes[0], freeze_ms)


def _queue_paced_collection() -> None:
    """A full collection on the node's loop, soon (not here: gc runs no collection from inside
    its callback). call_soon_threadsafe: a collection may run on another thread than the loop's."""
    loop = _loop[0] if _loop else None
    if loop is None or loop.is_closed():
        return
    _paced[0] = True
    try:
        loop.call_soon_threadsafe(_paced_collection)
    except RuntimeError:                   # the loop closed meanwhile
        _paced[0] = False


def _paced_collection() -> None:
    _paced[0] = False
    if _freeze_after_ms[0] and not _holds[0]:
        gc.collect(2)                      # _on_collection freezes what survives it


def hold_full_collections() -> None:
    """No full (generation 2) collection until the matching ``give_back_full_collections``
    (nested holds counted): a snapshot load (kafkawire.raft.node.driver_load) builds a state as
    large as the old one, which in CPython's rule means full collections during it, each walking
    the whole heap on the loop. The young generations are collected as ever, and no paced full
    collection runs meanwhile."""
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
        young, middle, _ = gc.get_threshold()
        gc.set_threshold(young, middle, _held_oldest[0])


def freeze_after_load(records: int = 0, what: str = "a snapshot load") -> None:
    """A snapshot's load of ``records`` records is done and the state it replaced let go
    (driver_load.py): freeze what survives, so that the next full collections do not walk the
    image it loaded (the first full collection after a load at 1M partitions walked it all:
    0.5-3 s on the loop). Only when the policy freezes (``kafkawire.gc.freeze.after.ms`` > 0) and
    no other load holds full collections off. The young generations are collected first (a few
    thousand objects at most: cyclic garbage there is not frozen); cyclic garbage that reached the
    oldest generation during the load is frozen with the rest (benchmarks/README.md measures how
    much: the trade-off of any freeze, above). ``what`` names the load in the log line (a long
    catch-up of the committed log is frozen after as a load is)."""
    if not _freeze_after_ms[0] or _holds[0]:
        return
    started = time.perf_counter()
    gc.collect(1)
    gc.freeze()
    freezes[0] += 1
    log.info("froze what survived %s of %d records in %.1f ms (kafkawire.gc.freeze.after.ms=%d; "
             "freeze %d of this process)", what, records, (time.perf_counter() - started) * 1000, _freeze_after_ms[0],
             freezes[0])


def log_long_pauses(freeze_after_ms: int = 0) -> int:
    """Install the callback (once per process) for a node that starts; returns the token its
    ``stop_logging_long_pauses`` gives back. ``freeze_after_ms`` (kafkawire.gc.freeze.after.ms)
    is the process's, the last node started in it setting it (0: no freezing); paced full
    collections run on the running loop of the last node started (none when called outside
    one)."""
    if not _watchers:
        _freezes_before[0] = freezes[0]
    token = _next_token[0] = _next_token[0] + 1
    _watchers[token] = freeze_after_ms
    _freeze_after_ms[0] = freeze_after_ms
    try:
        _loop[:] = [asyncio.get_running_loop()]
    except RuntimeError:                   # no loop runs here: no paced collections
        _loop.clear()
    _paced[0] = False                      # one queued on an earlier loop that stopped never runs
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
    _loop.clear()
    _paced[0] = False
