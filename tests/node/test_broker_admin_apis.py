"""The admin APIs a combined node's broker listener serves as Kafka 4.3.1's KafkaApis does
(issue 29): DescribeTopicPartitions, ListConfigResources, DescribeClientQuotas and
DescribeUserScramCredentials answered from the broker's image; AlterUserScramCredentials and
UpdateFeatures forwarded to the controller in an Envelope. Before these the broker answered none
of them (a client got UNSUPPORTED_VERSION from ApiVersions and fell back or failed).

One in-process combined node for the module (test_broker_api_authorization's started_node:
SASL PLAIN, StandardAuthorizer); "controller" is its super user, "alice" has no ACL."""
from __future__ import annotations

import uuid

import pytest

from kafkawire.messages.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kafkawire.messages.alter_user_scram_credentials_request import (AlterUserScramCredentialsRequest,
                                                                      ScramCredentialUpsertion)
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.describe_client_quotas_request import ComponentData, DescribeClientQuotasRequest
from kafkawire.messages.describe_topic_partitions_request import Cursor, DescribeTopicPartitionsRequest, TopicRequest
from kafkawire.messages.describe_user_scram_credentials_request import DescribeUserScramCredentialsRequest, UserName
from kafkawire.messages.list_config_resources_request import ListConfigResourcesRequest
from kafkawire.messages.unregister_broker_request import UnregisterBrokerRequest
from kafkawire.messages.update_features_request import FeatureUpdateKey, UpdateFeaturesRequest
from kafkawire.net.metadata_topic import TOPIC_OPERATIONS
from kafkawire.protocol.error_codes import Errors

from tests.responses import error_codes

from .test_authorizer_node import wait_for
from .test_broker_api_authorization import started_node

SUPER = ("controller", "c-secret")
ZERO_UUID = uuid.UUID(int=0)
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with started_node(tmp_path_factory.mktemp("admin-apis"), _setup) as combined:
        yield combined


async def _setup(node):
    created = await node.send(*SUPER, CreateTopicsRequest(timeout_ms=10_000, topics=[
        CreatableTopic(name="dtp-a", num_partitions=3, replication_factor=1),
        CreatableTopic(name="dtp-b", num_partitions=2, replication_factor=1)]), 7)
    assert {t.error_code for t in created.topics} == {0}
    await wait_for(lambda: {"dtp-a", "dtp-b"} <= set(node.broker.image().topics_by_name), "the topics")


def describe(node, names, limit, cursor=None, user=SUPER):
    request = DescribeTopicPartitionsRequest(topics=[TopicRequest(name=n) for n in names],
                                             response_partition_limit=limit, cursor=cursor)
    return node.call(node.send(*user, request, 0))


def pages(response):
    return [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in response.topics]


def test_describe_topic_partitions_pages_by_the_partition_limit_with_kafkas_cursor(node):
    first = describe(node, ["dtp-b", "dtp-a", "dtp-missing"], 2)
    assert pages(first) == [("dtp-a", 0, [0, 1])]
    assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("dtp-a", 2)
    second = describe(node, ["dtp-b", "dtp-a", "dtp-missing"], 2, Cursor(topic_name="dtp-a", partition_index=2))
    assert pages(second) == [("dtp-a", 0, [2]), ("dtp-b", 0, [0])]
    assert (second.next_cursor.topic_name, second.next_cursor.partition_index) == ("dtp-b", 1)
    last = describe(node, ["dtp-b", "dtp-a", "dtp-missing"], 10, Cursor(topic_name="dtp-b", partition_index=1))
    assert pages(last) == [("dtp-b", 0, [1]), ("dtp-missing", int(Errors.UNKNOWN_TOPIC_OR_PARTITION), [])]
    assert last.next_cursor is None
    full_page = describe(node, ["dtp-a", "dtp-b"], 3)        # dtp-a fills the page: the cursor names dtp-b
    assert (full_page.next_cursor.topic_name, full_page.next_cursor.partition_index) == ("dtp-b", 0)


