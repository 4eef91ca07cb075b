"""Hostile requests against one combined node (issue 29: "bad input and overload get Kafka's
errors, never a traceback or a dead node"): for the broker's handlers of OffsetFetch,
WriteTxnMarkers, JoinGroup, SyncGroup, DescribeGroups, OffsetCommit, ShareAcknowledge,
ConsumerGroupHeartbeat, CreateTopics and AlterReplicaLogDirs, at every version the node serves,
requests built by kafkawire's codecs with hostile field values (int bounds, negative ids, epochs
and timeouts, empty, duplicate and unknown names and topic ids, null where nullable, garbage
bytes, arrays of 40), drawn from a fixed seed; then frames no codec would write. Each answer
comes within the client's timeout, decodes, and carries Kafka's error codes, never
UNKNOWN_SERVER_ERROR (what a handler's exception becomes); the node logs no traceback and serves
the next good request.
"""
from __future__ import annotations

import asyncio
import os
import random
import socket
import struct
import uuid

import pytest

from kafkawire.messages.alter_replica_log_dirs_request import AlterReplicaLogDirsRequest
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.consumer_group_heartbeat_request import ConsumerGroupHeartbeatRequest
from kafkawire.messages.create_topics_request import CreateTopicsRequest
from kafkawire.messages.describe_groups_request import DescribeGroupsRequest
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.join_group_request import JoinGroupRequest
from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.messages.offset_commit_request import OffsetCommitRequest
from kafkawire.messages.offset_fetch_request import OffsetFetchRequest
from kafkawire.messages.share_acknowledge_request import ShareAcknowledgeRequest
from kafkawire.messages.sync_group_request import SyncGroupRequest
from kafkawire.messages.write_txn_markers_request import WriteTxnMarkersRequest
from kafkawire.net.client import NetworkClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.primitives import ZERO_UUID
from kafkawire.testing import DEFAULT_PROPERTIES

from tests.responses import error_codes
from .test_combined_node import WAIT_S, combined_node

APIS = (OffsetFetchRequest, WriteTxnMarkersRequest, JoinGroupRequest, SyncGroupRequest, DescribeGroupsRequest,
        OffsetCommitRequest, ShareAcknowledgeRequest, ConsumerGroupHeartbeatRequest, CreateTopicsRequest,
        AlterReplicaLogDirsRequest)
VARIANTS = 5                          # hostile requests per API and version
ANSWER_S = 30                         # each answer within this (a loaded CI machine)
TOPIC, GROUP = "hostile", "hostile-group"
INTS = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1),
        "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-2**63, 2**63 - 1)}
MAX_ARRAY = 40
SINGLE_NODE = ("offsets.", "transaction.", "share.", "group.")   # the embedded broker's settings for one node
HOSTILE = 0.2                         # the chance a field (or an array) is hostile
LOG_DIR = object()
# plausible values by a part of the field's name, the first found
PLAUSIBLE_INTS = (("session_timeout", 6000), ("rebalance_timeout", 1000), ("timeout", 5000), ("member_epoch", (0, -1)),
                  ("epoch", (0, -1)), ("partition", (0, 1)), ("replication_factor", 1), ("producer_id", (1, 1000)),
                  ("offset", (0, 5)), ("generation", (-1, 0)), ("acknowledge_type", (1, 2, 3)))
PLAUSIBLE_STRINGS = (("group_id", GROUP), ("topic", TOPIC), ("member_id", ""), ("protocol_type", "consumer"),
                     ("path", LOG_DIR), ("assignor", "uniform"), ("regex", "host.*"), ("instance_id", "i1"),
                     ("protocol_name", "range"), ("name", TOPIC))

