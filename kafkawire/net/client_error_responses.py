"""Kafka's getErrorResponse of the produce, fetch, metadata and transaction requests (see
kafkawire.net.error_responses): ``build(request, version, code)`` for each API key, and the
pieces the other builders share (``struct_of``, ``java_hash_map_order``)."""
from __future__ import annotations

from kafkawire.metadata.java_text import java_string_hash
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.error_codes import Errors

__all__ = ["CLIENT_ERROR_RESPONSES", "struct_of", "response_of", "java_hash_map_order", "fetch_error_response",
           "list_offsets_error_response", "offset_for_leader_epoch_error_response",
           "describe_topic_partitions_error_response"]

NO_OFFSET, NO_EPOCH = -1, -1        # INVALID_OFFSET, UNKNOWN_TIMESTAMP, NO_PRODUCER_ID, NO_PARTITION_LEADER_EPOCH...
FIND_COORDINATOR_BATCHED_VERSION = 4
ADD_PARTITIONS_TO_TXN_BROKER_VERSION = 4     # before it, a client's request answered per partition
FETCH_TOP_LEVEL_ONLY_VERSION = 13            # from it, Fetch's error is at the top only


def response_of(api_key: int, **fields):
    """A response of ``api_key`` with ``fields`` set, the rest at their defaults."""
    return api_table()[api_key].response(**fields)


def struct_of(api_key: int, *path: str):
    """The struct class of the response field at ``path`` ("topics", "partitions")."""
    cls = api_table()[api_key].response
    for name in path:
        cls = next(f.struct for f in cls._FIELDS if f.py_name == name)
    return cls


def java_hash_map_order(keys: list, hashes: list[int], initial_capacity: int = 16, *, computed: bool = False) -> list:
    """``keys`` (distinct, in insertion order, with their 32-bit ``hashCode``s) in the order a
    java.util.HashMap(initial_capacity) iterates them: by bucket (the spread hash masked by the
    table size, which doubles as the size passes 3/4 of it), then within a bucket in insertion
    order for ``put``, reversed for ``compute`` (``computed``: it puts a new key at the head of its
    bucket, and checks the size before, not after). Kafka's getErrorResponse of Produce and
    WriteTxnMarkers goes through such maps. Buckets large enough to become trees are not modelled."""
    table = 1
    while table < initial_capacity:
        table <<= 1
    while len(keys) - (1 if computed else 0) > table * 3 // 4:
        table <<= 1
    spread = [(h & 0xFFFFFFFF) ^ ((h & 0xFFFFFFFF) >> 16) for h in hashes]
    within = -1 if computed else 1
    order = sorted(range(len(keys)), key=lambda i: (spread[i] & (table - 1), within * i))
    return [keys[i] for i in order]


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _uuid_hash(uuid) -> int:                     # Uuid.hashCode
    bits = uuid.int
    xor = (bits >> 64) ^ (bits & 0xFFFFFFFFFFFFFFFF)
    return _int32((xor >> 32) ^ xor)


def _topic_partition_hash(topic: str, partition: int) -> int:       # TopicPartition.hashCode
    return _int32(31 * (31 + partition) + _int32(java_string_hash(topic)))


def _produce(request, version, code):
    """ProduceRequest.getErrorResponse: nothing for acks 0; else each partition (in the order of
    the HashMap of TopicIdPartition it computes) with -1 offsets and no message."""
    if request.acks == 0:
        return None
    hash_of: dict = {}          # each partition once, in the order first named (a dict: linear in the request)
    for topic in request.topic_data:
        for p in topic.partition_data:
            key = (topic.name, topic.topic_id, p.index)
            if key not in hash_of:
                hash_of[key] = _int32(31 * (31 + _uuid_hash(topic.topic_id)) + _topic_partition_hash(topic.name, p.index))
    keys, hashes = list(hash_of), list(hash_of.values())
    topics: dict = {}
    topic_cls, partition_cls = struct_of(0, "responses"), struct_of(0, "responses", "partition_responses")
    for name, topic_id, index in java_hash_map_order(keys, hashes, computed=True):
        topic = topics.setdefault((name, topic_id), topic_cls(name=name, topic_id=topic_id, partition_responses=[]))
        topic.partition_responses.append(partition_cls(index=index, error_code=code, base_offset=NO_OFFSET,
                                                       log_append_time_ms=NO_OFFSET, log_start_offset=NO_OFFSET,
                                                       error_message=None, record_errors=[]))
    return response_of(0, responses=list(topics.values()))


