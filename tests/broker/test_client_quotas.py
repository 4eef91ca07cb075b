"""Client quotas (kafkawire.net.client_quotas): the sampled rate, the throttle time and the
quota found for a (user, client id), against numbers worked out by hand from Kafka's
Rate/SampledStat, QuotaUtils.throttleTime and ClientQuotaManager's DefaultQuotaCallback."""
from __future__ import annotations

import asyncio
import dataclasses
import math
import time
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.net.client_quotas import (DEFAULT, INACTIVE_EXPIRY_MS, ClientQuotaManager, QuotaIndex,
                                            SampledRate, java_int_cast, java_round, principal_user, quota_limit, quota_tags,
                                            throttle_time_ms)
from kafkawire.broker.fetch import FetchApi
from kafkawire.broker.fetch_session import SessionlessFetchContext
from kafkawire.broker.quotas import BrokerQuotas, RequestTimer, fetch_response_size
from kafkawire.messages.create_topics_response import CreateTopicsResponse
from kafkawire.messages.fetch_response import FetchableTopicResponse, FetchResponse, NodeEndpoint, PartitionData
from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.messages.metadata_response import MetadataResponse
from kafkawire.messages.sasl_handshake_response import SaslHandshakeResponse
from kafkawire.net.client import NetworkClient
from kafkawire.net.server import KafkaServer
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler, RequestContext, Throttled

ZERO_UUID = uuid.UUID(int=0)


# -- the rate --

def test_a_first_record_is_measured_over_samples_minus_one_windows():
    rate = SampledRate(11, 1000)
    rate.record(1000, 0)
    assert rate.window_size_ms(0) == 10_000            # 0 elapsed, 10 whole windows assumed
    assert rate.measure(0) == pytest.approx(100.0)


def test_a_later_sample_counts_its_elapsed_time_plus_the_missing_whole_windows():
    rate = SampledRate(11, 1000)
    rate.record(1000, 0)
    rate.record(500, 2500)                              # a new sample starts at 2500
    # oldest starts at 0: 2500 ms elapsed, 2 whole windows, 8 more added: 10500 ms
    assert rate.window_size_ms(2500) == 10_500
    assert rate.measure(2500) == pytest.approx(1500 / 10.5)


def test_samples_without_an_event_for_samples_times_window_are_reset():
    rate = SampledRate(11, 1000)
    rate.record(1000, 0)
    assert rate.measure(10_999) == pytest.approx(1000 / 10.999)
    assert rate.measure(11_000) == 0.0


def test_the_rate_keeps_samples_plus_one_slots_and_reuses_them():
    rate = SampledRate(2, 1000)
    for second in range(10):
        rate.record(100, second * 1000)
    assert len(rate._slots) == 3
    # at 9000 the slots hold the samples of 7000, 8000 and 9000; 7000's last event is 2000 ms
    # (samples x window) old, so it is reset: 8000 is the oldest, 1000 ms elapsed = 1 whole window
    assert rate.window_size_ms(9000) == 1000
    assert rate.measure(9000) == pytest.approx(200 / 1.0)


def test_throttle_time_is_the_delay_that_brings_the_rate_back_to_the_quota():
    # O = 150 B/s over W = 10 s against T = 100 B/s: X = (150 - 100) / 100 * 10000 = 5000 ms
    assert throttle_time_ms(150.0, 100.0, 10_000) == 5000
    assert throttle_time_ms(100.05, 100.0, 10_000) == 5        # 4.99..95: Math.round
    assert throttle_time_ms(100.0125, 100.0, 1000) == 0        # 0.125 rounds down


# -- which quota --

def index(entries: dict) -> QuotaIndex:
    return QuotaIndex(entries)


