"""KIP-848 regex subscriptions resolved as Kafka 4.3.1's GroupMetadataManager resolves them
(kafkawire.broker.consumer_regex_refresh): off the heartbeat, written as ConsumerGroupRegularExpression
records, replayed at load, refreshed on Kafka's schedule. In-process, on a manual clock.
"""
from __future__ import annotations

import struct
import uuid

from kafkawire.broker import consumer_records as rec
from kafkawire.broker import consumer_regex_refresh
from kafkawire.broker.consumer_coordinator import TopicsView
from kafkawire.broker.consumer_regex_refresh import regex_key
from kafkawire.messages.consumer_group_heartbeat_request import ConsumerGroupHeartbeatRequest
from kafkawire.protocol.error_codes import Errors

from .test_consumer_protocol import GROUP, Harness, assigned

T1, T2, T3 = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)
TOPICS = (("orders", T1, 2), ("orders-eu", T2, 1))


def harness(version=7, **settings) -> Harness:
    h = Harness(topics=TOPICS, **settings)
    h.view = TopicsView.of(TOPICS, version=version)
    return h


def regex_beat(h, member_id, epoch, regex=None, *, owned=None):
    joining = epoch == 0
    return h.coordinator.heartbeat(ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=30_000 if joining else -1,
        subscribed_topic_regex=regex, topic_partitions=[] if joining else (
            None if owned is None else [_tp(t, ps) for t, ps in owned.items()])),
        version=1, client_id="c", client_host="/h")


def _tp(topic_id, partitions):
    from kafkawire.messages.consumer_group_heartbeat_request import TopicPartitions
    return TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))


def regex_records(h) -> list:
    """The ConsumerGroupRegularExpression records written so far, decoded."""
    out = []
    for key, value in h.written:
        if int.from_bytes(key[:2], "big") == rec.REGULAR_EXPRESSION:
            _, k, v = rec.decode(rec.REGULAR_EXPRESSION, key, value)
            out.append((k.regular_expression, None if v is None else (sorted(v.topics), v.version, v.timestamp)))
    return out


def resolved_member(h, member_id="m1", regex="orders|orders-new"):
    """A member of ``regex`` once the group's resolution ran: (its epoch, its assignment)."""
    regex_beat(h, member_id, 0, regex)
    h.timer.advance(0)
    epoch = h.group.members[member_id].member_epoch
    # A member left at epoch 0 (the group had no epoch yet) heartbeats as a joining one: in full.
    response = regex_beat(h, member_id, epoch, regex if epoch == 0 else None)
    return response.member_epoch, assigned(response)


def test_a_new_regex_is_resolved_off_the_heartbeat_and_written_then_assigned():
    h = harness()
    h.timer.advance(20_000)
    response = regex_beat(h, "m1", 0, "orders|orders-new")
    # Not resolved yet: no epoch bump, nothing assigned (Kafka's REGEX_UPDATED), a resolution pending.
    assert response.error_code == Errors.NONE and assigned(response) == {}
    assert h.group.group_epoch == 0 and regex_key(GROUP) in h.timer.due and regex_records(h) == []
    h.timer.advance(0)
    assert regex_records(h) == [("orders|orders-new", (["orders"], 7, 20_000))]    # "orders-eu": not a whole match
    assert h.group.group_epoch == 1 and h.group.resolved["orders|orders-new"].topics == {"orders"}
    assert response.member_epoch == 0             # Kafka's too: the new group has no epoch yet
    response = regex_beat(h, "m1", 0, "orders|orders-new")
    assert (response.member_epoch, assigned(response)) == (1, {T1: {0, 1}})


def test_a_second_member_of_a_resolved_regex_bumps_the_epoch_at_once_without_matching_again(monkeypatch):
    h = harness()
    assert resolved_member(h) == (1, {T1: {0, 1}})
    calls = []
    monkeypatch.setattr(consumer_regex_refresh, "Scan", lambda *a: calls.append(a))
    response = regex_beat(h, "m2", 0, "orders|orders-new")
    assert h.group.group_epoch == 2 and response.member_epoch == 2 and calls == []
    assert regex_key(GROUP) not in h.timer.due


