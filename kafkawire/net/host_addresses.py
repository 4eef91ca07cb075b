"""Host names in connection limits, resolved as Kafka resolves them (InetAddress.getByName) when
the setting or quota arrives, not on the accept path: ``max.connections.per.ip.overrides``
entries and ``ip`` client quota entities may name a host, which then stands for its address.

Kafka looks a name up once, when it applies the config, on the thread applying it. kafkawire's
limits are read on the event loop, so a name's lookup runs in the loop's executor: until it has
finished the name matches no connection (a few milliseconds after the setting arrives), and a
finished lookup bumps ``version`` so that the limits built from it are built again. A name that
does not resolve matches nothing and is logged (Kafka: "Unable to resolve address ..."). An IP
literal is its normalized address at once (``::1`` and ``0:0:0:0:0:0:0:1`` are one address, as
InetAddress compares them).
"""
from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket

__all__ = ["HostAddresses", "HOSTS"]

log = logging.getLogger(__name__)

# Names are operators' settings, not clients' input; the bound only guards against a config
# naming hosts without end.
MAX_NAMES = 10_000


class HostAddresses:
    def __init__(self, resolve=None):
        self._resolve = resolve or _first_address
        self._addresses: dict[str, str | None] = {}     # name -> address, None: does not resolve
        self._pending: set[str] = set()
        self.version = 0

    def address(self, host: str) -> str | None:
        """The normalized address ``host`` stands for; None while it is being looked up or when
        it does not resolve."""
        try:
            return str(ipaddress.ip_address(host))
        except ValueError:
            pass
        if host in self._addresses:
            return self._addresses[host]
        self._look_up(host)
        return self._addresses.get(host)

    def _look_up(self, host: str) -> None:
        if host in self._pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:                    # no loop (a node reading its config at start)
            self._resolved(host, self._resolve(host))
            return
        self._pending.add(host)
        lookup = loop.run_in_executor(None, self._resolve, host)
        lookup.add_done_callback(lambda done: self._resolved(host, None if done.cancelled() else done.result()))

    def _resolved(self, host: str, address: str | None) -> None:
        self._pending.discard(host)
        if address is None:
            log.warning("Unable to resolve address %s: connection limits naming it match no connection", host)
        if len(self._addresses) >= MAX_NAMES:
            self._addresses.pop(next(iter(self._addresses)))
        self._addresses[host] = address
        self.version += 1


def _first_address(host: str) -> str | None:
    """InetAddress.getByName's answer: the first address, IPv4 ones first (Java's default,
    java.net.preferIPv6Addresses=false)."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return None
    addresses = [info[4][0] for info in infos]
    ipv4 = [a for a in addresses if ":" not in a]
    chosen = (ipv4 or addresses or [None])[0]
    return None if chosen is None else str(ipaddress.ip_address(chosen.split("%")[0]))


# One per process: the node's listeners and its quotas share the lookups.
HOSTS = HostAddresses()
