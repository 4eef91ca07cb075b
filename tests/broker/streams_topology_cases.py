"""Random streams topologies and topics, in the line format of
tests/interop/java/streams_assignor/TopologyCases.java, and our configure()'s answer in the same
format: tests/interop/test_streams_assignor_vs_kafka.py compares them with Kafka 4.3.1's
InternalTopicManager.configureTopics, and Kafka's answers to generate_topology_cases() are kept in
tests/broker/data/streams_topology_cases.txt (``--rewrite`` there writes them again).

A case: ({existing topic: partitions}, [(id, sources, sinks, [(repartition source, fixed count)],
changelogs, [(source indexes, repartition indexes)])]) with the subtopologies in record order."""
from __future__ import annotations

import random
from pathlib import Path

from kafkawire.broker.java_collections import java_order
from kafkawire.broker.streams_topology import InvalidTopology, configure
from kafkawire.messages.streams_group_topology_value import (CopartitionGroup, StreamsGroupTopologyValue, Subtopology,
                                                             TopicInfo)

EXTERNAL = ["in", "left", "right", "keys", "orders", "users"]
REPARTITION = ["app-r1", "app-r2", "app-r3", "app-r4"]
IDS = ["0", "1", "2", "3", "4", "10", "11", "12"]


def generate_topology_cases(seed: int = 1071, count: int = 300) -> list:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        topics = {t: rng.choice((1, 2, 3, 3, 4, 6)) for t in EXTERNAL if rng.random() < 0.9}
        subs = []
        for sid in sorted(rng.sample(IDS, rng.randint(1, 5)), key=java_order):
            sources = rng.sample(EXTERNAL, rng.choice((0, 1, 1, 2, 3)))
            repartition = [(t, rng.choice((0, 0, 0, 2, 3))) for t in rng.sample(REPARTITION, rng.choice((0, 0, 1, 2)))]
            if not sources and not repartition:
                sources = [rng.choice(EXTERNAL)]
            sinks = rng.sample(REPARTITION, rng.choice((0, 0, 1, 2)))
            changelogs = [f"app-{sid}-store-changelog"] if rng.random() < 0.5 else []
            groups = []
            for _ in range(rng.choice((0, 0, 1, 2))):
                groups.append((rng.sample(range(len(sources)), rng.randint(0, len(sources))),
                               rng.sample(range(len(repartition)), rng.randint(0, len(repartition)))))
            subs.append((sid, sources, sinks, repartition, changelogs, groups))
        for internal in [t for _, _, _, r, c, _ in subs for t in [n for n, _ in r] + c]:
            if rng.random() < 0.15:                     # already created, maybe with another count
                topics[internal] = rng.choice((2, 3, 4))
        cases.append((topics, subs))
    return cases


def _list(items) -> str:
    return ",".join(map(str, items)) or "-"


def topology_case_text(case) -> str:
    topics, subs = case
    lines = ["topology"] + [f"topic {t} {n}" for t, n in topics.items()]
    for sid, sources, sinks, repartition, changelogs, groups in subs:
        copartition = ";".join(f"{_list(s)}/{_list(r)}" for s, r in groups) or "-"
        lines.append(f"sub {sid} {_list(sources)} {_list(sinks)} {_list(f'{n}={p}' for n, p in repartition)} "
                     f"{_list(changelogs)} {copartition}")
    return "\n".join(lines + ["end"]) + "\n"


def our_configuration(case) -> list[str]:
    topics, subs = case
    value = StreamsGroupTopologyValue(epoch=1, subtopologies=[Subtopology(
        subtopology_id=sid, source_topics=sources, repartition_sink_topics=sinks,
        repartition_source_topics=[TopicInfo(name=n, partitions=p, topic_configs=[]) for n, p in repartition],
        state_changelog_topics=[TopicInfo(name=n, topic_configs=[]) for n in changelogs],
        copartition_groups=[CopartitionGroup(source_topics=s, repartition_source_topics=r) for s, r in groups])
        for sid, sources, sinks, repartition, changelogs, groups in subs])
    try:
        configured = configure(value, topics.get)
    except InvalidTopology as exc:
        return [f"invalid {exc}"]
    status = f"status {configured.status[0]} {configured.status[1]}" if configured.status else "status - -"
    tasks = configured.tasks or {}
    return [status, f"tasks {_list(f'{s}={tasks[s]}' for s in sorted(tasks, key=java_order))}",
            f"create {_list(f'{n}={t.num_partitions}' for n, t in sorted(configured.to_create.items()))}"]


TOPOLOGY_TABLE = Path(__file__).parent / "data" / "streams_topology_cases.txt"


def format_topology_table(cases, answers) -> str:
    return "".join(topology_case_text(c) + "".join(f"= {line}\n" for line in a) for c, a in zip(cases, answers))


def read_topology_table(path: Path = TOPOLOGY_TABLE) -> list[tuple[str, list[str]]]:
    """[(case text, Kafka's answer lines)]."""
    table: list = []
    for line in path.read_text().splitlines():
        if line == "topology":
            table.append([[line], []])
        elif line.startswith("= "):
            table[-1][1].append(line[2:])
        else:
            table[-1][0].append(line)
    return [("\n".join(case) + "\n", answer) for case, answer in table]
