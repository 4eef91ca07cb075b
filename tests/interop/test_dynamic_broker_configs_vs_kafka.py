"""Kafka 4.3.1's own DynamicBrokerConfig judges kafkawire's check of a dynamic broker config
change (kafkawire.metadata.dynamic_broker_configs and dynamic_reconfiguration): one JVM
(tests/interop/java/brokerconfigs/DynamicBrokerConfigCheck.java) answers the recorded cases of
tests/broker/data/dynamic_broker_config_cases.json (so the test without Java keeps Kafka's
answers), a sweep of values over every dynamic key, and a sweep of changes to the keys the
reconfigurable components and the rebuilt KafkaConfig check, on brokers with and without
their own settings, and the recorded SSL cases (tests/broker/data/dynamic_ssl_config_cases.json)
on key and trust stores made in a temporary directory; the generated table is fresh."""
from __future__ import annotations

import pytest

from kafkawire.metadata.dynamic_broker_config_table import DYNAMIC
from tests.broker.dynamic_ssl_stores import with_directory, write_stores
from tests.broker.test_dynamic_broker_configs import CASES, our_answer
from tests.broker.test_dynamic_ssl_configs import CASES as SSL_CASES
from tests.interop import dynamic_broker_configs

SWEEP_VALUES = ("x", "-1", "0", "1", "2.5", " 7 ", "", "a,,b", "true", "99999999999", "-131073", "1e3")
RECONFIGURED = ("num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads",
                "log.cleaner.threads", "remote.log.reader.threads", "remote.log.manager.copier.thread.pool.size",
                "remote.log.manager.expiration.thread.pool.size", "remote.log.manager.follower.thread.pool.size",
                "max.connections", "max.connection.creation.rate", "listener.name.plaintext.max.connections",
                "log.local.retention.ms", "log.local.retention.bytes", "log.retention.ms", "log.retention.bytes",
                "log.roll.ms", "log.roll.jitter.ms", "log.cleaner.dedupe.buffer.size", "max.connections.per.ip",
                "message.max.bytes", "cordoned.log.dirs", "num.network.threads",
                "listener.name.plaintext.num.network.threads", "listener.name.external.num.network.threads")
RECONFIGURED_VALUES = ("-1", "0", "1", "2", "5", "9", "17", "21", "3600001", "3145729", "/tmp/kw-a")
LISTENER_CHANGES = (
    "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
    "PLAINTEXT://localhost:9092,EXTERNAL://localhost:9094,CONTROLLER://localhost:9093",
    "EXTERNAL://localhost:9094,CONTROLLER://localhost:9093",
    "A://localhost:9101,B://localhost:9102,C://localhost:9103,PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
    "A://localhost:9101,B://localhost:9102,C://localhost:9103,D://localhost:9104,E://localhost:9105,"
    "CONTROLLER://localhost:9093",
    "A://localhost:9101,B://localhost:9102,C://localhost:9103,D://localhost:9104,PLAINTEXT://localhost:9092,"
    "EXTERNAL://localhost:9094,CONTROLLER://localhost:9093",
    "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093,PLAINTEXT://localhost:9099",
    "PLAINTEXT://:9092,CONTROLLER://localhost:9093",
    "PLAINTEXT://localhost:9092",
)

OVERRIDES_CHANGES = ("127.0.0.1:1", "x", "127.0.0.1:x", "h h:1", "h*:1,127.0.0.1:2", "a b:1,c/d:2", "::1:3", "[::1]:3",
                     "127.0.0.1: 5 , host.example:6", "h:99999999999", "h:+5", "h:-1", ":4", "h:", "a:1,,b:2", " , ")


