"""A dynamic broker config change checked on the broker as Kafka 4.3.1's broker checks it
(kafkawire.metadata.dynamic_broker_configs and dynamic_reconfiguration,
ConfigAdminManager.validateBrokerConfigChange): Kafka's answers to the recorded changes (from
Kafka's own DynamicBrokerConfig, by ``python -m tests.interop.dynamic_broker_configs
--record-cases``; tests/interop/test_dynamic_broker_configs_vs_kafka.py checks them again) are
ours: validateConfigs alone, and, for the cases with a "broker" (its server.properties and stored
dynamic configs), the whole of DynamicBrokerConfig.validate with the reconfigurable components'
checks; the stored configs an
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
from kafkawire.metadata import dynamic_reconfiguration
from kafkawire.net import ssl_rotation
from kafkawire.metadata.dynamic_broker_configs import (APPEND, DELETE, SET, SUBTRACT, ConfigValueError,
                                                       InvalidConfiguration, props_after, validate)
from kafkawire.protocol.error_codes import Errors
from tests.broker.test_forwarding import client_ctx, resource

CASES = json.loads((Path(__file__).parent / "data" / "dynamic_broker_config_cases.json").read_text())
BROKER = 4


def our_answer(case: dict) -> str | None:
    """What the broker answers the case's change (``props``, ``per_broker``; with ``broker``, on
    a broker with that server.properties and those stored dynamic configs), as ConfigApis asks."""
    props, per_broker, broker = case["props"], case["per_broker"], case.get("broker")
    try:
        validate(props, per_broker)
        if broker is not None:
            dynamic_reconfiguration.check(
                props, static=broker["static"], default=props_after(broker["default"], [], per_broker=False),
                broker=props_after(broker["per_broker"], [], per_broker=True), per_broker=per_broker,
                tls_handshake=ssl_rotation.handshake_refusal)
    except ConfigValueError as exc:
        return str(exc)
    return None


def _case_id(case: dict) -> str:
    return (",".join(case["props"])[:60] + ("" if case["per_broker"] else "@default")
            + ("@broker" if "broker" in case else ""))


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_kafkas_recorded_answer_is_ours(case):
    ours = our_answer(case)
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


class StandInForwarder:
    """The controller a broker forwards changes to: notes (resource, config names) of each
    forwarded request in ``forwarded`` and accepts every change."""

    def __init__(self, forwarded: list):
        self.forwarded = forwarded

    async def forward(self, ctx, request):
        self.forwarded.append([(r.resource_name, [c.name for c in r.configs]) for r in request.resources])
        return IncrementalAlterConfigsResponse(responses=[AlterConfigsResourceResponse(
            resource_type=BROKER, resource_name=r.resource_name, error_message=None) for r in request.resources])


def test_a_refused_change_is_answered_by_the_broker_and_the_others_forwarded():
    forwarded = []
    stored = {"1": {"log.cleanup.policy": "compact"}, "": {}}
    apis = ConfigApis(1, StandInForwarder(forwarded), stored_configs=lambda name: stored[name])
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
        assert str(topic.value) == our_answer({"props": {"compression.gzip.level": level}, "per_broker": True})
        assert str(topic.value).endswith("Value must be between 1 and 9 or equal to -1")
    validate_topic_configs({"compression.gzip.level": "-1"})


# A kafkawire combined node's server.properties (the recorded cases' "broker" static config)
NODE = next(c["broker"]["static"] for c in CASES if "broker" in c)


def test_a_listeners_network_threads_at_most_double_and_at_least_half_its_current_ones():
    """DataPlaneAcceptor.validateReconfiguration (Kafka's own acceptor judges the same rule in
    tests/interop/test_dynamic_broker_configs_vs_kafka.py's sweep): the current value is the
    listener's num.network.threads (3 by default)."""
    def answer(props, static=NODE, broker=None):
        return our_answer({"props": props, "per_broker": True,
                           "broker": {"static": static, "default": {}, "per_broker": broker or {}}})
    assert answer({"num.network.threads": "7"}) == (
        "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread count update validation failed "
        "for num.network.threads=7, value should not be greater than double the current value 3 for configuration "
        "Invalid dynamic configuration")
    assert answer({"num.network.threads": "6"}) is None
    assert answer({"listener.name.plaintext.num.network.threads": "1"}) is None            # 3 / 2 is 1
    assert answer({"listener.name.plaintext.num.network.threads": "9"}, broker={
        "listener.name.plaintext.num.network.threads": "5"}) is None
    assert "should be at least half the current value 8" in answer(
        {"num.network.threads": "3"}, static=dict(NODE, **{"num.network.threads": "8"}))
    assert answer({"listener.name.controller.num.network.threads": "99"}) is None          # no broker acceptor


def test_the_broker_checks_a_change_against_its_server_properties_and_stored_dynamic_configs():
    """ConfigApis with the node's server.properties: the current value of a thread pool is the
    broker's dynamic one, else the cluster default, else server.properties, else Kafka's default;
    validate_only or not, the refusal is the broker's (INVALID_REQUEST), not forwarded."""
    from kafkawire.net.config import parse_server_config
    forwarded = []
    text = "\n".join(f"{k}={v}" for k, v in {**NODE, "num.io.threads": "6", "log.dirs": "/tmp/kw-a"}.items())
    static = dict(parse_server_config(text).properties)
    assert static["num.io.threads"] == "6"             # a key kafkawire does not read is kept as written
    stored = {"1": {"background.threads": "20"}, "": {"num.replica.fetchers": "4", "background.threads": "2"}}
    apis = ConfigApis(1, StandInForwarder(forwarded), stored_configs=lambda name: stored[name], static_settings=static)
    for validate_only in (True, False):
        request = IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[
            resource(BROKER, "1", ("num.io.threads", SET, "13"), ("background.threads", SET, "40")),
            resource(BROKER, "", ("num.replica.fetchers", SET, "9"))])
        answers = asyncio.run(apis.incremental_alter_configs(client_ctx(), request))
        assert [(r.error_code, r.error_message) for r in answers.responses] == [
            (Errors.INVALID_REQUEST, "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread "
             "count update validation failed for num.io.threads=13, value should not be greater than double the "
             "current value 6 for configuration Invalid dynamic configuration"),
            (Errors.INVALID_REQUEST, "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread "
             "count update validation failed for num.replica.fetchers=9, value should not be greater than double "
             "the current value 4 for configuration Invalid dynamic configuration")]
    assert forwarded == []
    request = IncrementalAlterConfigsRequest(validate_only=False, resources=[
        resource(BROKER, "1", ("num.io.threads", SET, "12"), ("background.threads", SET, "40")),
        resource(BROKER, "", ("num.replica.fetchers", SET, "8"), ("background.threads", SET, "99"))])
    answers = asyncio.run(apis.incremental_alter_configs(client_ctx(), request))
    # at the cluster default, this broker's own background.threads (20) still wins: unchanged
    assert [r.error_code for r in answers.responses] == [Errors.NONE, Errors.NONE]
    assert len(forwarded) == 1


def test_describe_configs_documentation_is_null_at_every_version_that_has_it():
    """kafkawire keeps no copy of Kafka's ConfigDef documentation (docs/differences.md): asked
    for it, the answer carries null, encoded as a null string at v3 and v4, never ""."""
    from kafkawire.controller.broker_config_keys import broker_config_keys
    from kafkawire.controller.describe_configs import describe_configs
    from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
    from kafkawire.messages.describe_configs_response import DescribeConfigsResponse
    from kafkawire.metadata.image import MetadataImage
    request = DescribeConfigsRequest(include_documentation=True, include_synonyms=True, resources=[
        DescribeConfigsResource(resource_type=BROKER, resource_name="1", configuration_keys=None)])
    answer = describe_configs(1, MetadataImage(), request, static={"log.retention.hours": "6"},
                              broker_keys=broker_config_keys())
    configs = answer.results[0].configs
    assert len(configs) > 100 and all(c.documentation is None for c in configs)
    for version in (3, 4):
        decoded = DescribeConfigsResponse.decode(answer.encode(version), version)
        assert [c.documentation for c in decoded.results[0].configs] == [None] * len(configs)
