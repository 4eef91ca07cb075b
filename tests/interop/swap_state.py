"""The state a broker keeps beside its records, written by one implementation and read by the other
(tests/interop/test_log_dirs_swapped_state_with_kafka.py): what each phase of the swap writes
and what the next side must serve from it. Every helper talks to whichever broker listens at
``bootstrap`` (Kafka 4.3.1 or kafkawire): confluent-kafka for the client traffic, kafkawire's
NetworkClient for the requests no client library sends (ShareFetch, ReadShareGroupState,
OffsetForLeaderEpoch).
"""
from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")   # the modules using these helpers skip without it
TopicPartition = confluent_kafka.TopicPartition

from kafkawire.broker.share_partition import ACCEPT, REJECT, RELEASE
from kafkawire.messages.consumer_group_describe_request import ConsumerGroupDescribeRequest
from kafkawire.messages.offset_for_leader_epoch_request import (OffsetForLeaderEpochRequest, OffsetForLeaderPartition,
                                                                OffsetForLeaderTopic)
from kafkawire.messages.read_share_group_state_request import PartitionData, ReadShareGroupStateRequest, ReadStateData
from kafkawire.messages.share_acknowledge_request import (AcknowledgementBatch, AcknowledgePartition, AcknowledgeTopic,
                                                          ShareAcknowledgeRequest)
from kafkawire.messages.share_fetch_request import FetchPartition, FetchTopic, ShareFetchRequest
from kafkawire.messages.share_group_heartbeat_request import ShareGroupHeartbeatRequest
from kafkawire.net.client import NetworkClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import iter_batches
from tests.broker.wire import call

WAIT_S = 60
PLAIN, COMPACTED, SHARED = "plain", "compacted", "shared"
GROUP, SHARE_GROUP, OPEN_TXN_ID = "swap-group", "swap-share-group", "swap-open-tx"
NEW_GROUP = "swap-group-848"
# segment.ms of the compacted topic: a record appended this long after its segment's first one
# rolls a new segment (Kafka's segment.bytes is at least 1 MiB: time is the small way to roll)
SEGMENT_MS = 150


def read_partition(bootstrap: str, topic: str, partition: int, isolation: str = "read_committed") -> list[tuple]:
    """(offset, key, value) of every record a consumer reads from the partition's first offset to
    its end (the last stable offset under read_committed)."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}",
                                         "isolation.level": isolation, "enable.partition.eof": True,
                                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, confluent_kafka.OFFSET_BEGINNING)])
    got, deadline = [], time.monotonic() + WAIT_S
    try:
        while True:
            assert time.monotonic() < deadline, f"{topic}-{partition} did not reach its end in {WAIT_S} s: {got}"
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF, message.error()
                return got
            got.append((message.offset(), message.key(), message.value()))
    finally:
        consumer.close()


def watermarks(bootstrap: str, topic: str, partitions: range) -> dict[int, tuple[int, int]]:
    """partition -> (log start offset, high watermark) (ListOffsets EARLIEST and LATEST)."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"lister-{uuid.uuid4()}",
                                         "isolation.level": "read_uncommitted"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30) for p in partitions}
    finally:
        consumer.close()


def first_offsets(bootstrap: str, topic: str, partitions: range) -> dict[int, int]:
    return {p: low for p, (low, _) in watermarks(bootstrap, topic, partitions).items()}


def end_offsets(bootstrap: str, topic: str, partitions: range) -> dict[int, int]:
    return {p: high for p, (_, high) in watermarks(bootstrap, topic, partitions).items()}


def committed(bootstrap: str, group: str, topic: str, partitions: range) -> dict[int, int]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return {tp.partition: tp.offset for tp in consumer.committed(
            [TopicPartition(topic, p) for p in partitions], timeout=30)}
    finally:
        consumer.close()


class ErrorLog:
    """A client's error_cb: every error but the connection losses of a broker's stop."""
    EXPECTED = {confluent_kafka.KafkaError._TRANSPORT, confluent_kafka.KafkaError._ALL_BROKERS_DOWN}

    def __init__(self):
        self.errors: list = []

    def __call__(self, error):
        if error.code() not in self.EXPECTED:
            self.errors.append(error)


def idempotent_producer(bootstrap: str, errors: ErrorLog) -> confluent_kafka.Producer:
    """One producer kept for the whole run: its producer id and sequences go on across both
    swaps, so each side must have the other's producer state (the producer snapshots)."""
    return confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                     "reconnect.backoff.max.ms": 500, "error_cb": errors,
                                     "message.timeout.ms": WAIT_S * 1000})