def _reconfiguration_sweep() -> list[dict]:
    """Changes of the reconfigured keys on two brokers: one with Kafka's defaults, one whose
    server.properties and stored dynamic configs set them (the current values differ)."""
    node = next(c["broker"] for c in CASES if "broker" in c and "EXTERNAL" not in c["broker"]["static"]["listeners"])
    external = next(c["broker"] for c in CASES if "broker" in c and "EXTERNAL" in c["broker"]["static"]["listeners"])
    own = {"static": {**node["static"], "num.io.threads": "3", "log.cleaner.threads": "3", "num.network.threads": "5", "log.retention.hours": "1",
                      "remote.log.reader.threads": "4", "listeners": external["static"]["listeners"],
                      "listener.security.protocol.map": external["static"]["listener.security.protocol.map"]},
           "default": {"background.threads": "5", "log.retention.bytes": "5000", "max.connections": "10"},
           "per_broker": {"num.replica.fetchers": "4", "listener.name.plaintext.max.connections": "3"}}
    protocols = ",".join(f"{n}:PLAINTEXT" for n in ("PLAINTEXT", "EXTERNAL", "CONTROLLER", "A", "B", "C", "D", "E"))
    changes = [{name: value} for name in RECONFIGURED for value in RECONFIGURED_VALUES]
    changes += [{"listeners": listeners, "listener.security.protocol.map": protocols} for listeners in LISTENER_CHANGES]
    changes += [{"max.connections.per.ip.overrides": overrides, **per_ip} for overrides in OVERRIDES_CHANGES
                for per_ip in ({}, {"max.connections.per.ip": "0"})]
    # the resource's configs after an incremental change: its stored ones and the change
    # a broker whose server.properties advertise the controller listener (its listeners changed)
    advertising = {**node, "static": {**node["static"], "advertised.listeners": "PLAINTEXT://localhost:9092,"
                                                                                "CONTROLLER://localhost:9093"}}
    listener_changes = [c for c in changes if "listeners" in c]
    # a broker that added a listener dynamically (advertised.listeners unset: it is advertised too)
    added = {**node, "per_broker": {"listeners": "PLAINTEXT://localhost:9092,EXTRA://localhost:9095,"
                                                 "CONTROLLER://localhost:9093",
                                    "listener.security.protocol.map": f"{protocols},EXTRA:PLAINTEXT"}}
    return [{"props": {**broker["per_broker"], **props}, "per_broker": True, "broker": broker}
            for broker, broker_changes in ((node, changes), (own, changes), (advertising, listener_changes),
                                           (added, listener_changes + [{"num.io.threads": "9"}]))
            for props in broker_changes]


def _value_sweep() -> list[dict]:
    return [{"props": {name: value}, "per_broker": True} for name, key in DYNAMIC.items()
            if key.type != "CLASS" for value in SWEEP_VALUES]


@pytest.fixture(scope="module")
def kafkas(kafka_libs, tmp_path_factory) -> dict[str, list]:
    """Kafka's answers to the recorded cases (the SSL ones on stores made here) and both sweeps,
    from one JVM: name -> [(case, answer)]."""
    stores = write_stores(tmp_path_factory.mktemp("stores"))
    parts = {"cases": CASES, "values": _value_sweep(), "reconfigurations": _reconfiguration_sweep(),
             "ssl": with_directory(SSL_CASES, stores)}
    answers = iter(dynamic_broker_configs.kafkas_answers([case for cases in parts.values() for case in cases]))
    return {name: [(case, next(answers)) for case in cases] for name, cases in parts.items()}


def test_kafka_answers_the_recorded_cases_as_recorded_and_a_sweep_of_every_dynamic_key_as_we_do(kafkas):
    assert [kafka for _, kafka in kafkas["cases"]] == [c["kafka"] for c in CASES]
    sweep = kafkas["values"]
    differ = [(case["props"], kafka, our_answer(case)) for case, kafka in sweep if kafka != our_answer(case)]
    assert differ == []
    assert sum(kafka is not None for _, kafka in sweep) > len(sweep) // 3      # the sweep refuses plenty


def test_kafka_answers_a_sweep_of_reconfigurations_as_we_do(kafkas):
    sweep = kafkas["reconfigurations"]
    differ = [(case["props"], case["broker"]["static"].get("num.io.threads"), kafka, our_answer(case))
              for case, kafka in sweep if kafka != our_answer(case)]
    assert differ == []
    refused = [kafka for _, kafka in sweep if kafka is not None]
    assert sum("Invalid dynamic configuration" in a for a in refused) > 50
    assert sum(a.startswith("requirement failed") for a in refused) > 20


def test_kafka_answers_the_recorded_ssl_cases_as_recorded(kafkas):
    """The recorded answers tests/broker/test_dynamic_ssl_configs.py holds ours to."""
    assert [kafka for _, kafka in kafkas["ssl"]] == [case["kafka"] for case, _ in kafkas["ssl"]]


def test_the_generated_table_is_fresh(kafka_libs):
    text = dynamic_broker_configs.render(dynamic_broker_configs.kafka_json())
    assert dynamic_broker_configs.TABLE.read_text(encoding="utf-8") == text, (
        "run python -m tests.interop.dynamic_broker_configs")


@pytest.mark.parametrize("name", ["principal.builder.class", "ssl.engine.factory.class"])
def test_class_values_are_the_documented_difference(name):
    assert DYNAMIC[name].type == "CLASS"