def _fetch(request, version, code):
    """FetchRequest.getErrorResponse: the error at the top with the request's session id, and
    before v13 on every partition too (-1 high watermark, empty records)."""
    topics = []
    if version < FETCH_TOP_LEVEL_ONLY_VERSION:
        topic_cls, partition_cls = struct_of(1, "responses"), struct_of(1, "responses", "partitions")
        topics = [topic_cls(topic=t.topic, topic_id=t.topic_id, partitions=[partition_cls(
            partition_index=p.partition, error_code=code, high_watermark=NO_OFFSET, records=b"") for p in t.partitions])
            for t in request.topics]
    return response_of(1, error_code=code, session_id=request.session_id, responses=topics)


def fetch_error_response(ctx, request, code: int):
    """``_fetch`` as a handler's ``error_response``."""
    return _fetch(request, ctx.api_version, code)


def _list_offsets(request, version, code):
    topic_cls, partition_cls = struct_of(2, "topics"), struct_of(2, "topics", "partitions")
    return response_of(2, topics=[topic_cls(name=t.name, partitions=[partition_cls(
        partition_index=p.partition_index, error_code=code, offset=NO_OFFSET, timestamp=NO_OFFSET)
        for p in t.partitions]) for t in request.topics])


def list_offsets_error_response(ctx, request, code: int):
    """``_list_offsets`` as a handler's ``error_response``."""
    return _list_offsets(request, ctx.api_version, code)


def _metadata(request, version, code):
    """Each topic named (a null name as ""), not internal, no partitions; the code at the top too."""
    topic_cls = struct_of(3, "topics")
    topics = [topic_cls(name=t.name if t.name is not None else "", topic_id=t.topic_id, error_code=code,
                        is_internal=False, partitions=[]) for t in request.topics or []]
    return response_of(3, topics=topics, error_code=code)


def _delete_records(request, version, code):
    topic_cls, partition_cls = struct_of(21, "topics"), struct_of(21, "topics", "partitions")
    return response_of(21, topics=[topic_cls(name=t.name, partitions=[partition_cls(
        partition_index=p.partition_index, error_code=code, low_watermark=NO_OFFSET) for p in t.partitions])
        for t in request.topics])


def _offsets_for_leader_epoch(request, version, code):
    topic_cls, partition_cls = struct_of(23, "topics"), struct_of(23, "topics", "partitions")
    return response_of(23, topics=[topic_cls(topic=t.topic, partitions=[partition_cls(
        partition=p.partition, error_code=code, leader_epoch=NO_EPOCH, end_offset=NO_OFFSET) for p in t.partitions])
        for t in request.topics])


def offset_for_leader_epoch_error_response(ctx, request, code: int):
    """``_offsets_for_leader_epoch`` as a handler's ``error_response``."""
    return _offsets_for_leader_epoch(request, ctx.api_version, code)


def _add_partitions_to_txn(request, version, code):
    """A client's request (before v4) is answered on every partition; a broker's at the top."""
    if version >= ADD_PARTITIONS_TO_TXN_BROKER_VERSION:
        return response_of(24, error_code=code)
    topic_cls = struct_of(24, "results_by_topic_v3_and_below")
    partition_cls = struct_of(24, "results_by_topic_v3_and_below", "results_by_partition")
    return response_of(24, results_by_topic_v3_and_below=[topic_cls(name=t.name, results_by_partition=[
        partition_cls(partition_index=p, partition_error_code=code) for p in t.partitions])
        for t in request.v3_and_below_topics])


