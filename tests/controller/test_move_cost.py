"""The shortcuts that make a partition move cheap (issue 28) change nothing the controller writes
or holds: the frame is the generated encoder's bytes, the controller applies the message it
built to the same image the bytes decode to (and decodes any other value), and the per-event
directory lookups say what has_online_dir says."""
import random
import uuid
from types import SimpleNamespace

from kafkawire.controller import frames
from kafkawire.controller.partition_change import PartitionChange, build_change, change_record, isr_removal_change
from kafkawire.controller.replication import _OnlineDirectories, has_online_dir, replica_directory
from kafkawire.controller.state import ControllerState
from kafkawire.messages.feature_level_record import FeatureLevelRecord
from kafkawire.messages.partition_change_record import PartitionChangeRecord
from kafkawire.messages.partition_record import PartitionRecord
from kafkawire.messages.register_broker_record import RegisterBrokerRecord
from kafkawire.messages.remove_topic_record import RemoveTopicRecord
from kafkawire.messages.topic_record import TopicRecord
from kafkawire.metadata.frame import FRAME_VERSION, decode_metadata_record, encode_metadata_record
from kafkawire.metadata.registrations import LOST, MIGRATING, UNASSIGNED, PartitionRegistration, directory_ints
from kafkawire.protocol.primitives import write_uvarint

TOPIC = uuid.UUID(int=0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321)
DIRS = [uuid.UUID(int=0xD1 << 64 | i) for i in range(4)]


def _pure_frame(message, version: int) -> bytes:
    """The frame as written before the native encoder was used: the generated Python encoder."""
    buf = bytearray()
    for value in (FRAME_VERSION, message.API_KEY, version):
        write_uvarint(buf, value)
    message.encode_into(buf, version)
    return bytes(buf)


def test_the_frame_is_the_generated_encoders_bytes():
    records = [
        (PartitionChangeRecord(partition_id=7, topic_id=TOPIC, leader=2, isr=[2, 3]), 0),
        (PartitionChangeRecord(partition_id=7, topic_id=TOPIC, leader=-1, isr=[], eligible_leader_replicas=[1, 3],
                               last_known_elr=[1], leader_recovery_state=1), 2),
        (PartitionChangeRecord(partition_id=1, topic_id=TOPIC, replicas=[1, 2, 4], directories=DIRS[:3],
                               removing_replicas=[], adding_replicas=[4]), 1),
        (PartitionRecord(partition_id=0, topic_id=TOPIC, replicas=[1, 2], isr=[1, 2], leader=1,
                         directories=DIRS[:2]), 2),
        (TopicRecord(name="t" * 300, topic_id=TOPIC), 0),
        (FeatureLevelRecord(name="metadata.version", feature_level=27), 0),
    ]
    for message, version in records:
        assert encode_metadata_record(message, version) == _pure_frame(message, version), message


def _state_with_partition() -> ControllerState:
    state = ControllerState()
    values = [encode_metadata_record(TopicRecord(name="t", topic_id=TOPIC), 0),
              encode_metadata_record(PartitionRecord(partition_id=0, topic_id=TOPIC, replicas=[1, 2, 3], isr=[1, 2, 3],
                                                     leader=1, leader_epoch=4, partition_epoch=9), 0)]
    state.apply_batch(0, 1, 0, values)
    return state


def test_the_controller_applies_the_message_it_built_and_decodes_any_other_value():
    change = PartitionChange(leader=2, isr=[2, 3], eligible_leader_replicas=[], last_known_elr=None)
    value = change_record(TOPIC, 0, change, 27)
    built = frames._remembered[id(value)][1]
    assert value == encode_metadata_record(built, 2)
    assert decode_metadata_record(value).message.isr == [2, 3]

    copy = bytes(bytearray(value))          # equal bytes, another object: not taken, decoded
    assert frames.take_built(copy) is None
    from_copy, from_built = _state_with_partition(), _state_with_partition()
    from_copy.apply_batch(2, 1, 0, [copy])
    assert id(value) in frames._remembered
    from_built.apply_batch(2, 1, 0, [value])
    assert id(value) not in frames._remembered and frames.take_built(value) is None      # taken once
    a, b = from_copy.image.topics_by_id[TOPIC].partitions[0], from_built.image.topics_by_id[TOPIC].partitions[0]
    assert a == b and (b.leader, b.isr, b.leader_epoch, b.partition_epoch) == (2, (2, 3), 5, 10)
    assert from_copy.partition_index.as_sets() == from_built.partition_index.as_sets()