def test_describe_topic_partitions_answers_ids_elr_fields_operations_and_kafkas_refusals(node):
    image = node.broker.image()
    answer = describe(node, ["dtp-b", "__consumer_offsets"], 2000)
    by_name = {t.name: t for t in answer.topics}
    b = by_name["dtp-b"]
    assert b.topic_id == image.topics_by_name["dtp-b"].id and not b.is_internal
    assert b.topic_authorized_operations == TOPIC_OPERATIONS          # the super user may do everything
    assert [(p.leader_id, p.replica_nodes, p.isr_nodes, p.eligible_leader_replicas, p.last_known_elr,
             p.offline_replicas) for p in b.partitions] == [(1, [1], [1], [], [], [])] * 2
    if "__consumer_offsets" in image.topics_by_name:
        assert by_name["__consumer_offsets"].is_internal
    refused = describe(node, ["dtp-a"], 10, user=("alice", "a-secret"))
    assert [(t.name, t.error_code, t.topic_id) for t in refused.topics] == \
        [("dtp-a", int(Errors.TOPIC_AUTHORIZATION_FAILED), ZERO_UUID)]        # its id not disclosed
    assert describe(node, [], 10, user=("alice", "a-secret")).topics == []   # all topics: left out
    bad_cursor = describe(node, ["dtp-a"], 10, Cursor(topic_name="dtp-b", partition_index=0))
    assert pages(bad_cursor) == [("dtp-a", int(Errors.INVALID_REQUEST), [])]
    negative = describe(node, ["dtp-a"], 10, Cursor(topic_name="dtp-a", partition_index=-1))
    assert pages(negative) == [("dtp-a", int(Errors.INVALID_REQUEST), [])]


def list_resources(node, version, types):
    return node.call(node.send(*SUPER, ListConfigResourcesRequest(resource_types=types), version))


def test_list_config_resources_lists_the_brokers_on_the_listener_and_the_topics(node):
    """(the groups and client metrics subscriptions: tests/broker/test_image_admin_apis.py)"""
    listed = {(r.resource_type, r.resource_name) for r in list_resources(node, 1, []).config_resources}
    assert {(BROKER, "1"), (BROKER_LOGGER, "1"), (TOPIC, "dtp-a"), (TOPIC, "dtp-b")} <= listed
    topics = list_resources(node, 1, [TOPIC]).config_resources
    assert {r.resource_type for r in topics} == {TOPIC}
    assert list_resources(node, 0, []).config_resources == []      # v0: client metrics only, none here


def quotas(node, *components, strict=False):
    return node.call(node.send(*SUPER, DescribeClientQuotasRequest(components=list(components), strict=strict), 1))


def test_describe_client_quotas_checks_the_filter_as_kafkas_image_does(node):
    assert quotas(node).error_code == 0
    mixed = quotas(node, ComponentData(entity_type="ip", match_type=2, match=None),
                   ComponentData(entity_type="user", match_type=2, match=None))
    assert (mixed.error_code, mixed.error_message, mixed.entries) == (
        Errors.INVALID_REQUEST, "Invalid entity filter component combination. IP filter component should not be "
                                "used with user or clientId filter component.", None)
    unknown = quotas(node, ComponentData(entity_type="group", match_type=2, match=None))
    assert (unknown.error_code, unknown.error_message) == (Errors.UNSUPPORTED_VERSION, "Unsupported entity type group")
    twice = quotas(node, ComponentData(entity_type="user", match_type=2, match=None),
                   ComponentData(entity_type="user", match_type=1, match=None))
    assert twice.error_message == "Entity type user cannot appear more than once in the filter."


def test_client_quotas_altered_through_the_broker_are_described_by_it(node):
    request = AlterClientQuotasRequest(validate_only=False, entries=[EntryData(
        entity=[EntityData(entity_type="user", entity_name="quota-bob")],
        ops=[OpData(key="producer_byte_rate", value=1024.0, remove=False)])])
    altered = node.call(node.send(*SUPER, request, 1))          # forwarded in an Envelope
    assert [(e.error_code, [(d.entity_type, d.entity_name) for d in e.entity]) for e in altered.entries] == \
        [(0, [("user", "quota-bob")])]
    node.call(wait_for(lambda: frozenset({("user", "quota-bob")}) in node.broker.image().client_quotas,
                       "the quota in the broker's image"))
    described = quotas(node, ComponentData(entity_type="user", match_type=0, match="quota-bob"))
    assert [[(v.key, v.value) for v in e.values] for e in described.entries] == [[("producer_byte_rate", 1024.0)]]


