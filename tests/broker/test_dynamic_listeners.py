"""Listeners and the inter-broker SASL mechanism changed dynamically, in process
(kafkawire.broker.dynamic_listeners; the running node's test is test_dynamic_listeners_wire.py):
the refusals of Kafka 4.3.1's validation of a listener change (KafkaConfig's checks and
DynamicListenerConfig.validateReconfiguration, kafkawire.metadata.dynamic_reconfiguration; each
message as Kafka's broker answers it, tests/broker/data/dynamic_broker_config_cases.json being
Kafka's recorded answers), and a changed ``sasl.mechanism.inter.broker.protocol`` taken by the
broker's clients towards other brokers for their next connection; and Metadata's offline replicas,
as Kafka names them (a replica without an endpoint on an added listener among them)."""
from __future__ import annotations

import asyncio
import logging
import uuid
from types import SimpleNamespace

from kafkawire.metadata import dynamic_reconfiguration
from kafkawire.metadata.config_def import ConfigValueError
from kafkawire.broker.metadata_apis import offline_replicas
from kafkawire.metadata.image import BROKER_RESOURCE
from kafkawire.metadata.registrations import LOST, MIGRATING, UNASSIGNED
from kafkawire.net.config import parse_server_config

from .test_inter_broker_sasl import config_text, fetch_as_peer, make_broker

