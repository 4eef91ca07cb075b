"""What an idempotent or transactional producer is answered after a broker lost the tail of its
partition (issue 29): the same raw requests against any one-node combined broker (Kafka's or
kafkawire's), so that the answers can be compared. The producers' sequences are ours.

    answers = torn_tail_answers(address, restart)

``restart(cut)`` kills the broker with SIGKILL, calls ``cut(data_dir)`` (which truncates the
active segment of each partition inside one of its batches, the producer snapshots left as the
kill left them) and starts it again; it returns once the broker serves. Each topic below is one
case; ``answers`` maps "topic: step" to the Produce answer (error code, base offset, log start
offset, error message) or EndTxn's error code, and "topic: log ..." to the log start offset and
high watermark.

* ``idem``: an idempotent producer's batches of two records at sequences 0, 2, .. 10, cut
  inside the batch at sequence 8 (offsets 0-7 stay). Then (a) its next sequence 12, (c) the
  batch after the cut one (10), (b) a retry of the cut one (8), that retry again, a retry of the
  last kept batch (6), then 10.
* ``gone``: an idempotent producer whose every batch is cut (the partition comes back empty):
  its next sequence (4).
* ``rolled``: as ``idem``, but each batch in a segment of its own (``segment.ms`` 1), the last
  one cut: the producer state comes from the snapshot at the active segment's base, which keeps
  the producer's last batch only. Then 12, 8, 6, 10, 12.
* ``txn1``: a transactional producer (AddPartitionsToTxn, Produce v11) cut inside its third
  batch: 8, 6, 4 as in ``idem``, then EndTxn commit.
* ``txn1gone``: the same, every batch of its open transaction cut: its next sequence, then commit.
* ``txn2gone``: a transaction version 2 producer (Produce v12 adds the partition, EndTxn v5),
  every batch cut: its next sequence, then 0, then commit.
"""
from __future__ import annotations

import asyncio
import os
import struct
import time

from kafkawire.messages.add_partitions_to_txn_request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kafkawire.messages.end_txn_request import EndTxnRequest
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.net.client import NetworkClient, TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch

# the record at sequence n has timestamp NOW + n: a retry is the same bytes, and the segment.ms roll
# (which compares the batch's timestamp with the segment's first) sees time pass; recent, or refused
NOW = int(time.time() * 1000)
BOUND_S = 90
TOPICS = ("idem", "gone", "rolled", "txn1", "txn1gone", "txn2gone")
SEGMENT_MS = {"rolled": 1}          # segment.ms: each batch rolls a segment (and a producer snapshot)
# answered while a broker (re)loads its coordinators or partitions: asked again, not recorded
_NOT_YET = {Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR,
            Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.CONCURRENT_TRANSACTIONS,
            Errors.NOT_ENOUGH_REPLICAS, Errors.LEADER_NOT_AVAILABLE, Errors.REQUEST_TIMED_OUT}
# Where each topic's log is cut: inside the batch at this index (0: the first).
CUT_BATCH = {"idem": 4, "gone": 0, "rolled": 0, "txn1": 2, "txn1gone": 0, "txn2gone": 0}


class Producer:
    def __init__(self, topic: str, transactional_id: str | None = None, *, tv2: bool = False):
        self.topic, self.transactional_id, self.tv2 = topic, transactional_id, tv2
        self.producer_id = self.epoch = -1


async def _until(what: str, attempt):
    """``attempt()``'s result once it is not None, asked again for at most BOUND_S."""
    deadline = time.monotonic() + BOUND_S
    while True:
        try:
            result = await attempt()
        except (OSError, asyncio.TimeoutError, TransportError) as exc:    # not listening yet
            result, last = None, exc
        else:
            last = result
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not answered within {BOUND_S} s (last: {last!r})")
        await asyncio.sleep(0.2)