def _write_txn_markers(request, version, code):
    """WriteTxnMarkersResponse of a map producer id -> (a map topic partition -> error): the
    markers in the order of a HashMap(markers) of the producer ids, each one's topics in a
    HashMap of their names, each topic's partitions in the partition map's order."""
    ids = list(dict.fromkeys(m.producer_id for m in request.markers))
    by_id: dict = {}
    for marker in request.markers:
        partitions = by_id.setdefault(marker.producer_id, {})
        for topic in marker.topics:
            for index in topic.partition_indexes:
                partitions[(topic.name, index)] = None
    marker_cls, topic_cls = struct_of(27, "markers"), struct_of(27, "markers", "topics")
    partition_cls = struct_of(27, "markers", "topics", "partitions")
    markers = []
    for producer_id in java_hash_map_order(ids, [_int32(i ^ (i >> 32)) for i in ids], len(request.markers)):
        keys = list(by_id[producer_id])
        topics: dict = {}
        for name, index in java_hash_map_order(keys, [_topic_partition_hash(n, i) for n, i in keys]):
            topics.setdefault(name, topic_cls(name=name, partitions=[])).partitions.append(
                partition_cls(partition_index=index, error_code=code))
        names = list(topics)
        markers.append(marker_cls(producer_id=producer_id, topics=[
            topics[n] for n in java_hash_map_order(names, [java_string_hash(n) for n in names])]))
    return response_of(27, markers=markers)


def _find_coordinator(request, version, code):
    """Before v4 the error and its text at the top with no node (-1, "", -1); from v4 each key."""
    message = Errors.for_code(code).message
    if version < FIND_COORDINATOR_BATCHED_VERSION:
        return response_of(10, error_code=code, error_message=message, node_id=-1, host="", port=-1)
    coordinator_cls = struct_of(10, "coordinators")
    return response_of(10, coordinators=[coordinator_cls(key=k, error_code=code, error_message=message, node_id=-1,
                                                         host="", port=-1) for k in request.coordinator_keys])


def _init_producer_id(request, version, code):
    return response_of(22, error_code=code, producer_id=NO_OFFSET, producer_epoch=NO_EPOCH)


def _describe_producers(request, version, code):
    topic_cls, partition_cls = struct_of(61, "topics"), struct_of(61, "topics", "partitions")
    return response_of(61, topics=[topic_cls(name=t.name, partitions=[
        partition_cls(partition_index=p, error_code=code) for p in t.partition_indexes]) for t in request.topics])


def _describe_transactions(request, version, code):
    state_cls = struct_of(65, "transaction_states")
    return response_of(65, transaction_states=[state_cls(transactional_id=t, error_code=code)
                                               for t in request.transactional_ids])


def _describe_topic_partitions(request, version, code):
    """Each topic named, not internal, no partitions."""
    topic_cls = struct_of(75, "topics")
    return response_of(75, topics=[topic_cls(name=t.name, error_code=code, is_internal=False, partitions=[])
                                   for t in request.topics])


def describe_topic_partitions_error_response(ctx, request, code: int):
    """``_describe_topic_partitions`` as a handler's ``error_response``."""
    return _describe_topic_partitions(request, ctx.api_version, code)


def _no_message(api_key):
    """DescribeAcls' and SaslAuthenticate's: the code at the top, and a null message
    (ApiError.fromThrowable's for UNKNOWN_SERVER_ERROR) where the schema's default is ""."""
    def build(request, version, code):
        return response_of(api_key, error_code=code, error_message=None)
    return build


CLIENT_ERROR_RESPONSES = {
    0: _produce,
    1: _fetch,
    2: _list_offsets,
    3: _metadata,
    10: _find_coordinator,
    21: _delete_records,
    22: _init_producer_id,
    23: _offsets_for_leader_epoch,
    24: _add_partitions_to_txn,
    27: _write_txn_markers,
    61: _describe_producers,
    29: _no_message(29),
    36: _no_message(36),
    65: _describe_transactions,
    75: _describe_topic_partitions,
}