COMBINED = {"process.roles": "broker,controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": "1@localhost:9093", "log.dirs": "/tmp/kw-a",
            "listeners": "PLAINTEXT://localhost:9092,EXTERNAL://localhost:9094,CONTROLLER://localhost:9093",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"}
BROKER_ONLY = {**COMBINED, "process.roles": "broker", "node.id": "2", "listeners": "PLAINTEXT://localhost:9092"}
PROTOCOLS = "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTRA:PLAINTEXT"


def refusal(change: dict, static: dict = COMBINED, broker: dict | None = None) -> str | None:
    try:
        dynamic_reconfiguration.check({**(broker or {}), **change}, static=static, default={}, broker=broker or {},
                                      per_broker=True)
    except ConfigValueError as exc:
        return str(exc)
    return None


def test_a_listener_is_added_and_an_unadvertised_one_removed():
    advertising = {**COMBINED, "advertised.listeners": "PLAINTEXT://localhost:9092"}
    assert refusal({"listeners": COMBINED["listeners"] + ",EXTRA://localhost:9095",
                    "listener.security.protocol.map": PROTOCOLS}) is None
    assert refusal({"listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093"}, advertising) is None


def test_the_inter_broker_listener_cannot_be_removed():
    assert refusal({"listeners": "EXTERNAL://localhost:9094,CONTROLLER://localhost:9093"}) == (
        "requirement failed: inter.broker.listener.name must be a listener name defined in advertised.listeners. "
        "The valid options based on currently configured listeners are EXTERNAL")


def test_an_advertised_listener_cannot_be_removed_not_even_one_added_dynamically():
    """advertised.listeners unset: every listener is advertised (effectiveAdvertisedBrokerListeners),
    so DynamicListenerConfig keeps them all, the ones added dynamically too."""
    added = {"listeners": "PLAINTEXT://localhost:9092,EXTRA://localhost:9095,CONTROLLER://localhost:9093",
             "listener.security.protocol.map": PROTOCOLS}
    static = {**COMBINED, "listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093"}
    assert refusal({"listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093"}, static, added) == (
        "Invalid value org.apache.kafka.common.config.ConfigException: Advertised listeners 'Set(ListenerName("
        "PLAINTEXT), ListenerName(EXTRA))' must be a subset of listeners 'Set(ListenerName(PLAINTEXT), "
        "ListenerName(CONTROLLER))' for configuration Invalid dynamic configuration")


def test_a_controller_listener_is_not_a_broker_listener():
    assert refusal({"listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093"}, BROKER_ONLY) == (
        "requirement failed: controller.listener.names must not contain a value appearing in the 'listeners' "
        "configuration when running KRaft with just the broker role")
    assert refusal({"listeners": "PLAINTEXT://localhost:9092"}, COMBINED) == (
        "requirement failed: controller.listener.names must contain at least one value appearing in the "
        "'listeners' configuration when running the KRaft controller role")


def test_a_new_listener_needs_a_security_protocol_and_an_existing_one_keeps_its_own():
    assert refusal({"listeners": COMBINED["listeners"] + ",SSL://localhost:9095"}) == (
        "Error creating broker listeners from '[PLAINTEXT://localhost:9092, EXTERNAL://localhost:9094, "
        "CONTROLLER://localhost:9093, SSL://localhost:9095]': No security protocol defined for listener SSL")
    assert refusal({"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:SSL,CONTROLLER:PLAINTEXT"}) == (
        "Invalid value org.apache.kafka.common.config.ConfigException: Security protocol cannot be updated for "
        "existing listener ListenerName(EXTERNAL) for configuration Invalid dynamic configuration")


def _image(configs: dict) -> SimpleNamespace:
    return SimpleNamespace(configs={(BROKER_RESOURCE, "1"): configs})


def test_a_changed_inter_broker_mechanism_is_used_by_the_next_connections(tmp_path):
    config = parse_server_config(config_text(tmp_path, "PLAIN"))
    broker = make_broker(config)
    markers = broker.txn_apis.router.peers.client()          # made before the change
    assert markers.sasl().mechanism == "PLAIN"
    broker.dynamic_listeners.on_metadata(_image({"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"}))
    sasl = markers.sasl()
    assert (sasl.mechanism, sasl.username, sasl.password) == ("SCRAM-SHA-256", "broker", "broker-secret")
    options, unusable = broker.replica_roles.client_options()      # a client made after it
    assert unusable is None and options["sasl"]().mechanism == "SCRAM-SHA-256"
    assert asyncio.run(fetch_as_peer(config, options)) == ["User:broker"]


def test_a_mechanism_without_its_jaas_entry_leaves_the_current_one(tmp_path, caplog):
    config = parse_server_config(config_text(tmp_path, "PLAIN", jaas_keys=False) + (
        "listener.name.broker.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
        'required username="broker" password="broker-secret" user_broker="broker-secret";\n'))
    broker = make_broker(config)
    with caplog.at_level(logging.ERROR, logger="kafkawire.broker.dynamic_listeners"):
        broker.dynamic_listeners.on_metadata(_image({"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"}))
    assert "keep SASL mechanism PLAIN" in caplog.text
    assert "listener.name.broker.scram-sha-512.sasl.jaas.config" in caplog.text
    options, _ = broker.replica_roles.client_options()
    assert options["sasl"]().mechanism == "PLAIN"


def test_the_same_listeners_set_again_open_and_close_nothing(tmp_path):
    """Only another key changed: no listener change is made (on_metadata runs here with no event
    loop, so one would fail)."""
    broker = make_broker(parse_server_config(config_text(tmp_path, "PLAIN")))
    broker.dynamic_listeners.on_metadata(_image({"listeners": "BROKER://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
                                                 "num.io.threads": "9"}))
    assert broker.dynamic_listeners._changes is None and list(broker.dynamic_listeners.listeners) == ["BROKER"]


def test_metadatas_offline_replicas_are_kafkas():
    """KRaftMetadataCache.getOfflineReplicas, Metadata's and DescribeTopicPartitions': a replica
    offline on the request's listener (its broker unknown, fenced, or registered without an
    endpoint there, as a listener added dynamically is) or whose directory is not online on its
    broker (lost, or not among the directories it registered, unless unassigned or migrating)."""
    d1, d2, elsewhere = (uuid.UUID(int=n) for n in (11, 12, 13))

    def broker(fenced=False, listeners=("PLAINTEXT",), directories=(d1,)):
        return SimpleNamespace(fenced=fenced, listeners=dict.fromkeys(listeners), directories=directories)
    image = SimpleNamespace(brokers={1: broker(), 2: broker(fenced=True), 3: broker(listeners=("EXTRA",)),
                                     4: broker(directories=(d1, d2)), 5: broker(directories=()), 6: broker(),
                                     7: broker()})
    replicas = (1, 2, 3, 4, 5, 6, 7, 8)
    directories = (d1, d1, d1, elsewhere, LOST, MIGRATING, UNASSIGNED, d1)
    partition = SimpleNamespace(replicas=replicas, directory_ids=tuple(d.int for d in directories),
                                directories=directories)
    assert offline_replicas(image, partition, "PLAINTEXT") == [2, 3, 4, 5, 8]
    assert offline_replicas(image, partition, "EXTRA") == [1, 2, 4, 5, 6, 7, 8]
