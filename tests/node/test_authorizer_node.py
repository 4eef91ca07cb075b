"""The StandardAuthorizer in a running node (in process, one voter, SASL_PLAINTEXT with PLAIN):
ControllerApis' operations per API, super.users, ACL records committed to the metadata log, and
Kafka's CLUSTER_AUTHORIZATION_FAILED / TOPIC_AUTHORIZATION_FAILED answers (issue 18, item 4)."""
import asyncio
import io
import re
import uuid

from kafkawire import messages
from kafkawire.controller.factory import controller_factory
from kafkawire.messages.add_raft_voter_request import AddRaftVoterRequest
from kafkawire.messages.create_acls_request import AclCreation, CreateAclsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from kafkawire.messages.describe_acls_request import DescribeAclsRequest
from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
from kafkawire.messages.describe_quorum_request import DescribeQuorumRequest, PartitionData, TopicData
from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.vote_request import VoteRequest
from kafkawire.metadata import encode_metadata_record
from kafkawire.net.authorizer import CLUSTER_NAME, Op
from kafkawire.net.client import NetworkClient
from kafkawire.net.config import parse_server_config
from kafkawire.net.sasl import SaslClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.controller_node import ControllerNode
from kafkawire.tools.storage import format_storage
from kafkawire.raft.node.local_quorum import free_ports

from tests.controller.test_node_integration import with_an_active_node

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" '
        'password="c-secret" user_controller="c-secret" user_alice="a-secret" user_bob="b-secret";')
TOPIC, CLUSTER = 2, 4
LITERAL, PREFIXED = 3, 4
DENY, ALLOW = 2, 3


def free_port() -> int:
    """One port reserved as free_ports reserves them (no other process's bind(0) takes it)."""
    port, = free_ports(1)
    return port


def config_for(tmp_path, port):
    return parse_server_config(f"""
node.id=1
process.roles=controller
controller.quorum.voters=1@127.0.0.1:{port}
listeners=CONTROLLER://127.0.0.1:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256
sasl.mechanism.controller.protocol=PLAIN
listener.name.controller.plain.sasl.jaas.config={JAAS}
listener.name.controller.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:controller
log.dirs={tmp_path}/data
controller.quorum.election.timeout.ms=200
""")


def acl_record(principal, operation, permission=ALLOW, resource_type=CLUSTER, name=CLUSTER_NAME, pattern=LITERAL):
    record = messages.by_name("AccessControlEntryRecord")(
        id=uuid.uuid4(), resource_type=resource_type, resource_name=name, pattern_type=pattern,
        principal=principal, host="*", operation=operation, permission_type=permission)
    return encode_metadata_record(record, 0)


DESCRIBE_QUORUM = DescribeQuorumRequest(topics=[TopicData(topic_name="__cluster_metadata",
                                                          partitions=[PartitionData(partition_index=0)])])


async def as_user(port, user, password, request, **kwargs):
    async with NetworkClient(request_timeout_ms=5000, sasl=lambda: SaslClient("PLAIN", user, password)) as client:
        return await client.send(("127.0.0.1", port), request, **kwargs)


def create(*names):
    return CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in names],
                               timeout_ms=5000)


async def wait_for(predicate, what, seconds=20):
    for _ in range(seconds * 100):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"gave up waiting: {what}")


def with_an_authorizing_node(tmp_path, body):
    """Format and start a one-voter node with the authorizer, wait until it is the active
    controller and has registered itself (as the super user "controller"), and return
    ``await body(node, port)``; the node is stopped afterwards."""
    port = free_port()
    config = config_for(tmp_path, port)
    format_storage(config, CLUSTER_ID, mode=None, out=io.StringIO())
    return with_an_active_node(config, lambda node: body(node, port), "activation and the controller's registration")


def test_the_authorizer_in_a_node(tmp_path):
    with_an_authorizing_node(tmp_path, checks)