# plausible values of the fields whose name says too little (a joining KIP-848 member)
PLAUSIBLE_FIELDS = {
    ("ConsumerGroupHeartbeatRequest", "member_id"): lambda rnd: f"member-{rnd.randrange(3)}",
    ("ConsumerGroupHeartbeatRequest", "member_epoch"): lambda rnd: rnd.choice((0, 0, 1, -1)),
    ("ConsumerGroupHeartbeatRequest", "topic_partitions"): lambda rnd: [],
    ("ConsumerGroupHeartbeatRequest", "subscribed_topic_names"): lambda rnd: rnd.choice(([TOPIC], None)),
    ("ConsumerGroupHeartbeatRequest", "subscribed_topic_regex"): lambda rnd: rnd.choice(
        (None, "host.*", "(h+)+$", "[a-z]*e[a-z]{40}")),
    ("ConsumerGroupHeartbeatRequest", "server_assignor"): lambda rnd: rnd.choice((None, "uniform", "range")),
    ("ConsumerGroupHeartbeatRequest", "instance_id"): lambda rnd: None,
    ("ConsumerGroupHeartbeatRequest", "group_id"): lambda rnd: "hostile-consumer-group",
    ("OffsetCommitRequest", "generation_id_or_member_epoch"): lambda rnd: rnd.choice((-1, -1, 0, 1)),
    ("OffsetCommitRequest", "group_instance_id"): lambda rnd: None,
    ("JoinGroupRequest", "group_instance_id"): lambda rnd: rnd.choice((None, None, "i1")),
    ("SyncGroupRequest", "group_instance_id"): lambda rnd: None,
}


class Hostile:
    """Instances of a request class for one version, drawn from ``rnd``: each field plausible
    (the test's topic and group, small numbers), or hostile with probability HOSTILE, so that
    requests pass the first checks and reach the handlers' depths."""

    def __init__(self, rnd: random.Random, topic_id: uuid.UUID, log_dir: str, outside: str):
        self.rnd, self.topic_id, self.log_dir = rnd, topic_id, log_dir
        self.strings = ["", TOPIC, GROUP, "x" * 300, "..", "../..", outside, "\x00", "ü-ö", "hostile-other"]

    def instance(self, cls, version: int, depth: int = 0):
        obj = cls()
        for f in cls._FIELDS:
            if f.present(version):
                setattr(obj, f.py_name, self.value(cls, f, version, depth))
        return obj

    def value(self, cls, f, version: int, depth: int):
        rnd = self.rnd
        hostile = rnd.random() < HOSTILE
        if not hostile and (cls.NAME, f.py_name) in PLAUSIBLE_FIELDS:
            return PLAUSIBLE_FIELDS[cls.NAME, f.py_name](rnd)
        if f.nullable(version) and rnd.random() < (0.3 if hostile else 0.1):
            return None
        if f.kind == "array":
            count = rnd.choice((0, 1, 2, 3, MAX_ARRAY if depth == 0 else 2)) if hostile else rnd.choice((1, 2))
            if f.element == "struct":
                first = self.instance(f.struct, version, depth + 1)
                if hostile and rnd.random() < 0.5:              # duplicates: the same element again
                    return [first] * count
                return [first] + [self.instance(f.struct, version, depth + 1) for _ in range(count - 1)][:count]
            return [self.scalar(f.element, f.py_name, hostile or rnd.random() < HOSTILE) for _ in range(count)]
        if f.kind == "struct":
            return self.instance(f.struct, version, depth + 1)
        return self.scalar(f.kind, f.py_name, hostile)

    def scalar(self, kind: str, name: str, hostile: bool):
        if not hostile:
            return self.plausible(kind, name)
        rnd = self.rnd
        if kind in INTS:
            low, high = INTS[kind]
            return rnd.choice((low, high, 0, 1, 2) + ((-1, -2) if low < 0 else ()))
        if kind == "bool":
            return rnd.random() < 0.5
        if kind == "float64":
            return rnd.choice((0.0, -1.0, 1e308))
        if kind == "string":
            return rnd.choice(self.strings)
        if kind == "uuid":
            return rnd.choice((ZERO_UUID, self.topic_id, uuid.UUID(int=rnd.getrandbits(128))))
        if kind in ("bytes", "records"):
            return rnd.choice((b"", b"\x00", b"\xff" * 8, bytes(rnd.getrandbits(8) for _ in range(40))))
        raise ValueError(kind)

    def plausible(self, kind: str, name: str):
        rnd = self.rnd
        if kind in INTS:
            for part, value in PLAUSIBLE_INTS:
                if part in name:
                    return value if not isinstance(value, tuple) else rnd.choice(value)
            return rnd.choice((0, 1))
        if kind == "string":
            for part, value in PLAUSIBLE_STRINGS:
                if part in name:
                    return self.log_dir if value is LOG_DIR else value
            return "x"
        if kind == "uuid":
            return self.topic_id
        return {"bool": rnd.random() < 0.5, "float64": 1.0}.get(kind, b"")


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    single = {k.replace(".", "_"): v for k, v in DEFAULT_PROPERTIES.items() if k.startswith(SINGLE_NODE)}
    with combined_node(tmp_path_factory.mktemp("hostile"), **single) as n:
        n.create_topic(TOPIC, partitions=2)
        n.quorum.wait_until(lambda: n.call(FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]), api_version=4)
                            .coordinators[0].error_code == Errors.NONE, WAIT_S, "the group coordinator to load")
        yield n


