"""Every API key a controller node serves, checked against Kafka 4.3.1's ControllerApis: the rule
is that no API answers a principal without the permission Kafka's controller asks for (issue 24,
defect 1: AlterPartition, AllocateProducerIds and AssignReplicasToDirs answered anyone).

KAFKA_CONTROLLER_APIS is Kafka's table, written from ControllerApis.handle and its handlers (not
from kafkawire's own table): an API the node serves that is not in it fails the test, so a new
handler cannot forget its check. Every API that needs an operation on the cluster is then sent,
by an authenticated user with no ACLs, at the highest version the node serves, and must be
answered CLUSTER_AUTHORIZATION_FAILED; the three broker-only write APIs must also leave the
committed state as it was."""
import uuid

from kafkawire.messages.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kafkawire.messages.allocate_producer_ids_request import AllocateProducerIdsRequest
from kafkawire.messages.alter_partition_request import AlterPartitionRequest
from kafkawire.messages.alter_partition_request import PartitionData as AlterPartitionData
from kafkawire.messages.alter_partition_request import TopicData as AlterPartitionTopic
from kafkawire.messages.alter_user_scram_credentials_request import (AlterUserScramCredentialsRequest,
                                                                     ScramCredentialDeletion)
from kafkawire.messages.assign_replicas_to_dirs_request import (AssignReplicasToDirsRequest, DirectoryData,
                                                                PartitionData as AssignPartition,
                                                                TopicData as AssignTopic)
from kafkawire.messages.create_acls_request import CreateAclsRequest
from kafkawire.messages.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from kafkawire.net.authorizer import Op
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.error_codes import Errors
from tests.responses import error_codes

from .test_authorizer_node import as_user, creation, with_an_authorizing_node

CLUSTER_ACTION, ALTER, DESCRIBE, ALTER_CONFIGS = "CLUSTER_ACTION", "ALTER", "DESCRIBE", "ALTER_CONFIGS"
PER_RESOURCE = "per topic or config resource"
TOKEN_HOLDER = "no ACL: the token's owner or a renewer (DelegationTokenControlManager)"
UNAUTHENTICATED = "before or without authorization"
METADATA_TOPIC = "DESCRIBE on the topic (kafkawire's read-only __cluster_metadata topic)"

# Kafka 4.3.1's ControllerApis: what each API it handles asks of the principal.
KAFKA_CONTROLLER_APIS = {
    1: CLUSTER_ACTION,           # Fetch (handleFetch)
    17: UNAUTHENTICATED,         # SaslHandshake
    18: UNAUTHENTICATED,         # ApiVersions
    19: PER_RESOURCE,            # CreateTopics: CREATE on the cluster or on each topic
    20: PER_RESOURCE,            # DeleteTopics: DELETE on the cluster, or DESCRIBE and DELETE on each topic
    29: DESCRIBE,                # DescribeAcls (AclApis)
    30: ALTER,                   # CreateAcls (AclApis)
    31: ALTER,                   # DeleteAcls (AclApis)
    32: PER_RESOURCE,            # DescribeConfigs: DESCRIBE_CONFIGS on the cluster, topic or group
    33: PER_RESOURCE,            # AlterConfigs: ALTER_CONFIGS on the cluster, topic or group
    36: UNAUTHENTICATED,         # SaslAuthenticate
    37: PER_RESOURCE,            # CreatePartitions: ALTER on each topic
    38: PER_RESOURCE,            # CreateDelegationToken: CREATE_TOKENS on the owner (a User) if not the requester
    39: TOKEN_HOLDER,            # RenewDelegationToken
    40: TOKEN_HOLDER,            # ExpireDelegationToken
    43: ALTER,                   # ElectLeaders
    44: PER_RESOURCE,            # IncrementalAlterConfigs: ALTER_CONFIGS on the cluster, topic or group
    45: ALTER,                   # AlterPartitionReassignments
    46: DESCRIBE,                # ListPartitionReassignments
    49: ALTER_CONFIGS,           # AlterClientQuotas
    51: ALTER,                   # AlterUserScramCredentials
    52: CLUSTER_ACTION,          # Vote
    53: CLUSTER_ACTION,          # BeginQuorumEpoch
    54: CLUSTER_ACTION,          # EndQuorumEpoch
    55: DESCRIBE,                # DescribeQuorum
    56: CLUSTER_ACTION,          # AlterPartition
    57: ALTER,                   # UpdateFeatures
    58: CLUSTER_ACTION,          # Envelope
    59: CLUSTER_ACTION,          # FetchSnapshot
    60: ALTER,                   # DescribeCluster
    62: CLUSTER_ACTION,          # BrokerRegistration
    63: CLUSTER_ACTION,          # BrokerHeartbeat
    64: ALTER,                   # UnregisterBroker
    67: CLUSTER_ACTION,          # AllocateProducerIds
    70: CLUSTER_ACTION,          # ControllerRegistration
    73: CLUSTER_ACTION,          # AssignReplicasToDirs
    80: ALTER,                   # AddRaftVoter
    81: ALTER,                   # RemoveRaftVoter
    82: CLUSTER_ACTION,          # UpdateRaftVoter
}
# Beyond Kafka's controller: the read-only __cluster_metadata topic, under a broker's topic rules.
# Produce, FindCoordinator and InitProducerId only ever refuse (the topic is read-only, there is no
# coordinator), so they need no permission.
KAFKAWIRE_EXTENSIONS = {3: METADATA_TOPIC, 2: METADATA_TOPIC, 0: "always refused", 10: "always refused",
                        22: "always refused"}
