"""The broker APIs of a combined node (process.roles=broker,controller) check ACLs as Kafka
4.3.1's KafkaApis does (issue 29: no client can harm the cluster beyond what its ACLs allow).

One in-process combined node for the module (SASL_PLAINTEXT with PLAIN on both listeners,
StandardAuthorizer, super.users=User:controller). Each row of RULES names Kafka's rule and the
ACLs it needs; for each row a principal with no ACL ("alice") gets Kafka's error, a principal
given exactly the row's ACLs (one user per row) is not refused, and the super user is not
refused. Before the fix the node refused to start with authorizer.class.name set."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from kafkawire.messages.add_offsets_to_txn_request import AddOffsetsToTxnRequest
from kafkawire.messages.add_partitions_to_txn_request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kafkawire.messages.consumer_group_describe_request import ConsumerGroupDescribeRequest
from kafkawire.messages.consumer_group_heartbeat_request import ConsumerGroupHeartbeatRequest
from kafkawire.messages.create_acls_request import CreateAclsRequest
from kafkawire.messages.alter_share_group_offsets_request import (AlterShareGroupOffsetsRequest,
                                                                  AlterShareGroupOffsetsRequestPartition,
                                                                  AlterShareGroupOffsetsRequestTopic)
from kafkawire.messages.delete_share_group_offsets_request import (DeleteShareGroupOffsetsRequest,
                                                                   DeleteShareGroupOffsetsRequestTopic)
from kafkawire.messages.describe_share_group_offsets_request import (DescribeShareGroupOffsetsRequest,
                                                                     DescribeShareGroupOffsetsRequestGroup,
                                                                     DescribeShareGroupOffsetsRequestTopic)
from kafkawire.messages.delete_share_group_state_request import (DeleteShareGroupStateRequest, DeleteStateData,
                                                                 PartitionData as DeletePartition)
from kafkawire.messages.initialize_share_group_state_request import (InitializeShareGroupStateRequest,
                                                                     InitializeStateData,
                                                                     PartitionData as InitializePartition)
from kafkawire.messages.read_share_group_state_request import (PartitionData as ReadPartition,
                                                               ReadShareGroupStateRequest, ReadStateData)
from kafkawire.messages.read_share_group_state_summary_request import (PartitionData as SummaryPartition,
                                                                       ReadShareGroupStateSummaryRequest,
                                                                       ReadStateSummaryData)
from kafkawire.messages.write_share_group_state_request import (PartitionData as WritePartition,
                                                                WriteShareGroupStateRequest, WriteStateData)
from kafkawire.messages.share_acknowledge_request import ShareAcknowledgeRequest
from kafkawire.messages.share_fetch_request import ShareFetchRequest
from kafkawire.messages.share_group_describe_request import ShareGroupDescribeRequest
from kafkawire.messages.share_group_heartbeat_request import ShareGroupHeartbeatRequest
from kafkawire.messages.streams_group_describe_request import StreamsGroupDescribeRequest
from kafkawire.messages.streams_group_heartbeat_request import (StreamsGroupHeartbeatRequest, Subtopology, TopicInfo,
                                                                Topology)
from kafkawire.messages.create_delegation_token_request import CreateDelegationTokenRequest
from kafkawire.messages.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from kafkawire.messages.describe_acls_request import DescribeAclsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.delete_groups_request import DeleteGroupsRequest
from kafkawire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic
from kafkawire.messages.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kafkawire.messages.alter_user_scram_credentials_request import (AlterUserScramCredentialsRequest,
                                                                      ScramCredentialUpsertion)
from kafkawire.messages.describe_client_quotas_request import DescribeClientQuotasRequest
from kafkawire.messages.describe_topic_partitions_request import DescribeTopicPartitionsRequest
from kafkawire.messages.describe_topic_partitions_request import TopicRequest as DescribedTopic
from kafkawire.messages.describe_user_scram_credentials_request import DescribeUserScramCredentialsRequest
from kafkawire.messages.list_config_resources_request import ListConfigResourcesRequest
from kafkawire.messages.remove_raft_voter_request import RemoveRaftVoterRequest
from kafkawire.messages.unregister_broker_request import UnregisterBrokerRequest
from kafkawire.messages.update_features_request import UpdateFeaturesRequest
from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from kafkawire.messages.describe_groups_request import DescribeGroupsRequest
from kafkawire.messages.alter_replica_log_dirs_request import (AlterReplicaLogDir, AlterReplicaLogDirsRequest,
                                                               AlterReplicaLogDirTopic)
from kafkawire.messages.describe_log_dirs_request import DescribeLogDirsRequest
from kafkawire.messages.describe_producers_request import DescribeProducersRequest, TopicRequest
from kafkawire.messages.describe_transactions_request import DescribeTransactionsRequest
from kafkawire.messages.end_txn_request import EndTxnRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.get_telemetry_subscriptions_request import GetTelemetrySubscriptionsRequest
from kafkawire.messages.push_telemetry_request import PushTelemetryRequest
from kafkawire.protocol.message import uuid_to_kafka_string
from kafkawire.records.compression import GZIP, compress
from kafkawire.messages.heartbeat_request import HeartbeatRequest
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.messages.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from kafkawire.messages.leave_group_request import LeaveGroupRequest
from kafkawire.messages.list_groups_request import ListGroupsRequest
from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.messages.list_transactions_request import ListTransactionsRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.offset_commit_request import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                      OffsetCommitRequestTopic)
from kafkawire.messages.offset_delete_request import (OffsetDeleteRequest, OffsetDeleteRequestPartition,
                                                      OffsetDeleteRequestTopic)
from kafkawire.messages.offset_fetch_request import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kafkawire.messages.offset_for_leader_epoch_request import (OffsetForLeaderEpochRequest, OffsetForLeaderPartition,
                                                                OffsetForLeaderTopic)
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.messages.sync_group_request import SyncGroupRequest
from kafkawire.messages.txn_offset_commit_request import (TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition,
                                                          TxnOffsetCommitRequestTopic)
from kafkawire.messages.write_txn_markers_request import WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest
from kafkawire.net.authorizer import CLUSTER_NAME, Op
from kafkawire.net.client import NetworkClient
from kafkawire.net.config import parse_server_config
from kafkawire.net.sasl import SaslClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch

from tests.responses import error_codes
from tests.broker.test_client_telemetry import PAYLOAD

from .test_authorizer_node import creation, wait_for
from .threaded_combined_node import ThreadedCombinedNode, started

TOPIC, GROUP, CLUSTER, TXN = 2, 3, 4, 5
IDEMPOTENT_WRITE = 12
TOPIC_AUTH, GROUP_AUTH = int(Errors.TOPIC_AUTHORIZATION_FAILED), int(Errors.GROUP_AUTHORIZATION_FAILED)
CLUSTER_AUTH, TXN_AUTH = int(Errors.CLUSTER_AUTHORIZATION_FAILED), int(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
TOKEN_AUTH = int(Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
AUTH_ERRORS = {TOPIC_AUTH, GROUP_AUTH, CLUSTER_AUTH, TXN_AUTH, TOKEN_AUTH}
USER_RESOURCE, CREATE_TOKENS = 7, 13
USERS = 86                        # user0..: one per rule, each with only its rule's ACLs, and a few more


def _records(**fields) -> bytes:
    return build_batch([(b"k", b"v")], **fields)


def produce(topic, **batch):
    return ProduceRequest(transactional_id=batch.pop("transactional_id", None), acks=1, timeout_ms=5000,
                          topic_data=[TopicProduceData(name=topic, partition_data=[
                              PartitionProduceData(index=0, records=_records(**batch))])])


def fetch(topic, replica_id=-1):
    return FetchRequest(replica_id=replica_id, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1, topics=[FetchTopic(topic=topic, partitions=[FetchPartition(
                            partition=0, fetch_offset=0, current_leader_epoch=-1, log_start_offset=-1,
                            partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id="")


def join(group):
    return JoinGroupRequest(group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="",
                            protocol_type="consumer", protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")])


def streams_join(group, changelog=None):
    """A streams member joining with a topology reading t-commit (and a store's changelog topic)."""
    changelogs = [] if changelog is None else [TopicInfo(name=changelog, topic_configs=[])]
    return StreamsGroupHeartbeatRequest(group_id=group, member_id=str(uuid.uuid4()), member_epoch=0,
                                        rebalance_timeout_ms=10_000, process_id="p", active_tasks=[],
                                        standby_tasks=[], warmup_tasks=[], topology=Topology(epoch=1, subtopologies=[
                                            Subtopology(subtopology_id="0", source_topics=["t-commit"],
                                                        state_changelog_topics=changelogs)]))


def offset_commit(group, topic):
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequestTopic(name=topic, partitions=[OffsetCommitRequestPartition(partition_index=0,
                                                                                     committed_offset=0)])])


