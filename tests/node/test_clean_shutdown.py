"""A graceful SIGTERM logs no error (issue 18, item 7): every node of a 3-voter quorum, the
leader first, stops with exit code 0 and its log holds no ERROR, CRITICAL or traceback line
(it used to log `ERROR Future exception was never retrieved ... Disconnected`)."""
from kafkawire.raft.node.local_quorum import LocalQuorum

BAD = (" ERROR ", " CRITICAL ", "Traceback", "never retrieved", "was destroyed but it is pending")


def test_sigterm_of_every_node_logs_no_error(tmp_path):
    with LocalQuorum(tmp_path, voters=3).started("initial-controllers") as quorum:
        first = quorum.wait_for_leader(120)
        quorum.wait_until(lambda: quorum.describe(first.leader_id).high_watermark > first.high_watermark + 4,
                          20, "a few commits")
        order = [first.leader_id] + [i for i in quorum.node_ids if i != first.leader_id]
        for node_id in order:
            assert quorum.stop(node_id) == 0, quorum.log_tail(node_id, 40)
        for node_id in quorum.node_ids:
            with open(quorum.log_path(node_id)) as f:
                lines = [line for line in f if any(b in line for b in BAD)]
            assert not lines, f"node {node_id}:\n" + "".join(lines[:20])