def test_heartbeats_do_not_match_again_until_a_topic_is_created_or_the_interval_passes(monkeypatch):
    h = harness()
    resolved_member(h)
    matched = []
    real = consumer_regex_refresh.Scan
    monkeypatch.setattr(consumer_regex_refresh, "Scan", lambda regexes, view: matched.append(1) or real(regexes, view))
    for _ in range(50):                                  # 50 heartbeats over 9 minutes: no matching
        h.timer.advance(10_800)
        assert regex_beat(h, "m1", 1).error_code == Errors.NONE
        h.timer.advance(0)
    assert matched == []
    # A topic created: the next heartbeat past the 10 s floor resolves again and the new topic is assigned.
    h.view = TopicsView.of(TOPICS + (("orders-new", T3, 1),), version=9)
    h.coordinator.topics_changed({"orders-new"}, created=True)
    h.timer.advance(10_001)
    regex_beat(h, "m1", 1)
    h.timer.advance(0)
    assert matched == [1] and h.group.resolved["orders|orders-new"].topics == {"orders", "orders-new"}
    assert regex_records(h)[-1] == ("orders|orders-new", (["orders", "orders-new"], 9, h.timer.now))
    response = regex_beat(h, "m1", 1)
    assert (response.member_epoch, assigned(response)) == (2, {T1: {0, 1}, T3: {0}})
    # Nothing new: resolved again only once group.consumer.regex.refresh.interval.ms (10 min) passed.
    for _ in range(20):                                  # heartbeats for 600 s
        h.timer.advance(30_000)
        regex_beat(h, "m1", 2)
        h.timer.advance(0)
    assert matched == [1]
    h.timer.advance(2_000)
    regex_beat(h, "m1", 2)
    h.timer.advance(0)
    assert matched == [1, 1] and h.group.group_epoch == 2            # same topics: no new epoch


def test_a_deleted_topic_leaves_through_the_metadata_hash_and_the_next_resolution_drops_it():
    h = harness()
    assert resolved_member(h) == (1, {T1: {0, 1}})
    h.view = TopicsView.of((("orders-eu", T2, 1),), version=11)
    h.coordinator.topics_changed({"orders"})
    response = regex_beat(h, "m1", 1, owned={T1: {0, 1}})
    assert h.group.group_epoch == 2 and assigned(response) == {}           # revoke first, then epoch 2
    assert regex_beat(h, "m1", 1, owned={}).member_epoch == 2
    assert h.group.resolved["orders|orders-new"].topics == {"orders"}     # cleaned up at the next resolution
    for _ in range(21):
        h.timer.advance(30_000)
        regex_beat(h, "m1", 2)
        h.timer.advance(0)
    assert h.group.resolved["orders|orders-new"].topics == frozenset()


def test_the_last_member_of_a_regex_leaving_or_changing_it_tombstones_it():
    h = harness()
    resolved_member(h, "m1", "orders")
    regex_beat(h, "m2", 0, "orders")
    regex_beat(h, "m2", h.group.members["m2"].member_epoch, "orders.*")      # m1 still uses "orders"
    assert ("orders", None) not in regex_records(h)
    h.timer.advance(0)
    assert "orders.*" not in h.group.resolved                                # not within 10 s of the last one
    h.timer.advance(10_001)
    regex_beat(h, "m2", h.group.members["m2"].member_epoch)
    h.timer.advance(0)
    assert set(h.group.resolved) == {"orders", "orders.*"}
    regex_beat(h, "m1", -1)                                                   # the last member of "orders" leaves
    assert regex_records(h)[-1] == ("orders", None) and set(h.group.resolved) == {"orders.*"}
    regex_beat(h, "m2", h.group.members["m2"].member_epoch, "")               # no regex any more
    assert regex_records(h)[-1] == ("orders.*", None) and h.group.resolved == {}


def test_a_new_coordinator_starts_from_the_replayed_resolution_instead_of_matching_again(monkeypatch):
    """The group's topics come from the replayed records at once; the new coordinator matches
    again only on Kafka's schedule: not within 10 s of the last resolution, then once because its
    image is newer than the one resolved against (lastMetadataImageWithNewTopics starts at the
    coordinator's first image), with no new epoch when the topics are the same."""
    h = harness()
    assert resolved_member(h) == (1, {T1: {0, 1}})
    again = harness(version=9)
    again.timer.now = h.timer.now + 5_000
    for key, value in h.written:
        again.offsets.replay(key, value)
    again.coordinator.after_load()
    assert again.group.resolved == h.group.resolved
    matched = []
    real = consumer_regex_refresh.Scan
    monkeypatch.setattr(consumer_regex_refresh, "Scan", lambda regexes, view: matched.append(1) or real(regexes, view))
    response = regex_beat(again, "m1", 1)
    again.timer.advance(0)
    assert response.error_code == Errors.NONE and response.member_epoch == 1 and matched == []
    assert again.coordinator.subscribed_topics(GROUP) == {"orders"}
    again.timer.advance(5_001)
    regex_beat(again, "m1", 1)
    again.timer.advance(0)
    assert matched == [1] and again.group.group_epoch == 1
    assert regex_records(again)[-1] == ("orders|orders-new", (["orders"], 9, again.timer.now))
    from kafkawire.broker.consumer_admin import tombstones
    for key, value in tombstones(again.group):                                # deleting the group drops it too
        again.offsets.replay(key, value)
    assert GROUP not in again.coordinator.groups