def test_client_id_quotas_alone_are_shared_by_every_user_of_the_client_id():
    quotas = index({(None, "c1"): 10.0, (None, DEFAULT): 5.0})
    assert quota_tags(quotas, "alice", "c1") == quota_tags(quotas, "bob", "c1") == ("", "c1")
    assert quota_limit(quotas, ("", "c1")) == 10.0
    assert quota_limit(quotas, quota_tags(quotas, "alice", "c2")) == 5.0


def test_user_quotas_alone_are_shared_by_every_client_of_the_user_and_absent_for_others():
    quotas = index({("alice", None): 20.0})
    assert quota_tags(quotas, "alice", "c1") == quota_tags(quotas, "alice", "c2") == ("alice", "")
    assert quota_limit(quotas, ("alice", "")) == 20.0
    assert quota_limit(quotas, quota_tags(quotas, "bob", "c1")) is None


@pytest.mark.parametrize("user, client, tags, limit", [
    ("alice", "c1", ("alice", "c1"), 1.0),      # /config/users/alice/clients/c1
    ("alice", "c2", ("alice", ""), 2.0),        # /config/users/alice
    ("bob", "c1", ("bob", ""), 3.0),            # /config/users/<default> comes before /config/clients/c1
    ("carol", "c9", ("carol", "c9"), 6.0),      # /config/users/carol/clients/<default>
])
def test_more_than_one_level_follows_kafkas_precedence_order(user, client, tags, limit):
    quotas = index({("alice", "c1"): 1.0, ("alice", None): 2.0, (DEFAULT, None): 3.0, (None, "c1"): 4.0,
                    ("carol", DEFAULT): 6.0})
    assert quota_tags(quotas, user, client) == tags
    assert quota_limit(quotas, tags) == limit


def test_default_user_and_client_quotas_apply_per_user_and_client_id():
    quotas = index({(DEFAULT, DEFAULT): 7.0, (None, "c1"): 4.0})
    assert quota_tags(quotas, "dave", "c1") == ("dave", "c1")
    assert quota_limit(quotas, ("dave", "c1")) == 7.0


def test_the_index_reads_the_images_entities_and_skips_ip_entities():
    image_quotas = {
        frozenset({("user", None), ("client-id", "c1")}): {"producer_byte_rate": 100.0},
        frozenset({("user", "alice")}): {"consumer_byte_rate": 50.0, "producer_byte_rate": 75.0},
        frozenset({("ip", "127.0.0.1")}): {"connection_creation_rate": 5.0},
    }
    produce = QuotaIndex.of(image_quotas, "producer_byte_rate")
    assert produce.entries == {(DEFAULT, "c1"): 100.0, ("alice", None): 75.0}
    assert produce.enabled == 4 | 2
    assert QuotaIndex.of(image_quotas, "consumer_byte_rate").entries == {("alice", None): 50.0}
    assert QuotaIndex.of(image_quotas, "request_percentage").enabled == 0
    assert principal_user("User:alice") == "alice"


# -- the manager --

def test_recording_past_the_quota_returns_kafkas_throttle_time():
    manager = ClientQuotaManager(11, 1)
    quotas = index({(None, "p"): 100.0})
    assert manager.record(quotas, "u", "p", 1000, now_ms=0) == 0         # 100 B/s over 10 s: at the quota
    # 1500 over 10 s = 150 B/s: (150 - 100) / 100 * 10000
    assert manager.record(quotas, "u", "p", 500, now_ms=0) == 5000
    assert manager.record(quotas, "u", "other", 5000, now_ms=0) == 0    # no quota for that client id


def test_no_quota_of_the_type_records_nothing_and_allows_everything():
    manager = ClientQuotaManager(11, 1)
    assert manager.record(index({}), "u", "p", 10**9, now_ms=0) == 0
    assert manager.rates == {}
    assert manager.max_value_in_window(index({}), "u", "p") == float("inf")


def test_a_fetch_may_take_at_most_samples_minus_one_windows_of_the_quota():
    manager = ClientQuotaManager(11, 2)
    assert manager.max_value_in_window(index({(None, DEFAULT): 100.0}), "u", "c") == 100.0 * 10 * 2


