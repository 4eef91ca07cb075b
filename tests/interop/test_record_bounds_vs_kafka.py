"""Requests past the 10,000 records one admin write may generate (QuorumController's
MAX_RECORDS_PER_USER_OP), sent straight to Kafka 4.3.1's controller and to ours, each with one
broker registered by hand (no broker process): the same error codes and messages for
CreatePartitions, CreateTopics, CreateAcls and DeleteAcls.

One difference is deliberate and checked as such: Kafka's CreatePartitions commits the new
partitions that fit before the one that does not (the topic answered UNKNOWN_SERVER_ERROR has
10,001 partitions afterwards); ours writes none of them."""
from __future__ import annotations

import asyncio

import pytest

from kafkawire.messages.create_acls_request import AclCreation, CreateAclsRequest
from kafkawire.messages.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from kafkawire.net.client import NetworkClient
from tests.controller.harness import heartbeat
from tests.interop.hand_registered_broker import register_unfenced

pytestmark = pytest.mark.kafka

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS"}
BOUND = 10_000
TOPIC, LITERAL, ANY, READ, ALLOW = 2, 3, 1, 3, 3
BROKER_ID = 7


def _acl(principal, name="t"):
    return AclCreation(resource_type=TOPIC, resource_name=name, resource_pattern_type=LITERAL, principal=principal,
                       host="*", operation=READ, permission_type=ALLOW)


def _grow(count):
    return CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="t", count=count, assignments=None)],
                                   timeout_ms=30000, validate_only=False)


def _topics(*topics):
    """A CreateTopicsRequest: topics as (name, partitions), replication factor 1."""
    return CreateTopicsRequest(timeout_ms=30000, topics=[
        CreatableTopic(name=name, num_partitions=count, replication_factor=1) for name, count in topics])


# (what, api version, request, the answer's (code, message) pairs)
REQUESTS = [
    ("create t", 7, _topics(("t", 1)), lambda r: [(t.error_code, t.error_message) for t in r.topics]),
    ("grow t past the bound", 3, _grow(1 + BOUND + 1), lambda r: [(t.error_code, t.error_message) for t in r.results]),
    ("acls past the bound", 3, CreateAclsRequest(creations=[_acl(f"User:u{i}") for i in range(BOUND + 1)] +
                                                 [_acl("User:x", name="")]),
     lambda r: sorted({(a.error_code, a.error_message) for a in r.results})),
    ("topics asking too many partitions", 7, _topics(("a", 5_000), ("b", 5_001)),
     lambda r: [(t.error_code, t.error_message) for t in r.topics]),
    ("a topic writing too many records", 7, _topics(("c", BOUND)), lambda r: [(t.error_code, t.error_message) for t in r.topics]),
    ("acls at the bound", 3, CreateAclsRequest(creations=[_acl(f"User:u{i}") for i in range(BOUND)]),
     lambda r: sorted({(a.error_code, a.error_message) for a in r.results})),
    ("one acl more", 3, CreateAclsRequest(creations=[_acl("User:x", name="other")]),
     lambda r: [(a.error_code, a.error_message) for a in r.results]),
    ("delete past the bound", 3, DeleteAclsRequest(filters=[DeleteAclsFilter(
        resource_type_filter=ANY, resource_name_filter=None, pattern_type_filter=ANY, principal_filter=None,
        host_filter=None, operation=ANY, permission_type=ANY)]),
     lambda r: [(f.error_code, f.error_message, len(f.matching_acls)) for f in r.filter_results]),
]


async def _answers(address, cluster_id):
    """Register and unfence a broker by hand, then send REQUESTS (a heartbeat before each keeps the
    broker unfenced); returns {what: answer} and the answer to growing t to one partition."""
    async with NetworkClient(client_id="bounds", request_timeout_ms=120_000) as client:
        epoch = await register_unfenced(client, address, BROKER_ID, cluster_id)
        answers = {}
        for what, version, request, summary in REQUESTS:
            await client.send(address, heartbeat(BROKER_ID, epoch, 2**40), api_version=2)
            answers[what] = summary(await client.send(address, request, api_version=version))
        after = await client.send(address, _grow(1), api_version=3)
        return answers, (after.results[0].error_code, after.results[0].error_message)


def test_answers_past_the_record_bound_are_a_kafka_controllers(kafka_on_kafkawire, kafka_controller):
    ours = kafka_on_kafkawire(controllers=1, brokers=0, controller_properties=AUTHORIZER, start=False)
    ours.format()
    ours.quorum.start_all()
    ours.wait_for_controller_leader()
    mine, mine_after = asyncio.run(_answers(ours.quorum.address(1), ours.cluster_id))
    cluster_id = ours.cluster_id
    ours.stop()                                                    # one process at a time
    kafka = kafka_controller(1, cluster_id, "--standalone", properties=AUTHORIZER)
    theirs, theirs_after = asyncio.run(_answers(("127.0.0.1", kafka.controller_port), cluster_id))
    assert mine == theirs
    assert theirs["grow t past the bound"] == [(-1, None)]        # UNKNOWN_SERVER_ERROR, no message
    assert theirs["acls past the bound"] == [(42, "Invalid empty resource name"),
                                             (44, "Unable to perform excessively large batch operation.")]
    # the deliberate difference: Kafka kept the 10,000 partitions that fit
    assert theirs_after == (37, "The topic t currently has 10001 partition(s); 1 would not be an increase.")
    assert mine_after == (37, "Topic already has 1 partition(s).")