def _log(node) -> str:
    with open(node.quorum.log_path(1), encoding="utf-8", errors="replace") as f:
        return f.read()


async def _answers(node, requests):
    """(description, response or the exception) for each (description, request, version)."""
    out = []
    async with NetworkClient(client_id="hostile", request_timeout_ms=ANSWER_S * 1000) as client:
        for what, request, version in requests:
            try:
                out.append((what, await client.send(node.broker, request, api_version=version)))
            except Exception as exc:                # a timeout, a closed connection, an undecodable answer
                out.append((what, exc))
    return out


def test_hostile_field_values_get_kafkas_errors_and_the_node_keeps_serving(node, tmp_path):
    versions = {k.api_key: (k.min_version, k.max_version)
                for k in node.call(ApiVersionsRequest(client_software_name="hostile", client_software_version="1"),
                                   api_version=3).api_keys}
    topic_id = next(t.topic_id for t in node.call(MetadataRequest(topics=None), api_version=12).topics
                    if t.name == TOPIC)
    outside = str(tmp_path / "outside-the-log-dirs")
    hostile = Hostile(random.Random(29), topic_id, node.data_dir, outside)
    requests, skipped = [], []
    for cls in APIS:
        if cls.API_KEY not in versions:
            skipped.append(cls.NAME)
            continue
        low, high = versions[cls.API_KEY]
        for version in range(low, high + 1):
            for i in range(VARIANTS):
                requests.append((f"{cls.NAME} v{version} #{i}", hostile.instance(cls, version), version))
    assert skipped == [], f"the node does not serve {skipped}"
    failures = []
    for what, answer in asyncio.run(_answers(node, requests)):
        if isinstance(answer, Exception):
            failures.append(f"{what}: {type(answer).__name__}: {answer}")
        elif Errors.UNKNOWN_SERVER_ERROR in error_codes(answer, named_suffix=True):
            failures.append(f"{what}: UNKNOWN_SERVER_ERROR in {answer}")
    log = _log(node)
    assert failures == [] and "Traceback" not in log, "\n".join(failures) + "\n" + log[log.find("Traceback"):][:3000]
    assert not os.path.exists(outside)            # AlterReplicaLogDirs made no directory outside log.dirs
    assert node.brokers() == [1]


def _closed_after(node, frame: bytes) -> bytes:
    """What the node sends back for ``frame`` before it closes the connection, as Kafka's
    broker closes one whose request it cannot read; a node that keeps it open (or hangs) fails
    the read's timeout."""
    with socket.create_connection(node.broker, timeout=ANSWER_S) as sock:
        sock.sendall(frame)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


def _header(api_key: int, version: int, correlation_id: int = 7) -> bytes:
    client_id = b"hostile"
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