CLUSTER_OPERATIONS = {CLUSTER_ACTION, ALTER, DESCRIBE, ALTER_CONFIGS}
A_TOPIC_ID = uuid.UUID(int=7)


def refused_request(api_key: int, version: int):
    """A request of ``api_key`` whose refusal is visible in its answer: a default request, or for
    APIs that answer per entry (and so say nothing for an empty request), one entry."""
    if api_key == 1:                                  # a replica fetch (a consumer's takes the topic path)
        topic = FetchTopic(topic="__cluster_metadata", topic_id=uuid.UUID(int=1),
                           partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)])
        if version >= 15:
            return FetchRequest(replica_state=ReplicaState(replica_id=1, replica_epoch=-1), max_wait_ms=0,
                                topics=[topic])
        return FetchRequest(replica_id=1, max_wait_ms=0, topics=[topic])
    if api_key == 30:
        return CreateAclsRequest(creations=[creation("User:alice", Op.ALTER)])
    if api_key == 31:
        return DeleteAclsRequest(filters=[DeleteAclsFilter(resource_type_filter=1, pattern_type_filter=1,
                                                           operation=1, permission_type=1)])
    if api_key == 49:
        return AlterClientQuotasRequest(entries=[EntryData(entity=[EntityData(entity_type="user", entity_name="a")],
                                                           ops=[OpData(key="producer_byte_rate", value=1.0)])])
    if api_key == 51:
        return AlterUserScramCredentialsRequest(deletions=[ScramCredentialDeletion(name="alice", mechanism=1)])
    if api_key == 56:
        return AlterPartitionRequest(broker_id=1, broker_epoch=0, topics=[AlterPartitionTopic(
            topic_id=A_TOPIC_ID, partitions=[AlterPartitionData(partition_index=0, leader_epoch=0)])])
    if api_key == 67:
        return AllocateProducerIdsRequest(broker_id=1, broker_epoch=0)
    if api_key == 73:
        return AssignReplicasToDirsRequest(broker_id=1, broker_epoch=0, directories=[DirectoryData(
            id=uuid.UUID(int=9), topics=[AssignTopic(topic_id=A_TOPIC_ID, partitions=[AssignPartition(
                partition_index=0)])])])
    return api_table()[api_key].request()


def test_every_api_key_has_kafkas_authorization_and_no_acl_user_is_refused_cluster_operations(tmp_path):
    async def send_every_cluster_operation(node, port):
        controller = node.state_machine
        served = {key: high for key, _, high in node.servers[0].api_versions()}
        unclassified = sorted(set(served) - set(KAFKA_CONTROLLER_APIS) - set(KAFKAWIRE_EXTENSIONS))
        assert not unclassified, f"API keys served without a known authorization rule: {unclassified}"
        before = (controller.state.image.next_producer_id, controller.state.next_offset)
        answers = {}
        for key in sorted(served):
            if KAFKA_CONTROLLER_APIS.get(key) in CLUSTER_OPERATIONS:
                response = await as_user(port, "alice", "a-secret", refused_request(key, served[key]),
                                         api_version=served[key])
                answers[key] = error_codes(response)
        return answers, before, controller

    answers, (producer_ids_before, _), controller = with_an_authorizing_node(tmp_path, send_every_cluster_operation)
    not_refused = {key: sorted(codes) for key, codes in answers.items()
                   if codes != {int(Errors.CLUSTER_AUTHORIZATION_FAILED)}}
    assert not not_refused, f"cluster operations answered without CLUSTER_AUTHORIZATION_FAILED: {not_refused}"
    assert {56, 67, 73} <= set(answers)
    assert controller.state.image.next_producer_id == producer_ids_before   # no block handed to alice
