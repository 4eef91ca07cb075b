"""Our streams sticky assignor against Kafka 4.3.1's own StickyTaskAssignor class, run by one JVM
(tests/interop/java/streams_assignor/StickyAssignorCases.java) on the same inputs: the assignment
must be identical, member by member (Kafka's is deterministic for given inputs: its ties follow
java.util.HashMap's iteration order of the ids and java.util.PriorityQueue's heap, which ours
reproduces). The cases are the checked-in table's (tests/broker/streams_assignor_cases.py) and
as many more from another seed; ``--rewrite`` writes the table's recorded answers again from Kafka's.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.broker.streams_assignor_cases import TABLE, case_text, format_table, generate_cases, ours
from tests.interop import kafka_dist

SOURCE = Path(__file__).parent / "java" / "streams_assignor" / "StickyAssignorCases.java"


@pytest.fixture(scope="module")
def kafkas_answers(kafka_libs, tmp_path_factory):
    """kafkas_answers(cases) -> Kafka's answer lines for each case (one JVM per call)."""
    if not shutil.which("javac"):
        from tests.conftest import unavailable
        unavailable("javac is needed to run Kafka's StickyTaskAssignor")
    classes = tmp_path_factory.mktemp("sticky-assignor-classes")
    subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", kafka_dist.classpath(), str(SOURCE)],
                   check=True, capture_output=True, timeout=180)

    def run(cases) -> list[list[str]]:
        result = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                 f"-Dlog4j2.configurationFile={kafka_dist.LOG4J_TOOLS}",
                                 "-cp", f"{classes}:{kafka_dist.classpath()}", "StickyAssignorCases"],
                                input="".join(map(case_text, cases)), capture_output=True, text=True,
                                timeout=120, check=True)
        answers, current = [], []
        for line in result.stdout.splitlines():
            if line == "end":
                answers.append(current)
                current = []
            else:
                current.append(line)
        assert len(answers) == len(cases), result.stderr[-2000:]
        return answers
    return run


def test_our_assignments_are_kafkas(kafkas_answers, request):
    table_cases = generate_cases()
    more = generate_cases(seed=848, count=300)
    answers = kafkas_answers(table_cases + more)
    if request.config.getoption("--rewrite"):
        TABLE.write_text(format_table(table_cases, answers[:len(table_cases)]))
    wrong = [f"{case_text(c)}Kafka: {k}\nours:  {ours(c)}"
             for c, k in zip(table_cases + more, answers) if ours(c) != k]
    assert not wrong, f"{len(wrong)} of {len(answers)} assignments differ, e.g.\n" + "\n".join(wrong[:3])
    assert TABLE.read_text() == format_table(table_cases, answers[:len(table_cases)]), \
        f"{TABLE} is not Kafka's answers to generate_cases(); run with --rewrite"
