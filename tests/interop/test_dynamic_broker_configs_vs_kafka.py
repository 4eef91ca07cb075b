"""Kafka 4.3.1's own DynamicBrokerConfig judges kafkawire's check of a dynamic broker config
change (kafkawire.metadata.dynamic_broker_configs): one JVM
(tests/interop/java/brokerconfigs/DynamicBrokerConfigCheck.java) answers the recorded cases of
tests/broker/data/dynamic_broker_config_cases.json (so the test without Java keeps Kafka's
answers) and a sweep of values over every dynamic key; the generated table is fresh."""
from __future__ import annotations

import json
import subprocess

import pytest

from kafkawire.metadata.dynamic_broker_config_table import DYNAMIC
from tests.broker.test_dynamic_broker_configs import CASES, our_answer
from tests.interop import dynamic_broker_configs, kafka_dist

CHECK = dynamic_broker_configs.JAVA.with_name("DynamicBrokerConfigCheck.java")
SWEEP_VALUES = ("x", "-1", "0", "1", "2.5", " 7 ", "", "a,,b", "true", "99999999999", "-131073", "1e3")


def kafkas_answers(cases: list[dict]) -> list[str | None]:
    lines = "".join(json.dumps({"props": c["props"], "per_broker": c["per_broker"]}) + "\n" for c in cases)
    command = ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", kafka_dist.classpath(), str(CHECK)]
    result = subprocess.run(command, input=lines, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    answers = [json.loads(line)["error"] for line in result.stdout.splitlines()]
    assert len(answers) == len(cases)
    return answers


def test_kafka_answers_the_recorded_cases_as_recorded_and_a_sweep_of_every_dynamic_key_as_we_do(kafka_libs):
    sweep = [{"props": {name: value}, "per_broker": True} for name, key in DYNAMIC.items()
             if key.type != "CLASS" for value in SWEEP_VALUES]
    answers = kafkas_answers(CASES + sweep)
    assert answers[:len(CASES)] == [c["kafka"] for c in CASES]
    differ = [(case["props"], kafka, our_answer(case["props"], True))
              for case, kafka in zip(sweep, answers[len(CASES):]) if kafka != our_answer(case["props"], True)]
    assert differ == []
    assert sum(a is not None for a in answers[len(CASES):]) > len(sweep) // 3      # the sweep refuses plenty


def test_the_generated_table_is_fresh(kafka_libs):
    text = dynamic_broker_configs.render(dynamic_broker_configs.kafka_json())
    assert dynamic_broker_configs.TABLE.read_text(encoding="utf-8") == text, (
        "run python -m tests.interop.dynamic_broker_configs")


@pytest.mark.parametrize("name", ["principal.builder.class", "ssl.engine.factory.class"])
def test_class_values_are_the_documented_difference(name):
    assert DYNAMIC[name].type == "CLASS"
