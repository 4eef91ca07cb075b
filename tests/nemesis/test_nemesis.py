"""The nemesis suite, short (CI): 45 s of faults on a real three-voter quorum, nothing acknowledged
lost, duplicated or reordered, the voters' logs identical, a leader soon after the last heal.
By hand, for an hour: `python -m tests.nemesis.run --duration 3600`."""
import asyncio
import os
import time
import uuid

from kafkawire.messages.allocate_producer_ids_request import AllocateProducerIdsRequest
from kafkawire.messages.topic_record import TopicRecord
from kafkawire.metadata.frame import encode_metadata_record
from kafkawire.records import build_batch
from tests.nemesis import run as nemesis
from kafkawire.messages.remove_topic_record import RemoveTopicRecord
from tests.nemesis.checks import check, replay_problems
from tests.nemesis.storm import EXPECTED_ANSWERS as EXPECTED_STORM_ANSWERS
from tests.nemesis.tenant import CLUSTER_REFUSED, NOT_LOADED, REFUSED, TOPIC_REFUSED, classify_answer, not_loaded_refusals

SHORT_RUN_S = float(os.environ.get("KAFKAWIRE_NEMESIS_SECONDS", "45"))


def test_a_short_nemesis_run_loses_nothing_acknowledged(tmp_path):
    report = asyncio.run(nemesis.run(str(tmp_path), SHORT_RUN_S, seed=20261125))
    print(report.lines())
    v = report.verdict
    assert v.voters_agree
    assert v.lost == [] and v.duplicated == [] and v.reordered == [] and v.unknown_names == []
    assert v.replay_problems == []
    assert set(report.races) == {"race: sent and disconnected", "race: sent with a short timeout"}, report.races
    assert report.acked > 50, "the writer must get work done between the faults"
    assert set(report.faults) == {"kill -9", "torn tail", "SIGSTOP", "partition", "fetch flood",
                                  "hostile raft requests", "hostile tenant", "heartbeat storm"}, report.faults
    # Overload is answered with backpressure, never a lost leadership (issue 28).
    assert report.storm_epoch_moves == [], report.storm_epoch_moves
    assert report.storm.get("heartbeat NONE", 0) > 0 and set(report.storm) <= EXPECTED_STORM_ANSWERS, report.storm
    assert report.tenant_unexpected == [] and report.tenant.get(REFUSED, 0) > 0, report.tenant
    # A partition cuts the raft fetches too, not only Vote and BeginQuorumEpoch: a follower
    # fetches from the address its leader advertises, which must be that node's proxy.
    assert report.cut_fetch_checks > 0 and report.cut_fetch_leaks == [], report.cut_fetch_leaks
    # A leader after every heal and after the last: run() raises QuorumError past LEADER_BOUND_S
    # of the time the voters could run (runnable_clock.py). The wall times in the report are no
    # bound: at load 20 a leader 37.7 s after a heal was within 30 s of runnable time.


def _log(directory, names, offset=0):
    os.makedirs(directory, exist_ok=True)
    # a fixed timestamp: two logs built a millisecond apart must still be byte-identical
    records = [(None, encode_metadata_record(TopicRecord(name=n, topic_id=uuid.uuid5(uuid.NAMESPACE_DNS, n)), 0),
                [], 1_700_000_000_000) for n in names]
    with open(os.path.join(directory, "00000000000000000000.log"), "wb") as f:
        f.write(build_batch(records, base_offset=offset))
    return directory


def test_the_checks_catch_loss_duplicates_reordering_and_disagreement(tmp_path):
    a = _log(tmp_path / "a", ["nemesis-1", "nemesis-3", "nemesis-2", "nemesis-3"])
    b = _log(tmp_path / "b", ["nemesis-1", "nemesis-3", "nemesis-2", "nemesis-3"])
    c = _log(tmp_path / "c", ["nemesis-1"])
    sent = {"nemesis-1", "nemesis-2", "nemesis-3", "nemesis-4"}
    verdict = check({1: str(a), 2: str(b)}, 10, ["nemesis-1", "nemesis-2", "nemesis-3", "nemesis-4"], sent)
    assert verdict.voters_agree and not verdict.ok
    assert verdict.lost == ["nemesis-4"]
    assert verdict.duplicated == ["nemesis-3"]
    assert verdict.reordered == [("nemesis-2", "nemesis-3")]
    assert not check({1: str(a), 3: str(c)}, 10, [], sent).voters_agree
    assert check({1: str(a)}, 10, [], {"nemesis-1"}).unknown_names == ["nemesis-2", "nemesis-3"]


