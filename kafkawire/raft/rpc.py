"""Building and reading the KRaft RPCs for the one partition, __cluster_metadata-0.

Kafka's RaftUtil: every quorum RPC is shaped like Fetch (topics, then partitions) even though
KRaft has one partition; these helpers build the singleton forms and pick the partition out
of a received one, returning None when the request is for another topic or partition.
"""
from __future__ import annotations

from kafkawire.messages import (begin_quorum_epoch_request as bqe_req, begin_quorum_epoch_response as bqe_resp,
                                describe_quorum_response as dq_resp, end_quorum_epoch_request as eqe_req,
                                end_quorum_epoch_response as eqe_resp, fetch_request as f_req,
                                fetch_response as f_resp, fetch_snapshot_request as fs_req,
                                fetch_snapshot_response as fs_resp, vote_request as v_req,
                                vote_response as v_resp)
from kafkawire.protocol.error_codes import Errors

from .types import METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID, NO_DIRECTORY_ID, Endpoints, ReplicaKey

NONE = int(Errors.NONE)


# --- picking the partition ------------------------------------------------------------------------

def single_partition(topics, *, name_attr: str | None = "topic_name", partition_attr: str = "partition_index",
                     partitions_attr: str = "partitions", topic_id_attr: str | None = None):
    """The partition data of __cluster_metadata-0 if it is the only one, else None."""
    if len(topics) != 1:
        return None
    topic = topics[0]
    parts = getattr(topic, partitions_attr)
    if len(parts) != 1 or getattr(parts[0], partition_attr) != METADATA_PARTITION:
        return None
    name = getattr(topic, name_attr, None) if name_attr else None
    topic_id = getattr(topic, topic_id_attr, None) if topic_id_attr else None
    if name != METADATA_TOPIC and topic_id != METADATA_TOPIC_ID:
        return None
    return parts[0]


def fetch_partition(request):
    """By topic id alone, as Kafka's RaftUtil.hasValidTopicPartition for Fetch: a fetch below
    v13 (which has no TopicId) names no partition of ours and is a top-level INVALID_REQUEST,
    which v4-v6 cannot carry (an empty response), whatever topic name it gives."""
    return single_partition(request.topics, name_attr=None, partition_attr="partition",
                            topic_id_attr="topic_id")


def fetch_response_partition(response):
    return single_partition(response.responses, name_attr="topic", topic_id_attr="topic_id")


def fetch_snapshot_partition(request):
    return single_partition(request.topics, name_attr="name", partition_attr="partition")


def fetch_snapshot_response_partition(response):
    return single_partition(response.topics, name_attr="name", partition_attr="index")


# --- endpoints ------------------------------------------------------------------------------------

def node_endpoints_for(message_module, leader_id: int | None, endpoints: Endpoints, listener: str, *,
                       with_rack: bool = False) -> list:
    """The response's NodeEndpoints entry for the leader on the listener the request came in on."""
    if leader_id is None or leader_id < 0:
        return []
    address = endpoints.address(listener)
    if address is None:
        return []
    fields = dict(node_id=leader_id, host=address[0], port=address[1])
    if with_rack:
        fields["rack"] = None
    return [message_module.NodeEndpoint(**fields)]


def endpoints_from_response(node_endpoints, leader_id: int | None, listener: str) -> Endpoints:
    if leader_id is None:
        return Endpoints()
    for e in node_endpoints:
        if e.node_id == leader_id:
            return Endpoints(((listener, e.host, e.port),))
    return Endpoints()


def leader_endpoints_field(module, endpoints: Endpoints) -> list:
    return [module.LeaderEndpoint(name=name, host=host, port=port) for name, host, port in endpoints.listeners]


def endpoints_from_leader_field(leader_endpoints) -> Endpoints:
    return Endpoints(tuple((e.name, e.host, e.port) for e in leader_endpoints))


# --- Vote --------------------------------------------------------------------------------------------