def txn_offset_commit(txn, group, topic):
    return TxnOffsetCommitRequest(transactional_id=txn, group_id=group, producer_id=1, producer_epoch=0, topics=[
        TxnOffsetCommitRequestTopic(name=topic, partitions=[TxnOffsetCommitRequestPartition(partition_index=0,
                                                                                           committed_offset=0)])])


def describe_share_offsets(group):
    return DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(
        group_id=group, topics=[DescribeShareGroupOffsetsRequestTopic(topic_name="t-commit", partitions=[0])])])


def alter_share_offsets(group):
    return AlterShareGroupOffsetsRequest(group_id=group, topics=[AlterShareGroupOffsetsRequestTopic(
        topic_name="t-commit", partitions=[AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=0)])])


SHARE_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"         # a topic id (Kafka's base64 form) no topic has


def share_state_requests():
    """The five share-state APIs (InitializeShareGroupState ... ReadShareGroupStateSummary), each
    for one share-partition of an unknown topic."""
    topic_id = uuid.UUID(int=1)
    return [InitializeShareGroupStateRequest(group_id="g-share", topics=[InitializeStateData(
                topic_id=topic_id, partitions=[InitializePartition(partition=0, state_epoch=0, start_offset=-1)])]),
            ReadShareGroupStateRequest(group_id="g-share", topics=[ReadStateData(
                topic_id=topic_id, partitions=[ReadPartition(partition=0, leader_epoch=0)])]),
            WriteShareGroupStateRequest(group_id="g-share", topics=[WriteStateData(
                topic_id=topic_id, partitions=[WritePartition(partition=0, state_epoch=0, leader_epoch=0,
                                                              start_offset=0, state_batches=[])])]),
            DeleteShareGroupStateRequest(group_id="g-share", topics=[DeleteStateData(
                topic_id=topic_id, partitions=[DeletePartition(partition=0)])]),
            ReadShareGroupStateSummaryRequest(group_id="g-share", topics=[ReadStateSummaryData(
                topic_id=topic_id, partitions=[SummaryPartition(partition=0, leader_epoch=0)])])]


def acl(resource_type, name, operation):
    return resource_type, name, operation


CLUSTER_DESCRIBE = acl(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)

