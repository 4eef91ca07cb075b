"""A node with max.connections=N holds at most N client sockets however many clients connect: the
rest wait in the kernel's listen backlog (Kafka's Acceptor stops accepting), so a flood of
connections cannot take the node's file descriptors; the node serves on once the flood ends."""
import os
import socket
import time

from kafkawire.raft.node.local_quorum import LocalQuorum
from tests.net.test_connection_limits import server_side_sockets

MAX_CONNECTIONS, FLOOD = 5, 300


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def wait_for(condition, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_flood_of_connections_takes_at_most_max_connections_descriptors_of_a_node(tmp_path):
    with LocalQuorum(tmp_path, voters=1, properties={"max.connections": str(MAX_CONNECTIONS)}).started() as quorum:
        quorum.wait_for_leader(120)
        pid, port = quorum.processes[1].pid, quorum.ports[1]
        # The node's own connection (its ControllerRegistration channel to itself) is counted in
        # "before": it opens once the node leads, and the flood must not be charged for it.
        assert wait_for(lambda: server_side_sockets(port)[0] >= 1)
        before = open_descriptors(pid)
        flood = []
        try:
            for _ in range(FLOOD):
                client = socket.socket()
                client.setblocking(False)
                client.connect_ex(("127.0.0.1", port))      # completes in the kernel, or waits for room
                flood.append(client)
            # The node accepts MAX_CONNECTIONS, and the backlog fills behind them.
            assert wait_for(lambda: server_side_sockets(port)[0] >= MAX_CONNECTIONS
                            and server_side_sockets(port)[1] > 0)
            during = open_descriptors(pid), server_side_sockets(port)[0]
        finally:
            for client in flood:
                client.close()
        after = quorum.wait_for_leader(120)          # the node answers again once the flood is gone
    assert during[1] == MAX_CONNECTIONS
    assert during[0] <= before + MAX_CONNECTIONS
    assert after.leader_id == 1