def test_the_remembered_messages_are_bounded():
    change = PartitionChange(leader=1)
    first = change_record(TOPIC, 0, change, 27)
    for pid in range(frames.MAX_REMEMBERED):
        change_record(TOPIC, pid + 1, change, 27)
    assert len(frames._remembered) <= frames.MAX_REMEMBERED
    assert frames.take_built(first) is None          # the oldest went first; the value is decoded
    frames._remembered.clear()


def test_the_online_directories_say_what_has_online_dir_says():
    rng = random.Random(28)
    special = [UNASSIGNED, MIGRATING, LOST]
    for _ in range(300):
        brokers = {b: SimpleNamespace(directories=tuple(rng.sample(DIRS, rng.randint(0, 3))))
                   for b in range(1, 5) if rng.random() < 0.9}
        image = SimpleNamespace(brokers=brokers)
        replicas = tuple(rng.sample(range(1, 6), 3))
        directories = [rng.choice(DIRS + special) for _ in replicas]
        partition = PartitionRegistration(replicas=replicas, directory_ids=directory_ints(directories), isr=replicas,
                                          removing_replicas=(), adding_replicas=(), leader=replicas[0],
                                          leader_recovery_state=0, leader_epoch=0, partition_epoch=0)
        online = _OnlineDirectories(image)
        for broker in range(0, 7):
            expected = has_online_dir(image, broker, replica_directory(partition, broker))
            assert online.has_online_dir(broker, partition) == expected, (brokers, partition, broker)


def _random_partition(rng: random.Random, elr_enabled: bool) -> PartitionRegistration:
    replicas = tuple(rng.sample(range(0, 6), rng.randint(1, 4)))
    isr = tuple(r for r in rng.sample(replicas, len(replicas)) if rng.random() < 0.7)
    elr = last_known = ()               # (ELR off: ClearElrRecord emptied both)
    if elr_enabled:
        elr = tuple(r for r in replicas if r not in isr and rng.random() < 0.5)
        last_known = tuple(rng.sample(replicas, rng.choice((0, 0, 1, 1, 2)) if len(replicas) > 1 else rng.randint(0, 1)))
    leader = rng.choice(isr + (-1, -1, rng.choice(replicas))) if isr else rng.choice((-1, rng.choice(replicas)))
    directories = [rng.choice(DIRS + [UNASSIGNED, MIGRATING, LOST]) for _ in replicas]
    return PartitionRegistration(replicas=replicas, directory_ids=directory_ints(directories), isr=isr,
                                 removing_replicas=(), adding_replicas=(), leader=leader,
                                 leader_recovery_state=rng.choice((0, 0, 1)), leader_epoch=rng.randint(0, 9),
                                 partition_epoch=rng.randint(0, 9), elr=elr, last_known_elr=last_known)


