"""Host names in max.connections.per.ip.overrides and ip quota entities stand for their address,
as Kafka's InetAddress.getByName makes them (kafkawire.net.host_addresses)."""
import asyncio
import logging

from kafkawire.net.admission import AdmissionLimits
from kafkawire.net.client_quotas import ip_connection_rates
from kafkawire.net.host_addresses import HostAddresses


def test_a_per_ip_override_naming_a_host_or_another_spelling_of_an_address_applies_to_that_address():
    limits = AdmissionLimits(max_connections_per_ip=9,
                             max_connections_per_ip_overrides={"localhost": 1, "0:0:0:0:0:0:0:1": 4})
    assert (limits.limit_for("127.0.0.1"), limits.limit_for("::1"), limits.limit_for("10.0.0.1")) == (1, 4, 9)


def test_an_ip_quota_entity_naming_a_host_is_the_rate_of_its_address():
    rates = ip_connection_rates({frozenset({("ip", "localhost")}): {"connection_creation_rate": 5.0},
                                 frozenset({("ip", None)}): {"connection_creation_rate": 50.0}})
    assert rates == {"127.0.0.1": 5, None: 50}


def test_on_the_event_loop_a_name_is_looked_up_off_it_and_matches_once_resolved(caplog):
    caplog.set_level(logging.WARNING, logger="kafkawire.net.host_addresses")
    looked_up = []

    def resolve(host):
        looked_up.append(host)
        return {"broker-a.example": "10.1.2.3"}.get(host)

    async def main():
        hosts = HostAddresses(resolve)
        first = (hosts.address("broker-a.example"), hosts.address("nowhere.example"), hosts.address("10.0.0.1"))
        for _ in range(500):                    # the executor's lookups, bounded
            if hosts.version == 2:
                break
            await asyncio.sleep(0.01)
        return first, hosts.address("broker-a.example"), hosts.address("nowhere.example"), hosts.version
    first, resolved, unresolved, version = asyncio.run(main())
    assert first == (None, None, "10.0.0.1")      # an address at once, a name once looked up
    assert (resolved, unresolved, version) == ("10.1.2.3", None, 2)
    assert sorted(looked_up) == ["broker-a.example", "nowhere.example"]     # once each
    assert any("Unable to resolve address nowhere.example" in r.getMessage() for r in caplog.records)
