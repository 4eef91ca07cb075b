"""Cases for the streams sticky assignor (kafkawire/broker/streams_assignor.py), in the line format
of tests/interop/java/streams_assignor/StickyAssignorCases.java, and the checked-in table of Kafka
4.3.1's answers to them (tests/broker/data/streams_sticky_assignor_cases.txt, written by
``pytest tests/interop/test_streams_assignor_vs_kafka.py --rewrite``).

A case: (standby replicas, [(subtopology, tasks, stateful)], [(member, process, active, standby)])
with the members in the order they are put into the assignor's members map, and the previous
active and standby tasks as {subtopology: set of partitions}.
"""
from __future__ import annotations

import itertools
import random
from pathlib import Path

from kafkawire.broker.streams_assignor import sticky_assign

TABLE = Path(__file__).parent / "data" / "streams_sticky_assignor_cases.txt"

# String.hashCode("Aa") == String.hashCode("BB"): ids built of them share a HashMap bucket
COLLIDING = ["".join(p) for p in itertools.product(("Aa", "BB"), repeat=4)]


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _name(rng: random.Random, prefix: str, index: int) -> str:
    style = rng.random()
    if style < 0.5:
        return _uuid(rng)
    if style < 0.8 or index >= 8:       # at most 8 ids of one bucket: 9 in a table of 64 make a tree
        return f"{prefix}{index}"
    return f"{prefix}{COLLIDING[index]}"


def _previous(rng, tasks, members, replicas) -> tuple[dict, dict]:
    """A previous target: each task's active owner (some tasks none) and standbys on others."""
    active = {m: {} for m in members}
    standby = {m: {} for m in members}
    keep = rng.choice((0.0, 0.5, 0.9, 1.0))
    for s, p in tasks:
        if rng.random() < keep:
            owner = rng.choice(members)
            active[owner].setdefault(s, set()).add(p)
            others = [m for m in members if m != owner]
            for m in rng.sample(others, min(len(others), rng.randint(0, replicas))):
                standby[m].setdefault(s, set()).add(p)
    return active, standby


def generate_cases(seed: int = 1071, count: int = 200, max_members: int = 9, max_partitions: int = 10) -> list:
    """``max_members``, ``max_partitions``: at most so many members (in up to half as many processes, at
    least 5) and tasks per subtopology; larger groups make Java's HashMaps grow their tables."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        replicas = rng.choice((0, 0, 1, 1, 2, 3))
        subs = [(s, rng.randint(0, max_partitions), rng.random() < 0.6)
                for s in sorted(rng.sample(["0", "1", "2", "3", "10", "11"], rng.randint(1, 4)))]
        processes = [_name(rng, "p", i) for i in range(rng.randint(1, max(5, max_members // 2)))]
        processes = list(dict.fromkeys(processes))
        members = []
        for i in range(rng.randint(1, max_members)):
            members.append((_name(rng, "m", i), rng.choice(processes)))
        members = list(dict(members).items())
        # tasks of the previous target may be beyond today's partition counts (topics shrank or grew)
        tasks = [(s, p) for s, n, _ in subs for p in range(n + rng.choice((0, 0, 2)))]
        active, standby = _previous(rng, tasks, [m for m, _ in members], replicas)
        cases.append((replicas, subs, [(m, pid, active[m], standby[m]) for m, pid in members]))
    # ten members of one bucket: the HashMap grows its table instead of making the bucket a tree
    crowd = [(m, f"p{i % 3}", {}, {}) for i, m in enumerate(COLLIDING[:10])]
    cases.append((1, [("0", 12, True), ("1", 5, False)], crowd))
    return cases


def _tasks_text(tasks: dict) -> str:
    parts = [f"{s}:{','.join(map(str, sorted(p)))}" for s, p in sorted(tasks.items()) if p]
    return ";".join(parts) or "-"


def case_text(case) -> str:
    replicas, subs, members = case
    lines = [f"case {replicas}"]
    lines += [f"sub {s} {n} {int(stateful)}" for s, n, stateful in subs]
    lines += [f"member {m} {pid} {_tasks_text(a)} {_tasks_text(sb)}" for m, pid, a, sb in members]
    return "\n".join(lines + ["end"]) + "\n"


def ours(case) -> list[str]:
    """Our assignor's answer, one line per member as the Java side prints it."""
    replicas, subs, members = case
    active, standby = sticky_assign(members, {s: n for s, n, _ in subs}, {s for s, _, st in subs if st}, replicas)
    return [f"{m} {_tasks_text(active[m])} {_tasks_text(standby[m])}" for m, *_ in members]


def format_table(cases, answers) -> str:
    return "".join(case_text(c) + "".join(f"= {line}\n" for line in a) for c, a in zip(cases, answers))


def read_table(path: Path = TABLE) -> list[tuple[str, list[str]]]:
    """[(case text, Kafka's answer lines)]."""
    table, case, answer = [], [], []
    for line in path.read_text().splitlines():
        if line.startswith("= "):
            answer.append(line[2:])
            continue
        if line.startswith("case ") and case:
            table.append(("\n".join(case) + "\n", answer))
            case, answer = [], []
        case.append(line)
    if case:
        table.append(("\n".join(case) + "\n", answer))
    return table
