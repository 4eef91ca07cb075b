"""The committed image against an oracle (issue 28): random writes applied ahead, commits,
rollbacks (a lost leadership), batches applied with nothing ahead (a follower) and snapshot
loads drive a ControllerState through the WritePipeline and its CommittedImage; after every
step the committed image must be, map by map and in each map's order, what replaying only the
committed records makes, and every image a reader was handed earlier must still be what it was
then (the committed image keeps its own maps and replays each write's recorded changes at its
commit, copying a map only while a view handed out holds it: committed.py). After every
rollback, which goes back from the committed view whatever the records in flight (rollback.py),
the whole state must be what the oracle's is: image, collision map, partition index, broker
registration offsets, feature order and open metadata transaction, orders included."""
import asyncio
import logging
import random
import uuid

import pytest

from kafkawire.controller.committed import CommittedImage
from kafkawire.controller.errors import ApiError
from kafkawire.controller.frames import frame, struct
from kafkawire.controller.pipeline import WritePipeline
from kafkawire.controller.snapshot import image_records
from kafkawire.controller.state import ControllerState
from kafkawire.metadata.image import TopicImage

MAPS = ("topics_by_id", "topics_by_name", "configs", "client_quotas", "scram", "finalized_features", "brokers",
        "controllers", "acls", "delegation_tokens")
NAMES = ["a", "b", "c.d", "c_d", "e"]


def _value(value):
    if isinstance(value, TopicImage):
        return value.name, value.id, list(value.partitions.items())
    if isinstance(value, dict):
        return list(value.items())
    return value


def fingerprint(image) -> tuple:
    """Everything a reader may read of an image, orders included."""
    maps = tuple(tuple((key, _value(value)) for key, value in getattr(image, name).items()) for name in MAPS)
    index = image.acl_index
    acl_index = (list(index._by_id.items()), [(k, list(v.items())) for k, v in index._literal.items()],
                 [(k, list(v.items())) for k, v in index._prefixed.items()], dict(index._sorted_lengths))
    return maps, acl_index, image.provenance, image.metadata_version, image.zk_migration_state, image.next_producer_id


class _Log:
    """The raft log's committed part as a rollback replays it: a snapshot, then batches."""

    def __init__(self):
        self.snapshot = None             # (end offset, records)
        self.batches: list[tuple[int, list[bytes]]] = []

    def replay(self, listener) -> None:
        if self.snapshot is not None:
            end, records = self.snapshot
            listener.on_snapshot_loaded(type("SnapshotId", (), {"offset": end, "epoch": 1})(), records)
        for base, records in self.batches:
            listener.on_committed(base, 1, 0, records)