def vote_request(cluster_id: str | None, epoch: int, candidate: ReplicaKey, voter: ReplicaKey,
                 last_epoch: int, last_offset: int, pre_vote: bool):
    return v_req.VoteRequest(
        cluster_id=cluster_id, voter_id=voter.id,
        topics=[v_req.TopicData(topic_name=METADATA_TOPIC, partitions=[v_req.PartitionData(
            partition_index=METADATA_PARTITION, replica_epoch=epoch, replica_id=candidate.id,
            replica_directory_id=candidate.wire_directory_id, voter_directory_id=voter.wire_directory_id,
            last_offset_epoch=last_epoch, last_offset=last_offset, pre_vote=pre_vote)])])


def vote_response(top_error: int, error: int = NONE, epoch: int = -1, leader_id: int | None = None,
                  granted: bool = False, endpoints: Endpoints = Endpoints(), listener: str = "",
                  api_version: int = 0):
    response = v_resp.VoteResponse(error_code=top_error)
    if top_error != NONE:
        return response
    response.topics = [v_resp.TopicData(topic_name=METADATA_TOPIC, partitions=[v_resp.PartitionData(
        partition_index=METADATA_PARTITION, error_code=error, leader_id=-1 if leader_id is None else leader_id,
        leader_epoch=epoch, vote_granted=granted)])]
    if api_version >= 1:
        response.node_endpoints = node_endpoints_for(v_resp, leader_id, endpoints, listener)
    return response


# --- BeginQuorumEpoch / EndQuorumEpoch ----------------------------------------------------------------

def begin_quorum_epoch_request(cluster_id: str | None, epoch: int, leader_id: int, voter: ReplicaKey,
                               leader_endpoints: Endpoints):
    return bqe_req.BeginQuorumEpochRequest(
        cluster_id=cluster_id, voter_id=voter.id,
        topics=[bqe_req.TopicData(topic_name=METADATA_TOPIC, partitions=[bqe_req.PartitionData(
            partition_index=METADATA_PARTITION, voter_directory_id=voter.wire_directory_id,
            leader_id=leader_id, leader_epoch=epoch)])],
        leader_endpoints=leader_endpoints_field(bqe_req, leader_endpoints))


def _epoch_announcement_response(module, response, top_error: int, error: int, epoch: int, leader_id: int | None,
                                 endpoints: Endpoints, listener: str, api_version: int):
    """BeginQuorumEpoch and EndQuorumEpoch answer alike: a top-level error alone, or the one
    partition with the leader as we know it (and its endpoints from v1)."""
    if top_error != NONE:
        return response
    response.topics = [module.TopicData(topic_name=METADATA_TOPIC, partitions=[module.PartitionData(
        partition_index=METADATA_PARTITION, error_code=error, leader_id=-1 if leader_id is None else leader_id,
        leader_epoch=epoch)])]
    if api_version >= 1:
        response.node_endpoints = node_endpoints_for(module, leader_id, endpoints, listener)
    return response


def begin_quorum_epoch_response(top_error: int, error: int = NONE, epoch: int = -1, leader_id: int | None = None,
                                endpoints: Endpoints = Endpoints(), listener: str = "", api_version: int = 0):
    return _epoch_announcement_response(bqe_resp, bqe_resp.BeginQuorumEpochResponse(error_code=top_error), top_error,
                                        error, epoch, leader_id, endpoints, listener, api_version)


def end_quorum_epoch_request(cluster_id: str | None, epoch: int, leader_id: int,
                             successors: tuple[ReplicaKey, ...], leader_endpoints: Endpoints):
    return eqe_req.EndQuorumEpochRequest(
        cluster_id=cluster_id,
        topics=[eqe_req.TopicData(topic_name=METADATA_TOPIC, partitions=[eqe_req.PartitionData(
            partition_index=METADATA_PARTITION, leader_id=leader_id, leader_epoch=epoch,
            preferred_successors=[k.id for k in successors],
            preferred_candidates=[eqe_req.ReplicaInfo(candidate_id=k.id, candidate_directory_id=k.wire_directory_id)
                                  for k in successors])])],
        leader_endpoints=leader_endpoints_field(eqe_req, leader_endpoints))


