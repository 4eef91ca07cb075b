"""The target assignment of a streams group's tasks, by the rules of Kafka 4.3.1's
StickyTaskAssignor (org.apache.kafka.coordinator.group.streams.assignor), the only assignor it has:

- load is balanced by process (``process.id``, one Kafka Streams instance): a process's load is its
  tasks over its members, and the members of one process share that process's tasks;
- active tasks, by partition then subtopology: each first to its previous active owner, then to a
  previous standby holder (the least loaded of them), while that member is under its quota (the
  tasks not yet placed spread over the members that are not full, rounded up); the rest, by
  subtopology then partition, each to the least loaded member of the least loaded process;
- standby tasks (``num.standby.replicas``) only for stateful subtopologies (those with changelog
  topics), by partition then subtopology, highest first: each replica to the task's previous
  active owner, else a previous standby holder, when its process does not hold the task yet and
  the member is under its quota of all tasks; the replicas left go, highest task first, to the
  least loaded process not holding the task (too few processes: fewer standbys, logged);
- ties are broken as Kafka's own: java.util.PriorityQueue's heap order over the processes and
  members in java.util.HashMap's iteration order (String.hashCode buckets) of the group's members,
  so the same inputs give the same assignment as Kafka's class (tests/interop compares them).

The members are taken in the order given, the order Kafka's coordinator puts them into the
assignor's member map (kafkawire.broker.streams_coordinator passes its group's TimelineHashMap
order, then a joining member); it matters between ids that fall in the same HashMap bucket.

    targets, standby = assign(group, members, {"0": 4}, stateful={"0"})   # {member: {subtopology: frozenset}} each
"""
from __future__ import annotations

import logging

from . import streams_group as sg
from .java_collections import JavaPriorityQueue, java_hash_map_order, java_order

__all__ = ["assign", "sticky_assign"]

log = logging.getLogger(__name__)


def assign(group: sg.StreamsGroup, members: list, counts: dict, stateful=frozenset()) -> tuple[dict, dict]:
    """``counts``: each subtopology's number of tasks; ``stateful``: the subtopologies with changelog
    topics; ``members``: the group's members, in the order they are handed to the assignor."""
    specs = [(m, group.members[m].process_id, group.targets.get(m, {}), group.standby_targets.get(m, {}))
             for m in members]
    return sticky_assign(specs, counts, stateful, group.standby_replicas or 0)


def sticky_assign(specs: list, counts: dict, stateful, replicas: int) -> tuple[dict, dict]:
    """``specs``: (member id, process id, previous active {subtopology: partitions}, previous
    standby {...}) per member. Returns ({member: {subtopology: frozenset}} active, the same standby)."""
    state = _State(specs, counts, stateful, replicas)
    if specs:
        state.assign_active()
        if replicas > 0:
            state.assign_standby()
    return state.result(specs)


# -- the assignor's state --

class _Process:
    """One process's members, their task counts and the tasks given to them."""

    def __init__(self, process_id: str):
        self.process_id = process_id
        self.counts: dict = {}              # member id -> its tasks (active and standby), in put order
        self.task_count = 0
        self.tasks: set = set()
        self.active: dict = {}              # member id -> set of (subtopology, partition)
        self.standby: dict = {}
        self._by_load: JavaPriorityQueue | None = None

    @property
    def load(self) -> float:
        return self.task_count / len(self.counts)

    def add(self, member: str, task: tuple, active: bool) -> int:
        """To this member; the members' heap is rebuilt at the next least-loaded placement."""
        self._by_load = None
        return self._add(member, task, active)

    def _add(self, member: str, task: tuple, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member, set()).add(task)
        self.counts[member] += 1
        return self.counts[member]

    def add_to_least_loaded(self, task: tuple, active: bool) -> int:
        if len(self.counts) == 1:
            return self._add(next(iter(self.counts)), task, active)
        if self._by_load is None:
            self._by_load = JavaPriorityQueue(key=lambda entry: entry[1])
            for member in java_hash_map_order(list(self.counts)):
                self._by_load.add([member, self.counts[member]])
        entry = self._by_load.poll()
        entry[1] = self._add(entry[0], task, active)
        self._by_load.add(entry)
        return entry[1]


