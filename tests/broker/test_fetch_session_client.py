"""A follower's fetch session (kafkawire/broker/fetch_session_client.py), step by step as Kafka's
FetchSessionHandler builds requests and reads answers; tests/broker/test_fetch_session.py is the
leader's side, and the replication wire tests and tests/interop/test_mixed_cluster_with_kafka.py
run the two (and Kafka's leader) together."""
import logging
import uuid
from types import SimpleNamespace

from kafkawire.broker.fetch_session_client import FetchSessionClient, PartitionFetch

T, U = uuid.UUID(int=1), uuid.UUID(int=2)
NOT_FOUND, INVALID_EPOCH = 70, 71


def at(offset, topic_id=T, epoch=3):
    return PartitionFetch(topic_id, offset, 0, 1 << 20, epoch, epoch)


def answer(*keys, ids=None, version=13):
    """An answer's topics naming ``keys`` ((topic, partition)s): by topic id (``ids``: name -> id;
    a -> T, b -> U) from v13 on, by name before."""
    ids = {"a": T, "b": U, **(ids or {})}
    topics = {}
    for name, index in keys:
        topic = topics.setdefault(name, SimpleNamespace(topic="" if version >= 13 else name, topic_id=ids[name],
                                                        partitions=[]))
        topic.partitions.append(SimpleNamespace(partition_index=index))
    return list(topics.values())


def plan(session, wanted):
    p = session.build(wanted)
    return p.session_id, p.epoch, p.to_send, p.forgotten


def test_a_full_request_opens_the_session_then_only_changes_are_sent():
    s = FetchSessionClient()
    wanted = {("a", 0): at(10), ("a", 1): at(20)}
    assert plan(s, wanted) == (0, 0, [("a", 0), ("a", 1)], [])
    assert s.handle_response(0, 77, answer(("a", 0), ("a", 1)))
    assert plan(s, wanted) == (77, 1, [], [])                                   # nothing changed
    assert s.handle_response(0, 77)
    assert plan(s, {("a", 0): at(15), ("a", 1): at(20), ("b", 0): at(0, U)}) == (77, 2, [("a", 0), ("b", 0)], [])
    assert s.handle_response(0, 77)
    assert plan(s, {("b", 0): at(0, U)}) == (77, 3, [], [(("a", 0), T), (("a", 1), T)])     # no longer fetched
    assert s.handle_response(0, 77)
    replaced = uuid.UUID(int=3)
    assert plan(s, {("b", 0): at(0, replaced)}) == (77, 4, [("b", 0)], [(("b", 0), U)])      # a new topic id


def test_the_epoch_wraps_to_one():
    s = FetchSessionClient()
    s.build({})
    s.handle_response(0, 5)
    s.epoch = (1 << 31) - 1
    s.handle_response(0, 5)
    assert s.epoch == 1


def test_errors_start_a_new_session_and_a_leader_without_sessions_keeps_requests_full():
    s = FetchSessionClient()
    wanted = {("a", 0): at(10)}
    s.build(wanted)
    s.handle_response(0, 9, answer(("a", 0)))
    assert not s.handle_response(INVALID_EPOCH, 0)
    assert plan(s, wanted) == (9, 0, [("a", 0)], [])         # close session 9, open a new one, full
    s.handle_response(0, 10, answer(("a", 0)))
    s.build(wanted)
    assert not s.handle_response(NOT_FOUND, 0)
    assert plan(s, wanted) == (0, 0, [("a", 0)], [])          # the leader lost it: a new one from scratch
    s.handle_response(0, 0, answer(("a", 0)))                 # no session given: full again next time
    assert plan(s, wanted) == (0, 0, [("a", 0)], [])
    s.handle_response(0, 11, answer(("a", 0)))
    s.build(wanted)
    s.handle_error()                                          # a failed request
    assert plan(s, wanted) == (11, 0, [("a", 0)], [])


def test_an_answer_naming_what_the_session_does_not_hold_is_not_used_and_a_new_session_starts():
    """FetchSessionHandler.verifyFullFetchResponsePartitions / verifyIncrementalFetchResponsePartitions."""
    s = FetchSessionClient()
    wanted = {("a", 0): at(10), ("a", 1): at(20)}
    s.build(wanted)
    assert not s.handle_response(0, 7, answer(("a", 0)))                    # a full answer leaving a-1 out
    assert s.problem == "an invalid full fetch response with omittedPartitions=(a-1), response=(a-0)"
    assert plan(s, wanted) == (0, 0, [("a", 0), ("a", 1)], [])               # full again, no session
    assert not s.handle_response(0, 7, answer(("a", 0), ("a", 1), ("a", 2)))
    assert s.problem == "an invalid full fetch response with extraPartitions=(a-2), response=(a-0, a-1, a-2)"
    assert s.handle_response(0, 7, answer(("a", 0), ("a", 1))) and s.problem is None
    assert plan(s, wanted) == (7, 1, [], [])
    assert s.handle_response(0, 7, answer(("a", 1)))                        # incremental: only what is new
    s.build(wanted)
    assert not s.handle_response(0, 7, answer(("a", 1), ("b", 0)))          # a topic id it never fetched
    assert s.problem == f"an invalid incremental fetch response with extraIds=({U}), response=(a-1)"
    assert plan(s, wanted) == (7, 0, [("a", 0), ("a", 1)], [])               # close session 7, open a new one
    assert s.handle_response(0, 8, answer(("a", 0), ("a", 1)))
    s.build(wanted)
    assert not s.handle_response(0, 8, answer(("b", 0), version=12), version=12)     # by name before v13
    assert s.problem == "an invalid incremental fetch response with extraPartitions=(b-0), response=(b-0)"


def test_an_empty_full_answer_with_a_throttle_is_not_used_nor_called_invalid():
    """KIP-219: a throttled full fetch is answered empty; the next request is full, no log line."""
    s = FetchSessionClient()
    s.build({("a", 0): at(10)})
    assert not s.handle_response(0, 7, [], throttle_time_ms=100)
    assert s.problem is None and (s.session_id, s.epoch) == (0, 0)


def test_the_replica_fetcher_uses_nothing_of_an_invalid_answer_and_logs_why(caplog):
    from kafkawire.broker.replica_fetcher import ReplicaFetcher
    calls = []
    fetcher = SimpleNamespace(session=FetchSessionClient(), leader_id=2,
                              handle_fetch_response=lambda response, sent: calls.append(response) or [],
                              _delay=lambda states: calls.append("delay"))
    fetcher.session.build({("a", 0): at(10)})
    response = SimpleNamespace(error_code=0, session_id=5, responses=answer(("a", 0), ("a", 9)), throttle_time_ms=0)
    with caplog.at_level(logging.INFO, logger="kafkawire.broker.replica_fetcher"):
        assert ReplicaFetcher.use_answer(fetcher, response, 16, []) is False
    assert calls == [] and "broker 2 sent an invalid full fetch response with extraPartitions=(a-9)" in caplog.text
