"""A listener's accept loop, as Kafka's Acceptor (SocketServer.scala): the admission limits are
applied when a connection is accepted, before anything is read from it (a TLS handshake
included), and at ``max.connections`` the loop stops accepting, so that further connections
wait in the kernel's listen backlog rather than as open sockets of this process.

* ``max.connections``: a slot is taken before ``accept`` is called (ConnectionQuotas.
  waitForConnectionSlot); while none is free nothing is accepted. Kafka's acceptor calls accept
  first and then waits, holding that one socket; here it is left in the backlog too.
* ``max.connections.per.ip`` (and overrides): checked on the accepted socket, which is closed at
  once when its address is over its limit (Kafka's TooManyConnectionsException).
* ``max.connection.creation.rate``: the accepted connection that takes the broker-wide rate over
  it waits out the throttle time before it is served, and the loop accepts nothing meanwhile
  (Kafka's acceptor blocks as long, holding that connection).
* ``connection_creation_rate`` of an ip quota entity: a connection over its address's rate is
  held open, unread, for the throttle time and then closed (Kafka's delayed close of a
  throttled connection); it holds no slot meanwhile. Those still held when the loop stops are
  closed then.
* An accept that fails (``Too many open files`` and the like) is logged and retried after a
  pause; the listener keeps serving, as Kafka's acceptor logs "Error while accepting connection"
  and goes on.
* Beyond Kafka: a connection accepted within ``FD_RESERVE`` descriptors of the process's limit
  (``ulimit -n``) is closed at once and accepting pauses, so that clients cannot take the
  descriptors the node needs for its own files (a log segment roll failing with EMFILE stops the
  node, as it stops Kafka). accept() returns the lowest free descriptor, so a descriptor number
  of n means at least n + 1 are open.

The accepted socket is then handed to the event loop (``connect_accepted_socket``), which runs
the TLS handshake, bounded by the listener's handshake timeout.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import resource
import socket
import ssl
from typing import Callable, Coroutine

from kafkawire.net.admission import ConnectionQuotas

log = logging.getLogger(__name__)

LISTEN_BACKLOG = 50          # SocketServerConfigs.SOCKET_LISTEN_BACKLOG_SIZE_DEFAULT
ACCEPT_RETRY_S = 1.0         # the pause after a failed accept (asyncio's own after EMFILE)
STREAM_LIMIT = 2 ** 16       # asyncio.start_server's StreamReader limit
# Transient: the peer went away between the kernel's handshake and our accept.
_TRANSIENT = {errno.ECONNABORTED, errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR, errno.EPROTO, errno.EPERM}


def fd_reserve(limit: int) -> int:
    """Descriptors kept free for the node's own files: a quarter of a small limit, else 256."""
    return min(256, limit // 4)


async def listening_sockets(host: str | None, port: int, backlog: int = LISTEN_BACKLOG) -> list[socket.socket]:
    """Bound, listening, non-blocking sockets for every address ``host`` resolves to (as
    asyncio.start_server binds them). Raises OSError naming the address that failed."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                raise OSError(exc.errno, f"error while attempting to bind on address {address!r}: "
                                         f"{(exc.strerror or '').lower()}") from None
            sock.listen(backlog)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class Acceptor:
    """Accepts connections on one listening socket within ``quotas``; hands each accepted
    socket, with its peer address, to ``serve`` (a coroutine that owns the socket and calls
    ``quotas.release(host, listener_name)`` when it is done with it)."""

    def __init__(self, sock: socket.socket, quotas: ConnectionQuotas,
                 serve: Callable[[socket.socket, str], Coroutine[None, None, None]], listener_name: str):
        self.sock = sock
        self.quotas = quotas
        self.serve = serve
        self.listener_name = listener_name
        self._fd_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        self._tasks: set[asyncio.Task] = set()
        self._held: dict[socket.socket, asyncio.TimerHandle] = {}     # throttled, closed when their time ends
        quotas.listeners.add(listener_name)

    async def run(self) -> None:
        try:
            while True:
                await self._accept_one()
        finally:
            for client, handle in self._held.items():
                handle.cancel()
                client.close()
            self._held.clear()

    async def _accept_one(self) -> None:
        loop = asyncio.get_running_loop()
        await self.quotas.wait_for_slot(self.listener_name)
        try:
            client, address = await loop.sock_accept(self.sock)
        except BaseException as exc:
            self.quotas.give_back_slot(self.listener_name)
            if not isinstance(exc, OSError):
                raise
            await self._accept_failed(exc)
            return
        host = address[0]
        try:
            admitted = await self._admit(client, host)
        except BaseException:
            self.quotas.give_back_slot(self.listener_name)
            client.close()
            raise
        if not admitted:
            return
        task = asyncio.create_task(self.serve(client, host))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _admit(self, client: socket.socket, host: str) -> bool:
        """Whether the accepted ``client`` is served; if not, its slot is given back and it is
        closed (or held for its throttle time)."""
        if self._near_fd_limit(client, host):
            self.quotas.give_back_slot(self.listener_name)
            client.close()
            return False
        wait_ms = self.quotas.record_connection(self.listener_name)
        if wait_ms > 0:
            log.debug("listener %s over max.connection.creation.rate: accepting again in %d ms",
                      self.listener_name, wait_ms)
            await asyncio.sleep(wait_ms / 1000)
        throttle_ms = self.quotas.record_address_connection(host, self.listener_name)
        if throttle_ms > 0:
            log.debug("Delaying closing of connection from %s for %d ms", host, throttle_ms)
            self.quotas.give_back_slot(self.listener_name)
            self._hold(client, throttle_ms)
            return False
        if not self.quotas.admit_address(host):
            self.quotas.give_back_slot(self.listener_name)
            client.close()
            return False
        return True

    def _hold(self, client: socket.socket, throttle_ms: int) -> None:
        def close() -> None:
            self._held.pop(client, None)
            client.close()
        self._held[client] = asyncio.get_running_loop().call_later(throttle_ms / 1000, close)

    @property
    def serving(self) -> set[asyncio.Task]:
        """The tasks of the connections accepted here and not yet closed."""
        return self._tasks

    async def _accept_failed(self, exc: OSError) -> None:
        if exc.errno in _TRANSIENT:
            return
        log.error("Error while accepting connection on listener %s: %s", self.listener_name, exc)
        # Out of descriptors or memory (or anything not transient): retrying at once would spin.
        await asyncio.sleep(ACCEPT_RETRY_S)

    def _near_fd_limit(self, client: socket.socket, host: str) -> bool:
        if self._fd_limit == resource.RLIM_INFINITY:
            return False
        reserve = fd_reserve(self._fd_limit)
        if client.fileno() < self._fd_limit - reserve:
            return False
        log.warning("Closing connection from %s on listener %s: the process has at least %d file descriptors "
                    "open, within %d of its limit of %d (ulimit -n); the rest are kept for the node's own files",
                    host, self.listener_name, client.fileno() + 1, reserve, self._fd_limit)
        return True


async def open_streams(sock: socket.socket, ssl_context: ssl.SSLContext | None, handshake_timeout_s: float,
                       listener_name: str = "?"):
    """(reader, writer) over an accepted socket, after the TLS handshake when ``ssl_context`` is
    given; None if the handshake failed or timed out (the socket is closed then)."""
    loop = asyncio.get_running_loop()
    peer = _peer(sock)
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)      # Kafka's configureAcceptedSocketChannel
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    protocol = asyncio.StreamReaderProtocol(reader)
    try:
        transport, _ = await loop.connect_accepted_socket(
            lambda: protocol, sock, ssl=ssl_context,
            ssl_handshake_timeout=None if ssl_context is None else handshake_timeout_s)
    except (OSError, ssl.SSLError, asyncio.TimeoutError) as exc:
        if isinstance(exc, ssl.SSLError):
            # Kafka's Selector: "Failed authentication with /<address> (SSL handshake failed)".
            log.info("Failed authentication with /%s (listener %s: SSL handshake failed: %s)", peer.rpartition(":")[0],
                     listener_name, getattr(exc, "reason", None) or exc)
        else:           # a timeout or a peer that went away is not an authentication failure
            log.debug("connection from %s closed during the TLS handshake: %s", peer, exc)
        sock.close()
        return None
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


def _peer(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
    except OSError:
        return "?"
    return f"{host}:{port}"
