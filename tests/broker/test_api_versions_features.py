"""The broker listener's ApiVersions carries the cluster's features as Kafka 4.3.1's broker's does
(DefaultApiVersionManager over KRaftMetadataCache.features()), and a raw transaction.version 2
transaction (InitProducerId, Produce v12 without AddPartitionsToTxn, EndTxn v5) commits on the
session's embedded broker."""
from __future__ import annotations

import re
import socket
import struct
from pathlib import Path

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.end_txn_request import EndTxnRequest
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.messages.sasl_authenticate_request import SaslAuthenticateRequest
from kafkawire.messages.sasl_handshake_request import SaslHandshakeRequest
from kafkawire.metadata.features_answer import finalized_levels
from kafkawire.metadata.image import MetadataImage
from kafkawire.messages.feature_level_record import FeatureLevelRecord
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch
from kafkawire.tools.api_versions import kafka_client_apis

from .broker_api_table import (KAFKA_BROKER_APIS, KAFKA_BROKER_SUPPORTED_FEATURES, NOT_SERVED, SERVED_FROM,
                               expected_kafkawire_apis)
from .wire import call
from .test_leader_epoch_apis import wait_until

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

PRODUCE = 0


def api_versions(target, version: int):
    return call(target, ApiVersionsRequest(client_software_name="kafkawire-tests", client_software_version="1"),
                api_version=version)


def features(response):
    supported = {f.name: (f.min_version, f.max_version) for f in response.supported_features}
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in response.finalized_features}
    return supported, finalized


def test_the_broker_listener_answers_supported_and_finalized_features_with_the_images_offset(kafkawire_broker):
    """SupportedFeatures are Kafka's broker ranges (v3 leaves out those with a minimum of 0, as
    Kafka's alterFeatureLevel0 does); FinalizedFeatures are the image's levels, the same the
    controller listener finalizes (transaction.version 2, which Java producers need for KIP-890's
    second phase); the epoch is the image's offset, so it moves with the metadata."""
    node = kafkawire_broker
    answer = api_versions(node, 4)
    supported, finalized = features(answer)
    assert supported == KAFKA_BROKER_SUPPORTED_FEATURES
    assert finalized["metadata.version"] == (30, 30) and finalized["transaction.version"] == (2, 2)
    assert finalized["group.version"] == (1, 1)
    assert answer.zk_migration_ready is False and answer.finalized_features_epoch >= 0
    assert features(api_versions(("127.0.0.1", node.controller_port), 4))[1] == finalized
    assert features(api_versions(node, 3))[0] == {"metadata.version": (7, 30)}
    created = call(node, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name="api-versions-epoch", num_partitions=1, replication_factor=1, assignments=[], configs=[])]))
    assert created.topics[0].error_code == Errors.NONE
    wait_until(lambda: api_versions(node, 4).finalized_features_epoch > answer.finalized_features_epoch,
               "the finalized features epoch to follow the image")


def test_the_broker_listener_advertises_the_sasl_apis_and_refuses_them_without_sasl(kafkawire_broker):
    """Kafka's broker lists SaslHandshake (0-1) and SaslAuthenticate (0-2) in ApiVersions on every
    listener, whatever its security protocol (ApiKeys.apisForListener(BROKER)), and on a listener
    without SASL answers both ILLEGAL_SASL_STATE (KafkaApis.handleSaslHandshakeRequest,
    handleSaslAuthenticateRequest): kafka-broker-api-versions printed them UNSUPPORTED here."""
    advertised = {k.api_key: (k.min_version, k.max_version) for k in api_versions(kafkawire_broker, 3).api_keys}
    assert (advertised.get(17), advertised.get(36)) == ((0, 1), (0, 2))
    handshake = call(kafkawire_broker, SaslHandshakeRequest(mechanism="PLAIN"), api_version=1)
    assert (handshake.error_code, handshake.mechanisms) == (Errors.ILLEGAL_SASL_STATE, [])
    authenticate = call(kafkawire_broker, SaslAuthenticateRequest(auth_bytes=b"\0user\0secret"), api_version=2)
    assert (authenticate.error_code, authenticate.error_message) == \
        (Errors.ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful authentication")


def test_finalized_levels_are_the_images_with_metadata_version_and_kraft_version_above_0():
    """KRaftMetadataCache.features(): a feature set to level 0 is gone, kraft.version 0 is not listed."""
    image = MetadataImage()
    for name, level in (("metadata.version", 30), ("transaction.version", 2), ("group.version", 1),
                        ("group.version", 0)):
        image.apply(FeatureLevelRecord(name=name, feature_level=level))
    assert finalized_levels(image, 0) == {"metadata.version": 30, "transaction.version": 2}
    assert finalized_levels(image, 1) == {"metadata.version": 30, "transaction.version": 2, "kraft.version": 1}
    assert finalized_levels(None, 0) == {}


def produce_v12(node, topic: str, records: bytes, transactional_id: str | None) -> int:
    response = call(node, ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=5000, topic_data=[
        TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=0, records=records)])]),
        api_version=12)
    return response.responses[0].partition_responses[0].error_code


def txn_batch(pid: int, epoch: int) -> bytes:
    return build_batch([(b"k", b"v")], producer_id=pid, producer_epoch=epoch, base_sequence=0, is_transactional=True)


