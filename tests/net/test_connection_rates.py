"""Connection creation rates, as Kafka's ConnectionQuotas applies them (kafkawire.net.admission,
kafkawire.net.acceptor): ``max.connection.creation.rate`` broker-wide (the acceptor waits out the
throttle; the inter-broker listener exempt when there are others) and the ``connection_creation_rate``
of ip quota entities (a connection over it is held unread for its throttle time, then closed,
and taken back out of the rates). The rates' arithmetic on a fake clock; the acceptor on 127.0.0.1."""
import asyncio
from types import SimpleNamespace

from kafkawire.net.admission import AdmissionLimits, ConnectionQuotas, DynamicAdmissionLimits
from kafkawire.net.client_quotas import IpConnectionRates, ip_connection_rates
from kafkawire.net.server import KafkaServer

from .netlib import RawConnection, run
from .test_admission import answered
from .test_connection_limits import server_side_sockets, wait_until
from .test_server import METADATA, echo_metadata, metadata_request

WINDOW = dict(quota_window_num=2, quota_window_size_seconds=1)      # a rate over at least 1 s


def test_the_broker_wide_rate_throttles_the_acceptor_at_most_one_window_and_spares_the_protected_listener():
    quotas = ConnectionQuotas(AdmissionLimits(max_connection_creation_rate=2, **WINDOW),
                              protected_listener="BROKER", clock=lambda: 0)
    assert [quotas.record_connection("CLIENT", 0) for _ in range(3)] == [0, 0, 500]      # (3 - 2) / 2 x 1 s
    assert quotas.record_connection("CLIENT", 0) == 1000                                # (4 - 2) / 2 x 1 s
    assert quotas.record_connection("CLIENT", 0) == 1000                                # capped at one window
    assert quotas.record_connection("CLIENT", 3000) == 0                                # the window went by
    quotas.listeners.update({"CLIENT", "BROKER"})
    assert [quotas.record_connection("BROKER", 3000) for _ in range(10)] == [0] * 10
    alone = ConnectionQuotas(AdmissionLimits(max_connection_creation_rate=1, **WINDOW), protected_listener="BROKER")
    alone.listeners.add("BROKER")           # the only listener: not protected (Kafka's listenerCounts.size > 1)
    assert [alone.record_connection("BROKER", 0) for _ in range(2)] == [0, 1000]


def test_a_dynamic_max_connection_creation_rate_wins_this_nodes_first_then_every_nodes():
    images = [None]
    limits = DynamicAdmissionLimits(lambda: images[0], 1, AdmissionLimits(max_connection_creation_rate=50))
    assert limits().max_connection_creation_rate == 50                       # no image yet: server.properties

    def image(offset, configs):
        return SimpleNamespace(configs=configs, provenance=SimpleNamespace(offset=offset))
    images[0] = image(1, {(4, ""): {"max.connection.creation.rate": "2"}})
    assert limits().max_connection_creation_rate == 2                        # every node's
    images[0] = image(2, {(4, ""): {"max.connection.creation.rate": "2"}, (4, "1"): {"max.connection.creation.rate": "7"}})
    assert limits().max_connection_creation_rate == 7                        # this node's wins
    images[0] = image(3, {(4, "2"): {"max.connection.creation.rate": "1"}})
    assert limits().max_connection_creation_rate == 50                       # another node's: not ours
    quotas = ConnectionQuotas(lambda: AdmissionLimits(max_connection_creation_rate=1, **WINDOW))
    assert [quotas.record_connection(now_ms=0) for _ in range(2)] == [0, 1000]


def _image(offset, configs):
    return SimpleNamespace(configs=configs, provenance=SimpleNamespace(offset=offset))


