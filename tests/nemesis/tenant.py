"""A hostile tenant: an authenticated user with no ACLs (SASL/PLAIN "mallory" on each node's
TENANT listener, under Kafka's StandardAuthorizer) sending, at random, the requests issue 24
found harmful: the broker-only writes (AlterPartition, AllocateProducerIds,
AssignReplicasToDirs) with guessed broker epochs, CreatePartitions to 2^31-1 partitions, 10,001
CreateAcls, DescribeConfigs and CreateTopics of 20,000 names, DeleteTopics of the writer's
topics, and a pre-authentication frame that announces 40 MB. Each must be refused as Kafka
refuses it; the nemesis checks then prove nothing acknowledged was harmed.

The nodes' own clients (raft, the writer, the broker) use the PLAINTEXT CONTROLLER listener as
User:ANONYMOUS, a super user."""
from __future__ import annotations

import asyncio
import contextlib
import os
import re
import struct
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from kafkawire.messages.allocate_producer_ids_request import AllocateProducerIdsRequest
from kafkawire.messages.alter_partition_request import AlterPartitionRequest
from kafkawire.messages.alter_partition_request import PartitionData as AlterPartitionData
from kafkawire.messages.alter_partition_request import TopicData as AlterPartitionTopic
from kafkawire.messages.assign_replicas_to_dirs_request import (AssignReplicasToDirsRequest, DirectoryData,
                                                                PartitionData as AssignPartition,
                                                                TopicData as AssignTopic)
from kafkawire.messages.create_acls_request import AclCreation, CreateAclsRequest
from kafkawire.messages.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.delete_topics_request import DeleteTopicState, DeleteTopicsRequest
from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from kafkawire.net.client import NetworkClient, TransportError
from kafkawire.net.sasl import SaslClient
from kafkawire.protocol.error_codes import Errors
from tests.responses import error_codes

USER, PASSWORD = "mallory", "m-secret"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLUSTER_REFUSED = {int(Errors.CLUSTER_AUTHORIZATION_FAILED)}
TOPIC_REFUSED = {int(Errors.TOPIC_AUTHORIZATION_FAILED)}
MANY = 20_000
REFUSED = "refused as Kafka refuses"
NOT_LOADED = "refused: authorizer not loaded yet"
# kafkawire.net.authorizer's line for a request refused before the node's first load of the
# metadata (StandardAuthorizerData's AuthorizerNotReadyException, answered UNKNOWN_SERVER_ERROR),
# in kafkawire's log layout "[yyyy-mm-dd hh:mm:ss,mmm] LEVEL message (logger)".
NOT_LOADED_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] INFO refusing api key (\d+) from "
                             r"(\S+) at \S+: the authorizer has not loaded the metadata yet", re.M)
LOG_STAMP_SLACK_S = 0.002     # the layout's millisecond, truncated


def tenant_properties() -> dict:
    """What every node adds to the nemesis quorum's configuration (its TENANT listener's port is
    per node, in ``listeners``)."""
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" '
            f'password="c-secret" user_controller="c-secret" user_{USER}="{PASSWORD}";')
    return {"controller.listener.names": "CONTROLLER,TENANT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,TENANT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.tenant.plain.sasl.jaas.config": jaas,
            "authorizer.class.name": STANDARD_AUTHORIZER,
            "super.users": "User:ANONYMOUS"}


def hostile_requests(rng, topics: list[str]) -> list[tuple[str, object, set[int]]]:
    """(what, request, the error codes every answer may carry) for one round of the tenant."""
    epoch = rng.randint(0, 20)                    # a guessed broker epoch: it must not matter
    some_id = uuid.uuid4()
    victims = topics[-50:] or ["nemesis-0000000"]
    return [
        ("AlterPartition", AlterPartitionRequest(broker_id=100, broker_epoch=epoch, topics=[AlterPartitionTopic(
            topic_id=some_id, partitions=[AlterPartitionData(partition_index=0, leader_epoch=0)])]),
         CLUSTER_REFUSED),
        ("AllocateProducerIds", AllocateProducerIdsRequest(broker_id=100, broker_epoch=epoch), CLUSTER_REFUSED),
        ("AssignReplicasToDirs", AssignReplicasToDirsRequest(broker_id=100, broker_epoch=epoch, directories=[
            DirectoryData(id=uuid.uuid4(), topics=[AssignTopic(topic_id=some_id, partitions=[
                AssignPartition(partition_index=0)])])]), CLUSTER_REFUSED),
        ("CreatePartitions to 2^31-1", CreatePartitionsRequest(topics=[CreatePartitionsTopic(
            name=victims[0], count=2**31 - 1, assignments=None)], timeout_ms=5000), TOPIC_REFUSED),
        ("CreateAcls of 10,001", CreateAclsRequest(creations=[AclCreation(
            resource_type=2, resource_name=f"t{i}", resource_pattern_type=3, principal=f"User:{USER}", host="*",
            operation=2, permission_type=3) for i in range(10_001)]), CLUSTER_REFUSED),
        ("DescribeConfigs of 20,000 topics", DescribeConfigsRequest(resources=[DescribeConfigsResource(
            resource_type=2, resource_name=f"x.{i}", configuration_keys=None) for i in range(MANY)]), TOPIC_REFUSED),
        ("CreateTopics of 20,000 names", CreateTopicsRequest(topics=[CreatableTopic(
            name=f"mallory.{i}", num_partitions=1, replication_factor=1) for i in range(MANY)], timeout_ms=5000),
         TOPIC_REFUSED),
        ("DeleteTopics of the writer's topics", DeleteTopicsRequest(topics=[DeleteTopicState(
            name=n, topic_id=uuid.UUID(int=0)) for n in victims], timeout_ms=5000), TOPIC_REFUSED),
    ]