def test_unrecord_takes_a_throttled_value_back_out():
    manager = ClientQuotaManager(11, 1)
    quotas = index({(None, "c"): 100.0})
    assert manager.record(quotas, "u", "c", 2000, now_ms=0) == 10_000          # 200 B/s: (200-100)/100 * 10 s
    manager.unrecord(quotas, "u", "c", 2000, now_ms=0)
    assert manager.record(quotas, "u", "c", 900, now_ms=0) == 0


def test_tracked_rates_are_bounded_and_expire_after_an_hour_idle():
    manager = ClientQuotaManager(11, 1, max_tracked=3)
    quotas = index({(None, DEFAULT): 100.0})
    for i in range(5):
        manager.record(quotas, "u", f"c{i}", 10, now_ms=i)
    assert list(manager.rates) == [("", "c2"), ("", "c3"), ("", "c4")]
    manager.record(quotas, "u", "c4", 10, now_ms=10 + INACTIVE_EXPIRY_MS - 1)
    assert list(manager.rates) == [("", "c4")]                # c2 and c3 idle an hour: dropped


def test_a_zero_byte_rate_throttles_nothing_and_a_zero_request_percentage_one_window_as_in_kafka():
    """Kafka's throttle time for a zero quota is Math.round(infinity) = Long.MAX_VALUE; the byte-rate
    managers cast it to an int (-1: no throttle), the request quota caps it at one window first."""
    assert manager_record(ClientQuotaManager(11, 1)) == -1     # Kafka's too; its callers throttle above 0 only
    assert manager_record(ClientQuotaManager(11, 1, max_throttle_ms=1000)) == 1000
    assert (java_round(math.inf), java_round(math.nan), java_round(2.5), java_round(-2.5)) == (2**63 - 1, 0, 3, -2)
    assert (java_int_cast(2**63 - 1), java_int_cast(2**31), java_int_cast(5000)) == (-1, -2**31, 5000)


def manager_record(manager):
    return manager.record(index({(None, "c"): 0.0}), "u", "c", 1, now_ms=0)


# -- the connection muted for the throttle time (KIP-219) --

def test_a_throttled_answer_goes_out_at_once_and_the_connection_reads_nothing_until_the_throttle_ends():
    throttle_ms = 300
    answered_at: list[float] = []

    async def metadata(ctx, request):
        answered_at.append(time.monotonic())
        response = MetadataResponse(throttle_time_ms=throttle_ms if len(answered_at) == 1 else 0)
        return Throttled(response, throttle_ms) if len(answered_at) == 1 else response

    async def go():
        server = KafkaServer({3: metadata})
        await server.start()
        client = NetworkClient(client_id="throttled")
        try:
            first = await client.send(("127.0.0.1", server.port), MetadataRequest(topics=[]), api_version=12)
            received_first = time.monotonic()
            second = await client.send(("127.0.0.1", server.port), MetadataRequest(topics=[]), api_version=12)
            return first, second, received_first
        finally:
            await client.close()
            await server.close()

    first, second, received_first = asyncio.run(go())
    assert first.throttle_time_ms == throttle_ms and second.throttle_time_ms == 0
    assert received_first - answered_at[0] < throttle_ms / 1000       # not held back
    assert answered_at[1] - answered_at[0] >= throttle_ms / 1000      # the second read only after the throttle


# -- a consumer's fetch (kafkawire.broker.fetch with kafkawire.broker.quotas) --

def _broker_quotas(client_quotas: dict, now_ms: list):
    image = SimpleNamespace(client_quotas=client_quotas, provenance=SimpleNamespace(offset=1))
    broker = SimpleNamespace(config=SimpleNamespace(quota_window_num=11, quota_window_size_seconds=1,
                                                    metrics_num_samples=2, metrics_sample_window_ms=30_000),
                             image=lambda: image)
    return BrokerQuotas(broker, clock=lambda: now_ms[0])