def test_every_connection_limit_is_taken_dynamically_this_nodes_value_over_every_nodes():
    static = AdmissionLimits(max_connections=100, max_connections_per_ip=10, listener_max_connections={"CLIENT": 5},
                             max_connections_per_ip_overrides={"127.0.0.9": 4})
    images = [_image(1, {(4, ""): {"max.connections": "7", "max.connections.per.ip": "3",
                                   "max.connections.per.ip.overrides": "127.0.0.2:1",
                                   "listener.name.client.max.connections": "2",
                                   "listener.name.client.max.connection.creation.rate": "4"},
                         (4, "1"): {"max.connections": "9"}})]
    limits = DynamicAdmissionLimits(lambda: images[0], 1, static)()
    assert (limits.max_connections, limits.max_connections_per_ip) == (9, 3)
    assert limits.max_connections_per_ip_overrides == {"127.0.0.2": 1}       # replaces the static list
    assert limits.listener_max_connections == {"CLIENT": 2}
    assert limits.listener_max_connection_creation_rate == {"CLIENT": 4}
    images[0] = _image(2, {(4, ""): {"max.connections": "-1", "max.connections.per.ip.overrides": "nonsense"}})
    assert DynamicAdmissionLimits(lambda: images[0], 1, static)() == static      # invalid: the static values


def test_a_raised_dynamic_max_connections_admits_the_waiting_acceptor_though_nothing_closed():
    async def main():
        current = [AdmissionLimits(max_connections=1)]
        quotas = ConnectionQuotas(lambda: current[0])
        await quotas.wait_for_slot("CLIENT")
        waiting = asyncio.ensure_future(quotas.wait_for_slot("CLIENT"))
        for _ in range(10):
            await asyncio.sleep(0)
        assert not waiting.done()                                        # the node is full
        current[0] = AdmissionLimits(max_connections=2)                  # raised, no connection closed
        async with asyncio.timeout(5):
            await waiting
        assert quotas.total == 2
    asyncio.run(main())


def test_the_protected_listener_takes_a_slot_past_max_connections():
    async def main():
        quotas = ConnectionQuotas(AdmissionLimits(max_connections=1), protected_listener="BROKER")
        quotas.listeners.update({"CLIENT", "BROKER"})
        await quotas.wait_for_slot("CLIENT")
        await asyncio.wait_for(quotas.wait_for_slot("BROKER"), 5)     # at once, though the node is full
        blocked = asyncio.ensure_future(quotas.wait_for_slot("CLIENT"))
        for _ in range(10):
            await asyncio.sleep(0)
        waited = not blocked.done()
        quotas.give_back_slot()
        quotas.give_back_slot()
        await asyncio.wait_for(blocked, 5)
        return waited, quotas.total
    assert asyncio.run(main()) == (True, 1)


def test_a_listeners_own_limits_hold_on_top_of_the_nodes():
    async def main():
        limits = AdmissionLimits(listener_max_connections={"A": 1}, listener_max_connection_creation_rate={"A": 2},
                                 **WINDOW)
        quotas = ConnectionQuotas(limits, protected_listener="A", clock=lambda: 0)
        quotas.listeners.update({"A", "B"})
        await quotas.wait_for_slot("A")
        blocked = asyncio.ensure_future(quotas.wait_for_slot("A"))   # protected, yet at its own limit
        await asyncio.wait_for(quotas.wait_for_slot("B"), 5)          # another listener: free
        for _ in range(10):
            await asyncio.sleep(0)
        waited = not blocked.done()
        quotas.give_back_slot("A")
        await asyncio.wait_for(blocked, 5)
        rates = [quotas.record_connection("A", 0) for _ in range(3)], quotas.record_connection("B", 0)
        return waited, dict(quotas.per_listener), rates
    assert asyncio.run(main()) == (True, {"A": 1, "B": 1}, ([0, 0, 500], 0))


def test_an_address_over_its_rate_is_throttled_and_taken_back_out_of_both_rates():
    rates = {"127.0.0.1": 1, None: 3}
    quotas = ConnectionQuotas(AdmissionLimits(max_connection_creation_rate=100, **WINDOW), ip_rates=lambda: rates)
    assert quotas.record_address_connection("127.0.0.1", now_ms=0) == 0
    quotas.record_connection(now_ms=0)
    assert quotas.record_address_connection("127.0.0.1", now_ms=0) == 1000    # (2 - 1) / 1 x 1 s, then unrecorded
    assert quotas.address_rates.stat_for(("127.0.0.1", ""), 0).measure(0) == 1.0
    assert quotas.record_address_connection("127.0.0.1", now_ms=0) == 1000    # still 1 recorded: throttled again
    assert quotas.broker_rate.measure(0) == -1.0        # each throttled one taken back out of the broker's too
    # every other address has the default entity's rate, each its own
    assert [quotas.record_address_connection("127.0.0.2", now_ms=0) for _ in range(4)] == [0, 0, 0, 333]
    assert quotas.record_address_connection("127.0.0.3", now_ms=0) == 0
    assert ConnectionQuotas(AdmissionLimits()).record_address_connection("127.0.0.1") == 0      # no ip quotas