def _string(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def test_the_records_are_kafkas_bytes():
    """ConsumerGroupRegularExpressionKey v0 (not flexible: int16-length strings) after the int16
    record type 16; ConsumerGroupRegularExpressionValue v0 (flexible: compact array of compact
    strings, two int64s, no tagged fields) after the int16 version 0; a tombstone has no value."""
    key, value = rec.encode(rec.regex_record("g", "a.*", {"ab", "a"}, 42, 1_700_000_000_000))
    assert key == struct.pack(">h", 16) + _string("g") + _string("a.*")
    assert value == (struct.pack(">h", 0) + bytes([3]) + bytes([2]) + b"a" + bytes([3]) + b"ab"
                     + struct.pack(">qq", 42, 1_700_000_000_000) + bytes([0]))
    assert rec.encode(rec.regex_tombstone("g", "a.*")) == (key, None)


def test_a_resolution_keeps_only_the_topics_the_asking_members_principal_may_describe():
    """TopicRegexResolver's filter (kafkawire.broker.consumer_apis sets ``describe`` around each
    heartbeat from the authorizer and the request's principal)."""
    h = harness()
    h.coordinator.regexes.describe = lambda name: name != "orders-eu"
    regex_beat(h, "m1", 0, "orders.*")
    h.coordinator.regexes.describe = None
    h.timer.advance(0)
    assert h.group.resolved["orders.*"].topics == {"orders"}
    assert regex_records(h) == [("orders.*", (["orders"], 7, 0))]


def test_a_resolution_a_classic_members_join_asks_for_keeps_only_what_its_principal_may_describe():
    """Kafka's classicGroupJoinToConsumerGroup passes the JoinGroup's context to
    maybeUpdateRegularExpressions: a resolution of the group's regexes that a classic member's
    JoinGroup triggers is filtered by TopicRegexResolver with that member's principal, through
    ConsumerApis.classic_join as through a heartbeat. Here the consumer member may DESCRIBE every
    topic and the classic member not orders-eu: the refresh the classic join asks for (a topic was
    created since the last resolution) drops orders-eu."""
    from types import SimpleNamespace

    from kafkawire.broker.consumer_apis import ConsumerApis
    from kafkawire.broker.consumer_classic import ClassicMembers
    from kafkawire.messages.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol

    from .test_consumer_classic import subscription

    class Authorizer:
        asked: list = []

        def authorize(self, principal, host, operation, resource_type, name):
            self.asked.append((principal, name))
            return principal == "User:consumer" or name != "orders-eu"

    h = harness()
    apis = ConsumerApis.__new__(ConsumerApis)
    apis.apis = SimpleNamespace(broker=SimpleNamespace(authorizer=Authorizer()),
                                coordinator=SimpleNamespace(settings=SimpleNamespace(
                                    min_session_timeout_ms=6000, max_session_timeout_ms=1_800_000)))
    apis.coordinator, apis.classic_members = h.coordinator, ClassicMembers(h.coordinator)

    def ctx(principal):
        return SimpleNamespace(principal=principal, peer=("127.0.0.1", 1), api_version=9, client_id=principal)
    with apis._resolving_as(ctx("User:consumer")):
        regex_beat(h, "m1", 0, "orders.*")
    h.timer.advance(0)
    assert h.group.resolved["orders.*"].topics == {"orders", "orders-eu"}

    h.timer.advance(consumer_regex_refresh.REGEX_BATCH_REFRESH_MIN_INTERVAL_MS + 1)
    h.view = TopicsView.of(TOPICS + (("orders-new", T3, 1),), version=8)
    h.coordinator.regexes.topics_created(8)

    def classic_join(member_id):
        return apis.classic_join(ctx("User:classic"), JoinGroupRequest(
            group_id=GROUP, session_timeout_ms=10_000, rebalance_timeout_ms=30_000, member_id=member_id,
            protocol_type="consumer", protocols=[JoinGroupRequestProtocol(name="range",
                                                                           metadata=subscription(["orders"]))]))
    first = classic_join("")
    assert classic_join(first.member_id).error_code == Errors.NONE
    assert h.coordinator.regexes.describe is None                # set only while the join is handled
    h.timer.advance(0)
    assert h.group.resolved["orders.*"].topics == {"orders", "orders-new"}
    assert ("User:classic", "orders-eu") in Authorizer.asked
    assert regex_records(h)[-1] == ("orders.*", (["orders", "orders-new"], 8, h.timer.now))


# RE2J 1.8's answers (com.google.re2j.Pattern.compile, then matches()) for these regexes and topic
# names, as its jar printed them: None where it refuses the regex with that getDescription().
RE2J_TOPICS = ("Orders-1", "orders", "ORDERS", "a.b_c-9")
RE2J_ANSWERS = {
    r"\p{L}+": (False, True, True, False),
    r"[\p{Lu}\d]+": (False, False, True, False),
    r"\P{^L}": (False, False, False, False),
    r"\p{Any}": (False, False, False, False),
    r"(?i)\p{Lu}+": (False, True, True, False),
    r"[^\p{Greek}]+": (True, True, True, True),
    r"\p{Latin}+-\pN": (True, False, False, False),
    r"\p{Unknown}": (False, False, False, False),
    r"[\P{L}]": (False, False, False, False),
    r"\p{Foo}": "invalid character class range",
    r"\pQ": "invalid character class range",
    r"\p{Greek": "invalid character class range",
    "\\p": "invalid character class range",
    "orders(?!-eu)": "invalid or unsupported Perl syntax",
    # \Q...\E quotes to \E or to the end; a bracket expression has no \Q
    r"\Qa.b\E_c-9": (False, False, False, True),
    r"\Qa.b_c-9": (False, False, False, True),
    r"\Qorders\E|\QORDERS": (False, True, True, False),
    r"(?i)\QORDERS\E": (False, True, True, False),
    r"\Qa.b\E_c.*": (False, False, False, True),
    r"[\Q]": "invalid escape sequence",
    # POSIX classes in brackets, negated, folded before negation, a '-' after one a literal
    r"[[:alpha:]]+": (False, True, True, False),
    r"[[:upper:]]+": (False, False, True, False),
    r"[[:^lower:]]+": (False, False, True, False),
    r"[[:alnum:]-]+": (True, True, True, False),
    r"[[:word:][:punct:]]+": (True, True, True, True),
    r"[[:xdigit:][:alpha:].]+": (False, True, True, False),
    r"[[:alpha:]-1]+": (True, True, True, False),
    r"(?i)[[:upper:]]+": (False, True, True, False),
    r"(?i)[[:^upper:]]+.*": (False, False, False, False),
    r"[^[:^alpha:]]+": (False, True, True, False),
    r"[[:foo:]]": "invalid character class range",
    r"[[:]]": "invalid character class range",
    # RE2J's fold tables: (?i)\p{Ll} adds only K and S of the upper case letters
    r"(?i)\p{Ll}+": (False, True, False, False),
    r"(?i)\P{Lu}+.*": (False, False, False, False),
    r"Orders[\d-]+": (True, False, False, False),
    r"[\w.-]+-\d": (True, False, False, True),
    r"a\W[\D]{3}-\S": (False, False, False, True),
    # RE2's other constructs Python lacks or reads otherwise
    r"Orders\z|orders": (False, True, False, False),
    r"\x{4f}rders.*": (True, False, False, False),
    r"\117rders-\61": (True, False, False, False),
    r"(?<name>orders)": (False, True, False, False),
    r"ORD(?i)ers": (False, False, True, False),
    r"(?i)ORD(?-i)ERS": (False, False, True, False),
    r"(?U)O.+": (True, False, True, False),
    r"orders{,2}": (False, False, False, False),
    r"a{1001}": "invalid repeat count",
    r"(?x)orders": "invalid or unsupported Perl syntax",
    r"(?#c)orders": "invalid or unsupported Perl syntax",
}


def test_re2_regexes_match_topic_names_as_re2j_matches_them():
    """``\\p{...}``: general categories, scripts, ``Any``, negations (``\\P``, ``^``), in and out
    of brackets, under ``(?i)``; names RE2J does not know are refused with its description.
    ``\\Q...\\E``, POSIX classes, RE2's flags inside the regex, ``\\z``, ``\\x{..}``, octal escapes,
    ``(?<name>``, a ``{`` that is no repetition (kafkawire.broker.consumer_regex). Beyond this
    table, tests/interop/test_re2j_regex_vs_java.py asks RE2J's jar about generated regexes."""
    from kafkawire.broker.consumer_regex import compiled, regex_error
    for regex, expected in RE2J_ANSWERS.items():
        if isinstance(expected, str):
            assert regex_error(regex) == expected, regex
        else:
            assert regex_error(regex) is None, regex
            assert tuple(bool(compiled(regex).fullmatch(t)) for t in RE2J_TOPICS) == expected, regex