def produce(producer, topic: str, partition: int, values: list) -> None:
    failures = []
    for key, value in values:
        producer.produce(topic, value, key, partition=partition,
                         on_delivery=lambda err, _msg: err is not None and failures.append(err))
    assert producer.flush(WAIT_S) == 0 and failures == [], failures


def producer_batches(partition_dirs: list[Path]) -> list[tuple]:
    """(producer id, producer epoch, base sequence, record count, first offset) of every
    non-transactional idempotent batch in the segments of the partition directories."""
    out = []
    for directory in partition_dirs:
        for segment in sorted(directory.glob("*.log")):
            for batch in iter_batches(segment.read_bytes()):
                if batch.producer_id >= 0 and not batch.is_transactional:
                    out.append((batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.records_count,
                                batch.base_offset))
    return out


def transactions(bootstrap: str, tag: str) -> confluent_kafka.Producer:
    """The open transaction's id starts again (InitProducerId: the coordinator aborts the one the
    other side left open), commits 3 records to each of plain-0 and plain-1, and leaves a new
    transaction open on plain-1 with 3 records: the producer is returned, to be dropped only once
    its broker stopped."""
    txn = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": OPEN_TXN_ID,
                                    "transaction.timeout.ms": 600_000})
    txn.init_transactions(WAIT_S)
    txn.begin_transaction()
    for partition in (0, 1):
        for i in range(3):
            txn.produce(PLAIN, f"{tag}-committed-{partition}-{i}".encode(), partition=partition)
    txn.commit_transaction(WAIT_S)
    txn.begin_transaction()
    for i in range(3):
        txn.produce(PLAIN, f"{tag}-open-{i}".encode(), partition=1)
    assert txn.flush(WAIT_S) == 0
    return txn


# --- the consumer group ---------------------------------------------------------------------------

class GroupMember:
    """A classic-protocol member of GROUP reading plain-2; kept alive across a swap so the next
    side must know it (its member id and generation, from the group's record in __consumer_offsets)."""

    def __init__(self, bootstrap: str):
        self.assignments = 0
        self.consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 45_000, "reconnect.backoff.max.ms": 500})
        self.consumer.subscribe([PLAIN], on_assign=self._assigned)

    def _assigned(self, consumer, partitions):
        self.assignments += 1

    def read(self, count: int) -> list[tuple]:
        """The next ``count`` records of plain-2 from where the group stands."""
        got, deadline = [], time.monotonic() + WAIT_S
        while len(got) < count:
            assert time.monotonic() < deadline, f"the group member read {got}, not {count} records"
            message = self.consumer.poll(0.5)
            if message is not None and message.error() is None and message.partition() == 2:
                got.append((message.offset(), message.value()))
        return got

    def commit(self, offset: int) -> None:
        self.consumer.commit(offsets=[TopicPartition(PLAIN, 2, offset)], asynchronous=False)


class NewProtocolMember:
    """A KIP-848 (group.protocol=consumer) member of NEW_GROUP on the compacted topic, made on the
    first side and kept across both swaps: the next side must go on with its member epoch and
    assignment from the records in __consumer_offsets (a side that lost them fences it, and it
    joins again at a new epoch)."""

    def __init__(self, bootstrap: str):
        self.consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": NEW_GROUP, "group.protocol": "consumer",
            "enable.auto.commit": False, "reconnect.backoff.max.ms": 500})
        self.consumer.subscribe([COMPACTED])
        deadline = time.monotonic() + WAIT_S
        while not self.consumer.assignment():
            assert time.monotonic() < deadline, "the KIP-848 member got no assignment"
            self.consumer.poll(0.2)


def new_group_view(bootstrap: str) -> tuple:
    """(state, group epoch, assignment epoch, [(member id, member epoch, assigned partitions)]) of
    NEW_GROUP as ConsumerGroupDescribe answers."""
    [group] = call(bootstrap, ConsumerGroupDescribeRequest(group_ids=[NEW_GROUP]), 0).groups
    assert group.error_code == Errors.NONE, (group.error_code, group.error_message)
    return (group.group_state, group.group_epoch, group.assignment_epoch,
            sorted((m.member_id, m.member_epoch, sorted((str(tp.topic_id), tuple(tp.partitions))
                                                        for tp in m.assignment.topic_partitions))
                   for m in group.members))