def end_quorum_epoch_response(top_error: int, error: int = NONE, epoch: int = -1, leader_id: int | None = None,
                              endpoints: Endpoints = Endpoints(), listener: str = "", api_version: int = 0):
    return _epoch_announcement_response(eqe_resp, eqe_resp.EndQuorumEpochResponse(error_code=top_error), top_error,
                                        error, epoch, leader_id, endpoints, listener, api_version)


# --- Fetch ---------------------------------------------------------------------------------------------

def fetch_request(cluster_id: str | None, replica: ReplicaKey, epoch: int, fetch_offset: int,
                  last_fetched_epoch: int, max_wait_ms: int, max_bytes: int, high_watermark: int = -1):
    """``high_watermark``: the one the fetcher knows, -1 if none (Fetch v18, KIP-1166): a leader
    that knows a higher one answers at once instead of parking the fetch."""
    return f_req.FetchRequest(
        cluster_id=cluster_id, replica_state=f_req.ReplicaState(replica_id=replica.id),
        max_wait_ms=max_wait_ms, min_bytes=0, max_bytes=max_bytes,
        topics=[f_req.FetchTopic(topic=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID, partitions=[f_req.FetchPartition(
            partition=METADATA_PARTITION, current_leader_epoch=epoch, fetch_offset=fetch_offset,
            last_fetched_epoch=last_fetched_epoch, partition_max_bytes=max_bytes,
            replica_directory_id=replica.wire_directory_id, high_watermark=high_watermark)])])


def fetch_replica_id(request) -> int:
    """ReplicaState.ReplicaId since v15, the top-level ReplicaId before (KIP-903)."""
    if request.replica_state.replica_id >= 0:
        return request.replica_state.replica_id
    return request.replica_id


def adapt_request_for_version(body, api_version: int):
    """What Kafka's request builders do per version: Fetch below v15 carries the replica id
    at the top level instead of in the ReplicaState tag."""
    if isinstance(body, f_req.FetchRequest) and api_version < 15 and body.replica_state.replica_id >= 0:
        body.replica_id = body.replica_state.replica_id
        body.replica_state = f_req.ReplicaState()
    return body


def fetch_response(top_error: int, *, error: int = NONE, high_watermark: int = -1, log_start_offset: int = -1,
                   records=None, diverging=None, snapshot_id=None, leader_id: int | None = None, epoch: int = -1,
                   endpoints: Endpoints = Endpoints(), listener: str = "", api_version: int = 17):
    response = f_resp.FetchResponse(error_code=top_error)
    if top_error != NONE:
        return response
    partition = f_resp.PartitionData(
        partition_index=METADATA_PARTITION, error_code=error, high_watermark=high_watermark,
        log_start_offset=log_start_offset, records=records if records is not None else b"")
    # CurrentLeader, DivergingEpoch and SnapshotId are tagged fields of v12+: an older fetch (which
    # cannot carry LastFetchedEpoch either, so it is INVALID_REQUEST) gets the fields it has.
    if api_version >= 12:
        partition.current_leader = f_resp.LeaderIdAndEpoch(leader_id=-1 if leader_id is None else leader_id,
                                                           leader_epoch=epoch)
        if diverging is not None:
            partition.diverging_epoch = f_resp.EpochEndOffset(epoch=diverging.epoch, end_offset=diverging.offset)
        if snapshot_id is not None:
            partition.snapshot_id = f_resp.SnapshotId(end_offset=snapshot_id.offset, epoch=snapshot_id.epoch)
    response.responses = [f_resp.FetchableTopicResponse(topic=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID,
                                                        partitions=[partition])]
    # Kafka's RaftUtil.singletonFetchResponse names the leader's endpoint from v17 (the version
    # with ReplicaDirectoryId), though the field exists from v16.
    if api_version >= 17:
        response.node_endpoints = node_endpoints_for(f_resp, leader_id, endpoints, listener, with_rack=True)
    return response


