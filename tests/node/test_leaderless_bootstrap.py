"""`metadata-quorum describe --status` whose first bootstrap controller is alive but knows no
leader (issue 18, item 7): the tool asks the next one, says each failed attempt on stderr, and
answers well inside its timeout (it used to ask the first one until the timeout, silently)."""
import subprocess
import sys
import time

from kafkawire.raft.node.local_quorum import LocalQuorum

TOOL_TIMEOUT_S = 120


def test_a_leaderless_first_bootstrap_controller_is_passed_over(tmp_path):
    with LocalQuorum(tmp_path, voters=3, extra_nodes=1) as quorum:
        quorum.format()
        for node_id in (1, 2, 3):
            quorum.start(node_id)
        # Node 4, an observer formatted without voters, is pointed at nowhere: it stays alive
        # and answers DescribeCluster, knowing no active controller.
        quorum.start(4, "--override", "controller.quorum.bootstrap.servers=127.0.0.1:1")
        try:
            leader = quorum.wait_for_leader(120, among=(1, 2, 3))
            bootstrap = f"127.0.0.1:{quorum.ports[4]},127.0.0.1:{quorum.ports[leader.leader_id]}"
            started = time.monotonic()
            # "well inside its timeout": half of a timeout long enough that a Python start on a
            # loaded machine stays far inside that half
            result = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "metadata-quorum", "--bootstrap-controller",
                                     bootstrap, "--timeout", str(TOOL_TIMEOUT_S * 1000), "describe", "--status"],
                                    capture_output=True, text=True, timeout=TOOL_TIMEOUT_S * 2)
            took = time.monotonic() - started
            assert result.returncode == 0, result.stderr
            assert f"LeaderId:               {leader.leader_id}" in result.stdout, result.stdout
            assert took < TOOL_TIMEOUT_S / 2, took
            assert (f"bootstrap controller 127.0.0.1:{quorum.ports[4]} knows no active controller; asking "
                    f"127.0.0.1:{quorum.ports[leader.leader_id]} next") in result.stderr, result.stderr
        finally:
            quorum.kill_all()       # nothing is read after: a graceful stop of the whole quorum costs 5 s
