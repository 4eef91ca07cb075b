"""A hostile tenant (issue 24): the same requests from an authenticated user without ACLs, and the
same abuse of the listener, sent to a Kafka 4.3.1 controller and to a kafkawire node configured
alike (SASL_PLAINTEXT with PLAIN, the StandardAuthorizer, super.users=User:admin, max.connections),
one process at a time. Each side gets a broker registered by hand as admin (no broker process) and
a topic created as admin; then mallory, who has no ACLs, sends:

1. AlterPartition, AllocateProducerIds and AssignReplicasToDirs naming that broker and a guessed
   epoch, at every version the controller serves;
2. CreatePartitions of the topic to 2^31-1 partitions, CreateAcls of 10,001 entries,
   DescribeConfigs of 5,000 topics, CreateTopics of 5,000 names and DeleteTopics naming the topic
   twice and another once;
3. before authenticating: a frame size one byte over sasl.server.max.receive.size (the connection
   is closed without the body being read) and an ApiVersions frame of exactly that size (answered);
4. ten connections at once with max.connections set: how many are served, and that one more is
   served once one of them closes.

The answers are compared field by field after dropping what legitimately differs between two
clusters: throttle times, topic ids, and the processor and connectionId inside a
ClusterAuthorizationException's message. CreateTopics, DeleteTopics and CreatePartitions answer
the topics refused by the authorizer, and duplicates, in the order of a Java HashSet in Kafka
(ControllerApis collects the names in one), so those answers are compared as maps keyed by topic
name; DescribeConfigs and CreateAcls answer in request order on both and are compared as lists."""
from __future__ import annotations

import asyncio
import re
import selectors
import socket
import struct
import time
import uuid

import pytest

from kafkawire.messages.allocate_producer_ids_request import AllocateProducerIdsRequest
from kafkawire.messages.alter_partition_request import (AlterPartitionRequest, BrokerState,
                                                         PartitionData as AlterPartitionData,
                                                         TopicData as AlterPartitionTopic)
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.assign_replicas_to_dirs_request import (AssignReplicasToDirsRequest, DirectoryData,
                                                                PartitionData as AssignPartition,
                                                                TopicData as AssignTopic)
from kafkawire.messages.create_acls_request import AclCreation, CreateAclsRequest
from kafkawire.messages.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from kafkawire.net.client import NetworkClient
from kafkawire.net.sasl import SaslClient
from kafkawire.protocol.framing import decode_response, encode_request
from kafkawire.raft.node.local_quorum import LocalQuorum
from tests.interop.hand_registered_broker import register_unfenced

pytestmark = pytest.mark.kafka

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_mallory="mallory-secret";')
MAX_CONNECTIONS = 6
SETTINGS = {
    "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "sasl.mechanism.controller.protocol": "PLAIN",
    "listener.name.controller.plain.sasl.jaas.config": JAAS,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "max.connections": str(MAX_CONNECTIONS),
}
PRE_AUTH_BOUND = 524_288                 # sasl.server.max.receive.size's default
BROKER_ID, GUESSED_EPOCH = 7, 5
ALTER_PARTITION, ALLOCATE_PRODUCER_IDS, ASSIGN_REPLICAS_TO_DIRS = 56, 67, 73
TOPIC, LITERAL, READ, ALLOW = 2, 3, 3, 3
MANY = 5_000
DROPPED = {"throttleTimeMs", "topicId"}   # differ between any two clusters


def _as_admin():
    return NetworkClient(client_id="hostile-admin", request_timeout_ms=120_000,
                         sasl=lambda: SaslClient("PLAIN", "admin", "admin-secret"))


def _as_mallory():
    return NetworkClient(client_id="mallory", request_timeout_ms=120_000,
                         sasl=lambda: SaslClient("PLAIN", "mallory", "mallory-secret"))