# (rule, request, version, ACLs the rule needs, the error of a principal without them)
RULES = [
    ("Produce needs WRITE on the topic", produce("t-produce"), 9, [acl(TOPIC, "t-produce", Op.WRITE)], TOPIC_AUTH),
    ("transactional Produce needs WRITE on the transactional id",
     produce("t-produce", transactional_id="tx-produce", is_transactional=True, producer_id=7, producer_epoch=0,
             base_sequence=0), 9,
     [acl(TOPIC, "t-produce", Op.WRITE), acl(TXN, "tx-produce", Op.WRITE)], TXN_AUTH),
    ("a consumer's Fetch needs READ on the topic", fetch("t-fetch"), 12, [acl(TOPIC, "t-fetch", Op.READ)], TOPIC_AUTH),
    ("a follower's Fetch needs CLUSTER_ACTION on the cluster", fetch("t-fetch", replica_id=1), 12,
     [acl(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)], TOPIC_AUTH),
    ("ListOffsets needs DESCRIBE on the topic", ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(
        name="t-list", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 7,
     [acl(TOPIC, "t-list", Op.DESCRIBE)], TOPIC_AUTH),
    ("Metadata of a named topic needs DESCRIBE on it",
     MetadataRequest(topics=[MetadataRequestTopic(name="t-meta")], allow_auto_topic_creation=False), 12,
     [acl(TOPIC, "t-meta", Op.DESCRIBE)], TOPIC_AUTH),
    ("an unknown topic without DESCRIBE looks unauthorized (existence hidden)",
     MetadataRequest(topics=[MetadataRequestTopic(name="no-such-topic")], allow_auto_topic_creation=False), 12,
     [acl(TOPIC, "no-such-topic", Op.DESCRIBE)], TOPIC_AUTH),
    ("Metadata auto-creation needs CREATE on the cluster or topic",
     MetadataRequest(topics=[MetadataRequestTopic(name="t-auto")], allow_auto_topic_creation=True), 12,
     [acl(TOPIC, "t-auto", Op.DESCRIBE), acl(TOPIC, "t-auto", Op.CREATE)], TOPIC_AUTH),
    ("OffsetForLeaderEpoch needs DESCRIBE on the topic (or CLUSTER_ACTION)", OffsetForLeaderEpochRequest(
        replica_id=-1, topics=[OffsetForLeaderTopic(topic="t-epoch", partitions=[OffsetForLeaderPartition(
            partition=0, current_leader_epoch=-1, leader_epoch=0)])]), 4, [acl(TOPIC, "t-epoch", Op.DESCRIBE)],
     TOPIC_AUTH),
    ("DeleteRecords needs DELETE on the topic", DeleteRecordsRequest(timeout_ms=5000, topics=[DeleteRecordsTopic(
        name="t-delrec", partitions=[DeleteRecordsPartition(partition_index=0, offset=0)])]), 2,
     [acl(TOPIC, "t-delrec", Op.DELETE)], TOPIC_AUTH),
    ("DescribeProducers needs READ on the topic", DescribeProducersRequest(topics=[TopicRequest(
        name="t-producers", partition_indexes=[0])]), 0, [acl(TOPIC, "t-producers", Op.READ)], TOPIC_AUTH),
    ("DescribeLogDirs needs DESCRIBE on the cluster", DescribeLogDirsRequest(topics=None), 4, [CLUSTER_DESCRIBE],
     CLUSTER_AUTH),
    ("AlterReplicaLogDirs needs ALTER on the cluster", AlterReplicaLogDirsRequest(dirs=[AlterReplicaLogDir(
        path="/not-a-log-dir", topics=[AlterReplicaLogDirTopic(name="t-meta", partitions=[0])])]), 2,
     [acl(CLUSTER, CLUSTER_NAME, Op.ALTER)], CLUSTER_AUTH),
    ("DescribeConfigs of a topic needs DESCRIBE_CONFIGS on it", DescribeConfigsRequest(resources=[
        DescribeConfigsResource(resource_type=2, resource_name="t-conf", configuration_keys=None)]), 4,
     [acl(TOPIC, "t-conf", Op.DESCRIBE_CONFIGS)], TOPIC_AUTH),
    ("forwarded CreateTopics is checked by the controller with the client's principal from the Envelope",
     CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(name="t-created-{user}", num_partitions=1,
                                                                   replication_factor=1)]), 7,
     [acl(TOPIC, "t-created-{user}", Op.CREATE), acl(TOPIC, "t-created-{user}", Op.DESCRIBE_CONFIGS)], TOPIC_AUTH),
    ("FindCoordinator of a group needs DESCRIBE on the group",
     FindCoordinatorRequest(key_type=0, coordinator_keys=["g-find"]), 4, [acl(GROUP, "g-find", Op.DESCRIBE)],
     GROUP_AUTH),
    ("FindCoordinator of a transaction needs DESCRIBE on the transactional id",
     FindCoordinatorRequest(key_type=1, key="tx-find"), 3, [acl(TXN, "tx-find", Op.DESCRIBE)], TXN_AUTH),
    ("JoinGroup needs READ on the group", join("g-join-{user}"), 9, [acl(GROUP, "g-join-{user}", Op.READ)],
     GROUP_AUTH),
    ("SyncGroup needs READ on the group", SyncGroupRequest(group_id="g-sync", generation_id=1, member_id="m",
                                                          protocol_type="consumer", protocol_name="range",
                                                          assignments=[]), 5, [acl(GROUP, "g-sync", Op.READ)],
     GROUP_AUTH),
    ("SyncGroup v5 without its protocol type is INCONSISTENT_GROUP_PROTOCOL before the ACL check",
     SyncGroupRequest(group_id="g-sync", generation_id=1, member_id="m", assignments=[]), 5,
     [acl(GROUP, "g-sync", Op.READ)], int(Errors.INCONSISTENT_GROUP_PROTOCOL)),
    ("Heartbeat needs READ on the group", HeartbeatRequest(group_id="g-hb", generation_id=1, member_id="m"), 4,
     [acl(GROUP, "g-hb", Op.READ)], GROUP_AUTH),
    ("LeaveGroup needs READ on the group", LeaveGroupRequest(group_id="g-leave", members=[]), 5,
     [acl(GROUP, "g-leave", Op.READ)], GROUP_AUTH),
    ("OffsetCommit needs READ on the group", offset_commit("g-commit", "t-commit"), 8,
     [acl(GROUP, "g-commit", Op.READ), acl(TOPIC, "t-commit", Op.READ)], GROUP_AUTH),
    ("OffsetCommit needs READ on each topic", offset_commit("g-commit2", "t-commit"), 8,
     [acl(GROUP, "g-commit2", Op.READ), acl(TOPIC, "t-commit", Op.READ)], TOPIC_AUTH,
     [acl(GROUP, "g-commit2", Op.READ)]),
    ("OffsetFetch needs DESCRIBE on the group", OffsetFetchRequest(groups=[OffsetFetchRequestGroup(
        group_id="g-fetch", topics=[OffsetFetchRequestTopics(name="t-commit", partition_indexes=[0])])]), 9,
     [acl(GROUP, "g-fetch", Op.DESCRIBE), acl(TOPIC, "t-commit", Op.DESCRIBE)], GROUP_AUTH),
    ("OffsetFetch needs DESCRIBE on each topic", OffsetFetchRequest(group_id="g-fetch2", topics=[
        OffsetFetchRequestTopics(name="t-commit", partition_indexes=[0])]), 7,
     [acl(GROUP, "g-fetch2", Op.DESCRIBE), acl(TOPIC, "t-commit", Op.DESCRIBE)], TOPIC_AUTH,
     [acl(GROUP, "g-fetch2", Op.DESCRIBE)]),
    ("DescribeGroups needs DESCRIBE on the group", DescribeGroupsRequest(groups=["g-desc"]), 5,
     [acl(GROUP, "g-desc", Op.DESCRIBE)], GROUP_AUTH),
    ("DeleteGroups needs DELETE on the group", DeleteGroupsRequest(groups_names=["g-del"]), 2,
     [acl(GROUP, "g-del", Op.DELETE)], GROUP_AUTH),
    ("OffsetDelete needs DELETE on the group", OffsetDeleteRequest(group_id="g-offdel", topics=[
        OffsetDeleteRequestTopic(name="t-commit", partitions=[OffsetDeleteRequestPartition(partition_index=0)])]), 0,
     [acl(GROUP, "g-offdel", Op.DELETE), acl(TOPIC, "t-commit", Op.READ)], GROUP_AUTH),
    ("ConsumerGroupHeartbeat needs READ on the group", ConsumerGroupHeartbeatRequest(
        group_id="g-cgh", member_id=str(uuid.uuid4()), member_epoch=0, rebalance_timeout_ms=10_000,
        subscribed_topic_names=["t-commit"], topic_partitions=[]), 0,
     [acl(GROUP, "g-cgh", Op.READ), acl(TOPIC, "t-commit", Op.DESCRIBE)], GROUP_AUTH),
    ("ConsumerGroupHeartbeat needs DESCRIBE on each subscribed topic", ConsumerGroupHeartbeatRequest(
        group_id="g-cgh2", member_id=str(uuid.uuid4()), member_epoch=0, rebalance_timeout_ms=10_000,
        subscribed_topic_names=["t-commit"], topic_partitions=[]), 0,
     [acl(GROUP, "g-cgh2", Op.READ), acl(TOPIC, "t-commit", Op.DESCRIBE)], TOPIC_AUTH,
     [acl(GROUP, "g-cgh2", Op.READ)]),
    ("ConsumerGroupDescribe needs DESCRIBE on the group", ConsumerGroupDescribeRequest(group_ids=["g-cgd"]), 0,
     [acl(GROUP, "g-cgd", Op.DESCRIBE)], GROUP_AUTH),
    ("ShareGroupHeartbeat needs READ on the group", ShareGroupHeartbeatRequest(
        group_id="g-sgh", member_id=str(uuid.uuid4()), member_epoch=0, subscribed_topic_names=["t-commit"]), 1,
     [acl(GROUP, "g-sgh", Op.READ), acl(TOPIC, "t-commit", Op.DESCRIBE)], GROUP_AUTH),
    ("ShareGroupHeartbeat needs DESCRIBE on each subscribed topic", ShareGroupHeartbeatRequest(
        group_id="g-sgh2", member_id=str(uuid.uuid4()), member_epoch=0, subscribed_topic_names=["t-commit"]), 1,
     [acl(GROUP, "g-sgh2", Op.READ), acl(TOPIC, "t-commit", Op.DESCRIBE)], TOPIC_AUTH,
     [acl(GROUP, "g-sgh2", Op.READ)]),
    ("ShareGroupDescribe needs DESCRIBE on the group", ShareGroupDescribeRequest(group_ids=["g-sgd"]), 1,
     [acl(GROUP, "g-sgd", Op.DESCRIBE)], GROUP_AUTH),
    ("ShareFetch needs READ on the group", ShareFetchRequest(
        group_id="g-sf-{user}", member_id=str(uuid.uuid4()), share_session_epoch=0, max_records=10, batch_size=10,
        topics=[], forgotten_topics_data=[]), 2, [acl(GROUP, "g-sf-{user}", Op.READ)], GROUP_AUTH),
    ("ShareAcknowledge needs READ on the group", ShareAcknowledgeRequest(
        group_id="g-sa", member_id=str(uuid.uuid4()), share_session_epoch=-1, topics=[]), 2,
     [acl(GROUP, "g-sa", Op.READ)], GROUP_AUTH),
    ("DescribeShareGroupOffsets needs DESCRIBE on the group", describe_share_offsets("g-dsgo"), 1,
     [acl(GROUP, "g-dsgo", Op.DESCRIBE), acl(TOPIC, "t-commit", Op.DESCRIBE)], GROUP_AUTH),
    ("DescribeShareGroupOffsets needs DESCRIBE on each named topic", describe_share_offsets("g-dsgo2"), 1,
     [acl(GROUP, "g-dsgo2", Op.DESCRIBE), acl(TOPIC, "t-commit", Op.DESCRIBE)], TOPIC_AUTH,
     [acl(GROUP, "g-dsgo2", Op.DESCRIBE)]),
    ("AlterShareGroupOffsets needs READ on the group", alter_share_offsets("g-asgo"), 0,
     [acl(GROUP, "g-asgo", Op.READ), acl(TOPIC, "t-commit", Op.READ)], GROUP_AUTH),
    ("AlterShareGroupOffsets needs READ on each topic", alter_share_offsets("g-asgo2"), 0,
     [acl(GROUP, "g-asgo2", Op.READ), acl(TOPIC, "t-commit", Op.READ)], TOPIC_AUTH,
     [acl(GROUP, "g-asgo2", Op.READ)]),
    ("DeleteShareGroupOffsets needs DELETE on the group", DeleteShareGroupOffsetsRequest(
        group_id="g-dlsgo", topics=[DeleteShareGroupOffsetsRequestTopic(topic_name="t-commit")]), 0,
     [acl(GROUP, "g-dlsgo", Op.DELETE), acl(TOPIC, "t-commit", Op.READ)], GROUP_AUTH),
    ("StreamsGroupHeartbeat needs READ on the group", streams_join("g-sgh"), 0,
     [acl(GROUP, "g-sgh", Op.READ), acl(TOPIC, "t-commit", Op.DESCRIBE)], GROUP_AUTH),
    ("StreamsGroupHeartbeat needs DESCRIBE on each topic of the topology", streams_join("g-sgh2"), 0,
     [acl(GROUP, "g-sgh2", Op.READ), acl(TOPIC, "t-commit", Op.DESCRIBE)], TOPIC_AUTH,
     [acl(GROUP, "g-sgh2", Op.READ)]),
    ("StreamsGroupDescribe needs DESCRIBE on the group", StreamsGroupDescribeRequest(group_ids=["g-sgd"]), 0,
     [acl(GROUP, "g-sgd", Op.DESCRIBE)], GROUP_AUTH),
    ("InitProducerId with a transactional id needs WRITE on it",
     InitProducerIdRequest(transactional_id="tx-init", transaction_timeout_ms=60_000), 4,
     [acl(TXN, "tx-init", Op.WRITE)], TXN_AUTH),
    ("InitProducerId without a transactional id needs IDEMPOTENT_WRITE on the cluster",
     InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4,
     [acl(CLUSTER, CLUSTER_NAME, IDEMPOTENT_WRITE)], CLUSTER_AUTH),
    ("InitProducerId without a transactional id is also allowed by WRITE on any topic (KIP-679)",
     InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4,
     [acl(TOPIC, "t-any", Op.WRITE)], CLUSTER_AUTH),
    ("AddPartitionsToTxn needs WRITE on the transactional id", AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="tx-add", v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
        v3_and_below_topics=[AddPartitionsToTxnTopic(name="t-txn", partitions=[0])]), 3,
     [acl(TXN, "tx-add", Op.WRITE), acl(TOPIC, "t-txn", Op.WRITE)], TXN_AUTH),
    ("AddPartitionsToTxn needs WRITE on each topic", AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="tx-add2", v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
        v3_and_below_topics=[AddPartitionsToTxnTopic(name="t-txn", partitions=[0])]), 3,
     [acl(TXN, "tx-add2", Op.WRITE), acl(TOPIC, "t-txn", Op.WRITE)], TOPIC_AUTH, [acl(TXN, "tx-add2", Op.WRITE)]),
    ("AddPartitionsToTxn v4+ (from brokers) needs CLUSTER_ACTION on the cluster",
     AddPartitionsToTxnRequest(transactions=[]), 5, [acl(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)], CLUSTER_AUTH),
    ("AddOffsetsToTxn needs WRITE on the transactional id", AddOffsetsToTxnRequest(
        transactional_id="tx-off", producer_id=1, producer_epoch=0, group_id="g-txn"), 3,
     [acl(TXN, "tx-off", Op.WRITE), acl(GROUP, "g-txn", Op.READ)], TXN_AUTH),
    ("AddOffsetsToTxn needs READ on the group", AddOffsetsToTxnRequest(
        transactional_id="tx-off2", producer_id=1, producer_epoch=0, group_id="g-txn"), 3,
     [acl(TXN, "tx-off2", Op.WRITE), acl(GROUP, "g-txn", Op.READ)], GROUP_AUTH, [acl(TXN, "tx-off2", Op.WRITE)]),
    ("EndTxn needs WRITE on the transactional id",
     EndTxnRequest(transactional_id="tx-end", producer_id=1, producer_epoch=0, committed=True), 4,
     [acl(TXN, "tx-end", Op.WRITE)], TXN_AUTH),
    ("TxnOffsetCommit needs WRITE on the transactional id, READ on the group and topics",
     txn_offset_commit("tx-toc", "g-toc", "t-commit"), 3,
     [acl(TXN, "tx-toc", Op.WRITE), acl(GROUP, "g-toc", Op.READ), acl(TOPIC, "t-commit", Op.READ)], TXN_AUTH),
    ("TxnOffsetCommit needs READ on each topic", txn_offset_commit("tx-toc2", "g-toc2", "t-commit"), 3,
     [acl(TXN, "tx-toc2", Op.WRITE), acl(GROUP, "g-toc2", Op.READ), acl(TOPIC, "t-commit", Op.READ)], TOPIC_AUTH,
     [acl(TXN, "tx-toc2", Op.WRITE), acl(GROUP, "g-toc2", Op.READ)]),
    ("WriteTxnMarkers needs CLUSTER_ACTION (or ALTER) on the cluster", WriteTxnMarkersRequest(markers=[
        WritableTxnMarker(producer_id=1, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
                          topics=[WritableTxnMarkerTopic(name="t-txn", partition_indexes=[0])])]), 1,
     [acl(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)], CLUSTER_AUTH),
    *[(f"{request.NAME} needs CLUSTER_ACTION on the cluster (a share coordinator API)", request, 0,
       [acl(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)], CLUSTER_AUTH) for request in share_state_requests()],
    ("FindCoordinator of a share-partition key needs CLUSTER_ACTION on the cluster", FindCoordinatorRequest(
        key_type=2, coordinator_keys=[f"g-share:{SHARE_TOPIC_ID}:0"]), 6,
     [acl(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)], CLUSTER_AUTH),
    ("DescribeTransactions needs DESCRIBE on the transactional id",
     DescribeTransactionsRequest(transactional_ids=["tx-desc"]), 0, [acl(TXN, "tx-desc", Op.DESCRIBE)], TXN_AUTH),
    ("DescribeTopicPartitions of a named topic needs DESCRIBE on it", DescribeTopicPartitionsRequest(
        topics=[DescribedTopic(name="t-meta")], response_partition_limit=2000, cursor=None), 0,
     [acl(TOPIC, "t-meta", Op.DESCRIBE)], TOPIC_AUTH),
    ("ListConfigResources needs DESCRIBE_CONFIGS on the cluster", ListConfigResourcesRequest(resource_types=[]), 1,
     [acl(CLUSTER, CLUSTER_NAME, Op.DESCRIBE_CONFIGS)], CLUSTER_AUTH),
    ("DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster",
     DescribeClientQuotasRequest(components=[], strict=False), 1, [acl(CLUSTER, CLUSTER_NAME, Op.DESCRIBE_CONFIGS)],
     CLUSTER_AUTH),
    ("DescribeUserScramCredentials needs DESCRIBE on the cluster", DescribeUserScramCredentialsRequest(users=None), 0,
     [CLUSTER_DESCRIBE], CLUSTER_AUTH),
    ("forwarded AlterUserScramCredentials needs ALTER on the cluster (the controller checks)",
     AlterUserScramCredentialsRequest(deletions=[], upsertions=[ScramCredentialUpsertion(
         name="scram-user", mechanism=1, iterations=4096, salt=b"salt", salted_password=b"x" * 32)]), 0,
     [acl(CLUSTER, CLUSTER_NAME, Op.ALTER)], CLUSTER_AUTH),
    ("forwarded AlterClientQuotas needs ALTER_CONFIGS on the cluster (the controller checks)",
     AlterClientQuotasRequest(validate_only=True, entries=[EntryData(
         entity=[EntityData(entity_type="user", entity_name="quota-user")],
         ops=[OpData(key="producer_byte_rate", value=1024.0, remove=False)])]), 1,
     [acl(CLUSTER, CLUSTER_NAME, Op.ALTER_CONFIGS)], CLUSTER_AUTH),
    ("forwarded UpdateFeatures needs ALTER on the cluster (the controller checks)",
     UpdateFeaturesRequest(timeout_ms=10_000, feature_updates=[], validate_only=True), 1,
     [acl(CLUSTER, CLUSTER_NAME, Op.ALTER)], CLUSTER_AUTH),
    ("forwarded UnregisterBroker needs ALTER on the cluster (the controller checks)",
     UnregisterBrokerRequest(broker_id=42), 0, [acl(CLUSTER, CLUSTER_NAME, Op.ALTER)], CLUSTER_AUTH),
    ("CreateDelegationToken for another owner needs CREATE_TOKENS on that User (the broker, then the controller)",
     CreateDelegationTokenRequest(owner_principal_type="User", owner_principal_name="token-owner"), 3,
     [acl(USER_RESOURCE, "User:token-owner", CREATE_TOKENS)], TOKEN_AUTH),
    ("DescribeAcls needs DESCRIBE on the cluster", DescribeAclsRequest(
        resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
        host_filter=None, operation=1, permission_type=1), 3, [CLUSTER_DESCRIBE], CLUSTER_AUTH),
    ("forwarded CreateAcls needs ALTER on the cluster (the controller checks)", CreateAclsRequest(creations=[
        creation("User:nobody-{user}", Op.READ, resource_type=TOPIC, name="t-acl-created")]), 3,
     [acl(CLUSTER, CLUSTER_NAME, Op.ALTER)], CLUSTER_AUTH),
    ("forwarded DeleteAcls needs ALTER on the cluster (the controller checks)", DeleteAclsRequest(filters=[
        DeleteAclsFilter(resource_type_filter=TOPIC, resource_name_filter="t-acl-none", pattern_type_filter=3,
                         principal_filter=None, host_filter=None, operation=1, permission_type=1)]), 3,
     [acl(CLUSTER, CLUSTER_NAME, Op.ALTER)], CLUSTER_AUTH),
    ("forwarded RemoveRaftVoter needs ALTER on the cluster (the controller checks)",
     RemoveRaftVoterRequest(cluster_id=None, voter_id=99, voter_directory_id=uuid.UUID(int=7)), 0,
     [acl(CLUSTER, CLUSTER_NAME, Op.ALTER)], CLUSTER_AUTH),
]


