"""Incremental fetch sessions (KIP-227), sans-I/O (kafkawire.broker.fetch_session), with the cases
of Kafka 4.3.1's FetchSessionTest: a full fetch with epoch 0 creates a session, incremental
fetches name only changed partitions and are answered only with changed ones, epoch -1 closes,
the session errors, and the cache's eviction rule on a fake clock."""
from __future__ import annotations

import random
import uuid

import pytest

from kafkawire.broker.fetch_session import (EVICTION_MS, FetchManager, FetchSessionCache, IncrementalFetchContext,
                                            next_epoch)
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic, ForgottenTopic
from kafkawire.messages.fetch_response import PartitionData
from kafkawire.protocol.error_codes import Errors

IDS = {"a": uuid.UUID(int=1), "b": uuid.UUID(int=2)}


class Clock:
    def __init__(self):
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def manager(slots: int = 10):
    clock = Clock()
    return FetchManager(FetchSessionCache(slots, rng=random.Random(7)), clock=clock), clock


def request(session_id=0, epoch=0, partitions=(), forgotten=()):
    """A FetchRequest naming ``partitions`` ((topic, partition, fetch offset)) and forgetting
    ``forgotten`` ((topic, partition)); topics carry both name and id."""
    topics = {}
    for topic, index, offset in partitions:
        topics.setdefault(topic, []).append(FetchPartition(partition=index, fetch_offset=offset,
                                                           partition_max_bytes=1000))
    forgotten_topics = {}
    for topic, index in forgotten:
        forgotten_topics.setdefault(topic, []).append(index)
    return FetchRequest(session_id=session_id, session_epoch=epoch,
                        topics=[FetchTopic(topic=t, topic_id=IDS[t], partitions=ps) for t, ps in topics.items()],
                        forgotten_topics_data=[ForgottenTopic(topic=t, topic_id=IDS[t], partitions=ps)
                                               for t, ps in forgotten_topics.items()])


def answer(context, hw=10, records=None, errors=None):
    """The context's answer when every partition it reads has high watermark ``hw``, the
    records ``records`` maps it to, and the error ``errors`` maps it to:
    (error, session id, [(topic, partition)] answered)."""
    records, errors = records or {}, errors or {}
    updates = [(topic, topic_id, PartitionData(partition_index=p.partition, high_watermark=hw, log_start_offset=0,
                                               records=records.get((topic, p.partition), b""),
                                               error_code=errors.get((topic, p.partition), Errors.NONE)))
               for topic, topic_id, p in context.partitions()]
    code, session_id, kept = context.response(updates)
    return code, session_id, [(topic, data.partition_index) for topic, _, data in kept]


def open_session(fm, version=12, partitions=(("a", 0, 0), ("a", 1, 0), ("b", 0, 0))):
    code, session_id, answered = answer(fm.new_context(version, request(partitions=partitions), privileged=False))
    assert (code, answered) == (Errors.NONE, [(t, p) for t, p, _ in partitions])
    assert session_id > 0
    return session_id


def test_the_epoch_after_the_initial_one_is_1_and_int_max_wraps_to_1():
    assert (next_epoch(0), next_epoch(5), next_epoch(2**31 - 1), next_epoch(-1)) == (1, 6, 1, -1)


def test_a_full_fetch_with_epoch_0_creates_a_session_and_epoch_minus_1_or_before_v7_does_not():
    fm, _ = manager()
    session_id = open_session(fm)
    assert fm.cache.get(session_id).epoch == 1
    assert answer(fm.new_context(12, request(epoch=-1, partitions=[("a", 0, 0)]), False))[:2] == (Errors.NONE, 0)
    assert answer(fm.new_context(6, request(epoch=0, partitions=[("a", 0, 0)]), False))[:2] == (Errors.NONE, 0)
    assert list(fm.cache.sessions) == [session_id]


def test_an_incremental_fetch_answers_only_partitions_with_records_or_a_changed_watermark():
    fm, _ = manager()
    session_id = open_session(fm)
    context = fm.new_context(12, request(session_id, 1), False)
    assert [(t, p.partition, p.fetch_offset) for t, _, p in context.partitions()] == [("a", 0, 0), ("a", 1, 0),
                                                                                        ("b", 0, 0)]
    assert answer(context) == (Errors.NONE, session_id, [])                    # nothing changed
    assert answer(fm.new_context(12, request(session_id, 2), False), hw=11) == (
        Errors.NONE, session_id, [("a", 0), ("a", 1), ("b", 0)])
    context = fm.new_context(12, request(session_id, 3), False)
    assert answer(context, hw=11, records={("a", 0): b"x"}) == (Errors.NONE, session_id, [("a", 0)])
    # the partition that returned records goes last, for the byte budget's fairness
    assert [(t, p.partition) for t, _, p in context.partitions()] == [("a", 1), ("b", 0), ("a", 0)]


def test_an_incremental_fetch_adds_updates_and_forgets_partitions():
    fm, _ = manager()
    session_id = open_session(fm)
    context = fm.new_context(12, request(session_id, 1, partitions=[("a", 0, 7), ("b", 1, 0)],
                                         forgotten=[("a", 1)]), False)
    assert [(t, p.partition, p.fetch_offset) for t, _, p in context.partitions()] == [
        ("a", 0, 7), ("b", 0, 0), ("b", 1, 0)]
    assert answer(context) == (Errors.NONE, session_id, [("b", 1)])            # the new one is new to the client