def group_view(bootstrap: str) -> tuple:
    """(state, sorted member ids) of GROUP as DescribeGroups answers."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_consumer_groups([GROUP])[GROUP].result(WAIT_S)
    return str(described.state), sorted(m.member_id for m in described.members)


# --- the compacted topic --------------------------------------------------------------------------

def compacted_writes(producer, tag: str) -> None:
    """Three segments of keyed records: k0..k9, then k0..k4 again and tombstones of k5 and k6,
    then k9 again (the first two roll out, so the cleaner may clean them)."""
    rounds = [[(f"k{i}".encode(), f"{tag}-v1-{i}".encode()) for i in range(10)],
              [(f"k{i}".encode(), f"{tag}-v2-{i}".encode()) for i in range(5)] + [(b"k5", None), (b"k6", None)],
              [(b"k9", f"{tag}-v2-9".encode())]]
    for index, values in enumerate(rounds):
        if index:
            # The condition a roll needs is time: the segment's first record segment.ms old.
            time.sleep(SEGMENT_MS * 1.5 / 1000)
        produce(producer, COMPACTED, 0, values)


def assert_compaction_of(later: list[tuple], earlier: list[tuple], what: str) -> None:
    """``later`` is ``earlier`` or a cleaning of it: the same records at the same offsets, some
    superseded ones gone, every key's last record (tombstones too: delete.retention.ms is a day) kept."""
    assert set(later) <= set(earlier), f"{what}: records not in the earlier view: {sorted(set(later) - set(earlier))}"
    last = {key: (offset, key, value) for offset, key, value in earlier}
    missing = [r for r in last.values() if r not in set(later)]
    assert missing == [], f"{what}: the last record of a key is gone: {missing}"