class Session:
    """Requests to one broker address through one client."""

    def __init__(self, address):
        self.address = address
        self.client = NetworkClient(client_id="torn-tail", request_timeout_ms=30_000)

    async def send(self, request, version=None):
        return await self.client.send(self.address, request, api_version=version, timeout_ms=30_000)

    async def close(self):
        await self.client.close()

    async def create_topics(self):
        response = await self.send(CreateTopicsRequest(timeout_ms=30_000, topics=[
            CreatableTopic(name=t, num_partitions=1, replication_factor=1, assignments=[], configs=[
                CreatableTopicConfig(name="segment.ms", value=str(SEGMENT_MS[t]))] if t in SEGMENT_MS else [])
            for t in TOPICS]))
        assert all(t.error_code == Errors.NONE for t in response.topics), response
        await self.wait_leaders()

    async def wait_leaders(self):
        async def led():
            response = await self.send(MetadataRequest(topics=[MetadataRequestTopic(name=t) for t in TOPICS],
                                                       allow_auto_topic_creation=False), 12)
            leaders = [p.leader_id for t in response.topics for p in t.partitions]
            return True if len(leaders) == len(TOPICS) and all(x >= 0 for x in leaders) else None
        await _until("the partitions' leaders", led)

    async def find_coordinator(self, producer: Producer):
        """FindCoordinator creates __transaction_state, as a client's first one does."""
        async def found():
            response = await self.send(FindCoordinatorRequest(key_type=1, coordinator_keys=[producer.transactional_id]), 4)
            return None if response.coordinators[0].error_code in _NOT_YET else response.coordinators[0].error_code
        assert await _until(f"FindCoordinator for {producer.topic}", found) == Errors.NONE

    async def init(self, producer: Producer):
        if producer.transactional_id is not None:
            await self.find_coordinator(producer)

        async def answered():
            response = await self.send(InitProducerIdRequest(transactional_id=producer.transactional_id,
                                                             transaction_timeout_ms=600_000,
                                                             producer_id=-1, producer_epoch=-1), 4)
            if response.error_code in _NOT_YET:
                return None
            assert response.error_code == Errors.NONE, response
            return response
        response = await _until(f"InitProducerId for {producer.topic}", answered)
        producer.producer_id, producer.epoch = response.producer_id, response.producer_epoch
        if producer.transactional_id is not None and not producer.tv2:
            await self.add_partition(producer)

    async def add_partition(self, producer: Producer):
        async def added():
            response = await self.send(AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=producer.transactional_id,
                v3_and_below_producer_id=producer.producer_id, v3_and_below_producer_epoch=producer.epoch,
                v3_and_below_topics=[AddPartitionsToTxnTopic(name=producer.topic, partitions=[0])]), 3)
            code = response.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
            return None if code in _NOT_YET else code
        assert await _until(f"AddPartitionsToTxn for {producer.topic}", added) == Errors.NONE

    async def produce(self, producer: Producer, seq: int, count: int = 2) -> tuple:
        """(error code, base offset, log start offset, error message) of a batch of ``count``
        records from sequence ``seq``."""
        transactional = producer.transactional_id is not None
        records = build_batch([(b"k", b"%s-%d" % (producer.topic.encode(), seq + i), [], NOW + seq + i)
                               for i in range(count)],
                              producer_id=producer.producer_id, producer_epoch=producer.epoch, base_sequence=seq,
                              is_transactional=transactional)

        async def answered():
            response = await self.send(ProduceRequest(
                transactional_id=producer.transactional_id, acks=-1, timeout_ms=30_000, topic_data=[TopicProduceData(
                    name=producer.topic, partition_data=[PartitionProduceData(index=0, records=records)])]),
                12 if producer.tv2 else 11)
            p = response.responses[0].partition_responses[0]
            if p.error_code in _NOT_YET:
                return None
            return p.error_code, p.base_offset, p.log_start_offset, p.error_message
        return await _until(f"Produce to {producer.topic} at sequence {seq}", answered)

    async def end_txn(self, producer: Producer) -> int:
        async def answered():
            response = await self.send(EndTxnRequest(transactional_id=producer.transactional_id,
                                                     producer_id=producer.producer_id,
                                                     producer_epoch=producer.epoch, committed=True),
                                       5 if producer.tv2 else 4)
            return None if response.error_code in _NOT_YET else response.error_code
        return await _until(f"EndTxn for {producer.topic}", answered)

    async def list_offset(self, topic: str, timestamp: int, isolation_level: int = 0) -> int:
        response = await self.send(ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[
            ListOffsetsTopic(name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=timestamp)])]), 7)
        p = response.topics[0].partitions[0]
        assert p.error_code == Errors.NONE, p
        return p.offset

    async def log_offsets(self, topic: str) -> tuple[int, int]:
        """The log start offset and the high watermark."""
        return await self.list_offset(topic, -2), await self.list_offset(topic, -1)

    async def wait_stable(self, topic: str) -> None:
        """Until the last stable offset is the high watermark: a committed transaction's marker is
        written (EndTxn may answer before it is, as Kafka's coordinator does)."""
        async def stable():
            return True if await self.list_offset(topic, -1, 1) == await self.list_offset(topic, -1) else None
        await _until(f"the last stable offset of {topic}", stable)


def batch_positions(path: str) -> list[int]:
    """The byte position of each batch in a segment file (its base offset and length header)."""
    with open(path, "rb") as f:
        data = f.read()
    positions, position = [], 0
    while position + 12 <= len(data):
        _, length = struct.unpack_from(">qi", data, position)
        if length <= 0:
            break
        positions.append(position)
        position += 12 + length
    return positions


