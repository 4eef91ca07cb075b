"""The controller mutation quota (KIP-599, kafkawire.controller.mutation_quota) as Kafka 4.3.1's
controller applies it: a token bucket of ``controller_mutation_rate`` partitions per second,
strict for CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+ (a topic that finds the
bucket below zero is THROTTLING_QUOTA_EXCEEDED), permissive before (done, and throttled); the
throttle time in the answer, the connection muted unless the request was forwarded. In-process,
on the fake quorum of harness.py, its clock moved by hand."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from kafkawire.controller.errors import ApiError
from kafkawire.controller.mutation_quota import ControllerMutationQuotas
from kafkawire.messages.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kafkawire.messages.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from kafkawire.net.client_quotas import TokenBucket
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import Throttled

from .harness import Ctx, FakeClock, FakeQuorum, Running, add_controller, broker_request, heartbeat, run, until

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, ALTER_CLIENT_QUOTAS = 19, 20, 37, 49
THROTTLED = int(Errors.THROTTLING_QUOTA_EXCEEDED)


@dataclass(frozen=True)
class ClientCtx:
    api_version: int
    api_key: int
    client_id: str = "admin"
    principal: str = "User:alice"
    forwarded: bool = False


def topics(*spec):
    return CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=p, replication_factor=1) for n, p in spec],
                               timeout_ms=5000)


def results(answer):
    response = answer.response if isinstance(answer, Throttled) else answer
    items = getattr(response, "topics", None) or getattr(response, "responses", None) or response.results
    return [(r.name, Errors.for_code(r.error_code).name) for r in items]


def with_quota(steps, rate=2.0, client_id="admin", window=(2, 1)):
    """An active controller with one broker and a controller_mutation_rate of ``rate`` for client
    id ``client_id``; ``steps(controller, clock, call)`` runs against it, ``call(key, ctx, request)``
    being the controller's handler."""
    quorum, clock = FakeQuorum(), FakeClock()
    leader = add_controller(quorum, 1, clock=clock, mutation_quota_window=window)

    async def go():
        async with Running(leader):
            quorum.elect(1)
            await until(lambda: leader.is_active() and leader.registration.registered(), "activation")
            reply = await leader.handlers()[62].handle(Ctx(0), broker_request(1, log_dirs=[uuid.UUID(int=1001)]))
            await leader.handlers()[63].handle(Ctx(0), heartbeat(1, reply.broker_epoch, quorum.end_offset))
            quota = AlterClientQuotasRequest(entries=[EntryData(
                entity=[EntityData(entity_type="client-id", entity_name=client_id)],
                ops=[OpData(key="controller_mutation_rate", value=rate, remove=False)])])
            (entry,) = (await leader.handlers()[ALTER_CLIENT_QUOTAS].handle(Ctx(1, ALTER_CLIENT_QUOTAS), quota)).entries
            assert entry.error_code == 0, entry.error_message
            await until(lambda: leader.image.client_quotas, "the quota committed")

            async def call(key, ctx, request):
                return await leader.handlers()[key].handle(ctx, request)
            return await steps(leader, clock, call)
    return run(go())


def test_strict_create_topics_refuses_each_topic_that_finds_the_bucket_below_zero():
    async def steps(controller, clock, call):
        # burst: 2 windows x 1 s x 2/s = 4 partitions. a takes 3 (1 left), b 3 (-2: done, the
        # bucket was not below zero), c finds -2: refused, 1000 ms to refill to zero
        answer = await call(CREATE_TOPICS, ClientCtx(7, CREATE_TOPICS), topics(("a", 3), ("b", 3), ("c", 1)))
        assert results(answer) == [("a", "NONE"), ("b", "NONE"), ("c", "THROTTLING_QUOTA_EXCEEDED")]
        assert isinstance(answer, Throttled) and answer.throttle_ms == 1000
        assert answer.response.throttle_time_ms == 1000
        assert answer.response.topics[2].error_message == "The throttling quota has been exceeded."
        # another client id has no quota
        other = await call(CREATE_TOPICS, ClientCtx(7, CREATE_TOPICS, client_id="other"), topics(("d", 5)))
        assert results(other) == [("d", "NONE")] and other.throttle_time_ms == 0
        # forwarded (in an Envelope): the answer carries the throttle time, the broker mutes its client
        clock.now += 400
        forwarded = await call(CREATE_TOPICS, ClientCtx(7, CREATE_TOPICS, forwarded=True), topics(("c", 1)))
        assert not isinstance(forwarded, Throttled)
        assert results(forwarded) == [("c", "THROTTLING_QUOTA_EXCEEDED")] and forwarded.throttle_time_ms == 600
        clock.now += 600                    # refilled to zero: the next topic is done
        again = await call(CREATE_TOPICS, ClientCtx(7, CREATE_TOPICS), topics(("c", 1)))
        assert results(again) == [("c", "NONE")] and again.throttle_time_ms == 0
        return set(controller.image.topics_by_name)
    assert with_quota(steps) >= {"a", "b", "c", "d"}


