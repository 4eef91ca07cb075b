"""The state a snapshot's load replaced, dropped a piece at a time on the loop (issue 28).

``ControllerState.adopt`` swaps a loaded state in whole; the state it replaces is as large (a
follower installs a snapshot when it is far behind, not empty). Dropped at once, its image and
partition index go in one cascade of deallocations inside the load's last step: some 20 ms of
CPU at 100k partitions, ten times that at 1M, the loop held throughout (freeing them on another
thread would hold the GIL as long: a container's deallocation is one C call). So the maps that
hold most of it are emptied a few milliseconds at a time, the loop given back between.

Only what nothing else refers to is emptied: the old image and partition index themselves, and
of the image's maps those it alone holds (a frozen view shares the maps it does not copy, and a
request still reading the old image holds the image). Anything shared is just let go, and goes
whenever its last holder lets go of it, as before.
"""
from __future__ import annotations

import asyncio
import sys
import time

RELEASE_STEP_MS = 4.0       # the loop's time per step, as a snapshot load's (raft/node/driver_load.py)
_CHUNK = 64                 # entries dropped between two looks at the clock
_CLEAR_AT_ONCE = 20_000     # a set of keys up to this size is cleared in one call (~0.5 ms)
_SMALL = 256                # maps this small are left to go with their holder
_running: set[asyncio.Task] = set()     # the release tasks (a task must be referred to while it runs)


def release_in_steps(old: dict) -> asyncio.Task | None:
    """Drop ``old`` (the attributes of the state ``adopt`` replaced) in steps on the running
    loop; at once when no loop runs (a node's start, a test's plain call). Returns the task
    that drops it, if any (the snapshot load's ``finish`` hands it to the raft driver, which
    holds full collections off until it is done: contract.SnapshotLoadInSteps)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    pieces = _owned_pieces(old)
    old.clear()
    if not pieces:
        return None
    task = loop.create_task(_release(pieces))
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task


def _sole(obj, referrers: int) -> bool:
    """Whether ``obj`` is referred to by ``referrers`` references only (the caller's own; this
    function's parameter and getrefcount's argument are two more)."""
    return sys.getrefcount(obj) - 2 <= referrers


def _owned_pieces(old: dict) -> list:
    """The large maps and sets that only the old state holds, the largest holders first; the
    objects holding them are kept in the list too, so that they go last, once empty."""
    pieces: list = []
    image = old.pop("image", None)
    if image is not None and _sole(image, 1):          # `image` here: no request reads it any more
        for value in vars(image).values():
            if isinstance(value, (dict, set)) and len(value) > _SMALL and _sole(value, 2):   # the image, `value`
                pieces.append(value)
        pieces.append(image)
    index = old.pop("partition_index", None)
    if index is not None and _sole(index, 1):
        for kind in vars(index).values():
            for shards in kind.by_broker.values():
                pieces.extend(shards)
        pieces.append(index)
    return pieces


async def _release(pieces: list) -> None:
    while pieces:
        started = time.perf_counter()
        while pieces:                   # a chunk at least, then chunks while the step lasts
            _drop_chunk(pieces)
            if (time.perf_counter() - started) * 1000 >= RELEASE_STEP_MS:
                break
        await asyncio.sleep(0)


def _drop_chunk(pieces: list) -> None:
    piece = pieces[0]
    if isinstance(piece, dict):
        for _ in range(min(_CHUNK, len(piece))):
            piece.popitem()
    elif isinstance(piece, set):
        if len(piece) <= _CLEAR_AT_ONCE:
            piece.clear()
        else:
            for _ in range(min(_CHUNK, len(piece))):
                piece.pop()
    if not isinstance(piece, (dict, set)) or not piece:
        del pieces[0]