def _codes(value) -> set[int]:
    """Every error code anywhere in a response (fields named error_code or *_error_code)."""
    return error_codes(value, named_suffix=True)


def config_for(tmp_path, controller_port, broker_port):
    users = " ".join(f'user_user{i}="p"' for i in range(USERS))
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" '
            f'password="c-secret" user_controller="c-secret" user_alice="a-secret" {users};')
    return parse_server_config(f"""
node.id=1
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners=CONTROLLER://127.0.0.1:{controller_port},CLIENT://127.0.0.1:{broker_port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=CLIENT
listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,CLIENT:SASL_PLAINTEXT
sasl.enabled.mechanisms=PLAIN
sasl.mechanism.controller.protocol=PLAIN
sasl.mechanism.inter.broker.protocol=PLAIN
listener.name.controller.plain.sasl.jaas.config={jaas}
listener.name.client.plain.sasl.jaas.config={jaas}
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:controller
log.dirs={tmp_path}/data
controller.quorum.election.timeout.ms=200
broker.heartbeat.interval.ms=200
offsets.topic.num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
metric.reporters=kafkawire.metrics.ClientTelemetryExporter
share.coordinator.state.topic.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
""")


class CombinedNode(ThreadedCombinedNode):
    """The node on an event loop of its own thread, with the SASL client these tests send with."""

    def __init__(self, tmp_path):
        super().__init__(lambda controller_port, broker_port: config_for(tmp_path, controller_port, broker_port))

    async def send(self, user, password, request, version, port=None):
        async with NetworkClient(request_timeout_ms=15_000,
                                 sasl=lambda: SaslClient("PLAIN", user, password)) as client:
            return await client.send(("127.0.0.1", port or self.broker_port), request, api_version=version)


