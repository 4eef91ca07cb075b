"""Our streams sticky assignor against Kafka 4.3.1's own StickyTaskAssignor class, run by one JVM
(tests/interop/java/streams_assignor/StickyAssignorCases.java) on the same inputs: the assignment
must be identical, member by member (Kafka's is deterministic for given inputs: its ties follow
java.util.HashMap's iteration order of the ids and java.util.PriorityQueue's heap, which ours
reproduces). The cases are the checked-in table's (tests/broker/streams_assignor_cases.py) and
as many more from another seed; ``--rewrite`` writes the table's recorded answers again from Kafka's.
The topology configuration (kafkawire/broker/streams_topology.py) is compared likewise with Kafka's
InternalTopicManager.configureTopics (TopologyCases.java), its answers kept in
tests/broker/data/streams_topology_cases.txt.
"""
from __future__ import annotations

import hashlib
import os
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from kafkawire.broker.java_collections import TIMELINE_INITIAL_CAPACITY, timeline_capacity, timeline_hash_map_order
from tests.broker.streams_assignor_cases import TABLE, case_text, format_table, generate_cases, ours
from tests.broker.streams_topology_cases import (TOPOLOGY_TABLE, format_topology_table, generate_topology_cases,
                                                our_configuration, topology_case_text)
from tests.interop import kafka_dist

JAVA_SOURCES = Path(__file__).parent / "java" / "streams_assignor"     # StickyAssignorCases, TopologyCases


@pytest.fixture(scope="module")
def classes(kafka_libs) -> Path:
    """Both Java sides, compiled once per version of their sources and of the jars, and kept in
    the jars' cache (.kafka-dist/classes/), so a warm run starts no javac."""
    sources = sorted(JAVA_SOURCES.glob("*.java"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources) + kafka_dist.classpath().encode())
    for jar in sorted(kafka_libs.glob("kafka-group-coordinator*.jar")):
        digest.update(jar.name.encode())
    out = kafka_dist.cache_dir() / "classes" / f"streams-judge-{digest.hexdigest()[:16]}"
    if out.is_dir():
        return out
    if not shutil.which("javac"):
        from tests.conftest import unavailable
        unavailable("javac is needed to run Kafka's StickyTaskAssignor")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as building:
        subprocess.run(["javac", "-nowarn", "-d", building, "-cp", kafka_dist.classpath(), *map(str, sources)],
                       check=True, capture_output=True, timeout=180)
        try:
            os.rename(building, out)            # atomic: a parallel run either sees it whole or builds its own
        except OSError:
            if not out.is_dir():
                raise
        Path(building).mkdir(exist_ok=True)     # for TemporaryDirectory's cleanup
    return out


def run_java(classes: Path, main_class: str, text: str) -> list[list[str]]:
    """The answers of one JVM run over all the cases in ``text``, each ended by an "end" line."""
    result = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
                             "-cp", f"{classes}:{kafka_dist.classpath()}", main_class],
                            input=text, capture_output=True, text=True, timeout=120, check=True)
    answers, current = [], []
    for line in result.stdout.splitlines():
        if line == "end":
            answers.append(current)
            current = []
        else:
            current.append(line)
    return answers


def test_our_assignments_are_kafkas(classes, request):
    table_cases = generate_cases()
    more = generate_cases(seed=848, count=150) + generate_cases(seed=1, count=150, max_members=60, max_partitions=40)
    answers = run_java(classes, "StickyAssignorCases", "".join(map(case_text, table_cases + more)))
    assert len(answers) == len(table_cases + more)
    if request.config.getoption("--rewrite"):
        TABLE.write_text(format_table(table_cases, answers[:len(table_cases)]))
    wrong = [f"{case_text(c)}Kafka: {k}\nours:  {ours(c)}"
             for c, k in zip(table_cases + more, answers) if ours(c) != k]
    assert not wrong, f"{len(wrong)} of {len(answers)} assignments differ, e.g.\n" + "\n".join(wrong[:3])
    assert TABLE.read_text() == format_table(table_cases, answers[:len(table_cases)]), \
        f"{TABLE} is not Kafka's answers to generate_cases(); run with --rewrite"


def test_our_topology_configuration_is_kafkas(classes, request):
    """configure() against InternalTopicManager.configureTopics on random topologies: repartition
    passes, co-partitioning, changelog and task counts, the internal topics to create, statuses and
    their messages. Cases where Kafka fails with an internal error (a RuntimeException other than
    StreamsInvalidTopologyException) are counted, not compared."""
    cases = generate_topology_cases()
    answers = run_java(classes, "TopologyCases", "".join(map(topology_case_text, cases)))
    assert len(answers) == len(cases)
    if request.config.getoption("--rewrite"):
        TOPOLOGY_TABLE.write_text(format_topology_table(cases, answers))
    internal_errors = [a for a in answers if a[0].startswith("error ")]
    compared = [(c, a) for c, a in zip(cases, answers) if not a[0].startswith("error ")]
    wrong = [f"{topology_case_text(c)}Kafka: {a}\nours:  {our_configuration(c)}"
             for c, a in compared if our_configuration(c) != a]
    kinds = {a[0].split(" ")[0] + (" " + a[0].split(" ")[1] if a[0].startswith("status") else "") for _, a in compared}
    print(f"\n{len(compared)} topologies compared ({sorted(kinds)}), {len(internal_errors)} are Kafka's internal errors: "
          f"{sorted({a[0] for a in internal_errors})}")
    assert not wrong, f"{len(wrong)} of {len(compared)} configurations differ, e.g.\n" + "\n".join(wrong[:3])
    assert TOPOLOGY_TABLE.read_text() == format_topology_table(cases, answers), \
        f"{TOPOLOGY_TABLE} is not Kafka's answers to generate_topology_cases(); run with --rewrite"


def test_our_timeline_hash_map_order_is_kafkas(classes):
    """The order in which Kafka's coordinator hands a group's members to the assignor: its
    TimelineHashMap's iteration order after random puts (new keys and new values) and removals."""
    rng = random.Random(1071)
    sequences = []
    for _ in range(300):
        pool = [f"{rng.getrandbits(128):032x}" if rng.random() < 0.7 else f"m{i}" for i in range(rng.randint(1, 50))]
        sequences.append([("+" if rng.random() < 0.8 else "-") + rng.choice(pool) for _ in range(rng.randint(1, 120))])
    answers = run_java(classes, "TimelineOrder", "".join(" ".join(ops) + "\n" for ops in sequences))
    answers = [a[0].split() if a and a[0] else [] for a in answers]

    def ours(ops) -> list:
        keys: dict = {}
        capacity = TIMELINE_INITIAL_CAPACITY
        for op in ops:
            if op[0] == "+":
                capacity = timeline_capacity(len(keys), capacity)
                keys[op[1:]] = True
            else:
                keys.pop(op[1:], None)
        return timeline_hash_map_order(list(keys), capacity)
    wrong = [(ops, a, ours(ops)) for ops, a in zip(sequences, answers) if ours(ops) != a]
    assert len(answers) == len(sequences) and not wrong, f"{len(wrong)} differ, e.g. {wrong[:1]}"