def wait_until_cleaned(bootstrap: str, superseded: set[int]) -> list[tuple]:
    """The compacted topic's view once the cleaner removed the superseded offsets (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        view = read_partition(bootstrap, COMPACTED, 0, "read_uncommitted")
        if not superseded & {offset for offset, _, _ in view}:
            return view
        assert time.monotonic() < deadline, f"the cleaner did not remove offsets {sorted(superseded)}: {view}"
        time.sleep(0.5)


def segment_files(partition_dir: Path) -> dict[int, list[Path]]:
    """base offset -> the files of each segment (log, indexes) of a partition directory."""
    out: dict[int, list[Path]] = {}
    for path in partition_dir.iterdir():
        name, _, suffix = path.name.partition(".")
        if name.isdigit() and suffix in ("log", "index", "timeindex", "txnindex"):
            out.setdefault(int(name), []).append(path)
    return out


def save_segments(partition_dir: Path, into: Path) -> dict[int, bytes]:
    """Copies of every segment but the active one (the last), before a cleaning rewrites them:
    base offset -> its .log bytes (the copies of all its files go to ``into``)."""
    into.mkdir(parents=True, exist_ok=True)
    segments = segment_files(partition_dir)
    saved = {}
    for base in sorted(segments)[:-1]:
        for path in segments[base]:
            (into / path.name).write_bytes(path.read_bytes())
        saved[base] = (partition_dir / f"{base:020d}.log").read_bytes()
    return saved


def leave_an_interrupted_cleaning(partition_dir: Path, saved_dir: Path, saved: dict[int, bytes]) -> tuple[int, int]:
    """Put a stopped broker's compacted partition in the state a crash in the middle of a swap
    leaves (LocalLog.replaceSegments): the first segment a cleaning rewrote is back under
    ``.swap`` names beside the old segments it replaces (restored from their copies), and a
    ``.cleaned`` segment of a cleaning not yet renamed lies beside them. The next broker must
    finish the swap (serve the cleaned records, delete the old segments it replaces) and delete
    the ``.cleaned`` files: the offsets [first, next) the segment left as ``.swap`` holds."""
    segments = segment_files(partition_dir)
    rewritten = [base for base in sorted(segments)
                 if base in saved and (partition_dir / f"{base:020d}.log").read_bytes() != saved[base]]
    assert rewritten, f"no segment of {partition_dir} was rewritten by the cleaner: {sorted(segments)}"
    base = rewritten[0]
    batches = list(iter_batches((partition_dir / f"{base:020d}.log").read_bytes()))
    next_offset = batches[-1].base_offset + batches[-1].last_offset_delta + 1
    for path in segments[base]:
        path.rename(path.with_name(path.name + ".swap"))
    for old in [b for b in saved if base <= b < next_offset]:
        for copy in saved_dir.glob(f"{old:020d}.*"):
            (partition_dir / copy.name).write_bytes(copy.read_bytes())
    (partition_dir / f"{next_offset:020d}.log.cleaned").write_bytes(b"\x00" * 61)   # a cleaning cut short
    assert [b for b in segment_files(partition_dir) if base < b < next_offset], "no old segment to replace"
    return base, next_offset


# --- the share group (raw requests: no Python client has a share consumer) -----------------------

AVAILABLE, ACQUIRED_STATE = 0, 1


class Connection:
    """One connection to a broker kept across requests: Kafka ends a share session when the
    connection that opened it closes (and releases what its member acquired)."""

    def __init__(self, bootstrap: str):
        host, port = bootstrap.rsplit(":", 1)
        self.peer = (host, int(port))
        self.loop = asyncio.new_event_loop()
        self.client = NetworkClient(client_id="swap-share-member", request_timeout_ms=20_000)

    def send(self, request, version: int):
        return self.loop.run_until_complete(self.client.send(self.peer, request, api_version=version,
                                                             timeout_ms=20_000))

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        pending = asyncio.all_tasks(self.loop)          # a read loop of a connection the broker's stop cut
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.close()


class ShareMember:
    """One member of SHARE_GROUP with its share session on the partition shared-0, on one connection."""

    def __init__(self, bootstrap: str, topic_id):
        self.bootstrap, self.topic_id = bootstrap, topic_id
        self.member_id, self.epoch, self.session = str(uuid.uuid4()), 0, 0
        self.connection = Connection(bootstrap)

    def _heartbeat(self, topics=None):
        answer = call(self.bootstrap, ShareGroupHeartbeatRequest(
            group_id=SHARE_GROUP, member_id=self.member_id, member_epoch=self.epoch, subscribed_topic_names=topics), 1)
        assert answer.error_code == Errors.NONE, (answer.error_code, answer.error_message)
        self.epoch = answer.member_epoch
        return answer

    def join(self) -> None:
        """Heartbeat until the share-partition is assigned (once initialized: bounded)."""
        answer, deadline = self._heartbeat([SHARED]), time.monotonic() + WAIT_S
        while not (answer.assignment and answer.assignment.topic_partitions):
            assert time.monotonic() < deadline, "shared-0 was not assigned"
            time.sleep(0.1)
            answer = self._heartbeat()

    def fetch(self, wait_ms: int = 0) -> dict[int, tuple]:
        """One ShareFetch: offset -> (value, delivery count) of each record it acquired."""
        response = self.connection.send(ShareFetchRequest(
            group_id=SHARE_GROUP, member_id=self.member_id, share_session_epoch=self.session, max_wait_ms=wait_ms,
            min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500, forgotten_topics_data=[],
            topics=[FetchTopic(topic_id=self.topic_id, partitions=[FetchPartition(partition_index=0)])]), 2)
        assert response.error_code == Errors.NONE, (response.error_code, response.error_message)
        self.session += 1
        acquired = {}
        for topic in response.responses:
            for p in topic.partitions:
                assert p.error_code == Errors.NONE, (p.error_code, p.error_message)
                counts = {o: a.delivery_count for a in p.acquired_records
                          for o in range(a.first_offset, a.last_offset + 1)}
                for batch in iter_batches(p.records or b""):
                    for record in batch:
                        if record.offset in counts:
                            acquired[record.offset] = (record.value, counts[record.offset])
        return acquired

    def fetch_until(self, offsets: set[int]) -> dict[int, tuple]:
        """ShareFetch until the records at ``offsets`` are acquired (bounded)."""
        got, deadline = {}, time.monotonic() + WAIT_S
        while set(got) < offsets or not offsets:
            got.update(self.fetch(wait_ms=500))
            if not offsets:
                return got
            assert time.monotonic() < deadline, f"acquired {sorted(got)}, not {sorted(offsets)}"
        return got

    def acknowledge(self, types: dict[int, int]) -> None:
        """ShareAcknowledge of single offsets with their acknowledge types."""
        batches = [AcknowledgementBatch(first_offset=o, last_offset=o, acknowledge_types=[t])
                   for o, t in sorted(types.items())]
        response = self.connection.send(ShareAcknowledgeRequest(
            group_id=SHARE_GROUP, member_id=self.member_id, share_session_epoch=self.session, topics=[
                AcknowledgeTopic(topic_id=self.topic_id, partitions=[
                    AcknowledgePartition(partition_index=0, acknowledgement_batches=batches)])]), 2)
        assert response.error_code == Errors.NONE, (response.error_code, response.error_message)
        assert [p.error_code for t in response.responses for p in t.partitions] == [Errors.NONE], response
        self.session += 1


def share_group_from_earliest(bootstrap: str) -> None:
    """share.auto.offset.reset=earliest for SHARE_GROUP (a group config, in the metadata): with
    Kafka's default (latest) the leader resolves the start offset at its first read, which may
    come after the first records."""
    from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                      IncrementalAlterConfigsRequest)
    response = call(bootstrap, IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=32, resource_name=SHARE_GROUP, configs=[AlterableConfig(
            name="share.auto.offset.reset", config_operation=0, value="earliest")])]), 1)
    assert [r.error_code for r in response.responses] == [Errors.NONE], response


def share_state(bootstrap: str, topic_id) -> tuple:
    """(state epoch, start offset, [(first, last, state, delivery count)]) of shared-0 as the share
    coordinator reads it (ReadShareGroupState, leader epoch -1: a read that writes nothing)."""
    response = call(bootstrap, ReadShareGroupStateRequest(group_id=SHARE_GROUP, topics=[ReadStateData(
        topic_id=topic_id, partitions=[PartitionData(partition=0, leader_epoch=-1)])]), 0)
    [partition] = response.results[0].partitions
    assert partition.error_code == Errors.NONE, (partition.error_code, partition.error_message)
    return (partition.state_epoch, partition.start_offset,
            [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in partition.state_batches])


def deliveries_by_state(state: tuple, end_offset: int) -> dict[int, int]:
    """offset -> the delivery count its next delivery must have, from the persisted state: a record
    in an AVAILABLE batch one more than its count, one no batch names 1, the others none."""
    _, start, batches = state
    out = {}
    for offset in range(start, end_offset):
        named = [(s, c) for first, last, s, c in batches if first <= offset <= last]
        if not named:
            out[offset] = 1
        elif named[0][0] in (AVAILABLE, ACQUIRED_STATE):
            out[offset] = named[0][1] + 1
    return out


def share_round(bootstrap: str, topic_id, producer, tag: str, count: int, state_before) -> tuple:
    """A new member takes what the persisted state says is deliverable (each with the delivery
    count it implies) and ``count`` new records; of what it acquired it releases the first,
    rejects the second, accepts the others but the last two, which it keeps acquired (its
    connection stays open until the broker stops). (The state the share coordinator then keeps,
    the member) are returned."""
    member = ShareMember(bootstrap, topic_id)
    member.join()
    opened = member.fetch()
    end = end_offsets(bootstrap, SHARED, range(1))[0]
    produce(producer, SHARED, 0, [(None, f"{tag}-share-{i}".encode()) for i in range(count)])
    expected = deliveries_by_state(state_before, end) if state_before else {}
    expected.update({o: 1 for o in range(end, end + count)})
    acquired = {**opened, **member.fetch_until(set(expected) - set(opened))}
    assert {o: dc for o, (_, dc) in acquired.items()} == expected, (acquired, expected, state_before)
    offsets = sorted(acquired)
    types = {o: ACCEPT for o in offsets[2:-2]}
    types.update({offsets[0]: RELEASE, offsets[1]: REJECT})
    member.acknowledge(types)
    return share_state(bootstrap, topic_id), member




# --- files and leader epochs ----------------------------------------------------------------------

def checkpoint(log_dir: Path, name: str) -> dict[str, int]:
    """topic-partition -> offset of a checkpoint file (version, count, then "topic partition offset")."""
    lines = (log_dir / name).read_text().splitlines()
    return {f"{t}-{p}": int(o) for t, p, o in (line.split() for line in lines[2:2 + int(lines[1])])}


def leader_epochs(partition_dir: Path) -> list[tuple[int, int]]:
    """(epoch, start offset) entries of the partition's leader-epoch-checkpoint."""
    lines = (partition_dir / "leader-epoch-checkpoint").read_text().splitlines()
    return [tuple(map(int, line.split())) for line in lines[2:2 + int(lines[1])]]


def epoch_end_offsets(bootstrap: str, topic: str, partition: int, epochs: list[int]) -> dict[int, tuple]:
    """epoch -> (answered epoch, end offset) of OffsetForLeaderEpoch, as a consumer asks it."""
    out = {}
    for epoch in epochs:
        response = call(bootstrap, OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderTopic(
            topic=topic, partitions=[OffsetForLeaderPartition(partition=partition, current_leader_epoch=-1,
                                                              leader_epoch=epoch)])]), 4)
        [answer] = response.topics[0].partitions
        assert answer.error_code == Errors.NONE, answer.error_code
        out[epoch] = (answer.leader_epoch, answer.end_offset)
    return out


def wait_kafka_started(node, since: int) -> None:
    """The node's 'Kafka Server started' after character ``since`` of its log: a restart appends
    to the first start's log, whose line KafkaNode.wait_ready would find at once."""
    deadline = time.monotonic() + 90
    while "Kafka Server started" not in node.log_text()[since:]:
        assert node.alive(), node.log_tail()
        assert time.monotonic() < deadline, node.log_tail()
        time.sleep(0.2)