def _for_user(value, user: str):
    """The row's request (or ACL) with ``{user}`` in its names filled in, so rows that change
    state (create a topic, join a group) do not meet another principal's doing."""
    import copy
    if isinstance(value, tuple):
        return tuple(v.format(user=user) if isinstance(v, str) else v for v in value)
    request = copy.deepcopy(value)
    for topic in getattr(request, "topics", None) or []:
        if isinstance(getattr(topic, "name", None), str):
            topic.name = topic.name.format(user=user)
    if isinstance(getattr(request, "group_id", None), str):
        request.group_id = request.group_id.format(user=user)
    return request


def started_node(tmp_path, setup):
    """A CombinedNode started, ``setup(node)`` run on its loop; stopped when the block ends."""
    return started(CombinedNode(tmp_path), setup)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with started_node(tmp_path_factory.mktemp("acl-broker"), _setup) as combined:
        yield combined


TOPICS = ["t-produce", "t-fetch", "t-list", "t-meta", "t-epoch", "t-delrec", "t-producers", "t-conf", "t-commit",
          "t-txn"]


async def _setup(node):
    created = await node.send("controller", "c-secret", CreateTopicsRequest(timeout_ms=10_000, topics=[
        CreatableTopic(name=t, num_partitions=1, replication_factor=1) for t in TOPICS]), 7)
    assert {(t.name, t.error_code) for t in created.topics} == {(t, 0) for t in TOPICS}
    await wait_for(lambda: all((t, 0) in node.broker.partitions for t in TOPICS), "the topics' logs")
    await _coordinators_ready(node)
    creations = []
    for i, row in enumerate(RULES):
        grants = row[5] if len(row) > 5 else row[3]      # a partial row: only some of its ACLs
        creations += [creation(f"User:user{i}", op, resource_type=kind, name=name)
                      for kind, name, op in (_for_user(g, f"user{i}") for g in grants)]
    granted = await node.send("controller", "c-secret", CreateAclsRequest(creations=creations), 3,
                              port=node.controller_port)
    assert _codes(granted) == {0}