def test_scram_credentials_altered_through_the_broker_are_described_by_it(node):
    upsert = AlterUserScramCredentialsRequest(deletions=[], upsertions=[ScramCredentialUpsertion(
        name="scram-bob", mechanism=2, iterations=8192, salt=b"salt", salted_password=b"x" * 64)])
    altered = node.call(node.send(*SUPER, upsert, 0))          # forwarded in an Envelope
    assert [(r.user, r.error_code) for r in altered.results] == [("scram-bob", 0)]
    wait_for_user = lambda: "scram-bob" in node.broker.image().scram.get(2, {})   # noqa: E731
    node.call(wait_for(wait_for_user, "the credential in the broker's image"))
    described = node.call(node.send(*SUPER, DescribeUserScramCredentialsRequest(users=[
        UserName(name="scram-bob"), UserName(name="nobody"), UserName(name="twice"), UserName(name="twice")]), 0))
    results = {r.user: r for r in described.results}
    assert [(i.mechanism, i.iterations) for i in results["scram-bob"].credential_infos] == [(2, 8192)]
    assert (results["nobody"].error_code, results["nobody"].error_message) == (
        Errors.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: nobody")
    assert (results["twice"].error_code, results["twice"].error_message) == (
        Errors.DUPLICATE_RESOURCE, "Cannot describe SCRAM credentials for the same user twice in a single request: "
                                   "twice")
    every = node.call(node.send(*SUPER, DescribeUserScramCredentialsRequest(users=None), 0))
    assert "scram-bob" in {r.user for r in every.results}


def test_update_features_through_the_broker_is_the_controllers_answer(node):
    request = UpdateFeaturesRequest(timeout_ms=10_000, validate_only=True, feature_updates=[FeatureUpdateKey(
        feature="no.such.feature", max_version_level=1, upgrade_type=1)])
    via_broker = node.call(node.send(*SUPER, request, 1))
    direct = node.call(node.send(*SUPER, request, 1, port=node.controller_port))
    assert via_broker == direct and via_broker.error_code != 0, (via_broker, direct)


# Kafka 4.3.1's broker ranges of the APIs issue 29 added (ApiKeys; the ApiVersions judge compares
# every range with Kafka's jar in tests/interop).
NEW_RANGES = {48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 57: (0, 2), 64: (0, 0), 74: (0, 1), 75: (0, 0),
              80: (0, 1), 81: (0, 0)}


def requests_for(node, version: int) -> dict:
    kraft_version = node.broker.kraft_version()
    return {
        48: DescribeClientQuotasRequest(components=[], strict=False),
        49: AlterClientQuotasRequest(validate_only=True, entries=[EntryData(
            entity=[EntityData(entity_type="client-id", entity_name="versions")],
            ops=[OpData(key="consumer_byte_rate", value=10.0, remove=False)])]),
        50: DescribeUserScramCredentialsRequest(users=None),
        51: AlterUserScramCredentialsRequest(deletions=[], upsertions=[ScramCredentialUpsertion(
            name="versions", mechanism=1, iterations=4096, salt=b"salt", salted_password=b"x" * 32)]),
        57: UpdateFeaturesRequest(timeout_ms=10_000, feature_updates=[FeatureUpdateKey(
            feature="kraft.version", max_version_level=kraft_version, upgrade_type=1)]),
        74: ListConfigResourcesRequest(),
        75: DescribeTopicPartitionsRequest(topics=[TopicRequest(name="dtp-a")], response_partition_limit=10),
    }


def test_every_advertised_version_of_the_new_apis_is_answered_without_an_error(node):
    """(AddRaftVoter and RemoveRaftVoter need a voter to add or remove: their forwarding is
    checked by test_broker_api_authorization's row)"""
    advertised = {k.api_key: (k.min_version, k.max_version) for k in node.call(node.send(
        *SUPER, ApiVersionsRequest(client_software_name="kafkawire-tests", client_software_version="1"), 3)).api_keys}
    assert {key: advertised.get(key) for key in NEW_RANGES} == NEW_RANGES
    for key, (low, high) in NEW_RANGES.items():
        for version in range(low, high + 1):
            request = requests_for(node, version).get(key)
            if request is not None:
                response = node.call(node.send(*SUPER, request, version))
                assert set(error_codes(response)) <= {0}, (key, version, response)


def test_unregister_broker_through_the_broker_is_the_controllers_answer(node):
    """(the records it writes: tests/controller/test_unregister_broker.py)"""
    answer = node.call(node.send(*SUPER, UnregisterBrokerRequest(broker_id=42), 0))
    assert (answer.error_code, answer.error_message) == \
        (Errors.BROKER_ID_NOT_REGISTERED, "Broker ID 42 is not currently registered")


def test_refused_describes_carry_kafkas_error_without_its_default_text(node):
    """ApiError.fromThrowable leaves out an error's default message: DescribeClientQuotas and
    DescribeUserScramCredentials refused for want of an ACL say CLUSTER_AUTHORIZATION_FAILED only."""
    alice = ("alice", "a-secret")
    quotas_refused = node.call(node.send(*alice, DescribeClientQuotasRequest(components=[], strict=False), 1))
    assert (quotas_refused.error_code, quotas_refused.error_message, quotas_refused.entries) == \
        (Errors.CLUSTER_AUTHORIZATION_FAILED, None, None)
    scram_refused = node.call(node.send(*alice, DescribeUserScramCredentialsRequest(users=[UserName(name="x")]), 0))
    assert (scram_refused.error_code, scram_refused.error_message) == (Errors.CLUSTER_AUTHORIZATION_FAILED, None)
    assert [(r.error_code, r.error_message) for r in scram_refused.results] == \
        [(Errors.CLUSTER_AUTHORIZATION_FAILED, None)]
