"""Mixed quorums of Apache Kafka 4.3.1 and kafkawire controllers: snapshots across implementations.

Node 1 (one kind, --standalone) leads alone, then two controllers of the other kind, formatted
--no-initial-controllers with controller.quorum.auto.join.enable=true, add themselves (checked
with both tools' describe --status). Every node
snapshots every second and keeps little log (segments roll each second, retention of a second),
except node 2, which makes no snapshot of its own. Node 2 is killed -9; once the leader's log
starts past node 2's log end, node 2 comes back and can only catch up by FetchSnapshot: the
snapshot it installs is the leader's file byte for byte (and reads alike in Kafka's
DumpLogSegments and our dump-log), and node 2, restarted once more, loads it and follows.
Both directions, a Kafka leader and a kafkawire leader, run in one test: the kafkawire-led case
runs while the Kafka leader waits for its log cleaner's timer."""
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest

from kafkawire.records import iter_batches
from kafkawire.raft.node.local_quorum import QuorumError
from tests.interop.kafka_procs import DUMP_LOG_SEGMENTS
from tests.interop.mixed_quorum import KAFKA, OURS, MixedQuorum
from tests.interop.test_mixed_quorum import mixed  # noqa: F401 (fixture)
from tests.interop.test_mixed_quorum_reconfig import check_auto_joined

SNAPSHOTTING = {
    "controller.quorum.auto.join.enable": "true",
    "metadata.log.max.record.bytes.between.snapshots": "4096",
    "metadata.log.max.snapshot.interval.ms": "1000",
    "metadata.log.segment.ms": "1000",          # metadata.log.segment.bytes cannot go below 8 MiB
    "metadata.max.retention.ms": "1000",
    "metadata.max.retention.bytes": "1024",
}
# Node 2 snapshots nothing itself (interval 0 turns the time rule off): every snapshot it holds
# after its restart was fetched.
NO_SNAPSHOTS = {"metadata.log.max.snapshot.interval.ms": "0",
                "metadata.log.max.record.bytes.between.snapshots": str(1 << 40)}
CHECKPOINT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def checkpoints(directory: str) -> dict[str, int]:
    """{file name: snapshot end offset} of the finished snapshots in a partition directory."""
    out = {}
    for name in os.listdir(directory):
        m = CHECKPOINT.match(name)
        if m:
            out[name] = int(m.group(1))
    return out


def copy_a_fetched_snapshot(directory: str, behind: int, stashed: str, into: str) -> tuple[str, str]:
    """(name, path of a copy) of the newest snapshot past ``behind`` that node 2 holds and the
    stash has a copy of (the leader's, to compare with): node 2 may
    fetch a newer one and delete the older ones at any time (the leader keeps snapshotting), so
    the file is copied at once, and listed again when it went between the listing and the copy."""
    for _ in range(5):
        present = {n: o for n, o in checkpoints(directory).items()
                   if o > behind and os.path.exists(os.path.join(stashed, n))}
        if not present:
            break
        name = max(present, key=present.get)
        try:
            os.makedirs(os.path.join(into, "fetched"), exist_ok=True)     # the name kept: tools parse it
            return name, shutil.copy(os.path.join(directory, name), os.path.join(into, "fetched", name))
        except FileNotFoundError:
            continue
    raise AssertionError(f"node 2 holds no snapshot past {behind} that the stash has: "
                         f"{sorted(checkpoints(directory))}, stashed {sorted(os.listdir(stashed))}")


def log_start(directory: str) -> int:
    return min(int(n[:20]) for n in os.listdir(directory) if n.endswith(".log"))


def log_end(directory: str) -> int:
    end = 0
    for name in os.listdir(directory):
        if name.endswith(".log"):
            with open(os.path.join(directory, name), "rb") as f:
                for batch in iter_batches(f.read()):
                    end = max(end, batch.last_offset + 1)
    return end


class SnapshotStash:
    """Copies every finished snapshot of a directory as it appears, since retention deletes
    them within seconds (Kafka renames them .deleted, kafkawire removes them)."""

    def __init__(self, source: str, target: str):
        self.source, self.target = source, target
        os.makedirs(target, exist_ok=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for name in checkpoints(self.source):
                if not os.path.exists(os.path.join(self.target, name)):
                    try:
                        shutil.copyfile(os.path.join(self.source, name), os.path.join(self.target, name))
                    except OSError:
                        pass        # deleted between the listing and the copy

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def wait_until(predicate, timeout_s: float, what: str, q: MixedQuorum):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise QuorumError(f"{what} within {timeout_s} s\n{q.log_tails()}")


def dumps(kafka_tool, path: str) -> tuple[str, str]:
    """Kafka's DumpLogSegments and our dump-log of one snapshot file, without the path line."""
    kafka = kafka_tool(DUMP_LOG_SEGMENTS, "--cluster-metadata-decoder", "--files", path, check=True)
    ours = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "dump-log", "--cluster-metadata-decoder", "--files",
                           path], capture_output=True, text=True, timeout=120, cwd=REPO, check=False)
    assert ours.returncode == 0, ours.stderr[-2000:]
    def drop_path(text: str) -> str:
        return "\n".join(line for line in text.splitlines() if not line.startswith("Dumping "))
    return drop_path(kafka.stdout), drop_path(ours.stdout)