def test_truncated_and_garbage_frames_close_the_connection_and_the_node_keeps_serving(node):
    rnd = random.Random(29)
    frames = [struct.pack(">i", -1), struct.pack(">i", 2**31 - 1) + b"\x00" * 16, struct.pack(">i", 3) + b"\x00\x0b\x00"]
    frames += [struct.pack(">i", len(_header(api_key, 0))) + _header(api_key, 0) for api_key in (9999, -1)]   # no such API
    for cls in APIS:
        for version in (-1, cls.VALID_VERSIONS[1] + 1, 2**15 - 1):              # versions no broker serves
            frame = _header(cls.API_KEY, version) + b"\x00" * 8
            frames.append(struct.pack(">i", len(frame)) + frame)
        header = _header(cls.API_KEY, cls.VALID_VERSIONS[1])
        if cls.VALID_VERSIONS[1] >= (cls.FLEXIBLE_VERSIONS or (1 << 15,))[0]:
            header += b"\x00"                    # the flexible header's tagged fields
        for body in (b"", b"\x00", b"\xff" * 7, bytes(rnd.getrandbits(8) for _ in range(64))):
            frames.append(struct.pack(">i", len(header + body)) + header + body)
    # Kafka's broker closes the connection of a request it cannot read, without an answer
    assert [_closed_after(node, frame) for frame in frames] == [b""] * len(frames)
    assert node.brokers() == [1]
    log = _log(node)
    assert "Traceback" not in log, log[log.find("Traceback"):][:3000]


SHARE_GROUP, SHARE_MEMBER = "hostile-share-group", "hostile-share-member"
# acknowledgement batches (first, last, types) of one partition, each sent in a live share session;
# offsets under 2^32 count from the first acquired one (earlier tests' records come before it)
HOSTILE_ACKS = [
    [(-5, -1, [1])], [(-2**63, 2, [1])], [(0, 2**63 - 1, [1])], [(2**62, 2**62 + 1, [1])], [(3, 1, [1])],
    [(0, 5, [1, 2])], [(0, 0, [7])], [(0, 0, [-1])], [(0, 0, [])], [(0, 1, [0])], [(0, 2, [2]), (1, 3, [2])],
    [(i, i, [2]) for i in range(MAX_ARRAY)], [(0, 5, [2])] * MAX_ARRAY, [(2, 2, [4])], [(0, 5, [1])],
]


def _open_share_session(node, topic_id) -> int:
    """A share member of SHARE_GROUP assigned TOPIC's partitions, its session open and six
    records of partition 0 acquired: the session's next epoch and the first acquired offset."""
    from kafkawire.messages.share_fetch_request import FetchPartition, FetchTopic, ShareFetchRequest
    from kafkawire.messages.share_group_heartbeat_request import ShareGroupHeartbeatRequest
    from kafkawire.messages.share_group_heartbeat_response import Assignment as ShareAssignment
    from kafkawire.records import build_batch

    def heartbeat(epoch, topics=None):
        return node.call(ShareGroupHeartbeatRequest(group_id=SHARE_GROUP, member_id=SHARE_MEMBER, member_epoch=epoch,
                                                    subscribed_topic_names=topics), api_version=1)
    epoch = heartbeat(0, [TOPIC]).member_epoch
    node.quorum.wait_until(lambda: (heartbeat(epoch).assignment or ShareAssignment()).topic_partitions, WAIT_S,
                           "a share assignment")      # null: unchanged

    def fetch(session_epoch, wait_ms=0):
        return node.call(ShareFetchRequest(
            group_id=SHARE_GROUP, member_id=SHARE_MEMBER, share_session_epoch=session_epoch, max_wait_ms=wait_ms,
            min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500, topics=[FetchTopic(
                topic_id=topic_id, partitions=[FetchPartition(partition_index=p) for p in (0, 1)])],
            forgotten_topics_data=[]), api_version=1, timeout_ms=20_000)
    assert fetch(0).error_code == Errors.NONE
    assert node.produce(TOPIC, build_batch([(None, b"v%d" % i, (), 0) for i in range(6)]), acks=-1).error_code == 0
    acquired = fetch(1, wait_ms=5000)
    ranges = [(a.first_offset, a.last_offset) for t in acquired.responses for p in t.partitions for a in p.acquired_records]
    assert len(ranges) == 1 and ranges[0][1] - ranges[0][0] == 5, acquired
    return 2, ranges[0][0]