async def _coordinators_ready(node) -> None:
    """The group and transaction coordinators up before any test (the first FindCoordinator of
    each kind creates its topic), so that a test finds them whichever tests ran before it, or
    none (alone, or on another xdist worker)."""
    for key_type in (0, 1):                     # GROUP, TRANSACTION
        for _ in range(400):
            found = await node.send("controller", "c-secret", FindCoordinatorRequest(
                key_type=key_type, coordinator_keys=["ready"]), 4)
            if found.coordinators[0].error_code == 0 and node.broker.group_apis._all_loaded():
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"no coordinator of key type {key_type}: {found}")


@pytest.mark.parametrize("index", range(len(RULES)), ids=[row[0] for row in RULES])
def test_the_rule_refuses_a_principal_without_the_acl_and_serves_one_with_it_and_a_super_user(node, index):
    row = RULES[index]
    rule, request, version, grants, refusal = row[:5]
    partial = len(row) > 5           # the user has only part of the ACLs: it is the one refused
    refused_user = (f"user{index}", "p") if partial else ("alice", "a-secret")
    refused = node.call(node.send(*refused_user, _for_user(request, refused_user[0]), version))
    assert refusal in _codes(refused), f"{rule}: {refused}"
    if not partial:
        allowed = node.call(node.send(f"user{index}", "p", _for_user(request, f"user{index}"), version))
        assert not _codes(allowed) & AUTH_ERRORS, f"{rule}: refused with its ACLs: {allowed}"
    superuser = node.call(node.send("controller", "c-secret", _for_user(request, "controller"), version))
    assert not _codes(superuser) & AUTH_ERRORS, f"{rule}: refused the super user: {superuser}"


EXTRA_USER = f"user{len(RULES)}"       # a user no row grants anything to; the tests below grant it ACLs
METADATA_ROW = next(i for i, row in enumerate(RULES) if row[0].startswith("Metadata of a named topic"))
LOG_DIRS_ROW = next(i for i, row in enumerate(RULES) if row[0].startswith("DescribeLogDirs"))


def grant(node, user, *acls):
    granted = node.call(node.send("controller", "c-secret", CreateAclsRequest(creations=[
        creation(f"User:{user}", op, resource_type=kind, name=name) for kind, name, op in acls]), 3,
        port=node.controller_port))
    assert _codes(granted) == {0}


def test_metadata_of_every_topic_lists_only_the_topics_the_principal_may_describe(node):
    def listed(user, password):
        response = node.call(node.send(user, password, MetadataRequest(topics=None), 12))
        return {t.name for t in response.topics}
    assert listed("alice", "a-secret") == set()
    assert listed(f"user{METADATA_ROW}", "p") == {"t-meta"}
    assert set(TOPICS) <= listed("controller", "c-secret")