def test_ip_entities_of_the_image_become_rates_by_address():
    quotas = {frozenset({("ip", "10.0.0.1")}): {"connection_creation_rate": 5.0},
              frozenset({("ip", "0:0::1")}): {"connection_creation_rate": 7.0},
              frozenset({("ip", None)}): {"connection_creation_rate": 9.0},
              frozenset({("ip", "broker.example")}): {"connection_creation_rate": 1.0},     # a host name: left out
              frozenset({("client-id", "c")}): {"producer_byte_rate": 5.0}}
    assert ip_connection_rates(quotas) == {"10.0.0.1": 5, "::1": 7, None: 9}

    class Image:
        client_quotas = quotas
    images = [Image]
    rates = IpConnectionRates(lambda: images[0])
    assert rates() is rates()                       # built once per image
    images[0] = None
    assert rates() == {}


def test_a_connection_over_its_address_rate_is_held_unanswered_then_closed():
    async def main():
        quotas = ConnectionQuotas(AdmissionLimits(**WINDOW), ip_rates=lambda: {"127.0.0.1": 3})
        async with KafkaServer({METADATA: echo_metadata}, connection_quotas=quotas) as server:
            served = [await RawConnection.open(server.port) for _ in range(3)]
            assert [await answered(c, "ok", i) for i, c in enumerate(served)] == [True] * 3
            held = await RawConnection.open(server.port)          # 4 in the first second: (4 - 3) / 3 x 1 s
            await held.send(metadata_request("held"), 9, 7)
            closed = await held.at_eof(timeout=5)                  # closed without an answer
            counted = quotas.per_ip["127.0.0.1"]
            return closed, counted, await answered(served[0], "still", 8)

    assert run(main()) == (True, 3, True)


def test_the_connection_over_the_broker_wide_rate_waits_out_the_throttle_and_nothing_else_is_accepted():
    class Throttling(ConnectionQuotas):
        """The second connection takes the rate over: a throttle longer than the test."""
        def record_connection(self, listener=None, now_ms=None):
            self.recorded = getattr(self, "recorded", 0) + 1
            return 60_000 if self.recorded == 2 else 0

    async def main():
        quotas = Throttling(AdmissionLimits())
        async with KafkaServer({METADATA: echo_metadata}, connection_quotas=quotas) as server:
            first = await RawConnection.open(server.port)
            assert await answered(first, "a", 1)
            second = await RawConnection.open(server.port)     # accepted, then held by the acceptor
            await second.send(metadata_request("b"), 9, 2)
            third = await RawConnection.open(server.port)      # left in the backlog meanwhile
            await third.send(metadata_request("c"), 9, 3)
            waiting = await wait_until(lambda: server_side_sockets(server.port)[1] == 1)
            assert await answered(first, "barrier", 4)
            return waiting, server.open_sockets, server_side_sockets(server.port)[1], quotas.recorded

    assert run(main()) == (True, 1, 1, 2)


def test_a_server_that_closes_closes_the_connections_it_holds():
    async def main():
        # a rate of 0: the first connection is over it, held for the whole (30 s) window
        quotas = ConnectionQuotas(AdmissionLimits(quota_window_num=2, quota_window_size_seconds=30),
                                  ip_rates=lambda: {"127.0.0.1": 0})
        server = KafkaServer({METADATA: echo_metadata}, connection_quotas=quotas)
        await server.start()
        try:
            held = await RawConnection.open(server.port)
            was_held = await wait_until(lambda: any(a._held for a in server._acceptors))
        finally:
            await server.close()
        return was_held, [a._held for a in server._acceptors], await held.at_eof(timeout=5)

    assert run(main()) == (True, [{}], True)