def test_the_checks_replay_the_log_and_report_a_torn_writes_second_removal(tmp_path):
    """The replay check fails a log in which one topic is removed twice (what two DeleteTopics
    generated from the same stale state commit) and passes the same log without the repeat."""
    topic_id = uuid.uuid4()
    topic = encode_metadata_record(TopicRecord(name="race-0", topic_id=topic_id), 0)
    removal = encode_metadata_record(RemoveTopicRecord(topic_id=topic_id), 0)

    def batches(*values):
        return [build_batch([(None, v, [], 1_700_000_000_000)], base_offset=i) for i, v in enumerate(values)]

    assert replay_problems(batches(topic, removal)) == []
    problems = replay_problems(batches(topic, removal, removal))
    assert len(problems) == 1 and "offset 2" in problems[0], problems


def _refusal_logged_by_a_node_not_loaded(principal: str, api_key: int) -> str:
    """The log line a controller writes, in the nodes' log layout, when its authorizer refuses
    ``principal``'s request before the metadata is loaded: made by the product's own check."""
    import io
    import logging
    from types import SimpleNamespace

    from kafkawire.net.authorizer import AuthorizerSettings, Op, StandardAuthorizer, authorizing_handler
    from kafkawire.protocol.handler import ApiHandler
    from kafkawire.tools.server_start import _KafkaLayout

    async def served(ctx, request):
        raise AssertionError("a request refused must not be served")
    authorizer = StandardAuthorizer(AuthorizerSettings(super_users=frozenset({"User:ANONYMOUS"})), lambda: [],
                                    loaded=lambda: False)
    handler = authorizing_handler(api_key, ApiHandler(served), authorizer, Op.CLUSTER_ACTION)
    text, logger = io.StringIO(), logging.getLogger("kafkawire.authorizer")
    sink = logging.StreamHandler(text)
    sink.setFormatter(_KafkaLayout())
    logger.addHandler(sink)
    level, logger.level = logger.level, logging.INFO
    try:
        ctx = SimpleNamespace(principal=principal, peer=("127.0.0.1", 50000), api_version=0)
        answer = asyncio.run(handler.handle(ctx, AllocateProducerIdsRequest(broker_id=100, broker_epoch=1)))
    finally:
        logger.removeHandler(sink)
        logger.level = level
    assert answer.error_code == -1, answer
    return text.getvalue()


def test_the_tenant_counts_an_unknown_server_error_as_not_loaded_only_when_the_node_logged_that_refusal():
    """UNKNOWN_SERVER_ERROR is what a controller listener answers a non-super user before its
    authorizer loaded the metadata (Kafka's AuthorizerNotReadyException); the tally takes it for
    that only when the node's log says it refused this API for this principal for that reason
    between the request and its answer, and as unexpected otherwise."""
    before = time.time()
    log = (_refusal_logged_by_a_node_not_loaded("User:intruder", 67)
           + "[2026-12-01 07:30:00,260] INFO Principal = User:mallory is Denied operation = CLUSTER_ACTION from "
             "host = 127.0.0.1 on resource = Cluster:LITERAL:kafka-cluster for request = AllocateProducerIds "
             "(kafkawire.authorizer)\n"
           + _refusal_logged_by_a_node_not_loaded("User:mallory", 67))
    after = time.time()
    refusals = not_loaded_refusals(log)
    assert [(key, who) for _, key, who in refusals] == [(67, "User:intruder"), (67, "User:mallory")], log
    at = refusals[1][0]
    assert before - 0.002 <= at <= after, (before, at, after)
    unknown = {-1}
    assert classify_answer(unknown, CLUSTER_REFUSED, 67, at - 0.1, at + 0.1, refusals) == NOT_LOADED
    assert classify_answer(unknown, CLUSTER_REFUSED, 67, at + 0.05, at + 0.1, refusals) is None      # refused before it was sent
    assert classify_answer(unknown, CLUSTER_REFUSED, 67, at - 0.3, at - 0.1, refusals) is None      # refused after its answer
    assert classify_answer(unknown, CLUSTER_REFUSED, 56, at - 0.1, at + 0.1, refusals) is None      # another API refused
    other = refusals[0][0]                                                                         # another principal's
    assert classify_answer(unknown, CLUSTER_REFUSED, 67, other - 0.1, other + 0.1, refusals[:1]) is None
    assert classify_answer(unknown, CLUSTER_REFUSED, 67, at - 0.1, at + 0.1, []) is None            # nothing logged
    assert classify_answer({-1, 31}, CLUSTER_REFUSED, 67, at - 0.1, at + 0.1, refusals) is None     # not only that error
    assert classify_answer({31}, CLUSTER_REFUSED, 67, 0, 0, []) == REFUSED
    assert classify_answer({0}, TOPIC_REFUSED, 19, 0, 0, refusals) is None                         # NONE: not refused
    assert classify_answer(set(), TOPIC_REFUSED, 19, 0, 0, refusals) is None