def test_list_groups_shows_the_groups_with_describe_or_every_group_with_describe_on_the_cluster(node):
    joined = node.call(node.send("controller", "c-secret", join("g-listed"), 9))
    assert joined.error_code in (Errors.NONE, Errors.MEMBER_ID_REQUIRED), joined
    grant(node, EXTRA_USER, acl(GROUP, "g-listed", Op.DESCRIBE))

    def listed(user, password):
        return {g.group_id for g in node.call(node.send(user, password, ListGroupsRequest(), 4)).groups}
    assert listed("alice", "a-secret") == set()
    assert listed(EXTRA_USER, "p") == {"g-listed"}
    assert "g-listed" in listed(f"user{LOG_DIRS_ROW}", "p")           # DESCRIBE on the cluster


def test_list_and_describe_transactions_show_only_transactional_ids_and_topics_the_principal_may_describe(node):
    async def init():
        while True:        # the coordinator loads __transaction_state first (bounded by node.call's timeout)
            answer = await node.send("controller", "c-secret", InitProducerIdRequest(
                transactional_id="tx-listed", transaction_timeout_ms=60_000), 4)
            if answer.error_code == Errors.NONE:
                return answer
            await asyncio.sleep(0.05)
    node.call(init())
    grant(node, EXTRA_USER, acl(TXN, "tx-listed", Op.DESCRIBE))

    def listed(user, password):
        response = node.call(node.send(user, password, ListTransactionsRequest(state_filters=[], producer_id_filters=[]),
                                       1))
        return {t.transactional_id for t in response.transaction_states}
    assert listed("alice", "a-secret") == set()
    assert listed(EXTRA_USER, "p") == {"tx-listed"}
    described = node.call(node.send(EXTRA_USER, "p", DescribeTransactionsRequest(transactional_ids=["tx-listed"]), 0))
    assert [(t.transactional_id, t.error_code) for t in described.transaction_states] == [("tx-listed", 0)]


def test_every_api_the_broker_serves_has_kafkas_rule_or_is_forwarded_to_the_controllers_check(node):
    from kafkawire.broker.authorization import FORWARDED_UNCHECKED, KAFKA_BROKER_API_RULES, SASL_UNCHECKED
    served = set(node.broker._handlers())
    assert not served - set(KAFKA_BROKER_API_RULES) - FORWARDED_UNCHECKED - SASL_UNCHECKED


def test_client_telemetry_needs_no_acl_only_authentication(node):
    """GetTelemetrySubscriptions and PushTelemetry (served: the node takes client telemetry) ask
    the authorizer nothing, as KafkaApis' handlers: a principal with no ACL gets its subscription."""
    manager = node.broker.telemetry.manager

    async def subscribed():
        """The answer and the instance's attributes, read while its connection is open."""
        async with NetworkClient(request_timeout_ms=15_000, sasl=lambda: SaslClient("PLAIN", "alice", "a-secret")) \
                as client:
            answer = await client.send(("127.0.0.1", node.broker_port), GetTelemetrySubscriptionsRequest(),
                                       api_version=0)
            pushed = await client.send(("127.0.0.1", node.broker_port), PushTelemetryRequest(
                client_instance_id=answer.client_instance_id, subscription_id=answer.subscription_id,
                compression_type=GZIP, metrics=compress(GZIP, PAYLOAD)), api_version=0)
            return answer, pushed, dict(manager.instances[answer.client_instance_id].attributes)
    answer, pushed, attributes = node.call(subscribed())
    assert answer.error_code == 0 and answer.client_instance_id.int != 0 and pushed.error_code == 0
    (exporter,) = node.broker.telemetry.exporters
    assert uuid_to_kafka_string(answer.client_instance_id) in exporter.latest      # decoded and kept
    # made from its connection's ApiVersions (KIP-511's software name, NetworkClient's)
    assert (attributes["client_software_name"], attributes["client_software_version"]) == ("kafkawire", "0.1.0")
    # and gone when that connection closed (Kafka's ConnectionDisconnectListener)
    node.call(wait_for(lambda: answer.client_instance_id not in manager.instances, "the instance gone with its connection"))


def test_an_incremental_fetch_refuses_a_session_partition_whose_read_acl_was_removed(node):
    """Kafka checks every partition of the fetch context, the session's too: a consumer whose
    READ was revoked gets TOPIC_AUTHORIZATION_FAILED, not the records produced since."""
    from kafkawire.messages.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
    user = f"user{len(RULES) + 1}"
    grant(node, user, acl(TOPIC, "t-fetch", Op.READ))
    first = fetch("t-fetch")
    first.session_epoch = 0                         # a full fetch that opens a session
    opened = node.call(node.send(user, "p", first, 12))
    assert opened.error_code == 0 and opened.session_id != 0, opened
    revoked = node.call(node.send("controller", "c-secret", DeleteAclsRequest(filters=[DeleteAclsFilter(
        resource_type_filter=TOPIC, resource_name_filter="t-fetch", pattern_type_filter=3,
        principal_filter=f"User:{user}", host_filter=None, operation=Op.READ, permission_type=3)]), 3,
        port=node.controller_port))
    assert _codes(revoked) == {0}
    produced = node.call(node.send("controller", "c-secret", produce("t-fetch"), 9))
    assert _codes(produced) == {0}
    incremental = fetch("t-fetch")
    incremental.session_id, incremental.session_epoch, incremental.topics = opened.session_id, 1, []
    answer = node.call(node.send(user, "p", incremental, 12))
    partitions = [(t.topic, p.error_code, bytes(p.records or b"")) for t in answer.responses for p in t.partitions]
    assert partitions == [("t-fetch", TOPIC_AUTH, b"")], answer
    latest = node.call(node.send("controller", "c-secret", ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(
        name="t-fetch", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 7))
    caught_up = fetch("t-fetch")                    # the session's partition moved to the log end: nothing new
    caught_up.topics[0].partitions[0].fetch_offset = latest.topics[0].partitions[0].offset
    for epoch, incremental.topics in ((2, caught_up.topics), (3, [])):      # refused again, in every answer
        incremental.session_epoch = epoch
        answer = node.call(node.send(user, "p", incremental, 12))
        partitions = [(t.topic, p.error_code, bytes(p.records or b"")) for t in answer.responses for p in t.partitions]
        assert partitions == [("t-fetch", TOPIC_AUTH, b"")], answer


def test_a_denied_request_is_logged_as_kafkas_authorizer_logs_it(node, caplog):
    caplog.set_level("INFO", logger="kafkawire.authorizer")
    node.call(node.send("alice", "a-secret", produce("t-produce"), 9))
    assert ("Principal = User:alice is Denied operation = WRITE from host = 127.0.0.1 on resource = "
            "Topic:LITERAL:t-produce for request = Produce") in caplog.text


def test_acls_created_and_deleted_through_the_broker_are_described_by_the_broker(node):
    """CreateAcls and DeleteAcls on the broker listener go to the controller; DescribeAcls is
    answered from the broker's image, once the ACL records reached it."""
    def described():
        response = node.call(node.send("controller", "c-secret", DescribeAclsRequest(
            resource_type_filter=TOPIC, resource_name_filter="t-described", pattern_type_filter=3,
            principal_filter=None, host_filter=None, operation=1, permission_type=1), 3))
        assert response.error_code == Errors.NONE, response
        return [(r.resource_name, a.principal, a.operation) for r in response.resources for a in r.acls]

    created = node.call(node.send("controller", "c-secret", CreateAclsRequest(creations=[
        creation("User:reader", Op.READ, resource_type=TOPIC, name="t-described")]), 3))
    assert _codes(created) == {0}
    until(lambda: described() == [("t-described", "User:reader", Op.READ)], "the ACL on the broker")
    deleted = node.call(node.send("controller", "c-secret", DeleteAclsRequest(filters=[DeleteAclsFilter(
        resource_type_filter=TOPIC, resource_name_filter="t-described", pattern_type_filter=3, principal_filter=None,
        host_filter=None, operation=1, permission_type=1)]), 3))
    assert [[m.principal for m in r.matching_acls] for r in deleted.filter_results] == [["User:reader"]]
    until(lambda: described() == [], "the ACL gone from the broker")


def until(predicate, what, bound_s=20):
    """Ask ``predicate`` (which talks to the node) until it holds, within ``bound_s``."""
    import time
    deadline = time.monotonic() + bound_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.02)