def _stable(value):
    """A response's JSON form without what differs between clusters; a ClusterAuthorizationException's
    message keeps its stable parts (Kafka's processor and connectionId are its network thread's, the
    Session's hash its JVM's)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in DROPPED}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, str):
        for varying, shown in ((r"processor=\d+", "processor=*"), (r"connectionId=[^,]+", "connectionId=*"),
                               (r"Session@[0-9a-f]+", "Session@*")):   # Object.toString's identity hash
            value = re.sub(varying, shown, value)
        return value
    return value


def _answer(response, version):
    return _stable(response.to_json(version))


def _by_name(items):
    """Entries of a keyed collection answered in Java HashSet order: {name: [entries]}."""
    keyed = {}
    for item in items:
        keyed.setdefault(item["name"], []).append(item)
    return keyed


# --- the fake broker and the topic, as admin -------------------------------------------------------

async def _create_topic(client, address):
    created = await client.send(address, CreateTopicsRequest(timeout_ms=30000, topics=[
        CreatableTopic(name="t", num_partitions=1, replication_factor=1)]), api_version=7)
    assert created.topics[0].error_code == 0, created
    return created.topics[0].topic_id


# --- mallory's requests ----------------------------------------------------------------------------

def _broker_writes(topic_id):
    """(api key, request for a version): the three writes only a broker may make."""
    def alter_partition(version):
        partition = AlterPartitionData(partition_index=0, leader_epoch=0, leader_recovery_state=0, partition_epoch=0)
        if version >= 3:
            partition.new_isr_with_epochs = [BrokerState(broker_id=BROKER_ID, broker_epoch=GUESSED_EPOCH)]
        else:
            partition.new_isr = [BROKER_ID]
        return AlterPartitionRequest(broker_id=BROKER_ID, broker_epoch=GUESSED_EPOCH, topics=[
            AlterPartitionTopic(topic_name="t", topic_id=topic_id, partitions=[partition])])

    def assign_to_dirs(version):
        return AssignReplicasToDirsRequest(broker_id=BROKER_ID, broker_epoch=GUESSED_EPOCH, directories=[
            DirectoryData(id=uuid.uuid4(), topics=[AssignTopic(topic_id=topic_id,
                                                               partitions=[AssignPartition(partition_index=0)])])])

    return [(ALTER_PARTITION, alter_partition),
            (ALLOCATE_PRODUCER_IDS, lambda v: AllocateProducerIdsRequest(broker_id=BROKER_ID,
                                                                          broker_epoch=GUESSED_EPOCH)),
            (ASSIGN_REPLICAS_TO_DIRS, assign_to_dirs)]


async def _broker_write_answers(client, address, topic_id):
    """{api key: {"versions": [lo, hi], version: answer}} for every version the controller serves."""
    versions = await client.connect(address)
    answers = {}
    for api_key, make in _broker_writes(topic_id):
        low, high = versions[api_key]
        answers[api_key] = {"versions": [low, high]}
        for version in range(low, high + 1):
            response = await client.send(address, make(version), api_version=version)
            answers[api_key][version] = _answer(response, version)
    return answers


def _acl(i):
    return AclCreation(resource_type=TOPIC, resource_name="t", resource_pattern_type=LITERAL, principal=f"User:u{i}",
                       host="*", operation=READ, permission_type=ALLOW)


# (what, api version, request, the comparable form of the answer's JSON)
ADMIN_REQUESTS = [
    ("grow t to 2^31-1", 3, CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="t", count=2**31 - 1)],
                                                     timeout_ms=30000), lambda j: _by_name(j["results"])),
    ("10,001 acls", 3, CreateAclsRequest(creations=[_acl(i) for i in range(10_001)]), lambda j: j),
    ("describe 5,000 topics", 4, DescribeConfigsRequest(resources=[
        DescribeConfigsResource(resource_type=TOPIC, resource_name=f"d{i}", configuration_keys=None)
        for i in range(MANY)]), lambda j: j),
    ("create 5,000 topics", 7, CreateTopicsRequest(timeout_ms=30000, topics=[
        CreatableTopic(name=f"n{i}", num_partitions=1, replication_factor=1) for i in range(MANY)]),
     lambda j: _by_name(j["topics"])),
    ("delete t twice and other once", 6, DeleteTopicsRequest(timeout_ms=30000, topics=[
        DeleteTopicState(name=name) for name in ("t", "t", "other")]), lambda j: _by_name(j["responses"])),
]


async def _admin_answers(client, address):
    answers = {}
    for what, version, request, comparable in ADMIN_REQUESTS:
        answers[what] = comparable(_answer(await client.send(address, request, api_version=version), version))
    return answers


# --- the listener, on raw sockets ----------------------------------------------------------------

def _after_a_size_over_the_bound(address, wait_s=30.0) -> str:
    """Announce a frame one byte over the pre-authentication bound and send 8 bytes of it: "closed"
    when the server ends the connection without waiting for the rest."""
    with socket.create_connection(address, timeout=wait_s) as sock:
        sock.sendall(struct.pack(">i", PRE_AUTH_BOUND + 1) + bytes(8))
        try:
            data = sock.recv(4096)
        except ConnectionResetError:
            return "closed"
        except socket.timeout:
            return f"still open after {wait_s} s"
        return "closed" if data == b"" else f"answered {data[:16]!r}"


def _api_versions_of_size(size: int) -> bytes:
    """An ApiVersions v3 frame whose size field is ``size``, padded with an unknown tagged field
    (which a reader must skip, KIP-482; a string field could not pad it, Kafka caps those at 32767)."""
    request = ApiVersionsRequest(client_software_name="hostile", client_software_version="1")
    padding = 1
    for _ in range(3):                    # the field's varint size grows with it; settles in two rounds
        request.unknown_tagged_fields = [(99, bytes(padding))]
        frame = encode_request(request, 3, 1, client_id="hostile")
        padding += size - (len(frame) - 4)
    assert struct.unpack(">i", frame[:4])[0] == size == len(frame) - 4
    return frame


def _read_frame(sock) -> bytes:
    size = struct.unpack(">i", _read_exactly(sock, 4))[0]
    return _read_exactly(sock, size)


def _read_exactly(sock, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {count} bytes")
        data += chunk
    return bytes(data)


def _answer_to_a_frame_at_the_bound(address):
    """ApiVersions in a frame of exactly sasl.server.max.receive.size bytes, before authenticating:
    read and answered (the bound refuses only sizes above it)."""
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(_api_versions_of_size(PRE_AUTH_BOUND))
        _, response = decode_response(_read_frame(sock), 18, 3)
        return response.error_code


def _answered(sockets, answered: set, want: int, wait_s: float) -> set:
    """Wait (at most ``wait_s``) until ``want`` of ``sockets`` have bytes to read; their indexes."""
    answered = set(answered)
    with selectors.DefaultSelector() as selector:
        for index, sock in enumerate(sockets):
            if index not in answered and sock.fileno() >= 0:
                selector.register(sock, selectors.EVENT_READ, index)
        deadline = time.monotonic() + wait_s
        while len(answered) < want and (left := deadline - time.monotonic()) > 0:
            for key, _ in selector.select(left):
                if key.fileobj.recv(65536):
                    answered.add(key.data)
                selector.unregister(key.fileobj)
    return answered


def _connections_to(port: int) -> int:
    """Established connections whose far end is ``port`` on this machine (/proc/net/tcp, and
    tcp6, where a JVM's dual-stack sockets are): before the test opens any, those the node under
    test holds to its own listener."""
    rows = []
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(path) as table:
            rows += [line.split() for line in table.readlines()[1:]]
    return sum(1 for row in rows if int(row[2].split(":")[1], 16) == port and row[3] == "01")


def _connections_served(address, opened=10, wait_s=3.0, served_wait_s=60.0) -> dict:
    """Open ``opened`` connections at once, each sending ApiVersions: how many are answered (the
    listener stops accepting at max.connections, counting the node's own connections to itself),
    and whether one more is answered once one of those closes. The answers up to the limit are
    waited for (at most ``served_wait_s``), then ``wait_s`` more for any beyond it: a single
    window of ``wait_s`` for all of them counted a loaded machine's late answers as refusals."""
    own = _connections_to(address[1])
    sockets = [socket.create_connection(address, timeout=10) for _ in range(opened)]
    try:
        for sock in sockets:
            sock.sendall(encode_request(ApiVersionsRequest(), 0, 0, client_id="limit"))
        served = _answered(sockets, set(), MAX_CONNECTIONS - own, served_wait_s)
        served = _answered(sockets, served, opened, wait_s)
        answers = {"the node's own": own, "served": len(served), "limit minus the node's own": MAX_CONNECTIONS - own}
        if served and len(served) < opened:
            sockets[min(served)].close()
            answers["one more once one closes"] = len(_answered(sockets, served, len(served) + 1, served_wait_s) - served)
        return answers
    finally:
        for sock in sockets:
            sock.close()


def _session(address, cluster_id) -> dict:
    """Everything the hostile tenant sees from one controller."""
    async def requests():
        async with _as_admin() as admin:
            await register_unfenced(admin, address, BROKER_ID, cluster_id)
            topic_id = await _create_topic(admin, address)
        async with _as_mallory() as mallory:
            answers = await _broker_write_answers(mallory, address, topic_id)
            answers.update(await _admin_answers(mallory, address))
        return answers

    answers = asyncio.run(requests())
    answers["a size over the bound"] = _after_a_size_over_the_bound(address)
    answers["ApiVersions at the bound"] = _answer_to_a_frame_at_the_bound(address)
    answers["connections"] = _connections_served(address)
    return answers


def _ours(base, cluster_id=None) -> tuple[dict, str]:
    quorum = LocalQuorum(base, voters=1, properties=SETTINGS, cluster_id=cluster_id,
                         client_options={"sasl": lambda: SaslClient("PLAIN", "admin", "admin-secret")})
    quorum.format(mode="standalone")
    quorum.start_all()
    try:
        quorum.wait_for_leader(60)
        return _session(quorum.address(1), quorum.cluster_id), quorum.cluster_id
    finally:
        quorum.stop_all()
        quorum.kill(1)


def test_a_hostile_tenant_gets_a_kafka_controllers_answers(kafka_controller, tmp_path):
    mine, cluster_id = _ours(tmp_path / "ours")
    kafka = kafka_controller(1, cluster_id, "--standalone", properties=SETTINGS)   # one process at a time
    theirs = _session(("127.0.0.1", kafka.controller_port), cluster_id)
    kafka.kill()
    assert mine.keys() == theirs.keys()
    # Both serve max.connections less the connections already open (the node's ControllerRegistration
    # channel to itself: a quorum's only voter leads at once, so it never fetched from its own
    # listener), and one more when one closes.
    assert theirs["connections"] == {"the node's own": 1, "served": MAX_CONNECTIONS - 1,
                                     "limit minus the node's own": MAX_CONNECTIONS - 1, "one more once one closes": 1}
    assert mine["connections"] == theirs["connections"]
    del mine["connections"], theirs["connections"]
    _assert_kafkas_refusals(theirs)
    differences = [f"{what}:\n  ours:  {str(mine[what])[:1500]}\n  Kafka: {str(theirs[what])[:1500]}"
                   for what in theirs if mine[what] != theirs[what]]
    assert not differences, "\n".join(differences)


def _assert_kafkas_refusals(theirs):
    """What Kafka answered, so that agreeing with it means refusing mallory everything."""
    for api_key in (ALTER_PARTITION, ALLOCATE_PRODUCER_IDS, ASSIGN_REPLICAS_TO_DIRS):
        low, high = theirs[api_key]["versions"]
        assert [theirs[api_key][v]["errorCode"] for v in range(low, high + 1)] == [31] * (high - low + 1)
    assert theirs["grow t to 2^31-1"] == {"t": [{"name": "t", "errorCode": 29, "errorMessage": None}]}
    assert len(theirs["10,001 acls"]["results"]) == 10_001
    assert {(r["errorCode"], r["errorMessage"]) for r in theirs["10,001 acls"]["results"]} == {(31, (
        "Request Request(processor=*, connectionId=*, session=org.apache.kafka.network.Session@*, "
        "listenerName=ListenerName(CONTROLLER), securityProtocol=SASL_PLAINTEXT, "
        "buffer=java.nio.HeapByteBuffer[pos=198932 lim=198932 cap=198932], envelope=None) needs ALTER permission."))}
    described = theirs["describe 5,000 topics"]["results"]
    assert [r["resourceName"] for r in described] == [f"d{i}" for i in range(MANY)]
    assert {(r["errorCode"], r["errorMessage"]) for r in described} == {(29, "Topic authorization failed.")}
    created = theirs["create 5,000 topics"]
    assert len(created) == MANY and {(t["errorCode"], t["errorMessage"]) for [t] in created.values()} == {
        (29, "Authorization failed.")}
    assert {name: [(t["errorCode"], t["errorMessage"]) for t in topics]
            for name, topics in theirs["delete t twice and other once"].items()} == {
        "t": [(42, "Duplicate topic name.")], "other": [(29, "Topic authorization failed.")]}
    assert theirs["a size over the bound"] == "closed"
    assert theirs["ApiVersions at the bound"] == 0