def cut_tails(data_dir: str) -> dict[str, int]:
    """Truncate each topic's active segment 30 bytes into its CUT_BATCH-th batch (a torn tail:
    that batch and those after it are lost); the byte length left, by topic."""
    left = {}
    for topic, index in CUT_BATCH.items():
        directory = os.path.join(data_dir, f"{topic}-0")
        segment = os.path.join(directory, max(n for n in os.listdir(directory) if n.endswith(".log")))
        positions = batch_positions(segment)
        assert len(positions) > index, (topic, positions)
        left[topic] = positions[index] + 30
        os.truncate(segment, left[topic])
    return left


async def before_the_kill(session: Session, producers: dict[str, Producer], answers: dict) -> None:
    await session.create_topics()
    batches = {"idem": 6, "gone": 2, "rolled": 6, "txn1": 4, "txn1gone": 2, "txn2gone": 2}
    for topic, producer in producers.items():
        await session.init(producer)
        for n in range(batches[topic]):
            answers[f"{topic}: before {2 * n}"] = await session.produce(producer, 2 * n)
            assert answers[f"{topic}: before {2 * n}"][0] == Errors.NONE, (topic, n, answers)


async def after_the_restart(session: Session, producers: dict[str, Producer], answers: dict) -> None:
    await session.wait_leaders()
    for topic in TOPICS:
        answers[f"{topic}: log after restart"] = await session.log_offsets(topic)
    steps = {"idem": [12, 10, 8, 8, 6, 10], "gone": [4, 6], "rolled": [12, 8, 6, 10, 12], "txn1": [8, 6, 4, 4, 6],
             "txn1gone": [4, 6], "txn2gone": [4, 0]}
    for topic, sequences in steps.items():
        producer = producers[topic]
        for n, seq in enumerate(sequences):
            answers[f"{topic}: {n} seq {seq}"] = await session.produce(producer, seq)
        if producer.transactional_id is not None:
            answers[f"{topic}: commit"] = await session.end_txn(producer)
            await session.wait_stable(topic)
        answers[f"{topic}: log at the end"] = await session.log_offsets(topic)


def torn_tail_answers(address, restart) -> dict:
    """Run the scenario against the broker at ``address``; ``restart(cut)`` as the module says."""
    producers = {"idem": Producer("idem"), "gone": Producer("gone"), "rolled": Producer("rolled"),
                 "txn1": Producer("txn1", "tx-txn1"), "txn1gone": Producer("txn1gone", "tx-txn1gone"),
                 "txn2gone": Producer("txn2gone", "tx-txn2gone", tv2=True)}
    answers: dict = {}

    asyncio.run(_phase(address, before_the_kill, producers, answers))
    answers["cut at bytes"] = restart(cut_tails)
    asyncio.run(_phase(address, after_the_restart, producers, answers))
    return answers


async def _phase(address, step, producers=None, answers=None):
    """``step(session, producers, answers)`` with a Session of its own."""
    if isinstance(address, str):
        host, port = address.rsplit(":", 1)
        address = (host, int(port))
    session = Session(address)
    try:
        await step(session, producers, answers)
    finally:
        await session.close()


def after_the_kill(answers: dict) -> dict:
    """The answers from the kill on (those before it are checked to be successes as they come)."""
    return {key: value for key, value in answers.items() if ": before " not in key}