async def checks(node, port):
    # no ACLs: alice is refused every cluster operation, in each API's error shape
    quorum = await as_user(port, "alice", "a-secret", DESCRIBE_QUORUM)
    assert quorum.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED and quorum.topics == []
    vote = await as_user(port, "alice", "a-secret", VoteRequest(cluster_id=CLUSTER_ID, topics=[]))
    assert vote.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    add = await as_user(port, "alice", "a-secret", AddRaftVoterRequest(cluster_id=CLUSTER_ID, voter_id=9,
                                                                        voter_directory_id=uuid.uuid4(),
                                                                        listeners=[]))
    assert (add.error_code, add.error_message) == (Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    cluster = await as_user(port, "alice", "a-secret", DescribeClusterRequest(endpoint_type=2))
    assert cluster.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert cluster.error_message.startswith("Request Request(processor=0, connectionId=")
    assert re.search(r"session=org\.apache\.kafka\.network\.Session@[0-9a-f]+, listenerName=ListenerName\(CONTROLLER\), "
                     r"securityProtocol=SASL_PLAINTEXT, buffer=null, envelope=None\)", cluster.error_message)
    assert cluster.error_message.endswith(" needs ALTER permission.")
    created = await as_user(port, "alice", "a-secret", create("alice-1"))
    assert [(t.name, t.error_code, t.error_message) for t in created.topics] == \
           [("alice-1", Errors.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")]
    metadata = await as_user(port, "alice", "a-secret", MetadataRequest(topics=None), api_version=12)
    assert metadata.topics == []                       # __cluster_metadata left out: no DESCRIBE on it
    named = await as_user(port, "alice", "a-secret",
                          MetadataRequest(topics=[MetadataRequestTopic(name="__cluster_metadata")]), api_version=12)
    assert [(t.name, t.error_code) for t in named.topics] == [("__cluster_metadata", Errors.TOPIC_AUTHORIZATION_FAILED)]
    offsets = await as_user(port, "alice", "a-secret", ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(
        name="__cluster_metadata", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]))
    assert [(p.error_code, p.offset) for p in offsets.topics[0].partitions] == [(Errors.TOPIC_AUTHORIZATION_FAILED, -1)]
    # the super user is served
    assert (await as_user(port, "controller", "c-secret", DESCRIBE_QUORUM)).error_code == 0

    # ACL records committed to the metadata log. Written through the controller's own write path:
    # a batch appended to the raft log behind its back while it has a write of its own in flight
    # (its periodic NoOpRecord) is taken for one it applied ahead and never replayed.
    records = [
        acl_record("User:alice", Op.DESCRIBE),                                      # implies nothing more
        acl_record("User:alice", Op.CREATE, resource_type=TOPIC, name="alice-", pattern=PREFIXED),
        acl_record("User:*", Op.READ, resource_type=TOPIC, name="__cluster_metadata"),   # implies DESCRIBE
        acl_record("User:bob", Op.ALL),
        acl_record("User:bob", Op.DESCRIBE, DENY),
    ]
    await node.state_machine.write(lambda: (records, None))          # returns once committed
    assert len(node.state_machine.image.acls) == 5
    assert (await as_user(port, "alice", "a-secret", DESCRIBE_QUORUM)).error_code == 0
    assert (await as_user(port, "alice", "a-secret", DescribeClusterRequest(endpoint_type=2))).error_code == \
        Errors.CLUSTER_AUTHORIZATION_FAILED
    created = await as_user(port, "alice", "a-secret", create("alice-2", "other"))
    # alice-2 reaches the controller (which has no broker to place it on), "other" does not
    assert sorted((t.name, t.error_code) for t in created.topics) == \
        [("alice-2", Errors.INVALID_REPLICATION_FACTOR), ("other", Errors.TOPIC_AUTHORIZATION_FAILED)]
    named = await as_user(port, "alice", "a-secret",
                          MetadataRequest(topics=[MetadataRequestTopic(name="__cluster_metadata")]), api_version=12)
    assert [(t.name, t.error_code) for t in named.topics] == [("__cluster_metadata", 0)]
    # bob: ALL on the cluster but a DENY of DESCRIBE, which wins for DescribeQuorum only
    assert (await as_user(port, "bob", "b-secret", DescribeClusterRequest(endpoint_type=2))).error_code == 0
    assert (await as_user(port, "bob", "b-secret", DESCRIBE_QUORUM)).error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    created = await as_user(port, "bob", "b-secret", create("bobs"))
    assert [(t.name, t.error_code) for t in created.topics] == [("bobs", Errors.INVALID_REPLICATION_FACTOR)]

    await acl_apis(node, port)
    await scram_credentials(node, port)


def creation(principal, operation, permission=ALLOW, resource_type=CLUSTER, name=CLUSTER_NAME, pattern=LITERAL):
    return AclCreation(resource_type=resource_type, resource_name=name, resource_pattern_type=pattern,
                       principal=principal, host="*", operation=operation, permission_type=permission)


async def acl_apis(node, port):
    """CreateAcls, DescribeAcls and DeleteAcls: ALTER/DESCRIBE on the cluster, Kafka's validation,
    the records written and what they change."""
    refused = await as_user(port, "alice", "a-secret", CreateAclsRequest(creations=[creation("User:alice", Op.ALTER)]))
    assert [r.error_code for r in refused.results] == [Errors.CLUSTER_AUTHORIZATION_FAILED]
    assert refused.results[0].error_message.endswith(" needs ALTER permission.")
    created = await as_user(port, "controller", "c-secret", CreateAclsRequest(creations=[
        creation("User:alice", Op.ALTER), creation("User:alice", Op.ALTER, name="other-cluster"),
        creation("User:alice", 1), creation("alice", Op.READ), creation("User:alice", Op.ALTER)]))
    assert [(r.error_code, r.error_message) for r in created.results] == [
        (0, ""),                 # as Kafka: the message field left at its default
        (Errors.INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (Errors.INVALID_REQUEST, "Invalid operation ANY"),
        (Errors.INVALID_REQUEST, "Could not parse principal from `alice` (no colon is present separating the "
                                 "principal type from the principal name)"),
        (0, "")]                                           # the duplicate succeeds and writes nothing
    await wait_for(lambda: len(node.state_machine.image.acls) == 6, "the new ACL replayed")
    assert (await as_user(port, "alice", "a-secret", DescribeClusterRequest(endpoint_type=2))).error_code == 0
    described = await as_user(port, "alice", "a-secret", DescribeAclsRequest(
        resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
        host_filter=None, operation=1, permission_type=1))
    assert described.error_code == 0
    assert sorted((r.resource_type, r.resource_name, len(r.acls)) for r in described.resources) == \
        [(TOPIC, "__cluster_metadata", 1), (TOPIC, "alice-", 1), (CLUSTER, CLUSTER_NAME, 4)]
    deleted = await as_user(port, "bob", "b-secret", DeleteAclsRequest(filters=[DeleteAclsFilter(
        resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter="User:bob",
        host_filter=None, operation=1, permission_type=1)]))
    assert [sorted(m.operation for m in f.matching_acls) for f in deleted.filter_results] == [[Op.ALL, Op.DESCRIBE]]
    await wait_for(lambda: len(node.state_machine.image.acls) == 4, "bob's ACLs removed")
    # the cluster still has alice's ACLs, so bob now has none that allow him
    assert (await as_user(port, "bob", "b-secret", DescribeClusterRequest(endpoint_type=2))).error_code == \
        Errors.CLUSTER_AUTHORIZATION_FAILED


def test_acl_apis_without_an_authorizer_are_security_disabled(tmp_path):
    port = free_port()
    config = parse_server_config(f"node.id=1\nprocess.roles=controller\ncontroller.quorum.voters=1@127.0.0.1:{port}\n"
                                 f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
                                 f"log.dirs={tmp_path}/data\ncontroller.quorum.election.timeout.ms=200\n")
    format_storage(config, CLUSTER_ID, mode=None, out=io.StringIO())

    async def life():
        node = ControllerNode(config, state_machine_factory=controller_factory, fsync=False)
        await node.start()
        try:
            async with NetworkClient(request_timeout_ms=5000) as client:
                address = ("127.0.0.1", port)
                created = await client.send(address, CreateAclsRequest(creations=[creation("User:a", Op.READ)]))
                described = await client.send(address, DescribeAclsRequest(
                    resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
                    host_filter=None, operation=1, permission_type=1))
                return created, described
        finally:
            await node.stop()

    created, described = asyncio.run(life())
    assert [(r.error_code, r.error_message) for r in created.results] == \
        [(Errors.SECURITY_DISABLED, "No Authorizer is configured.")]
    assert (described.error_code, described.error_message) == (Errors.SECURITY_DISABLED, "No Authorizer is configured.")


async def scram_credentials(node, port):
    """AlterUserScramCredentials (ALTER on the cluster): Kafka's checks, then carol authenticates with
    the credential it wrote, and not once it is deleted."""
    import hashlib
    from kafkawire.messages.alter_user_scram_credentials_request import (AlterUserScramCredentialsRequest,
                                                                         ScramCredentialDeletion,
                                                                         ScramCredentialUpsertion)
    from kafkawire.net.client import AuthenticationFailed

    def upsert(name, iterations=8192, mechanism=1):
        salt = b"pepper"
        salted = hashlib.pbkdf2_hmac("sha256", f"{name}-secret".encode(), salt, iterations)
        return ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations, salt=salt,
                                        salted_password=salted)

    request = AlterUserScramCredentialsRequest(
        deletions=[ScramCredentialDeletion(name="nobody", mechanism=1)],
        upsertions=[upsert("carol"), upsert("dave", iterations=100), upsert("erin", mechanism=9), upsert("")])
    refused = await as_user(port, "bob", "b-secret", request)          # bob has no ACL left
    assert sorted((r.user, r.error_code) for r in refused.results) == \
        [(u, Errors.CLUSTER_AUTHORIZATION_FAILED) for u in ("", "carol", "dave", "erin", "nobody")]
    altered = await as_user(port, "controller", "c-secret", request)
    assert {r.user: (r.error_code, r.error_message) for r in altered.results} == {
        "carol": (0, None),
        "dave": (Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "erin": (Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "": (Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "nobody": (Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")}
    assert altered.results[0].user == "carol"           # successes first, then errors
    await wait_for(lambda: "carol" in node.state_machine.image.scram.get(1, {}), "carol's credential")

    async def as_carol():
        async with NetworkClient(request_timeout_ms=5000,
                                 sasl=lambda: SaslClient("SCRAM-SHA-256", "carol", "carol-secret")) as client:
            return await client.send(("127.0.0.1", port), DESCRIBE_QUORUM)
    # authenticated; the authorizer then refuses (carol has no ACL)
    assert (await as_carol()).error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    deleted = await as_user(port, "controller", "c-secret", AlterUserScramCredentialsRequest(
        deletions=[ScramCredentialDeletion(name="carol", mechanism=1)], upsertions=[]))
    assert [(r.user, r.error_code) for r in deleted.results] == [("carol", 0)]
    await wait_for(lambda: "carol" not in node.state_machine.image.scram.get(1, {}), "carol's credential removed")
    try:
        await as_carol()
    except AuthenticationFailed as exc:
        assert "SASL_AUTHENTICATION_FAILED" in str(exc)
    else:
        raise AssertionError("carol authenticated after her credential was deleted")
