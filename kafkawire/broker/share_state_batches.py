"""How the share coordinator combines a share-partition's state batches (Kafka 4.3.1's
PersisterStateBatchCombiner, by its rules, not its steps).

    combined = combine(batches_so_far, new_batches, start_offset)

The batches below ``start_offset`` go (one that straddles it is cut to start there; -1: none
go); where batches overlap, each offset keeps the batch with the larger delivery count, then the
larger delivery state (Kafka's order of delivery information: a record delivered more often, or
further along, wins); runs of adjacent offsets with the same count and state become one batch.
The result is sorted and has no overlaps. A sweep over the batches' ends: O(n log n) in the
batches, whatever their offset ranges.
"""
from __future__ import annotations

import heapq

from .share_state_records import StateBatch

__all__ = ["combine"]


def _pruned(batches, start_offset: int):
    for b in batches:
        if start_offset == -1 or b.first_offset >= start_offset:
            yield b
        elif b.last_offset >= start_offset:
            yield StateBatch(start_offset, b.last_offset, b.delivery_count, b.delivery_state)


def combine(so_far, new, start_offset: int) -> tuple[StateBatch, ...]:
    batches = sorted(set(_pruned(list(so_far) + list(new), start_offset)))
    if len(batches) < 2:
        return tuple(batches)
    out: list[StateBatch] = []
    active: list = []                 # heap of (-count, -state, last offset): the winner on top
    at, i = batches[0].first_offset, 0
    while i < len(batches) or active:
        if not active:
            at = max(at, batches[i].first_offset)
        while i < len(batches) and batches[i].first_offset <= at:
            b = batches[i]
            heapq.heappush(active, (-b.delivery_count, -b.delivery_state, b.last_offset))
            i += 1
        while active and active[0][2] < at:          # ended before this offset
            heapq.heappop(active)
        if not active:
            continue
        count, state, last = -active[0][0], -active[0][1], active[0][2]
        # the winner holds until it ends or a batch that may beat it starts
        end = last if i == len(batches) else min(last, batches[i].first_offset - 1)
        _extend(out, StateBatch(at, end, count, state))
        at = end + 1
    return tuple(out)


def _extend(out: list, batch: StateBatch) -> None:
    if out and out[-1].last_offset + 1 == batch.first_offset and \
            (out[-1].delivery_count, out[-1].delivery_state) == (batch.delivery_count, batch.delivery_state):
        out[-1] = StateBatch(out[-1].first_offset, batch.last_offset, batch.delivery_count, batch.delivery_state)
    else:
        out.append(batch)