def test_a_throttled_consumer_fetch_is_answered_empty_and_its_size_taken_back_out():
    now = [0]
    quotas = _broker_quotas({frozenset({("client-id", "reader")}): {"consumer_byte_rate": 100.0}}, now)
    ctx = RequestContext(1, 12, 7, "reader", ("127.0.0.1", 1), "PLAINTEXT", "c")
    assert quotas.fetch_enabled() and quotas.fetch_window_bytes(ctx) == 100.0 * 10
    big = [("t", ZERO_UUID, PartitionData(partition_index=0, high_watermark=5, records=b"r" * 3000))]
    size = fetch_response_size(FetchResponse(responses=[FetchableTopicResponse(topic="t", topic_id=ZERO_UUID,
                                                                               partitions=[big[0][2]])]), 12)
    expected_ms = throttle_time_ms(size / 10, 100.0, 10_000)         # the rate over the 10 s first window
    leader = [NodeEndpoint(node_id=2, host="127.0.0.1", port=9092, rack=None)]     # KIP-951: kept when throttled
    answer = FetchApi._answer(ctx, SessionlessFetchContext({}), big, quotas, leader)
    assert isinstance(answer, Throttled) and answer.throttle_ms == expected_ms > 0
    assert (answer.response.throttle_time_ms, answer.response.responses, answer.response.session_id,
            answer.response.node_endpoints) == (expected_ms, [], 0, leader)
    assert quotas.fetch.rates[("", "reader")].measure(0) == 0.0      # unrecorded
    # the throttle recorded in the fetch quota's throttle-time (the larger of the two throttles)
    assert quotas.fetch.throttle_times[("", "reader")].measure(0) == expected_ms and not quotas.request.throttle_times
    small = [("t", ZERO_UUID, PartitionData(partition_index=0, high_watermark=5, records=b"r" * 500))]
    answer = FetchApi._answer(ctx, SessionlessFetchContext({}), small, quotas, [])
    assert isinstance(answer, FetchResponse) and answer.responses[0].partitions[0].records == b"r" * 500
    other = RequestContext(1, 12, 8, "someone-else", ("127.0.0.1", 1), "PLAINTEXT", "c")
    assert isinstance(FetchApi._answer(other, SessionlessFetchContext({}), big, quotas, []), FetchResponse)


# -- request_percentage: the handler's own thread time --

def _burn(ms: float) -> None:
    start = time.thread_time_ns()
    while time.thread_time_ns() - start < ms * 1e6:
        pass


def test_the_request_timer_counts_the_handlers_steps_and_not_its_awaits():
    seen = []

    async def handler():
        _burn(20)
        seen.append(RequestTimer.current().so_far_ns())
        await asyncio.sleep(0.2)            # waiting, as for an append: not the handler's time
        _burn(20)
        return "answer"

    async def go():
        timer = RequestTimer()
        started = time.monotonic()
        result = await timer.run(handler())
        return result, timer.ns, time.monotonic() - started, RequestTimer.current()

    result, ns, wall_s, after = asyncio.run(go())
    assert result == "answer" and after is None
    assert seen[0] >= 20e6
    assert 40e6 <= ns < wall_s * 1e9 - 150e6


def test_a_cancel_reaches_the_timed_handler():
    cleaned = []

    async def handler():
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.append(True)

    async def go():
        task = asyncio.ensure_future(RequestTimer().run(handler()))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert cleaned == [True]