OOOS, NONE = Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, Errors.NONE
# Apache Kafka 4.3.1's answers (after_the_kill), written down from a run of this scenario against a
# one-node combined kafka.Kafka (tests/interop/test_torn_tail_producer_vs_kafka.py) on 2026-12-01.
# A refused batch's answer has no error message and the log start offset (ReplicaManager's
# LogAppendResult for an exception it does not name).
KAFKA_4_3_1 = {
    "cut at bytes": {"idem": 386, "gone": 30, "rolled": 30, "txn1": 208, "txn1gone": 30, "txn2gone": 30},
    "idem: log after restart": (0, 8),
    "gone: log after restart": (0, 0),
    "rolled: log after restart": (0, 10),
    "txn1: log after restart": (0, 4),
    "txn1gone: log after restart": (0, 0),
    "txn2gone: log after restart": (0, 0),
    "idem: 0 seq 12": (OOOS, -1, 0, None),         # (a) the next sequence: a gap
    "idem: 1 seq 10": (OOOS, -1, 0, None),         # (c) the batch after the cut one: a gap
    "idem: 2 seq 8": (NONE, 8, 0, None),           # (b) the retry of the cut batch: appended again
    "idem: 3 seq 8": (NONE, 8, 0, None),           # its retry: a duplicate
    "idem: 4 seq 6": (NONE, 6, 0, None),           # the last kept batch: a duplicate
    "idem: 5 seq 10": (NONE, 10, 0, None),
    "idem: log at the end": (0, 12),
    "gone: 0 seq 4": (NONE, 0, 0, None),           # an unknown producer: any sequence
    "gone: 1 seq 6": (NONE, 2, 0, None),
    "gone: log at the end": (0, 4),
    "rolled: 0 seq 12": (OOOS, -1, 0, None),
    "rolled: 1 seq 8": (NONE, 8, 0, None),         # the snapshot's batch: a duplicate
    "rolled: 2 seq 6": (OOOS, -1, 0, None),        # older than the snapshot's batch: not known, a gap
    "rolled: 3 seq 10": (NONE, 10, 0, None),
    "rolled: 4 seq 12": (NONE, 12, 0, None),
    "rolled: log at the end": (0, 14),
    "txn1: 0 seq 8": (OOOS, -1, 0, None),
    "txn1: 1 seq 6": (OOOS, -1, 0, None),
    "txn1: 2 seq 4": (NONE, 4, 0, None),
    "txn1: 3 seq 4": (NONE, 4, 0, None),
    "txn1: 4 seq 6": (NONE, 6, 0, None),
    "txn1: commit": NONE,
    "txn1: log at the end": (0, 9),
    "txn1gone: 0 seq 4": (NONE, 0, 0, None),       # its transaction's batches all gone: unknown, verified
    "txn1gone: 1 seq 6": (NONE, 2, 0, None),
    "txn1gone: commit": NONE,
    "txn1gone: log at the end": (0, 5),
    "txn2gone: 0 seq 4": (OOOS, -1, 0, None),      # transaction version 2: an unknown producer starts at 0
    "txn2gone: 1 seq 0": (NONE, 0, 0, None),
    "txn2gone: commit": NONE,
    "txn2gone: log at the end": (0, 3),
}

# What librdkafka 2.16's transactional producer (confluent-kafka) saw against Kafka 4.3.1 in
# librdkafka_answers, written down from tests/interop/test_torn_tail_producer_vs_kafka.py's run
# on 2026-12-01: its acknowledged last batch lost, its next batch (sequence 3) is answered
# OUT_OF_ORDER_SEQUENCE_NUMBER, which librdkafka calls "sequence desynchronization with broker"
# and makes fatal (the "skipped sequence numbers ... requires epoch bump" of issue 29 is the case
# of a gap after its own failed batch, not of acknowledged records lost).
LIBRDKAFKA_ON_KAFKA_4_3_1 = [("delivery", None, 0), ("delivery", None, 1), ("delivery", None, 2),
                             ("flush raised", OOOS, True), ("commit", OOOS, False, True)]


def librdkafka_answers(bootstrap: str, restart) -> list:
    """librdkafka's transactional producer (confluent-kafka) across a torn tail: three messages
    acknowledged one by one (three batches) to the ``idem`` topic in an open transaction, the
    broker killed and the last batch cut, then a fourth message and a commit. What the
    application sees: each delivery (error code, offset), the fourth's flush, the commit's error
    (code, abortable, fatal). ``restart`` as torn_tail_answers's; the topic is made here."""
    confluent_kafka = __import__("confluent_kafka")

    async def create(session, producers, answers):
        await session.create_topics()
    asyncio.run(_phase(bootstrap, create))
    seen: list = []

    def delivered(err, msg):
        seen.append(("delivery", None if err is None else err.code(), msg.offset()))
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-librdkafka",
                                         "linger.ms": 0, "transaction.timeout.ms": 600_000})
    producer.init_transactions(BOUND_S)
    producer.begin_transaction()
    for value in (b"v0", b"v1", b"v2"):
        producer.produce("idem", value=value, partition=0, on_delivery=delivered)
        producer.flush(BOUND_S)
    restart(lambda data_dir: _cut_last_batch(data_dir, "idem"))
    producer.produce("idem", value=b"v3", partition=0)    # no callback: its fatal error is raised by flush
    try:
        seen.append(("flush", producer.flush(BOUND_S)))
    except (confluent_kafka.KafkaException, SystemError) as exc:
        # confluent-kafka may raise the fatal error as the cause of a SystemError
        error = (exc if isinstance(exc, confluent_kafka.KafkaException) else exc.__cause__).args[0]
        seen.append(("flush raised", error.code(), error.fatal()))
    try:
        producer.commit_transaction(BOUND_S)
        seen.append(("commit", Errors.NONE))
    except confluent_kafka.KafkaException as exc:
        error = exc.args[0]
        seen.append(("commit", error.code(), error.txn_requires_abort(), error.fatal()))
    return seen


def _cut_last_batch(data_dir: str, topic: str) -> None:
    directory = os.path.join(data_dir, f"{topic}-0")
    segment = os.path.join(directory, max(n for n in os.listdir(directory) if n.endswith(".log")))
    os.truncate(segment, batch_positions(segment)[-1] + 30)
