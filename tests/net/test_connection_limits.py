"""max.connections and max.connections.per.ip bound the sockets a listener holds, as Kafka's
Acceptor does: at max.connections nothing more is accepted (new connections wait in the kernel's
listen backlog, not as open sockets of the server), both limits are checked when a connection
is accepted, before its TLS handshake, and the descriptors the node needs for its own files are
never taken by clients."""
import asyncio
import contextlib
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.net.admission import AdmissionLimits, ConnectionQuotas
from kafkawire.net.security import client_ssl_context
from kafkawire.net.server import KafkaServer

from .netlib import RawConnection, run
from .test_admission import answered
from .test_server import METADATA, echo_metadata, metadata_request, names
from .test_tls import client_settings, node_config, pem_client, pem_server
from .tls_certs import make_pki

REPO = Path(__file__).resolve().parents[2]


def server_side_sockets(port: int) -> tuple[int, int]:
    """(accepted, in backlog): the established TCP connections to ``port`` on 127.0.0.1 that a
    process has accepted (they have an inode) and those still in the listen backlog (inode 0),
    as the kernel lists them in /proc/net/tcp."""
    accepted = backlog = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port = int(fields[1].split(":")[1], 16)
        if local_port == port and fields[3] == "01":       # ESTABLISHED
            if fields[9] == "0":
                backlog += 1
            else:
                accepted += 1
    return accepted, backlog


async def wait_until(condition, timeout: float = 5.0) -> bool:
    """Poll ``condition`` on the event loop until it holds, at most ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def test_at_max_connections_nothing_more_is_accepted_until_one_closes():
    async def main():
        async with KafkaServer({METADATA: echo_metadata}, admission=AdmissionLimits(max_connections=2)) as server:
            first = [await RawConnection.open(server.port) for _ in range(2)]
            assert [await answered(c, "a", i) for i, c in enumerate(first)] == [True, True]
            waiting = [await RawConnection.open(server.port) for _ in range(3)]     # connected by the kernel
            for i, conn in enumerate(waiting):
                await conn.send(metadata_request(f"w{i}"), 9, 10 + i)
            assert await wait_until(lambda: server_side_sockets(server.port)[1] == 3)
            assert await answered(first[0], "barrier", 5)      # the server's loop has seen the backlog
            while_full = server.open_sockets, server_side_sockets(server.port)
            first[1].close()
            cid, body = await waiting[0].read_response(METADATA, 9, timeout=5)     # the backlog's first
            assert await answered(first[0], "barrier", 6)
            after = server.open_sockets, server_side_sockets(server.port)
            return while_full, (cid, names(body)), after

    while_full, served, after = run(main())
    assert while_full == (2, (2, 3))
    assert served == (10, ["w0"])
    assert after == (2, (2, 2))


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


async def tls_open(port: int, context) -> RawConnection:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, ssl_handshake_timeout=10)
    return RawConnection(reader, writer)


async def tls_listener_with_one_connection(pki, limits: AdmissionLimits):
    """A started TLS KafkaServer with ``limits``, the client TLS context, and one connection
    through the handshake and answered."""
    security = node_config(pem_server(pki)).security_of("CONTROLLER")
    context = client_ssl_context(client_settings(pem_client(pki)))
    server = KafkaServer({METADATA: echo_metadata}, security=security, admission=limits)
    await server.start()
    first = await tls_open(server.port, context)
    assert await answered(first, "a", 1)
    return server, context, first


def test_on_a_tls_listener_max_connections_applies_before_the_handshake(pki):
    async def main():
        server, context, first = await tls_listener_with_one_connection(pki, AdmissionLimits(max_connections=1))
        async with server:
            second = asyncio.create_task(tls_open(server.port, context))
            assert await wait_until(lambda: server_side_sockets(server.port)[1] == 1)
            assert await answered(first, "barrier", 2)
            handshake_done_while_full = second.done()
            sockets_while_full = server.open_sockets
            await first.aclose()
            conn = await asyncio.wait_for(second, 5)
            ok = await answered(conn, "b", 3)
            await conn.aclose()
            return handshake_done_while_full, sockets_while_full, ok

    assert run(main()) == (False, 1, True)


def test_on_a_tls_listener_the_per_ip_limit_closes_before_the_handshake(pki, caplog):
    caplog.set_level(logging.INFO, logger="kafkawire.net")

    async def main():
        server, _, first = await tls_listener_with_one_connection(pki, AdmissionLimits(max_connections_per_ip=1))
        async with server:
            # No ClientHello is ever sent: only a close at accept ends this connection soon.
            second = await RawConnection.open(server.port)
            closed = await second.at_eof(timeout=5)
            await first.aclose()
            return closed

    assert run(main())
    assert "Rejected connection from 127.0.0.1, address already has the configured maximum of 1 connections." \
        in caplog.text


@pytest.mark.parametrize("tls", [False, True])
def test_a_connection_that_never_handshakes_or_never_sends_is_closed_in_bounded_time(tls, pki):
    """The TLS handshake is bounded by the listener's handshake timeout, a silent connection by
    connections.max.idle.ms; both give their slot back."""
    security = node_config(pem_server(pki)).security_of("CONTROLLER") if tls else None

    async def main():
        async with KafkaServer({METADATA: echo_metadata}, security=security, connections_max_idle_ms=200,
                               tls_handshake_timeout_ms=200, admission=AdmissionLimits(max_connections=1)) as server:
            silent = await RawConnection.open(server.port)
            closed = await silent.at_eof(timeout=5)
            freed = await wait_until(lambda: server.open_sockets == 0 and server.open_connections == 1)
            return closed, freed

    assert run(main()) == (True, True)


@contextlib.contextmanager
def script_process(script: str):
    """A Python process running ``script`` with this worktree's kafkawire, talking JSON lines on
    stdout; closing its stdin ends it (killed if it has not ended 10 s later)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env, cwd=REPO)
    try:
        yield proc
    finally:
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