class FetchSnapshotCase:
    """One direction: node 1 of ``leader_kind`` leads node 2 and 3 of the other kind; node 2 is
    killed, falls behind the leader's log start and catches up by FetchSnapshot."""

    def __init__(self, make_quorum, base_dir: str, leader_kind: str):
        self.leader_kind = leader_kind
        self.other = OURS if leader_kind == KAFKA else KAFKA
        self.q = make_quorum({1: leader_kind, 2: self.other, 3: self.other}, base_dir=base_dir,
                       properties=SNAPSHOTTING, node_properties={2: NO_SNAPSHOTS})
        self.stash: SnapshotStash | None = None
        self.behind = 0

    def start_and_kill_node_2(self, kafka_tool) -> None:
        q = self.q
        q.format_dynamic(standalone=1)
        q.start_all()
        q.wait_for_voters([1, 2, 3], 90)
        view = q.wait_for_catch_up(90)
        check_auto_joined(kafka_tool, q, view.leader_id)
        self.stash = SnapshotStash(q.partition_dir(1), os.path.join(q.base_dir, "leader-snapshots"))
        q.kill(2)
        self.behind = log_end(q.partition_dir(2))

    def stop_stash(self) -> None:
        if self.stash is not None:
            self.stash.stop()

    def catch_up(self, kafka_tool) -> str:
        """Node 2 restarted installs a snapshot past where it stopped, the leader's file byte for
        byte; restarted once more, it loads it and follows. A line saying what happened."""
        q, behind, leader_kind, other = self.q, self.behind, self.leader_kind, self.other
        leader_dir, follower_dir = q.partition_dir(1), q.partition_dir(2)
        try:
            wait_until(lambda: log_start(leader_dir) > behind, 60,
                       f"the {leader_kind} leader's log did not start past node 2's end {behind}", q)
            q.start(2)
            installed = wait_until(lambda: {n: o for n, o in checkpoints(follower_dir).items() if o > behind}, 60,
                                   f"node 2 ({other}) installed no snapshot past {behind}", q)
            q.wait_for_catch_up(60)
        finally:
            self.stop_stash()
        assert installed
        name, fetched_copy = copy_a_fetched_snapshot(follower_dir, behind, self.stash.target, q.base_dir)
        with open(fetched_copy, "rb") as f:
            fetched = f.read()
        with open(os.path.join(self.stash.target, name), "rb") as f:
            assert fetched == f.read(), f"node 2's {name} differs from the {leader_kind} leader's"
        kafka_on_leader, ours_on_leader = dumps(kafka_tool, os.path.join(self.stash.target, name))
        kafka_on_follower, ours_on_follower = dumps(kafka_tool, fetched_copy)
        assert kafka_on_leader == kafka_on_follower and ours_on_leader == ours_on_follower, leader_kind
        assert "KRaftVoters" in kafka_on_leader and "FEATURE_LEVEL_RECORD" in kafka_on_leader, kafka_on_leader[:2000]
        assert log_start(follower_dir) >= int(name[:20]), leader_kind

        # Restarted, node 2 loads the other implementation's snapshot and follows again.
        q.kill(2)
        killed_ms = time.time() * 1000
        q.start(2)
        view = q.wait_for_fetch_since(2, killed_ms, 90)
        assert q.alive(2), leader_kind
        assert view.log_end_offsets[2] >= view.high_watermark, (leader_kind, view)
        if other == KAFKA:
            errors = [line for line in q.kafka[2].log_text().splitlines() if " ERROR " in line or "FaultHandler" in line]
            assert not errors, "\n".join(errors[:20])
        return (f"{leader_kind} leader: node 2 ({other}) was at {behind}, installed {name} "
                f"({len(fetched)} bytes, identical), {len(kafka_on_leader.splitlines())} lines of DumpLogSegments; "
                f"after a restart it followed to {view.log_end_offsets[2]}")


@pytest.mark.slow
def test_a_follower_of_the_other_kind_catches_up_by_fetch_snapshot(mixed, kafka_tool, tmp_path):  # noqa: F811
    """Both directions, a Kafka leader with kafkawire followers and a kafkawire leader with Kafka
    followers, in one test: Kafka's raft client deletes the log below its snapshots only on a timer
    of its own, every 60 s from the JVM's start (KafkaRaftClient's log cleaner; no setting shortens
    it), so the Kafka-led node 2 is killed first and the whole kafkawire-led case runs while that
    timer runs down, instead of after it (the two directions as two tests took 99-104 s, as one
    80-83 s, at load 8-10)."""
    kafka_led = FetchSnapshotCase(mixed, tmp_path / "kafka-leader", KAFKA)
    ours_led = FetchSnapshotCase(mixed, tmp_path / "kafkawire-leader", OURS)    # both quorums' ports reserved now
    try:
        kafka_led.start_and_kill_node_2(kafka_tool)
        ours_led.start_and_kill_node_2(kafka_tool)
        print(ours_led.catch_up(kafka_tool))
        ours_led.q.kill_all()                          # its processes gone before the Kafka side goes on
        print(kafka_led.catch_up(kafka_tool))
    finally:
        kafka_led.stop_stash()
        ours_led.stop_stash()