# --- FetchSnapshot ----------------------------------------------------------------------------------------

def fetch_snapshot_request(cluster_id: str | None, replica: ReplicaKey, epoch: int, snapshot_id,
                           position: int, max_bytes: int):
    return fs_req.FetchSnapshotRequest(
        cluster_id=cluster_id, replica_id=replica.id, max_bytes=max_bytes,
        topics=[fs_req.TopicSnapshot(name=METADATA_TOPIC, partitions=[fs_req.PartitionSnapshot(
            partition=METADATA_PARTITION, current_leader_epoch=epoch,
            snapshot_id=fs_req.SnapshotId(end_offset=snapshot_id.offset, epoch=snapshot_id.epoch),
            position=position, replica_directory_id=replica.wire_directory_id)])])


def fetch_snapshot_response(top_error: int, *, error: int = NONE, snapshot_id=None, size: int = 0,
                            position: int = 0, data: bytes = b"", leader_id: int | None = None, epoch: int = -1,
                            endpoints: Endpoints = Endpoints(), listener: str = "", api_version: int = 1):
    response = fs_resp.FetchSnapshotResponse(error_code=top_error)
    if top_error != NONE:
        return response
    partition = fs_resp.PartitionSnapshot(index=METADATA_PARTITION, error_code=error, size=size, position=position,
                                          unaligned_records=data)
    if snapshot_id is not None:
        partition.snapshot_id = fs_resp.SnapshotId(end_offset=snapshot_id.offset, epoch=snapshot_id.epoch)
    partition.current_leader = fs_resp.LeaderIdAndEpoch(leader_id=-1 if leader_id is None else leader_id,
                                                        leader_epoch=epoch)
    response.topics = [fs_resp.TopicSnapshot(name=METADATA_TOPIC, partitions=[partition])]
    if api_version >= 1:
        response.node_endpoints = node_endpoints_for(fs_resp, leader_id, endpoints, listener)
    return response


# --- DescribeQuorum ----------------------------------------------------------------------------------------

def describe_quorum_response(top_error: int, *, error: int = NONE, error_message: str | None = None,
                             leader_id: int | None = None, epoch: int = -1, high_watermark: int = -1,
                             voters=(), observers=(), nodes=(), api_version: int = 2):
    response = dq_resp.DescribeQuorumResponse(error_code=top_error)
    if top_error != NONE:
        return response

    def replica(p):
        # ReplicaDirectoryId is a v2 field (Kafka's RaftUtil.toReplicaState sets it only there).
        return dq_resp.ReplicaState(replica_id=p.key.id,
                                    replica_directory_id=p.key.wire_directory_id if api_version >= 2 else NO_DIRECTORY_ID,
                                    log_end_offset=p.log_end_offset, last_fetch_timestamp=p.last_fetch_ms,
                                    last_caught_up_timestamp=p.last_caught_up_ms)
    partition = dq_resp.PartitionData(partition_index=METADATA_PARTITION, error_code=error,
                                      leader_id=-1 if leader_id is None else leader_id, leader_epoch=epoch,
                                      high_watermark=high_watermark,
                                      current_voters=[replica(p) for p in voters],
                                      observers=[replica(p) for p in observers])
    if api_version >= 2:
        partition.error_message = error_message
        response.nodes = [dq_resp.Node(node_id=node_id, listeners=[dq_resp.Listener(name=n, host=h, port=p)
                                                                   for n, h, p in endpoints.listeners])
                          for node_id, endpoints in nodes]
    response.topics = [dq_resp.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])]
    return response