_FD_LIMITED_SERVER = textwrap.dedent("""
    import asyncio, json, os, resource, sys
    from kafkawire.net.loop import run
    from kafkawire.net.server import KafkaServer

    async def main():
        limit = len(os.listdir("/proc/self/fd")) + 60
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        server = KafkaServer({})
        await server.start()
        print(json.dumps({"port": server.port, "limit": limit}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        opened = []
        try:
            for _ in range(8):                        # a segment roll's files, and a few more
                opened.append(open(os.devnull))
            print(json.dumps({"opened": len(opened)}), flush=True)
        except OSError as exc:
            print(json.dumps({"error": exc.strerror}), flush=True)
        await server.close()

    run(main())
""")


def test_clients_cannot_take_the_descriptors_the_node_needs_for_its_files():
    """With no max.connections, a flood of connections against a low ``ulimit -n`` leaves the
    node descriptors to open files (a log segment roll) and the listener serving."""
    with script_process(_FD_LIMITED_SERVER) as proc:
        started = json.loads(proc.stdout.readline())

        async def flood():
            conns = [await RawConnection.open(started["port"]) for _ in range(100)]

            async def outcome(i, conn):
                await conn.send(ApiVersionsRequest(), 0, i)
                try:
                    return await conn.read_frame(timeout=5) is not None
                except (ConnectionError, OSError, asyncio.IncompleteReadError):
                    return False
            served = await asyncio.gather(*(outcome(i, c) for i, c in enumerate(conns)))
            proc.stdin.write("check\n")
            proc.stdin.flush()
            answer = await asyncio.get_running_loop().run_in_executor(None, proc.stdout.readline)
            return sum(served), json.loads(answer)

        served, answer = run(flood(), timeout=30)
    assert answer == {"opened": 8}
    assert 0 < served < 100


def test_listeners_that_share_their_quotas_count_max_connections_together():
    """A node's listeners share one count (Kafka's ConnectionQuotas is the broker's)."""
    quotas = ConnectionQuotas(AdmissionLimits(max_connections=1))

    async def main():
        async with KafkaServer({METADATA: echo_metadata}, connection_quotas=quotas) as a, \
                KafkaServer({METADATA: echo_metadata}, listener_name="OTHER", connection_quotas=quotas) as b:
            on_a = await RawConnection.open(a.port)
            assert await answered(on_a, "a", 1)
            on_b = await RawConnection.open(b.port)
            await on_b.send(metadata_request("b"), 9, 2)
            assert await wait_until(lambda: server_side_sockets(b.port)[1] == 1)
            assert await answered(on_a, "barrier", 3)
            waited = server_side_sockets(b.port) == (0, 1)
            await on_a.aclose()
            cid, _ = await on_b.read_response(METADATA, 9, timeout=5)
            return waited, cid

    assert run(main()) == (True, 2)


_ACCEPT_FAILS_SERVER = textwrap.dedent("""
    import asyncio, json, logging, os, resource, sys
    from kafkawire.net.loop import run
    from kafkawire.net.server import KafkaServer

    async def main():
        failed = asyncio.Event()

        class Watch(logging.Handler):
            def emit(self, record):
                if record.getMessage().startswith("Error while accepting connection"):
                    failed.set()
        logging.getLogger("kafkawire.net").addHandler(Watch())
        server = KafkaServer({})
        await server.start()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(int(fd) for fd in os.listdir("/proc/self/fd")) + 1, hard))
        fillers = []
        try:
            while True:                                   # no descriptor left for accept
                fillers.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass
        print(json.dumps({"port": server.port}), flush=True)
        await asyncio.wait_for(failed.wait(), 10)
        for fd in fillers:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        print(json.dumps({"accept_failed": True}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        await server.close()

    run(main())
""")


def test_an_accept_that_runs_out_of_descriptors_is_logged_and_the_listener_serves_on():
    with script_process(_ACCEPT_FAILS_SERVER) as proc:
        port = json.loads(proc.stdout.readline())["port"]

        async def main():
            conn = await RawConnection.open(port)
            await conn.send(ApiVersionsRequest(), 0, 7)
            said = await asyncio.get_running_loop().run_in_executor(None, proc.stdout.readline)
            answer = await conn.read_frame(timeout=10)
            return json.loads(said), answer is not None

        said, answered_after = run(main(), timeout=30)
    assert said == {"accept_failed": True} and answered_after
