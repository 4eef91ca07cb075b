"""CreateTopics' check that a new name does not collide in metric names ('.' versus '_') with an
existing topic (issue 24): as Kafka's ReplicationControlManager does, the image keeps the names
with '.' or '_' by their unified name (topics_with_collision_chars), maintained on TopicRecord,
RemoveTopicRecord and snapshot load, and CreateTopics looks each name up once instead of
comparing it with every topic."""
from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from kafkawire.controller.frames import frame
from kafkawire.controller.state import ControllerState
from kafkawire.controller.topics import create_topics
from kafkawire.messages.create_topics_request import CreateTopicsRequest
from kafkawire.metadata.image import MetadataImage, has_collision_chars, unify_collision_chars

from .test_create_topics import results, scenario, topic


class CountingLookups(dict):
    lookups = 0

    def get(self, key, default=None):
        CountingLookups.lookups += 1
        return super().get(key, default)

    def __getitem__(self, key):
        CountingLookups.lookups += 1
        return super().__getitem__(key)


class NotToBeScanned(dict):
    """topics_by_name that fails a scan of all topics (lookups by name are fine)."""
    def __iter__(self):
        raise AssertionError("CreateTopics scanned every existing topic")

    keys = values = items = __iter__


def topic_records(names, first_id: int = 1) -> list[bytes]:
    return [frame("TopicRecord", name=n, topic_id=uuid.UUID(int=first_id + i)) for i, n in enumerate(names)]


def test_the_collision_check_is_one_lookup_per_name_not_a_scan_of_the_topics():
    """ReplicationControlManager.validateNewTopicNames: one topicsWithCollisionChars lookup per
    name with '.' or '_', never a comparison with each existing topic."""
    state = ControllerState()
    state.apply_batch(0, 1, 0, topic_records([f"t_{i}" for i in range(3000)]))
    state.image.topics_by_name = NotToBeScanned(state.image.topics_by_name)
    state.image.topics_with_collision_chars = CountingLookups(state.image.topics_with_collision_chars)
    CountingLookups.lookups = 0
    names = [f"t.{i}" for i in range(2000)] + [f"u-{i}" for i in range(1000)]
    _, answer = create_topics(state, CreateTopicsRequest(topics=[topic(n) for n in names]))
    assert CountingLookups.lookups == 2000                  # the names without '.' or '_' need none
    assert [(a.name, a.error_message) for a in answer[:2]] == [
        ("t.0", "Topic 't.0' collides with existing topic: t_0"), ("t.1", "Topic 't.1' collides with existing topic: t_1")]
    assert all(a.error_code == 17 for a in answer[:2000])   # INVALID_TOPIC_EXCEPTION


def test_names_colliding_within_one_request_are_both_created_then_block_later_ones():
    """Kafka checks a request's names against the existing topics only: 'a.b' and 'a_b' in one
    request are both created (the map learns them on replay), and a later 'a.b' exists."""
    (first, second), _, leader = scenario([CreateTopicsRequest(topics=[topic("a.b"), topic("a_b")]),
                                           CreateTopicsRequest(topics=[topic("a.b"), topic("x.y"), topic("x_y")])],
                                          brokers=(1,))
    assert results(first) == [("a.b", "NONE", None), ("a_b", "NONE", None)]
    assert results(second) == [("a.b", "TOPIC_ALREADY_EXISTS", "Topic 'a.b' already exists."),
                               ("x.y", "NONE", None), ("x_y", "NONE", None)]
    assert leader.state.image.topics_with_collision_chars == {"a_b": {"a.b": None, "a_b": None},
                                                        "x_y": {"x.y": None, "x_y": None}}


def test_with_several_colliding_topics_the_first_in_kafkas_set_order_is_named():
    """Kafka names colliding.iterator().next() of its TimelineHashSet: for 'a.b.c' against the
    existing 'a_b.c' and 'a.b_c' that is 'a.b_c' (Kafka 4.3.1's order, checked against its jar)."""
    state = ControllerState()
    state.apply_batch(0, 1, 0, topic_records(["a_b.c", "a.b_c"]))
    _, answer = create_topics(state, CreateTopicsRequest(topics=[topic("a.b.c")]))
    assert answer[0].error_message == "Topic 'a.b.c' collides with existing topic: a.b_c"


def expected_map(image: MetadataImage) -> dict:
    out: dict = {}
    for name in image.topics_by_name:
        if has_collision_chars(name):
            out.setdefault(unify_collision_chars(name), set()).add(name)
    return out


def as_sets(collisions: dict) -> dict:
    return {unified: set(names) for unified, names in collisions.items()}


operations = st.lists(st.tuples(st.booleans(), st.integers(1, 4), st.sampled_from(["a.b", "a_b", "ab", "a.b.c",
                                                                                    "a_b_c", "c_d"])), max_size=30)


@given(operations)
def test_the_map_follows_topic_and_remove_topic_records_and_snapshots(ops):
    """topics_with_collision_chars holds exactly the names of topics_by_name with '.' or '_',
    through TopicRecords (new ids, an id renamed, a name taken over), RemoveTopicRecords and a
    snapshot load."""
    state, offset = ControllerState(), 0
    for remove, topic_id, name in ops:
        record = (frame("RemoveTopicRecord", topic_id=uuid.UUID(int=topic_id)) if remove
                  else frame("TopicRecord", name=name, topic_id=uuid.UUID(int=topic_id)))
        state.apply_batch(offset, 1, 0, [record])
        offset += 1
        assert as_sets(state.image.topics_with_collision_chars) == expected_map(state.image)
    snapshot = topic_records(sorted(state.image.topics_by_name), 100)
    state.load_snapshot(offset, 1, snapshot)
    assert as_sets(state.image.topics_with_collision_chars) == expected_map(state.image)
