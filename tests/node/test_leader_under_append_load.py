"""An append load the disk cannot follow must not cost the quorum its leader (issue 12, item
8): three real `kafkawire test-raft-server` processes, linger 0, the leader offered 5000
records/s of 256 bytes. Appends that arrive together reach the log together (one write, one
fsync), so the leader's event loop stays free to answer fetches: the followers keep fetching
well inside controller.quorum.fetch.timeout.ms, the epoch does not change and records commit.
(Before, each append was its own write and fsync: the leader's loop was held for seconds,
followers timed out, and leadership moved from epoch to epoch without ever committing.)"""
import time

from kafkawire.raft.node.local_quorum import LocalQuorum

WATCH_S = 5
RATE = 5000
FETCH_TIMEOUT_MS = 2000      # controller.quorum.fetch.timeout.ms, Kafka's default


def test_a_leader_under_append_load_keeps_answering_fetches(tmp_path):
    quorum = LocalQuorum(tmp_path, 3, properties={"controller.quorum.append.linger.ms": "0"},
                         server_args=lambda c: ["test-raft-server", "--config", c, "--throughput", str(RATE),
                                                "--record-size", "256", "--log-level", "WARN"])
    with quorum:
        quorum.format()
        quorum.start_all()
        first = quorum.wait_for_leader(120)
        time.sleep(1)                       # the load starts with the leadership
        start = quorum.describe(first.leader_id, timeout_ms=5000)
        views, answer_s, fetch_ages = [], [], []
        deadline = time.monotonic() + WATCH_S
        while time.monotonic() < deadline:
            asked = time.monotonic()
            view = quorum.describe(first.leader_id, timeout_ms=5000)   # raises if no longer leader
            answer_s.append(time.monotonic() - asked)
            now_ms = time.time() * 1000
            fetch_ages += [now_ms - r.last_fetch_timestamp for r in view.voters
                           if r.replica_id != view.leader_id]
            views.append(view)
            time.sleep(0.25)
        quorum.kill_all()                   # nothing is read after: a graceful stop of the whole quorum costs 5 s
    committed_per_s = (views[-1].high_watermark - start.high_watermark) / WATCH_S
    print(f"leader under {RATE} appends/s (linger 0): {committed_per_s:.0f} committed/s, DescribeQuorum "
          f"max {max(answer_s) * 1000:.0f} ms, follower fetch age max {max(fetch_ages):.0f} ms")
    assert {(v.leader_id, v.leader_epoch) for v in views} == {(first.leader_id, first.leader_epoch)}
    assert max(fetch_ages) < FETCH_TIMEOUT_MS / 2, sorted(fetch_ages)[-5:]
    assert max(answer_s) < 1.5
    assert committed_per_s > RATE / 4      # it commits (the machine is shared: a loose floor)