def test_permissive_versions_do_every_topic_and_throttle():
    async def steps(controller, clock, call):
        answer = await call(CREATE_TOPICS, ClientCtx(5, CREATE_TOPICS), topics(("a", 3), ("b", 3), ("c", 2)))
        assert results(answer) == [("a", "NONE"), ("b", "NONE"), ("c", "NONE")]
        assert isinstance(answer, Throttled) and answer.throttle_ms == 2000      # 4 - 8 = -4 tokens at 2/s
        deleted = await call(DELETE_TOPICS, ClientCtx(4, DELETE_TOPICS), DeleteTopicsRequest(topic_names=["c"],
                                                                                            timeout_ms=5000))
        assert results(deleted) == [("c", "NONE")] and deleted.throttle_ms == 3000
        return set(controller.image.topics_by_name)
    assert with_quota(steps) >= {"a", "b"}


def test_strict_delete_topics_and_create_partitions():
    async def steps(controller, clock, call):
        created = await call(CREATE_TOPICS, ClientCtx(7, CREATE_TOPICS), topics(("a", 2), ("b", 2)))
        assert results(created) == [("a", "NONE"), ("b", "NONE")]       # the bucket is empty now
        more = await call(CREATE_PARTITIONS, ClientCtx(3, CREATE_PARTITIONS), CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name="a", count=4, assignments=None)], timeout_ms=5000))
        assert results(more) == [("a", "NONE")]                           # 0 tokens is not below zero: -2
        refused = await call(CREATE_PARTITIONS, ClientCtx(3, CREATE_PARTITIONS), CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name="b", count=3, assignments=None)], timeout_ms=5000))
        assert results(refused) == [("b", "THROTTLING_QUOTA_EXCEEDED")] and refused.throttle_ms == 1000
        gone = await call(DELETE_TOPICS, ClientCtx(6, DELETE_TOPICS), DeleteTopicsRequest(
            topics=[DeleteTopicState(name="a")], timeout_ms=5000))
        assert results(gone) == [("a", "THROTTLING_QUOTA_EXCEEDED")] and gone.throttle_ms == 1000
        clock.now += 1000
        gone = await call(DELETE_TOPICS, ClientCtx(6, DELETE_TOPICS), DeleteTopicsRequest(
            topics=[DeleteTopicState(name="a")], timeout_ms=5000))
        assert results(gone) == [("a", "NONE")]
        return len(controller.image.topics_by_name["b"].partitions), "a" in controller.image.topics_by_name
    assert with_quota(steps) == (2, False)


def test_the_bucket_refills_at_the_quota_up_to_its_burst():
    bucket = TokenBucket(samples=11, window_ms=1000)
    assert bucket.measure(5.0, 0) == 55.0                 # starts full: 11 windows x 1 s x 5/s
    assert bucket.record(5.0, 60, 1000) == -5.0
    assert bucket.measure(5.0, 2000) == 0.0               # 1 s at 5/s
    assert bucket.measure(5.0, 100_000) == 55.0           # never past the burst
    assert bucket.measure(1.0, 100_000) == 11.0           # a lower quota lowers the burst at once


def test_no_quota_records_nothing():
    class Image:
        client_quotas = {frozenset({("user", "bob")}): {"controller_mutation_rate": 1.0}}
    quotas = ControllerMutationQuotas(lambda: Image, 11, 1, clock=lambda: 0)
    quota = quotas.quota_for(ClientCtx(7, CREATE_TOPICS))       # alice has none
    for _ in range(100):
        quota.record(1000)
    assert quota.throttle_time_ms() == 0 and not quotas.rates


def test_a_zero_rate_refuses_strict_topics_and_throttles_nothing_as_kafkas_int_cast():
    """A controller_mutation_rate of 0 (AlterClientQuotas refuses it; a metadata log may hold it):
    Kafka's throttle time is Long.MAX_VALUE, which its int cast makes -1, so no answer is throttled;
    a strict request's topics still find the empty bucket below zero."""
    class Image:
        client_quotas = {frozenset({("client-id", "admin")}): {"controller_mutation_rate": 0.0}}
    quotas = ControllerMutationQuotas(lambda: Image, 2, 1, clock=lambda: 0)
    strict = quotas.quota_for(ClientCtx(7, CREATE_TOPICS))
    strict.record(1)                    # the bucket holds 0 tokens: not below zero, so done
    with pytest.raises(ApiError) as refused:
        strict.record(1)
    assert refused.value.error == Errors.THROTTLING_QUOTA_EXCEEDED and strict.throttle_time_ms() == 0
    permissive = quotas.quota_for(ClientCtx(5, CREATE_TOPICS))
    permissive.record(3)
    assert permissive.throttle_time_ms() == 0
