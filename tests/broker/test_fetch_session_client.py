"""A follower's fetch session (kafkawire/broker/fetch_session_client.py), step by step as Kafka's
FetchSessionHandler builds requests and reads answers; tests/broker/test_fetch_session.py is the
leader's side, and the replication wire tests and tests/interop/test_mixed_cluster_with_kafka.py
run the two (and Kafka's leader) together."""
import uuid

from kafkawire.broker.fetch_session_client import FetchSessionClient, PartitionFetch

T, U = uuid.UUID(int=1), uuid.UUID(int=2)
NOT_FOUND, INVALID_EPOCH = 70, 71


def at(offset, topic_id=T, epoch=3):
    return PartitionFetch(topic_id, offset, 0, 1 << 20, epoch, epoch)


def plan(session, wanted):
    p = session.build(wanted)
    return p.session_id, p.epoch, p.to_send, p.forgotten


def test_a_full_request_opens_the_session_then_only_changes_are_sent():
    s = FetchSessionClient()
    wanted = {("a", 0): at(10), ("a", 1): at(20)}
    assert plan(s, wanted) == (0, 0, [("a", 0), ("a", 1)], [])
    assert s.handle_response(0, 77)
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
    s.handle_response(0, 9)
    assert not s.handle_response(INVALID_EPOCH, 0)
    assert plan(s, wanted) == (9, 0, [("a", 0)], [])         # close session 9, open a new one, full
    s.handle_response(0, 10)
    s.build(wanted)
    assert not s.handle_response(NOT_FOUND, 0)
    assert plan(s, wanted) == (0, 0, [("a", 0)], [])          # the leader lost it: a new one from scratch
    s.handle_response(0, 0)                                   # no session given: full again next time
    assert plan(s, wanted) == (0, 0, [("a", 0)], [])
    s.handle_response(0, 11)
    s.build(wanted)
    s.handle_error()                                          # a failed request
    assert plan(s, wanted) == (11, 0, [("a", 0)], [])