def _quota(tasks: int, members: int) -> int:
    return -(-tasks // members) if members else 0


class _State:
    def __init__(self, specs: list, counts: dict, stateful, replicas: int):
        self.replicas = replicas
        self.counts = counts
        self.stateful = [s for s in counts if s in stateful]
        self.active_left = sum(counts.values())           # tasks not yet counted against a full member
        self.all_left = self.active_left + replicas * sum(counts[s] for s in self.stateful)
        self.with_active_room = self.with_room = len(specs)
        self.active_quota = _quota(self.active_left, len(specs))
        self.all_quota = _quota(self.all_left, len(specs))
        order = java_hash_map_order([spec[0] for spec in specs])        # the group spec's members map
        by_id = {spec[0]: spec for spec in specs}
        processes: dict = {}
        self.member_process: dict = {}
        self.previous_active: dict = {}                 # task -> member
        self.previous_standby: dict = {}                # task -> [member, ...]
        for member in order:
            _, process_id, active, standby = by_id[member]
            process = processes.setdefault(process_id, _Process(process_id))
            process.counts[member] = 0
            self.member_process[member] = process
            for s, partitions in active.items():
                for p in partitions:
                    self.previous_active[(s, p)] = member
            for s, partitions in standby.items():
                for p in partitions:
                    self.previous_standby.setdefault((s, p), []).append(member)
        self.processes = [processes[p] for p in java_hash_map_order(list(processes), len(specs))]

    # quotas: when a member reaches one, it leaves the count and the quota of the others is recomputed

    def _placed_active(self, count: int) -> None:
        if count == self.active_quota:
            self.with_active_room -= 1
            self.active_left -= count
            self.active_quota = _quota(self.active_left, self.with_active_room)
        self._placed(count)

    def _placed(self, count: int) -> None:
        if count == self.all_quota:
            self.with_room -= 1
            self.all_left -= count
            self.all_quota = _quota(self.all_left, self.with_room)

    def _tasks(self, subtopologies) -> list:
        return [(s, p) for s in subtopologies for p in range(self.counts[s])]

    def _least_loaded_previous(self, members: list, task) -> str | None:
        """Kafka's findPrevMemberWithLeastLoad, with its rule as it is: a later holder replaces the
        candidate only if both its process's load and its own count are lower, and the result is
        refused when the first holder's process (not the chosen one's) already holds the task."""
        if not members:
            return None
        candidate = members[0]
        first_process = self.member_process[candidate]
        process_load, member_load = first_process.load, first_process.counts[candidate]
        for member in members[1:]:
            process = self.member_process[member]
            if process.load < process_load and (task is None or task not in process.tasks):
                if process.counts[member] < member_load:
                    process_load, member_load, candidate = process.load, process.counts[member], member
        return candidate if task is None or task not in first_process.tasks else None

    def _by_load(self) -> JavaPriorityQueue:
        queue = JavaPriorityQueue(key=lambda process: process.load)
        for process in self.processes:
            queue.add(process)
        return queue

    def assign_active(self) -> None:
        tasks = sorted(self._tasks(self.counts), key=lambda t: (t[1], java_order(t[0])))
        for previous in (lambda t: self.previous_active.get(t),
                         lambda t: self._least_loaded_previous(self.previous_standby.get(t), None)):
            unplaced = []
            for task in tasks:
                member = previous(task)
                process = self.member_process.get(member)
                if process is not None and process.counts[member] < self.active_quota:
                    self._placed_active(process.add(member, task, True))
                else:
                    unplaced.append(task)
            tasks = unplaced
        queue = self._by_load()
        for task in sorted(tasks, key=lambda t: (java_order(t[0]), t[1])):
            process = queue.poll()
            self._placed_active(process.add_to_least_loaded(task, True))
            queue.add(process)

    def assign_standby(self) -> None:
        tasks = sorted(self._tasks(self.stateful), key=lambda t: (t[1], java_order(t[0])), reverse=True)
        remaining = []                                          # (task, replicas still to place)
        for task in tasks:
            for placed in range(self.replicas):
                member = self.previous_active.get(task)
                process = self.member_process.get(member)
                if process is not None and task not in process.tasks and process.counts[member] < self.all_quota:
                    self._placed(process.add(member, task, False))
                    continue
                member = self._least_loaded_previous(self.previous_standby.get(task), task)
                process = self.member_process.get(member)
                if process is not None and process.counts[member] < self.all_quota:
                    self._placed(process.add(member, task, False))
                    continue
                remaining.append((task, self.replicas - placed))
                break
        remaining.sort(key=lambda r: (java_order(r[0][0]), r[0][1]), reverse=True)
        queue, short = self._by_load(), 0
        for task, count in remaining:
            for placed in range(count):
                if not self._standby_to_least_loaded(queue, task):
                    short += count - placed
                    break
        if short:
            log.warning("Unable to assign %d of the standby tasks (%d replicas each): there are not enough "
                        "processes. Add application instances to keep the requested standby replicas.",
                        short, self.replicas)

    def _standby_to_least_loaded(self, queue: JavaPriorityQueue, task) -> bool:
        """The least loaded process without the task takes it; the processes polled go back in the
        reverse order (Kafka's recursion)."""
        polled, found = [], False
        while True:
            process = queue.poll()
            if process is None:
                break
            polled.append(process)
            if task not in process.tasks:
                self._placed(process.add_to_least_loaded(task, False))
                found = True
                break
            if not queue:
                break
        for process in reversed(polled):
            queue.add(process)
        return found

    def result(self, specs: list) -> tuple[dict, dict]:
        def compact(tasks) -> dict:
            out: dict = {}
            for s, p in tasks:
                out.setdefault(s, set()).add(p)
            return {s: frozenset(p) for s, p in out.items()}
        active, standby = {}, {}
        for member, *_ in specs:
            process = self.member_process[member]
            active[member] = compact(process.active.get(member, ()))
            standby[member] = compact(process.standby.get(member, ()))
        return active, standby