def test_a_transaction_version_2_transaction_adds_its_partition_on_produce_and_ends_with_end_txn_v5(
        kafkawire_broker):
    """TV2 (KIP-890 part 2): Produce v12 adds the partition to the transaction itself (no
    AddPartitionsToTxn), EndTxn v5 commits and answers the bumped producer epoch, which the next
    transaction uses; the markers then let read_committed see the committed batch."""
    node, topic, txn_id = kafkawire_broker, "tv2-wire", "tv2-wire-tx"
    created = call(node, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1, assignments=[], configs=[])]))
    assert created.topics[0].error_code == Errors.NONE
    wait_until(lambda: produce_v12(node, topic, build_batch([(b"k", b"plain")]), None) == Errors.NONE,
               "the new topic's leader")                                       # offset 0
    wait_until(lambda: call(node, FindCoordinatorRequest(key_type=1, coordinator_keys=[txn_id]),
                            api_version=4).coordinators[0].error_code == Errors.NONE, "the transaction coordinator")
    holder = []

    def initialized() -> bool:
        holder[:] = [call(node, InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000),
                          api_version=5)]
        return holder[0].error_code == Errors.NONE
    wait_until(initialized, "InitProducerId")
    pid, epoch = holder[0].producer_id, holder[0].producer_epoch
    assert produce_v12(node, topic, txn_batch(pid, epoch), txn_id) == Errors.NONE      # offset 1, added implicitly
    ended = call(node, EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=True),
                 api_version=5)
    assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (Errors.NONE, pid, epoch + 1)

    def last_stable() -> int:
        response = call(node, ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[ListOffsetsTopic(
            name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]), api_version=5)
        return response.topics[0].partitions[0].offset
    wait_until(lambda: last_stable() == 3, "the commit marker (offset 2) to free the last stable offset")
    assert produce_v12(node, topic, txn_batch(pid, epoch + 1), txn_id) == Errors.NONE  # offset 3
    aborted = call(node, EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch + 1,
                                       committed=False), api_version=5)
    assert (aborted.error_code, aborted.producer_epoch) == (Errors.NONE, epoch + 2)


def advertised_apis(target, version: int) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in api_versions(target, version).api_keys}


def test_the_broker_listener_advertises_kafkas_table_but_the_listed_gaps(kafkawire_broker):
    """Every API key with Kafka 4.3.1's broker's range, but those NOT_SERVED lists (each with its
    reason); any other difference, or an API served but not in the table, fails here without Java
    (tests/interop/test_api_versions_vs_kafka.py test_on_a_kafka_broker checks the table against a live Kafka)."""
    expected = expected_kafkawire_apis()
    for version in (0, 3, 4):
        advertised = advertised_apis(kafkawire_broker, version)
        assert advertised == expected, {key: (KAFKA_BROKER_APIS.get(key), advertised.get(key))
                                        for key in set(advertised) | set(expected)
                                        if advertised.get(key) != expected.get(key)}
    assert not set(NOT_SERVED) & set(advertised) and set(NOT_SERVED) <= set(KAFKA_BROKER_APIS)


def closed_on(target, api_key: int, api_version: int, body: bytes) -> bool:
    """Whether the broker closes the connection on this request (header v1, no client id)."""
    frame = struct.pack(">hhih", api_key, api_version, 7, -1) + body
    with socket.create_connection((target.bootstrap_servers.rsplit(":", 1)[0],
                                   int(target.bootstrap_servers.rsplit(":", 1)[1])), timeout=20) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        return sock.recv(4) == b""


def test_produce_is_advertised_from_v0_as_kafka_does_but_v0_to_v2_are_refused(kafkawire_broker):
    """KAFKA-18659: Kafka 4's broker lists Produce v0 (librdkafka wants it) and refuses v0-2
    (KIP-896: parsing fails, the connection is closed); v3 with no topics is answered."""
    assert advertised_apis(kafkawire_broker, 3)[PRODUCE][0] == 0 and SERVED_FROM == {PRODUCE: 3}
    no_topics = struct.pack(">hii", 1, 1000, 0)                      # acks, timeout, an empty topic array
    assert [closed_on(kafkawire_broker, PRODUCE, v, no_topics) for v in (0, 1, 2)] == [True] * 3
    assert not closed_on(kafkawire_broker, PRODUCE, 3, struct.pack(">h", -1) + no_topics)   # null transactional id


SERVES = re.compile(r"([A-Z][A-Za-z]+)\s+\(v(\d+)(?:-(\d+))?")


def test_the_docs_list_the_advertised_table():
    """docs/broker.md names each served API with its range (Produce: the range served) under "What it
    serves", and each of NOT_SERVED under "What is not done yet"."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "broker.md").read_text()
    serves = text.split("## What it serves", 1)[1].split("\n## ", 1)[0].split("\n\n")[1]
    not_done = text.split("## What is not done yet", 1)[1].split("\n## ", 1)[0]
    keys = {api.name: key for key, api in kafka_client_apis().items()}
    documented = {keys[name]: (int(low), int(high or low)) for name, low, high in SERVES.findall(serves)}
    served = {key: (SERVED_FROM.get(key, low), high) for key, (low, high) in expected_kafkawire_apis().items()}
    assert documented == served, {key: (documented.get(key), served.get(key)) for key in set(documented) | set(served)
                                  if documented.get(key) != served.get(key)}
    missing = [keys_name for keys_name, key in keys.items() if key in NOT_SERVED and keys_name not in not_done]
    assert not missing, f"not named under 'What is not done yet': {missing}"