def _record(rng: random.Random) -> bytes:
    """One random metadata record; some of them are ones the image refuses (a problem logged)."""
    topic_id = uuid.UUID(int=rng.randint(1, 6))
    kind = rng.randrange(16)
    if kind == 0:
        return frame("TopicRecord", name=rng.choice(NAMES), topic_id=topic_id)
    if kind == 1:
        return frame("RemoveTopicRecord", topic_id=topic_id)
    if kind in (2, 3):
        replicas = rng.sample(range(1, 5), 3)
        if kind == 3:                               # two in the ISR, the third eligible (ClearElrRecord clears it)
            return frame("PartitionRecord", 2, partition_id=rng.randrange(3), topic_id=topic_id, replicas=replicas,
                         isr=replicas[:2], leader=replicas[0], leader_epoch=0, partition_epoch=0,
                         eligible_leader_replicas=replicas[2:])
        return frame("PartitionRecord", partition_id=rng.randrange(3), topic_id=topic_id, replicas=replicas[:2],
                     isr=replicas[:2], leader=replicas[0], leader_epoch=0, partition_epoch=0)
    if kind == 4:
        return frame("PartitionChangeRecord", partition_id=rng.randrange(3), topic_id=topic_id,
                     leader=rng.randrange(1, 5))
    if kind == 5:
        return frame("ConfigRecord", resource_type=rng.choice((2, 4)), resource_name=rng.choice(NAMES + [""]),
                     name=rng.choice(("retention.ms", "cleanup.policy")), value=rng.choice((None, "1", "2")))
    if kind == 6:
        entity = [struct("ClientQuotaRecord", "EntityData")(entity_type="user", entity_name=rng.choice(NAMES))]
        return frame("ClientQuotaRecord", entity=entity, key=rng.choice(("producer_byte_rate", "consumer_byte_rate")),
                     value=float(rng.randrange(9)), remove=rng.random() < 0.4)
    if kind == 7:
        if rng.random() < 0.4:
            return frame("RemoveUserScramCredentialRecord", name=rng.choice(NAMES), mechanism=rng.choice((1, 2)))
        return frame("UserScramCredentialRecord", name=rng.choice(NAMES), mechanism=rng.choice((1, 2)),
                     salt=bytes([rng.randrange(256)]), stored_key=b"s", server_key=b"k", iterations=4096)
    if kind == 8:
        acl_id = uuid.UUID(int=rng.randint(1, 5))
        if rng.random() < 0.4:
            return frame("RemoveAccessControlEntryRecord", id=acl_id)
        return frame("AccessControlEntryRecord", id=acl_id, resource_type=2, resource_name=rng.choice(NAMES),
                     pattern_type=rng.choice((3, 4)), principal="User:alice", host="*", operation=3,
                     permission_type=3)
    if kind == 9:
        broker = rng.randint(1, 4)
        name = rng.choice(("RegisterBrokerRecord", "UnregisterBrokerRecord", "FenceBrokerRecord",
                           "UnfenceBrokerRecord"))
        if name == "RegisterBrokerRecord":
            return frame(name, broker_id=broker, broker_epoch=rng.randint(1, 2), incarnation_id=uuid.UUID(int=broker))
        if name == "UnregisterBrokerRecord":
            return frame(name, broker_id=broker, broker_epoch=rng.randint(1, 2))
        return frame(name, id=broker, epoch=rng.randint(1, 2))
    if kind == 10:
        name = rng.choice(("metadata.version", "group.version", "transaction.version", "kraft.version"))
        return frame("FeatureLevelRecord", name=name, feature_level=rng.randrange(3) + (7 if name[0] == "m" else 0))
    if kind == 11:
        controller = rng.randint(1, 3)
        if rng.random() < 0.3:
            return frame("UnregisterControllerRecord", controller_id=controller)
        return frame("RegisterControllerRecord", controller_id=controller, incarnation_id=uuid.uuid4())
    if kind == 12:
        token = rng.choice(("t1", "t2", "t3"))
        if rng.random() < 0.4:
            return frame("RemoveDelegationTokenRecord", token_id=token)
        return frame("DelegationTokenRecord", owner="User:a", requester="User:a", renewers=[], issue_timestamp=1,
                     max_timestamp=rng.randrange(9), expiration_timestamp=2, token_id=token)
    if kind == 13:
        return frame("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=rng.randrange(10_000))
    if kind == 14:
        return frame("ClearElrRecord", topic_name=rng.choice(["", "zz"] + NAMES))
    return rng.choice((frame("BeginTransactionRecord", name="t"), frame("EndTransactionRecord"),
                       frame("AbortTransactionRecord"), frame("NoOpRecord")))


def walked_partition_counts(image) -> tuple[int, int, int]:
    """(partitions, without a leader, not led by their first replica) by a walk of ``image``,
    as the metrics counted them before the index (Kafka's hasLeader, hasPreferredLeader). By topic
    id: the random records may give two topics one name, which Kafka's counts, kept from each
    partition's changes, both count."""
    partitions = [p for topic in image.topics_by_id.values() for p in topic.partitions.values()]
    return (len(partitions), sum(p.leader == -1 for p in partitions),
            sum(p.leader != (p.replicas[0] if p.replicas else -1) for p in partitions))


def state_fingerprint(state: ControllerState) -> tuple:
    """Everything a ControllerState keeps, orders included (not its replay counts and problems)."""
    txn = state._transaction
    return (fingerprint(state.image), state.next_offset,
            [(key, list(names)) for key, names in state.image.topics_with_collision_chars.items()],
            list(state.register_broker_offsets.items()), list(state.feature_order),
            None if txn is None else (txn.name, txn.start_offset, [(repr(m), o) for m, o in txn.records]),
            state.partition_index.as_sets())


async def _drive(seed: int, steps: int, rollbacks: list, counts_checked: dict | None = None) -> int:
    """``rollbacks`` gets, for each rollback, whether a metadata transaction was open at the
    commit point or in flight."""
    rng = random.Random(seed)
    state, oracle, log = ControllerState(None), ControllerState(None), _Log()
    committed = CommittedImage(state)
    pipeline = WritePipeline(state, log.replay, lambda: None, committed=committed)
    pipeline._rebuild = lambda: pytest.fail("a rollback replayed the log")
    ahead: list[tuple[int, list[bytes]]] = []    # appended, not committed, oldest first
    held: list[tuple[object, tuple]] = []        # images handed out, with what they were then
    checks = 0
    counted = counts_checked if counts_checked is not None else {False: 0, True: 0}
    for _ in range(steps):
        action = rng.random()
        if action < 0.45:                                   # a write applied ahead
            records = [_record(rng) for _ in range(rng.randint(1, 6))]
            pipeline.apply_ahead(state.next_offset, 1, 0, records)
            ahead.append((state.next_offset - len(records), records))
        elif action < 0.75 and ahead:                       # the oldest writes commit
            for _ in range(rng.randint(1, len(ahead))):
                base, records = ahead.pop(0)
                log.batches.append((base, records))
                oracle.apply_batch(base, 1, 0, records)
                pipeline.committed(base, records)
        elif action < 0.8 and ahead:                        # leadership lost: the writes ahead dropped
            rollbacks.append(oracle.in_transaction or state.in_transaction)
            pipeline.roll_back(ApiError(41, "not controller"))
            ahead.clear()
            assert state_fingerprint(state) == state_fingerprint(oracle), (seed, checks)
        elif action < 0.85 and not ahead:                   # a batch committed by another leader
            records = [_record(rng) for _ in range(rng.randint(1, 4))]
            base = state.next_offset
            log.batches.append((base, records))
            oracle.apply_batch(base, 1, 0, records)
            state.apply_batch(base, 1, 0, records)
            committed.state_committed()
        elif action < 0.88 and not ahead and not oracle.in_transaction:     # a snapshot loaded
            end = oracle.next_offset
            records = image_records(oracle.image, oracle.feature_order)
            log.snapshot, log.batches = (end, records), []
            oracle.load_snapshot(end, 1, records)
            state.load_snapshot(end, 1, records)
            committed.state_committed()
        if rng.random() < 0.5:                              # a reader takes the committed image
            image = committed.image
            if rng.random() < 0.3:
                held.append((image, fingerprint(image)))
        assert fingerprint(committed.image) == fingerprint(oracle.image), (seed, checks)
        assert committed.offset == oracle.next_offset - 1
        # the metrics' partition counts, from the state's index, are the committed image's
        # (counted by a walk of the oracle), whatever is ahead; unbounded, and bounded to the
        # topics of one write, where None (the caller walks) is allowed
        assert committed.partition_counts(10**9) == walked_partition_counts(oracle.image), (seed, checks)
        assert committed.partition_counts(2) in (None, walked_partition_counts(oracle.image)), (seed, checks)
        counted[committed.ahead > 0] += 1
        for image, then in held:
            assert fingerprint(image) == then, (seed, checks)
        if len(held) > 4:
            held.pop(rng.randrange(len(held)))
        checks += 1
    return checks


def test_the_committed_image_is_what_the_committed_records_make_at_every_step(monkeypatch):
    monkeypatch.setattr(logging.getLogger("kafkawire.controller.state"), "disabled", True)   # the refused records

    rollbacks = []
    counts_checked = {False: 0, True: 0}            # with writes ahead or not

    async def go():
        return [await _drive(seed, 250, rollbacks, counts_checked) for seed in range(5)]

    assert asyncio.run(go()) == [250] * 5
    assert min(counts_checked.values()) > 100
    assert len(rollbacks) > 20 and any(rollbacks)          # some in the middle of a metadata transaction


def test_after_a_rollback_that_rebuilds_the_committed_image_is_the_states_not_a_copy(monkeypatch):
    """A rollback that replays the log (a record in flight that does not decode) builds a new
    state: the committed image follows it (shares its topics) rather than keep the old ones
    beside it, twice the memory at 1M partitions."""
    async def go():
        state = ControllerState(None)
        log = _Log()
        pipeline = WritePipeline(state, log.replay, lambda: None)
        records = [frame("TopicRecord", name=f"t{i}", topic_id=uuid.UUID(int=i + 1)) for i in range(5)]
        pipeline.apply_ahead(0, 1, 0, records)
        log.batches.append((0, records))
        pipeline.committed(0, records)
        pipeline.apply_ahead(5, 1, 0, [b"\x00not a record"])
        pipeline.roll_back(ApiError(41, "not controller"))
        image = pipeline.committed_image.image
        return state, image

    monkeypatch.setattr(logging.getLogger("kafkawire.controller.state"), "disabled", True)
    state, image = asyncio.run(go())
    assert sorted(image.topics_by_name) == [f"t{i}" for i in range(5)] and state.next_offset == 5
    assert all(image.topics_by_id[topic_id] is topic for topic_id, topic in state.image.topics_by_id.items())


def test_a_commit_copies_no_map_when_no_view_handed_out_is_alive():
    """The per-write cost: a write's commit replays its changes into the committed image's own
    maps; only a map that a view still held shares is copied first."""
    async def go():
        state = ControllerState(None)
        committed = CommittedImage(state)
        pipeline = WritePipeline(state, _Log().replay, lambda: None, committed=committed)
        records = [frame("TopicRecord", name=f"t{i}", topic_id=uuid.UUID(int=i + 1)) for i in range(50)]
        pipeline.apply_ahead(0, 1, 0, records)
        pipeline.committed(0, records)
        before = id(committed.image.topics_by_id)          # the view is dropped at once
        write = [frame("TopicRecord", name="new", topic_id=uuid.UUID(int=99))]
        pipeline.apply_ahead(50, 1, 0, write)
        pipeline.committed(50, write)
        unshared = committed.image.topics_by_id
        held = committed.image
        write = [frame("TopicRecord", name="newer", topic_id=uuid.UUID(int=100))]
        pipeline.apply_ahead(51, 1, 0, write)
        pipeline.committed(51, write)
        return before, unshared, held, committed.image.topics_by_id

    before, unshared, held, after = asyncio.run(go())
    assert id(unshared) == before                          # changed in place: nobody held it
    assert after is not unshared and len(held.topics_by_id) == 51 and len(after) == 52


def test_a_rollback_inside_a_metadata_transaction_reopens_it_with_its_committed_records():
    """Begin and a TopicRecord committed; a PartitionRecord and the EndTransactionRecord, which
    applied both, in flight: the rollback takes the topic and its partition out of the image and
    the index, and the transaction is open again with the TopicRecord alone."""
    topic_id = uuid.UUID(int=7)
    committed_records = [frame("BeginTransactionRecord", name="t"), frame("TopicRecord", name="a.b", topic_id=topic_id)]
    in_flight = [frame("PartitionRecord", partition_id=0, topic_id=topic_id, replicas=[1, 2], isr=[1, 2], leader=1,
                       leader_epoch=0, partition_epoch=0), frame("EndTransactionRecord")]

    async def go():
        state, oracle, log = ControllerState(None), ControllerState(None), _Log()
        pipeline = WritePipeline(state, log.replay, lambda: None)
        pipeline._rebuild = lambda: pytest.fail("a rollback replayed the log")
        for target in (state, oracle):
            target.apply_batch(0, 1, 0, committed_records)
        log.batches.append((0, committed_records))
        pipeline.committed_image.state_committed()
        pipeline.apply_ahead(2, 1, 0, in_flight)
        ahead = (sorted(state.image.topics_by_name), state.in_transaction, state.partition_index.as_sets()["leader"])
        pipeline.roll_back(ApiError(41, "not controller"))
        return ahead, state, oracle

    ahead, state, oracle = asyncio.run(go())
    assert ahead == (["a.b"], False, {1: {(topic_id, 0)}})
    assert state_fingerprint(state) == state_fingerprint(oracle)
    assert (state.transaction_start_offset, [o for _, o in state._transaction.records]) == (0, [1])
    assert state.image.topics_by_name == {} and state.partition_index.as_sets()["leader"] == {}
