"""The target assignment of a streams group's tasks, balanced and sticky (Kafka 4.3.1 uses its
StickyTaskAssignor; this one keeps its main rules, not its process and rack balancing):

- active tasks: loads differ by one at most; each task stays with its previous target owner while
  that one has fewer than its share, the rest go to the members with the fewest tasks;
- standby tasks (``num.standby.replicas``): each on a member of another process than the task's
  active owner and its other standbys, its previous standby holder first, else the least loaded.

    targets, standby = assign(group, members, {"0": 4})      # {member: {subtopology: frozenset}} each
"""
from __future__ import annotations

import heapq

from . import streams_group as sg

__all__ = ["assign"]


def assign(group: sg.StreamsGroup, members: list, counts: dict) -> tuple[dict, dict]:
    """``counts``: each subtopology's number of tasks; ``members`` sorted."""
    tasks = [(s, p) for s, count in sorted(counts.items()) for p in range(count)]
    targets, load = _active(group, members, tasks)
    standby = _standby_targets(group, members, tasks, targets, load, group.standby_replicas or 0)
    return {m: {s: frozenset(p) for s, p in t.items()} for m, t in targets.items()}, standby


def _active(group: sg.StreamsGroup, members: list, tasks: list) -> tuple[dict, dict]:
    """({member: {subtopology: set}}, {member: its number of tasks})."""
    base, extra = divmod(len(tasks), len(members)) if members else (0, 0)   # extra members get base + 1
    load = {m: 0 for m in members}
    targets: dict = {m: {} for m in members}
    previous = {(s, p): m for m, t in group.targets.items() for s, ps in t.items() for p in ps}
    unplaced, over_base = [], []
    for task in tasks:
        owner = previous.get(task)
        if owner in load and load[owner] < base:
            targets[owner].setdefault(task[0], set()).add(task[1])
            load[owner] += 1
        else:
            (over_base if owner in load else unplaced).append(task)
    for task in over_base:                  # one more for as many previous owners as may have base + 1
        owner = previous[task]
        if extra and load[owner] == base:
            targets[owner].setdefault(task[0], set()).add(task[1])
            load[owner] += 1
            extra -= 1
        else:
            unplaced.append(task)
    lightest = [(load[m], m) for m in members]       # (tasks, member): the next task goes to the first
    heapq.heapify(lightest)
    for s, p in unplaced:
        count, least = heapq.heappop(lightest)
        targets[least].setdefault(s, set()).add(p)
        load[least] = count + 1
        heapq.heappush(lightest, (count + 1, least))
    return targets, load


def _standby_targets(group: sg.StreamsGroup, members: list, tasks: list, targets: dict, load: dict,
                     replicas: int) -> dict:
    """``replicas`` standbys of each task, each on a member of another process than the task's
    active owner and than its other standbys: its previous standby holder if eligible, else the
    eligible member with the fewest tasks. A task without enough eligible members gets fewer."""
    standby: dict = {m: {} for m in members}
    if not replicas or not members:
        return {m: {} for m in members}
    process = {m: group.members[m].process_id for m in members}
    active_owner = {(s, p): m for m, t in targets.items() for s, ps in t.items() for p in ps}
    previous = {}
    for m, t in group.standby_targets.items():
        for s, ps in t.items():
            for p in ps:
                previous.setdefault((s, p), []).append(m)
    for task in tasks:
        used = {process[active_owner[task]]} if task in active_owner else set()
        chosen = [m for m in previous.get(task, ()) if m in process and process[m] not in used][:replicas]
        used |= {process[m] for m in chosen}
        while len(chosen) < replicas:
            eligible = [m for m in members if process[m] not in used]
            if not eligible:
                break
            least = min(eligible, key=lambda m: (load[m], m))
            chosen.append(least)
            used.add(process[least])
        for m in chosen:
            standby[m].setdefault(task[0], set()).add(task[1])
            load[m] += 1
    return {m: {s: frozenset(p) for s, p in t.items()} for m, t in standby.items()}
