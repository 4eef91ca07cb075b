"""DescribeConfigs sent straight to Kafka 4.3.1's controller and to ours, after the same topic,
broker, group and client-metrics config changes: the same answers for topics, groups and
client-metrics subscriptions (every config, its value,
source, synonyms and type, in Kafka's order), the cluster-default broker resource and the refusals
(and the same answers to the group config changes, valid or not).
A controller's own broker resource is compared only on the dynamic configs ours knows."""
from __future__ import annotations

import pytest

from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                  IncrementalAlterConfigsRequest)
from tests.interop.kafka_procs import run_kafka_tool
from tests.interop.test_kafka_brokers_on_kafkawire import _answer, _create_topics_answer, _fields

pytestmark = pytest.mark.kafka


def describe(kind, name, keys=None, synonyms=True):
    return DescribeConfigsRequest(include_synonyms=synonyms, include_documentation=False, resources=[
        DescribeConfigsResource(resource_type=kind, resource_name=name, configuration_keys=keys)])


def alter(kind, name, *configs):
    return IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=kind, resource_name=name,
        configs=[AlterableConfig(name=k, config_operation=0, value=v) for k, v in configs])])


def test_describe_configs_answers_are_a_kafka_controllers(kafka_on_kafkawire, kafka_controller, kafka_broker):
    ours = kafka_on_kafkawire(controllers=1, brokers=1)
    controller = kafka_controller(1, ours.cluster_id, "--standalone")
    kafka_broker(2, ours.cluster_id, controller.controller_address)
    addresses = {"kafka": ("127.0.0.1", controller.controller_port), "kafkawire": ours.quorum.address(1)}
    setup = [("t", 2, 1, [("retention.ms", "1000"), ("cleanup.policy", "compact, delete")]), ("plain", 1, 1, [])]
    for address in addresses.values():
        assert all(r[1] == 0 for r in _create_topics_answer(address, setup))
        for request in (alter(4, "", ("log.retention.hours", "5"), ("log.segment.bytes", "2097152")),
                        alter(4, "1", ("log.roll.ms", "7200000"), ("message.max.bytes", "2000000"))):
            assert all(r.error_code == 0 for r in _answer(address, request, 1).responses)
    # group configs: the same validation answers, then the same describe answers (ConfigHelper's GROUP)
    group_alters = [alter(32, "g", ("consumer.session.timeout.ms", "50000"), ("share.auto.offset.reset", "earliest")),
                    alter(32, "g", ("consumer.session.timeout.ms", "70000")), alter(32, "", ("share.delivery.count.limit", "3")),
                    alter(32, "g", ("no.such", "1")), alter(32, "g", ("share.auto.offset.reset", "none")),
                    alter(32, "g", ("share.isolation.level", "read_committed"), ("streams.num.standby.replicas", "x"))]
    subscription_alters = [
        alter(16, "sub", ("metrics", "org.apache.kafka.producer., org.apache.kafka.consumer."), ("interval.ms", "1000"),
              ("match", "client_id=prod-.*,client_software_name=apache-kafka-java")),
        alter(16, "sub", ("interval.ms", "50")), alter(16, "sub", ("no.such", "1")), alter(16, "", ("interval.ms", "200")),
        alter(16, "sub", ("match", "client_id=")), alter(16, "sub", ("match", "rack=x")),
        alter(16, "sub", ("match", "client_id=[")), alter(16, "sub", ("metrics", "a,a")),
        alter(16, "sub", ("metrics", "a,,b")), alter(16, "sub", ("interval.ms", "soon")),
        alter(2, "plain", ("cleanup.policy", "delete,delete"))]      # a ValidList's duplicates are dropped
    for request in group_alters + subscription_alters:
        theirs, mine = (_fields(_answer(address, request, 1)) for address in addresses.values())
        assert mine == theirs, _fields(request)
    requests = [
        describe(32, "g"), describe(32, "g", synonyms=False), describe(32, "g", keys=["share.auto.offset.reset", "x"]),
        describe(32, "other"), describe(32, ""),
        describe(16, "sub"), describe(16, "sub", synonyms=False), describe(16, "sub", keys=["match"]),
        describe(16, "other"), describe(16, ""),
        describe(2, "t"), describe(2, "plain"), describe(2, "plain", synonyms=False),
        describe(2, "t", keys=["retention.ms", "segment.ms", "no.such"]),
        describe(2, "missing"), describe(2, "bad name!"),
        describe(4, ""), describe(4, "", synonyms=False), describe(4, "9"), describe(4, "x"), describe(99, "t"),
    ]
    for version in (1, 4):
        for request in requests:
            theirs, mine = (_fields(_answer(address, request, version)) for address in addresses.values())
            assert mine == theirs, f"v{version}: {_fields(request)}"
    own = describe(4, "1")
    theirs, mine = (_answer(address, own, 4).results[0] for address in addresses.values())
    dynamic = {c.name: _fields(c) for c in theirs.configs if c.config_source in (2, 3)}
    assert {c.name: _fields(c) for c in mine.configs} == dynamic
    # kafka-configs --bootstrap-controller: the same output from both controllers
    for entity in (["--entity-type", "topics", "--entity-name", "t"], ["--entity-type", "topics", "--entity-name", "t",
                                                                      "--all"],
                   ["--entity-type", "brokers", "--entity-default"], ["--entity-type", "brokers", "--entity-name", "1"],
                   ["--entity-type", "topics", "--entity-name", "missing"],
                   ["--entity-type", "groups", "--entity-name", "g"], ["--entity-type", "groups", "--entity-name", "g",
                                                                       "--all"]):
        outputs = [run_kafka_tool("kafka.admin.ConfigCommand", "--bootstrap-controller", f"{host}:{port}",
                                  "--describe", *entity, timeout=60) for host, port in addresses.values()]
        theirs, mine = ((o.returncode, o.stdout) for o in outputs)
        assert mine == theirs, entity
        assert theirs[1].strip() or theirs[0] != 0, entity     # the tool said something
        expected = {"--all": "retention.ms=1000", "--entity-default": "log.segment.bytes=2097152",
                    "1": "message.max.bytes=2000000"}.get(entity[-1])
        if entity[1] == "groups" and entity[-1] == "--all":
            expected = "share.auto.offset.reset=earliest"
        if expected:        # without --all the tool lists topics (groups) first, which no controller serves
            assert theirs[0] == 0 and expected in theirs[1], outputs[0].stderr[-1500:]