async def oversize_pre_auth_frame(address) -> bool:
    """A frame header announcing 40 MB before authenticating, then a trickle: True when the node
    closes the connection without waiting for the body (sasl.server.max.receive.size)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), 2)
    try:
        writer.write(struct.pack(">i", 40 << 20) + b"\x00" * 64)
        await writer.drain()
        return await asyncio.wait_for(reader.read(1), 5) == b""
    except (asyncio.TimeoutError, ConnectionError):
        return False
    finally:
        with contextlib.suppress(Exception):
            writer.transport.abort()


def not_loaded_refusals(log_text: str) -> list[tuple[float, int, str]]:
    """(wall time, api key, principal) of each refusal in ``log_text`` (a node's log) that its
    authorizer answered before the node had loaded the metadata."""
    return [(time.mktime(time.strptime(m[1], "%Y-%m-%d %H:%M:%S")) + int(m[2]) / 1000, int(m[3]), m[4])
            for m in NOT_LOADED_LINE.finditer(log_text)]


def classify_answer(codes: set[int], allowed: set[int], api_key: int, sent_at: float, answered_at: float,
                    refusals: list[tuple[float, int, str]]) -> str | None:
    """What one answer of the tenant was: REFUSED (only the error codes Kafka refuses it with),
    NOT_LOADED (UNKNOWN_SERVER_ERROR alone, and the node logged that it refused this API for this
    principal between the request's sending and its answer, because its authorizer had not
    loaded the metadata yet: what Kafka's controller listeners, open before the load, answer a
    non-super user), or None: unexpected."""
    if codes and codes <= allowed:
        return REFUSED
    if codes == {int(Errors.UNKNOWN_SERVER_ERROR)} and any(
            key == api_key and principal == f"User:{USER}"
            and sent_at - LOG_STAMP_SLACK_S <= when <= answered_at + LOG_STAMP_SLACK_S
            for when, key, principal in refusals):
        return NOT_LOADED
    return None


class NodeLog:
    """The lines a node's log gained since this was made (None: no log to read)."""

    def __init__(self, path: str | None):
        self.path = path
        self.start = os.path.getsize(path) if path and os.path.exists(path) else 0

    def refusals(self) -> list[tuple[float, int, str]]:
        if not self.path or not os.path.exists(self.path):
            return []
        with open(self.path, "rb") as f:
            f.seek(self.start)
            return not_loaded_refusals(f.read().decode("utf-8", "replace"))


@dataclass
class TenantTally:
    counts: Counter = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)


async def hostile_tenant_round(address, rng, topics: list[str], tally: TenantTally, node_log: str | None = None) -> None:
    """Send one round of the tenant's requests to the node at ``address`` (its TENANT listener),
    counting the answers in ``tally``; ``node_log``: that node's log, where it says which requests
    it refused before its authorizer was ready."""
    requests = hostile_requests(rng, topics)
    rng.shuffle(requests)
    log = NodeLog(node_log)
    async with NetworkClient(client_id="mallory", request_timeout_ms=15_000, connect_timeout_ms=2000,
                             sasl=lambda: SaslClient("PLAIN", USER, PASSWORD)) as client:
        for what, request, allowed in requests:
            sent_at = time.time()
            try:
                response = await asyncio.wait_for(client.send(address, request), 20)
            except (TransportError, asyncio.TimeoutError, OSError):
                tally.counts["no answer (node down, paused or cut off)"] += 1
                continue
            codes = error_codes(response)
            refusals = log.refusals() if codes == {int(Errors.UNKNOWN_SERVER_ERROR)} else []
            outcome = classify_answer(codes, allowed, request.API_KEY, sent_at, time.time(), refusals)
            if outcome is None:
                tally.unexpected.append(f"{what}: error codes {sorted(codes)}")
            else:
                tally.counts[outcome] += 1
    try:
        closed = await oversize_pre_auth_frame(address)
    except (OSError, asyncio.TimeoutError):
        tally.counts["no answer (node down, paused or cut off)"] += 1
        return
    if closed:
        tally.counts["40 MB pre-auth frame closed at once"] += 1
    else:
        tally.unexpected.append("a 40 MB pre-authentication frame was not closed at once")