def test_a_share_fetch_refuses_a_partition_of_a_topic_without_read(node):
    """ShareFetch: READ on the group lets the request in; each partition of a topic the principal
    may not READ is TOPIC_AUTHORIZATION_FAILED, as SharePartitionManager's are."""
    from kafkawire.messages.share_fetch_request import FetchPartition as SharePartition, FetchTopic as ShareTopic
    user = f"user{len(RULES) + 2}"
    grant(node, user, acl(GROUP, "g-sf-topic", Op.READ))
    topic_id = node.broker.image().topics_by_name["t-fetch"].id
    request = ShareFetchRequest(group_id="g-sf-topic", member_id=str(uuid.uuid4()), share_session_epoch=0,
                                max_records=10, batch_size=10, topics=[ShareTopic(topic_id=topic_id, partitions=[
                                    SharePartition(partition_index=0)])], forgotten_topics_data=[])
    refused = node.call(node.send(user, "p", request, 2))
    assert refused.error_code == 0 and _codes(refused) == {0, TOPIC_AUTH}, refused
    grant(node, user, acl(TOPIC, "t-fetch", Op.READ))
    allowed = node.call(node.send(user, "p", request, 2))
    # let in: no group coordinator initialized the share-partition (the member was never assigned
    # it), so the leader refuses it as Kafka's does (UNKNOWN_SERVER_ERROR)
    assert _codes(allowed) == {0, Errors.UNKNOWN_SERVER_ERROR}, allowed


def test_a_streams_member_without_create_is_told_which_internal_topics_it_may_not_create(node):
    """KafkaApis.handleStreamsGroupHeartbeat: the internal topics a group needs are created only
    with CREATE on the cluster or on each topic; otherwise MISSING_INTERNAL_TOPICS says so."""
    user = f"user{len(RULES) + 3}"
    grant(node, user, (GROUP, "g-sg-create", Op.READ), (TOPIC, "t-commit", Op.DESCRIBE),
          (TOPIC, "g-sg-store-changelog", Op.DESCRIBE))
    answer = node.call(node.send(user, "p", streams_join("g-sg-create", "g-sg-store-changelog"), 0))
    assert answer.error_code == 0, answer
    assert [(s.status_code, s.status_detail) for s in answer.status] == [
        (5, "Assignment delayed due to the configured initial rebalance delay."),      # a new group: Kafka's 3 s
        (3, "Internal topics are missing: g-sg-store-changelog; Unauthorized to CREATE on topics "
            "g-sg-store-changelog.")]
    assert "g-sg-store-changelog" not in node.broker.image().topics_by_name


def test_delete_share_group_offsets_refuses_a_topic_without_read(node):
    """DeleteShareGroupOffsets: DELETE on the group lets the request in; a topic the principal may
    not READ is TOPIC_AUTHORIZATION_FAILED (KafkaApis answers it only when the coordinator accepts
    the request: the group must exist and be Empty, so a super user makes it and leaves)."""
    user, member = f"user{len(RULES) + 4}", str(uuid.uuid4())

    def joined():
        return node.call(node.send("controller", "c-secret", ShareGroupHeartbeatRequest(
            group_id="g-dlsgo-topic", member_id=member, member_epoch=0, subscribed_topic_names=["t-commit"]),
            1)).error_code == 0
    until(joined, "the share group made on its coordinator")

    def initialized():                 # the group coordinator initialized t-commit's share-partitions
        answer = node.call(node.send("controller", "c-secret", ShareGroupHeartbeatRequest(
            group_id="g-dlsgo-topic", member_id=member, member_epoch=1), 1))
        return answer.assignment is not None and bool(answer.assignment.topic_partitions)
    until(initialized, "the share-partitions initialized and assigned")
    left = node.call(node.send("controller", "c-secret", ShareGroupHeartbeatRequest(
        group_id="g-dlsgo-topic", member_id=member, member_epoch=-1), 1))
    assert left.error_code == 0, left
    grant(node, user, acl(GROUP, "g-dlsgo-topic", Op.DELETE))
    request = DeleteShareGroupOffsetsRequest(group_id="g-dlsgo-topic", topics=[
        DeleteShareGroupOffsetsRequestTopic(topic_name="t-commit")])
    refused = node.call(node.send(user, "p", request, 0))
    assert refused.error_code == 0 and [(t.topic_name, t.error_code) for t in refused.responses] == [
        ("t-commit", TOPIC_AUTH)], refused
    grant(node, user, acl(TOPIC, "t-commit", Op.READ))
    allowed = node.call(node.send(user, "p", request, 0))        # the initialized state is deleted
    assert [(t.topic_name, t.error_code) for t in allowed.responses] == [("t-commit", 0)], allowed
    again = node.call(node.send(user, "p", request, 0))          # none left: no offsets to delete
    assert [(t.topic_name, t.error_code) for t in again.responses] == [("t-commit", 3)], again