def test_forgetting_every_partition_closes_the_session():
    fm, _ = manager()
    session_id = open_session(fm, partitions=[("a", 0, 0)])
    context = fm.new_context(12, request(session_id, 1, forgotten=[("a", 0)]), False)
    assert answer(context) == (Errors.NONE, 0, [])
    assert fm.cache.get(session_id) is None


def test_a_partition_with_an_error_is_answered_and_again_once_the_error_is_gone():
    fm, _ = manager()
    session_id = open_session(fm, partitions=[("a", 0, 0)])
    errors = {("a", 0): Errors.NOT_LEADER_OR_FOLLOWER}
    assert answer(fm.new_context(12, request(session_id, 1), False), errors=errors)[2] == [("a", 0)]
    assert answer(fm.new_context(12, request(session_id, 2), False))[2] == [("a", 0)]
    assert answer(fm.new_context(12, request(session_id, 3), False))[2] == []


def test_epoch_minus_1_closes_the_session_and_a_full_fetch_naming_one_replaces_it():
    fm, _ = manager()
    first = open_session(fm)
    assert answer(fm.new_context(12, request(first, -1, partitions=[("a", 0, 0)]), False))[:2] == (Errors.NONE, 0)
    assert fm.cache.get(first) is None
    second = open_session(fm)
    code, third, _ = answer(fm.new_context(12, request(second, 0, partitions=[("a", 0, 0)]), False))
    assert code == Errors.NONE and third not in (0, second)
    assert list(fm.cache.sessions) == [third]


@pytest.mark.parametrize("session_offset, epoch, version, error", [
    (1, 1, 12, Errors.FETCH_SESSION_ID_NOT_FOUND),
    (0, 2, 12, Errors.INVALID_FETCH_SESSION_EPOCH),
    (0, 1, 13, Errors.FETCH_SESSION_TOPIC_ID_ERROR),
])
def test_a_session_error_is_answered_alone_without_partitions(session_offset, epoch, version, error):
    fm, _ = manager()
    session_id = open_session(fm)
    context = fm.new_context(version, request(session_id + session_offset, epoch), False)
    assert answer(context) == (error, 0, [])
    assert fm.cache.get(session_id).epoch == 1                                # the session is left as it was


def test_sessions_from_v13_key_partitions_by_topic_id():
    fm, _ = manager()
    session_id = open_session(fm, version=13, partitions=[("a", 0, 0)])
    renamed = request(session_id, 1, partitions=[("a", 0, 5)])
    renamed.topics[0].topic = ""                                              # v13+ sends no name
    context = fm.new_context(13, renamed, False)
    assert [p.fetch_offset for _, _, p in context.partitions()] == [5]
    assert answer(fm.new_context(12, request(session_id, 2), False))[0] == Errors.FETCH_SESSION_TOPIC_ID_ERROR


def test_a_fetch_that_raced_another_in_the_same_session_is_invalid_fetch_session_epoch():
    fm, _ = manager()
    session_id = open_session(fm)
    slow = fm.new_context(12, request(session_id, 1), False)
    assert isinstance(slow, IncrementalFetchContext)
    answer(fm.new_context(12, request(session_id, 2), False))
    assert answer(slow) == (Errors.INVALID_FETCH_SESSION_EPOCH, session_id, [])


def test_a_full_cache_keeps_fresh_sessions_and_evicts_one_unused_for_longer_than_the_eviction_time():
    fm, clock = manager(slots=2)
    first, second = open_session(fm), open_session(fm)
    clock.now += 10
    assert answer(fm.new_context(12, request(partitions=[("a", 0, 0)]), False))[1] == 0
    clock.now += EVICTION_MS
    answer(fm.new_context(12, request(second, 1), False))                    # second used, first idle
    clock.now += 1
    third = open_session(fm)
    assert set(fm.cache.sessions) == {second, third} and fm.cache.evictions == 1
    assert first not in fm.cache.sessions


def test_a_followers_session_evicts_a_consumers_and_a_bigger_one_an_old_smaller_one():
    fm, clock = manager(slots=1)
    consumer = open_session(fm, partitions=[("a", 0, 0)])
    follower = answer(fm.new_context(12, request(partitions=[("a", 0, 0)]), privileged=True))[1]
    assert follower != 0 and list(fm.cache.sessions) == [follower] and consumer != follower
    assert answer(fm.new_context(12, request(partitions=[("a", 0, 0), ("a", 1, 0)]), False))[1] == 0
    fm, clock = manager(slots=1)
    small = open_session(fm, partitions=[("a", 0, 0)])
    big = [("a", 0, 0), ("a", 1, 0)]
    assert answer(fm.new_context(12, request(partitions=big), False))[1] == 0         # small is too young
    clock.now += EVICTION_MS + 1
    answer(fm.new_context(12, request(small, 1), False))                             # used when old: evictable
    assert answer(fm.new_context(12, request(partitions=[("b", 0, 0)]), False))[1] == 0  # not bigger
    bigger = answer(fm.new_context(12, request(partitions=big), False))[1]
    assert bigger not in (0, small) and list(fm.cache.sessions) == [bigger]


def test_a_cache_of_0_slots_creates_no_session_and_the_fetch_is_answered_in_full():
    fm, _ = manager(slots=0)
    assert answer(fm.new_context(12, request(partitions=[("a", 0, 0)]), False)) == (Errors.NONE, 0, [("a", 0)])
    assert fm.cache.sessions == {}