def test_hostile_acknowledgements_in_a_live_share_session_get_kafkas_errors(node):
    from kafkawire.messages.share_acknowledge_request import (AcknowledgementBatch, AcknowledgePartition,
                                                              AcknowledgeTopic)
    topic_id = next(t.topic_id for t in node.call(MetadataRequest(topics=None), api_version=12).topics
                    if t.name == TOPIC)
    epoch, base = _open_share_session(node, topic_id)

    def offset(value):
        return value + base if abs(value) < 2**32 else value
    targets = [(topic_id, 0)] * len(HOSTILE_ACKS) + [(topic_id, 99), (ZERO_UUID, 0), (uuid.uuid4(), 0)]
    failures, codes = [], set()
    for i, (target_id, partition) in enumerate(targets):
        batches = HOSTILE_ACKS[i % len(HOSTILE_ACKS)]
        for version in (1, 2):
            request = ShareAcknowledgeRequest(group_id=SHARE_GROUP, member_id=SHARE_MEMBER, share_session_epoch=epoch,
                                              topics=[AcknowledgeTopic(topic_id=target_id, partitions=[
                                                  AcknowledgePartition(partition_index=partition, acknowledgement_batches=[
                                                      AcknowledgementBatch(first_offset=offset(f), last_offset=offset(la),
                                                                           acknowledge_types=t) for f, la, t in batches])])])
            answer = node.call(request, api_version=version, timeout_ms=ANSWER_S * 1000)
            found = error_codes(answer)
            codes |= found
            if Errors.UNKNOWN_SERVER_ERROR in found:
                failures.append(f"v{version} {batches[:3]} on {target_id}/{partition}: {answer}")
            if answer.error_code == Errors.NONE:
                epoch += 1
    assert failures == [], "\n".join(failures)
    assert {Errors.INVALID_REQUEST, Errors.INVALID_RECORD_STATE, Errors.UNKNOWN_TOPIC_OR_PARTITION} <= codes
    log = _log(node)
    assert "Traceback" not in log, log[log.find("Traceback"):][:3000]


def test_a_regex_pythons_re_would_backtrack_on_for_ever_is_resolved_and_the_node_keeps_serving(node):
    """``(h+)+$`` against a 200-``h`` name ending in ``-``: hours in Python's ``re``, matched
    here as RE2 matches (kafkawire.broker.consumer_regex_match), on the coordinator's loop."""
    long_topic = "h" * 200 + "-"
    node.create_topic(long_topic)
    topic_id = next(t.topic_id for t in node.call(MetadataRequest(topics=None), api_version=12).topics
                    if t.name == long_topic)
    assigned = set()

    def heartbeat(epoch):               # epoch 0 (no group epoch yet, the regex unresolved): a join, in full
        answer = node.call(ConsumerGroupHeartbeatRequest(
            group_id="hostile-regex-group", member_id="regex-member", member_epoch=epoch,
            rebalance_timeout_ms=5000 if epoch == 0 else -1, subscribed_topic_regex="(h+)+$|h+-" if epoch == 0 else None,
            topic_partitions=[] if epoch == 0 else None), api_version=1, timeout_ms=ANSWER_S * 1000)
        assert answer.error_code == Errors.NONE, answer
        if answer.assignment is not None:
            assigned.update(t.topic_id for t in answer.assignment.topic_partitions)
        return answer
    epoch = [0]
    node.quorum.wait_until(lambda: epoch.append(heartbeat(epoch[-1]).member_epoch) or topic_id in assigned, WAIT_S,
                           f"{long_topic} to be assigned through the regex")
    assert node.brokers() == [1]