def test_the_isr_removal_fast_path_writes_build_changes_records_byte_for_byte():
    """isr_removal_change against build_change on random partitions, brokers, directories and
    settings (ELR on and off, unclean election, min ISR, the metadata version's epoch bump, an
    unclean shutdown): the same PartitionChangeRecord bytes, or no record for both."""
    rng = random.Random(2811)
    outcomes = {"none": 0, "leader": 0, "isr only": 0, "unclean": 0, "elr": 0}
    for _ in range(6000):
        elr = rng.random() < 0.6          # (ELR needs a metadata version with record version 2)
        partition = _random_partition(rng, elr)
        brokers = {b: SimpleNamespace(directories=tuple(rng.sample(DIRS, rng.randint(0, 3))))
                   for b in range(0, 6) if rng.random() < 0.9}
        online = _OnlineDirectories(SimpleNamespace(brokers=brokers))
        removed = rng.choice((-1, rng.randint(0, 5)))
        unclean_shutdown = (rng.randint(0, 5),) if rng.random() < 0.2 else ()
        gone = (removed,) + unclean_shutdown
        active = {b: b not in gone and rng.random() < 0.8 for b in range(-1, 6)}
        target_isr = [r for r in partition.isr if r not in gone]
        settings = dict(min_isr=rng.randint(1, 3), elr_enabled=elr, unclean=rng.random() < 0.3,
                        metadata_version=27 if elr else rng.choice((10, 12, 27)))
        expected = build_change(partition, target_isr=list(target_isr),
                                acceptable_leader=lambda r: active[r] and online.has_online_dir(r, partition),
                                unclean_shutdown_replicas=unclean_shutdown, **settings)
        got = isr_removal_change(partition, list(target_isr), active.__getitem__, online.has_online_dir,
                                 settings["min_isr"], settings["elr_enabled"], settings["unclean"],
                                 settings["metadata_version"], unclean_shutdown)
        frames_of = [None if change is None else change_record(TOPIC, 3, change, settings["metadata_version"])
                     for change in (expected, got)]
        for value in frames_of:
            if value is not None:
                frames.take_built(value)
        assert frames_of[0] == frames_of[1], (partition, gone, active, settings, expected, got)
        if expected is None:
            outcomes["none"] += 1
        elif expected.leader_recovery_state == 1:
            outcomes["unclean"] += 1
        elif expected.eligible_leader_replicas is not None:
            outcomes["elr"] += 1
        elif expected.leader != -2:
            outcomes["leader"] += 1
        else:
            outcomes["isr only"] += 1
    assert min(outcomes.values()) >= 100, outcomes          # every kind of outcome was compared


def test_a_batch_applies_its_runs_of_partition_changes_as_one_record_at_a_time_does():
    """apply_batch looks a run of PartitionChangeRecords' topic up once: random batches of changes
    (runs to one topic, another topic between them, a topic removed and made again under the same
    name, changes to a topic or partition that is not there) leave the image, the partition index
    and the problems as applying the same records one batch each does."""
    rng = random.Random(2028)
    for trial in range(40):
        topics = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(3)]
        values = []
        for i, topic in enumerate(topics):
            values.append(encode_metadata_record(TopicRecord(name=f"t{i}", topic_id=topic), 0))
            for pid in range(3):
                values.append(encode_metadata_record(PartitionRecord(
                    partition_id=pid, topic_id=topic, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1), 0))
        for _ in range(30):
            roll = rng.random()
            if roll < 0.08:                         # the topic made again: a new id under the same name
                at = rng.randrange(3)
                values.append(encode_metadata_record(PartitionChangeRecord(partition_id=0, topic_id=topics[at],
                                                                           isr=[1, 2]), 0))
                values.append(encode_metadata_record(RemoveTopicRecord(topic_id=topics[at]), 0))
                values.append(encode_metadata_record(PartitionChangeRecord(partition_id=0, topic_id=topics[at],
                                                                           isr=[1, 3]), 0))    # gone: refused
                topics[at] = uuid.UUID(int=rng.getrandbits(128))
                values.append(encode_metadata_record(TopicRecord(name=f"t{at}", topic_id=topics[at]), 0))
                values.append(encode_metadata_record(PartitionRecord(
                    partition_id=0, topic_id=topics[at], replicas=[1, 2, 3], isr=[1, 2, 3], leader=2), 0))
                continue
            topic = uuid.UUID(int=rng.getrandbits(128)) if roll < 0.1 else rng.choice(topics)
            isr = rng.sample([1, 2, 3], rng.randint(1, 3))
            for pid in rng.sample(range(4), rng.randint(1, 3)):           # partition 3 is not there
                values.append(encode_metadata_record(PartitionChangeRecord(
                    partition_id=pid, topic_id=topic, leader=rng.choice(isr), isr=isr), 0))
        whole, one_by_one = ControllerState(), ControllerState()
        whole.apply_batch(0, 1, 0, values)
        for offset, value in enumerate(values):
            one_by_one.apply_batch(offset, 1, 0, [value])
        assert whole.image.topics_by_name.keys() == one_by_one.image.topics_by_name.keys()
        for topic_id, topic in one_by_one.image.topics_by_id.items():
            assert whole.image.topics_by_id[topic_id].partitions == topic.partitions, trial
        assert whole.partition_index.as_sets() == one_by_one.partition_index.as_sets()
        assert [str(p) for p in whole.problems] == [str(p) for p in one_by_one.problems]
        assert whole.problems, "every trial names a partition that is not there"