def test_a_client_over_its_request_percentage_is_throttled_at_most_one_window():
    now = [0]
    quotas = _broker_quotas({frozenset({("client-id", "busy")}): {"request_percentage": 1.0}}, now)

    async def metadata(ctx, request):
        _burn(200)      # 20 %-seconds over the 10 s first window: 2 % > 1 %, (2 - 1) / 1 x 10 s, capped at 1 s
        return MetadataResponse()

    async def txn_markers(ctx, request):
        return "exempt"

    handlers = quotas.wrap({3: ApiHandler(metadata), 27: ApiHandler(txn_markers)})
    assert handlers[27].handle is txn_markers
    busy = RequestContext(3, 12, 1, "busy", ("127.0.0.1", 1), "PLAINTEXT", "c")
    answer = asyncio.run(handlers[3].handle(busy, None))
    assert isinstance(answer, Throttled) and answer.throttle_ms == 1000 == answer.response.throttle_time_ms
    idle = RequestContext(3, 12, 2, "idle", ("127.0.0.1", 1), "PLAINTEXT", "c")
    assert isinstance(asyncio.run(handlers[3].handle(idle, None)), MetadataResponse)


def test_a_sasl_request_past_authentication_counts_against_the_request_percentage_as_in_kafka():
    """KafkaApis answers SaslHandshake and SaslAuthenticate on an authenticated connection (a
    re-authentication within a second of the last, or any on a listener without SASL) with
    ILLEGAL_SASL_STATE through sendResponseMaybeThrottle: recorded and throttled."""
    now = [0]
    quotas = _broker_quotas({frozenset({("client-id", "busy")}): {"request_percentage": 1.0}}, now)

    async def handshake(ctx, request):
        _burn(200)
        return SaslHandshakeResponse(error_code=int(Errors.ILLEGAL_SASL_STATE), mechanisms=[])

    handlers = quotas.wrap({17: handshake, 36: ApiHandler(handshake)})      # the broker's 17 is a bare function
    for key, handle in ((17, handlers[17]), (36, handlers[36].handle)):
        busy = RequestContext(key, 1, 1, "busy", ("127.0.0.1", 1), "SASL_PLAINTEXT", "c")
        answer = asyncio.run(handle(busy, None))
        assert isinstance(answer, Throttled) and answer.throttle_ms == 1000, answer


def test_a_forwarded_answers_throttle_time_mutes_the_clients_connection_without_any_broker_quota():
    """KafkaApis.sendForwardedResponse: the controller's throttle time (its controller mutation
    quota) in a forwarded answer mutes the client's connection; a broker API's does not."""
    quotas = _broker_quotas({}, [0])

    async def forwarded(ctx, request):
        return CreateTopicsResponse(throttle_time_ms=700)

    async def own(ctx, request):
        return MetadataResponse(throttle_time_ms=700)

    handlers = quotas.wrap({19: ApiHandler(forwarded), 3: ApiHandler(own)})
    ctx = RequestContext(19, 7, 1, "admin", ("127.0.0.1", 1), "PLAINTEXT", "c")
    answer = asyncio.run(handlers[19].handle(ctx, None))
    assert isinstance(answer, Throttled) and answer.throttle_ms == 700 == answer.response.throttle_time_ms
    assert isinstance(asyncio.run(handlers[3].handle(dataclasses.replace(ctx, api_key=3), None)), MetadataResponse)


def test_a_throttled_fetch_passes_the_acl_check_unchanged_refused_topics_left_out_as_in_kafka():
    from kafkawire.broker.authorization import _fetch
    from kafkawire.messages.fetch_request import FetchRequest, FetchTopic, FetchPartition

    check = _fetch(SimpleNamespace(image=lambda: None))
    throttled = Throttled(FetchResponse(throttle_time_ms=500), 500)

    async def handle(ctx, request):
        return throttled

    request = FetchRequest(replica_id=-1, max_wait_ms=0, topics=[
        FetchTopic(topic="secret", partitions=[FetchPartition(partition=0)])])
    ctx = RequestContext(1, 12, 1, "reader", ("127.0.0.1", 1), "PLAINTEXT", "c")
    answer = asyncio.run(check(ctx, request, lambda *a: False, handle))       # READ on "secret" refused
    assert answer is throttled and answer.response.responses == []
