"""A dynamic broker config change checked on the broker as Kafka 4.3.1's broker checks it
(kafkawire.metadata.dynamic_broker_configs, ConfigAdminManager.validateBrokerConfigChange):
Kafka's answers to 82 changes, recorded from Kafka's own DynamicBrokerConfig by
tests/interop/test_dynamic_broker_configs_vs_kafka.py, are ours; the stored configs an
IncrementalAlterConfigs starts from are Kafka's (the ones Kafka ignores dropped), its APPEND
and SUBTRACT are Kafka's, and a refused change is answered by the broker, not forwarded."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kafkawire.broker.config_apis import ConfigApis
from kafkawire.messages.incremental_alter_configs_request import IncrementalAlterConfigsRequest
from kafkawire.messages.incremental_alter_configs_response import (AlterConfigsResourceResponse,
                                                                    IncrementalAlterConfigsResponse)
from kafkawire.metadata.dynamic_broker_configs import (APPEND, DELETE, SET, SUBTRACT, ConfigValueError,
                                                       InvalidConfiguration, props_after, validate)
from kafkawire.protocol.error_codes import Errors
from tests.broker.test_forwarding import client_ctx, resource

CASES = json.loads((Path(__file__).parent / "data" / "dynamic_broker_config_cases.json").read_text())
BROKER = 4


def our_answer(props: dict, per_broker: bool) -> str | None:
    try:
        validate(props, per_broker)
    except ConfigValueError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(c["props"])[:60] + ("" if c["per_broker"] else "@default"))
def test_kafkas_recorded_answer_is_ours(case):
    ours = our_answer(case["props"], case["per_broker"])
    if "differs" in case:         # documented: a CLASS value is not loaded here
        assert ours is None and case["kafka"] is not None
    else:
        assert ours == case["kafka"]


def test_the_recorded_cases_cover_every_rule():
    messages = [c["kafka"] or "" for c in CASES]
    for part in ("Cannot update these configs dynamically", "only per-listener using the listener prefix",
                 "Not a number of type INT", "Value must be at least", "Value must be no more than",
                 "String must be one of", "must not be empty", "Expected value to be either true or false",
                 "broker id must be specified", "or equal to -1", "Not a number of type DOUBLE"):
        assert any(part in m for m in messages), part
    assert sum(c["kafka"] is None for c in CASES) >= 15


def test_an_incremental_change_starts_from_the_stored_configs_kafka_would_keep():
    stored = {"num.io.threads": "x", "log.dirs": "/a", "ssl.keystore.location": "/k", "listeners": "PLAINTEXT://:1",
              "background.threads": "4", "my.plugin": "1"}
    # per broker: the invalid, static and unprefixed SSL ones are dropped, the rest kept
    assert props_after(stored, [], per_broker=True) == {"listeners": "PLAINTEXT://:1", "background.threads": "4",
                                                        "my.plugin": "1"}
    # at the cluster default the per-broker listeners go too
    assert props_after(stored, [("background.threads", DELETE, None)], per_broker=False) == {"my.plugin": "1"}


def test_append_and_subtract_as_kafka_applies_them():
    ops = [("log.cleanup.policy", APPEND, "compact")]
    assert props_after({}, ops, True) == {"log.cleanup.policy": "delete,compact"}       # onto the default
    assert props_after({"log.cleanup.policy": "compact"}, ops, True) == {"log.cleanup.policy": "compact"}
    assert props_after({"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,PLAIN"},
                       [("sasl.enabled.mechanisms", SUBTRACT, "PLAIN")], True) == {
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,PLAIN"}                                   # one occurrence each
    assert props_after({}, [("metric.reporters", SUBTRACT, "org.apache.kafka.common.metrics.JmxReporter")], True) == {
        "metric.reporters": ""}
    with pytest.raises(InvalidConfiguration, match="^Config value append is not allowed for config key: num.io.threads$"):
        props_after({}, [("num.io.threads", APPEND, "1")], True)
    with pytest.raises(InvalidConfiguration, match="^Unknown config name: my.plugin$"):
        props_after({}, [("my.plugin", SUBTRACT, "1")], True)
    assert props_after({"a": "1"}, [("b", SET, "2"), ("a", DELETE, None)], True) == {"b": "2"}


def test_a_refused_change_is_answered_by_the_broker_and_the_others_forwarded():
    forwarded = []

    class StandInForwarder:
        async def forward(self, ctx, request):
            forwarded.append([(r.resource_name, [c.name for c in r.configs]) for r in request.resources])
            return IncrementalAlterConfigsResponse(responses=[AlterConfigsResourceResponse(
                resource_type=BROKER, resource_name=r.resource_name, error_message=None) for r in request.resources])

    stored = {"1": {"log.cleanup.policy": "compact"}, "": {}}
    apis = ConfigApis(1, StandInForwarder(), stored_configs=lambda name: stored[name])
    request = IncrementalAlterConfigsRequest(validate_only=False, resources=[
        resource(BROKER, "1", ("num.io.threads", SET, "zero")), resource(BROKER, "", ("listeners", SET, "PLAINTEXT://:9"))])
    answers = asyncio.run(apis.incremental_alter_configs(client_ctx(), request))
    assert [(r.resource_name, r.error_code, r.error_message) for r in answers.responses] == [
        ("1", Errors.INVALID_REQUEST, "Invalid value zero for configuration num.io.threads: Not a number of type INT"),
        ("", Errors.INVALID_REQUEST,
         "Cannot update these configs at default cluster level, broker id must be specified: [listeners]")]
    assert forwarded == []
    request = IncrementalAlterConfigsRequest(validate_only=False, resources=[
        resource(BROKER, "1", ("log.cleanup.policy", APPEND, "delete")),
        resource(BROKER, "", ("log.retention.ms", APPEND, "1"))])
    answers = asyncio.run(apis.incremental_alter_configs(client_ctx(), request))
    assert [(r.resource_name, r.error_code, r.error_message) for r in answers.responses] == [
        ("1", Errors.NONE, None),
        ("", Errors.INVALID_CONFIG, "Config value append is not allowed for config key: log.retention.ms")]
    assert forwarded == [[("1", ["log.cleanup.policy"])]]


def test_a_topics_gzip_level_is_refused_with_the_codecs_rule_as_the_brokers_is():
    """LogConfig and the broker's compression.gzip.level share CompressionType.GZIP's validator
    (the sweep of tests/interop/test_dynamic_broker_configs_vs_kafka.py has Kafka's message)."""
    from kafkawire.controller.topic_configs import validate_topic_configs
    for level in ("12", "0", "-2"):
        with pytest.raises(ConfigValueError) as topic:
            validate_topic_configs({"compression.gzip.level": level})
        assert str(topic.value) == our_answer({"compression.gzip.level": level}, True)
        assert str(topic.value).endswith("Value must be between 1 and 9 or equal to -1")
    validate_topic_configs({"compression.gzip.level": "-1"})
