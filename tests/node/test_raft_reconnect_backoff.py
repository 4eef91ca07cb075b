"""The raft client's reconnect backoff is Kafka's (KafkaRaftManager: 50 ms doubling up to
500 ms, 20% jitter), so a voter that starts listening late is tried again within 0.6 s: a
longer cap leaves the first pre-vote round waiting on a peer that is already up."""
import asyncio

from kafkawire.net.client import ConnectFailed, NodeBackingOff
from kafkawire.net.config import parse_server_config
from kafkawire.raft.node.controller_node import raft_network_client
from kafkawire.raft.node.local_quorum import free_ports

FAILURES = 8          # 50, 100, 200, 400, then the cap: enough to see where it stops


def controller_config(port: int):
    return parse_server_config("process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
                               f"listeners=CONTROLLER://127.0.0.1:{port}\n"
                               f"controller.quorum.voters=1@127.0.0.1:{port}\n")


async def backoffs_to_a_closed_port(port: int) -> list[int]:
    """Connect to a port nobody listens on, wait out each backoff, and return the backoffs."""
    client = raft_network_client(controller_config(port), {})
    backoffs = []
    try:
        while len(backoffs) < FAILURES:
            try:
                await client.connect(("127.0.0.1", port), timeout_ms=2000)
            except ConnectFailed:
                try:
                    await client.connect(("127.0.0.1", port), timeout_ms=2000)
                except NodeBackingOff as backing_off:
                    backoffs.append(backing_off.retry_after_ms)
                    await asyncio.sleep(backing_off.retry_after_ms / 1000)
            except NodeBackingOff as backing_off:        # the sleep woke a little early
                await asyncio.sleep(backing_off.retry_after_ms / 1000)
    finally:
        await client.close()
    return backoffs


def test_the_raft_clients_reconnect_backoff_starts_at_50_ms_and_stops_at_500():
    (port,) = free_ports(1)
    backoffs = asyncio.run(asyncio.wait_for(backoffs_to_a_closed_port(port), timeout=20))
    assert len(backoffs) == FAILURES
    assert 40 <= backoffs[0] <= 61, backoffs                    # 50 ms +-20%
    assert max(backoffs) <= 601, backoffs                       # 500 ms +20%, never Kafka clients' 1 s
    assert min(backoffs[-3:]) >= 400, backoffs                  # it does reach the cap
