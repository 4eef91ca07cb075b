"""The test harness's two shared helpers that starting nodes depends on: free_ports never hands
the same port to two processes (or twice to one), and a wait for brokers to register fails at
once, with the exit code and log tail, when a node process has died."""
import errno
import socket
import subprocess
import sys
import time

import pytest

from kafkawire.raft.node.local_quorum import LocalQuorum, QuorumError, free_ports
from tests.broker.wire import serving_brokers

# Each side asks for this many: with ports merely probed free (bind to port 0, close), two sets
# of 300 out of Linux's ~14,000 even ephemeral ports share about 6 ports (measured: 5 and 8).
ASKED = 300
CHILD = """
import sys
from kafkawire.raft.node.local_quorum import free_ports
print("ready", flush=True)
sys.stdin.readline()
print(" ".join(map(str, free_ports(int(sys.argv[1])))), flush=True)
"""


def test_two_processes_asking_at_once_never_get_the_same_port():
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(ASKED)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        for child in children:                       # both imported: the asking overlaps
            assert child.stdout.readline().strip() == "ready"
        for child in children:
            child.stdin.write("go\n")
            child.stdin.flush()
        answers = [set(map(int, child.communicate(timeout=60)[0].split())) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=10)
    assert [len(a) for a in answers] == [ASKED, ASKED]
    assert answers[0].isdisjoint(answers[1]), sorted(answers[0] & answers[1])


def test_one_process_asking_twice_gets_distinct_ports_a_node_can_still_bind():
    first, second = free_ports(ASKED), free_ports(ASKED)
    assert len(set(first)) == ASKED and set(first).isdisjoint(second), sorted(set(first) & set(second))
    # A bind without SO_REUSEADDR (anyone's bind to port 0 is one) is refused: the port is held.
    with socket.socket() as other, pytest.raises(OSError) as refused:
        other.bind(("127.0.0.1", first[0]))
    assert refused.value.errno == errno.EADDRINUSE
    # A listener binding as the nodes do (SO_REUSEADDR) takes it.
    with socket.socket() as node:
        node.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        node.bind(("127.0.0.1", first[0]))
        node.listen(1)


def test_waiting_for_brokers_fails_at_once_with_the_exit_code_and_log_of_a_dead_node(tmp_path):
    quorum = LocalQuorum(tmp_path, voters=1)
    quorum.start(1)                 # never formatted: server-start exits at once, saying why
    quorum.processes[1].wait(timeout=60)
    broker_port, = free_ports(1)
    began = time.monotonic()
    with pytest.raises(QuorumError) as failed:
        with serving_brokers(quorum, {1: ("127.0.0.1", broker_port)}, 60):
            pass
    waited = time.monotonic() - began
    message = str(failed.value)
    assert f"node 1 exited with {quorum.processes[1].returncode}" in message, message
    assert quorum.processes[1].returncode != 0
    assert quorum.log_tail(1).strip() and quorum.log_tail(1).strip() in message, message
    assert waited < 10, f"the wait took {waited:.1f} s of its 60 s bound"


def test_waiting_for_a_leader_when_every_node_has_died_fails_at_once_saying_how(tmp_path):
    quorum = LocalQuorum(tmp_path, voters=1)
    quorum.start(1)                 # never formatted: server-start exits at once, saying why
    began = time.monotonic()
    with pytest.raises(QuorumError, match=r"node 1 exited with [1-9]") as failed:
        quorum.wait_for_leader(timeout_s=60)
    waited = time.monotonic() - began
    assert quorum.log_tail(1).strip() in str(failed.value)
    assert waited < 30, f"the wait took {waited:.1f} s of its 60 s bound"
