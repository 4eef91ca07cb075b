"""kafkawire metadata-shell against Kafka's own MetadataShell (org.apache.kafka.shell), text for
text: the latest snapshot of every reference source, two bootstrap.checkpoint files and a
snapshot a kafkawire node wrote (a broker and a topic in it).

Both shells read the same file: one-shot (``--snapshot F find /``) and an interactive session
fed on stdin (one JVM for many commands), compared command by command at Kafka's ``>> ``
prompt. Normalised: only the nodes kafkawire adds under /local (README, metadata-shell).
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require
from tests.interop.kafka_procs import METADATA_SHELL, KafkaProcessError
from tests.interop.kafkawire_written import BROKER_ID, TOPIC, latest_snapshot, run_node_until_snapshot
from tests.conftest import REFERENCE as SHARED_REFERENCE

REPO = Path(__file__).resolve().parents[2]
REFERENCE = SHARED_REFERENCE / "kraft-data"
PROMPT = ">> "
KAFKA_SHELL_TIMEOUT_S = 25
KAFKA_SHELL_ATTEMPTS = 3

# what kafkawire shows under /local beyond Kafka's version and commitId (documented)
OUR_LOCAL_NODES = re.compile(r"^(\./|/)?local/(lastReadOffset|lastReadEpoch|sources|problems|pendingTransaction|"
                             r"zkMigrationState|raft)(/.*)?$")

SESSION = [
    "cat /image/provenance", "find /", "ls /", "ls /image", "ls /image/features", "cat /image/features/*", "cat /image/provenance",
    "ls /image/cluster/brokers", "cat /image/cluster/brokers/*", "cat /image/cluster/controllers/*",
    "tree /image/cluster", "ls /image/topics/byName", "cat /image/topics/byName/*/*", "cat /image/topics/byId/*/name",
    "ls /image/configs", "cat /image/configs/*/*", "cat /image/producerIds/nextProducerId",
    "cat /image/clientQuotas/*/*", "ls /image/scram/*", "ls /image/acls/byId", "ls /image/delegationToken",
    "cd /image/topics/byName", "pwd", "ls", "cat */0", "cd ..", "pwd", "find features",
    "cat /image/nothere", "ls /image/nothere", "find /nothere", "tree /image/nothere", "cd /image/provenance",
    "cat /image", "cat", "find", "ls '/image/top*'", "cat /image/features/{metadataVersion,nothere}",
    "history 3", "bogus", "l", "help", "man ls", "man exit", "man man", "man nothing", "ls -h", "cd --help",
    "pwd -h", "ls -l /image", "ls /image -a", "ls -- -l", "ls -1", "cat --", "find -x /", "cd a b", "history -x",
]


def reference_snapshots() -> list[Path]:
    """The latest snapshot of each source, and the first two bootstrap files."""
    latest: dict[str, Path] = {}
    for path in sorted(REFERENCE.rglob("*.checkpoint")):
        if path.parent.name == "__cluster_metadata-0" and path.name[:20].isdigit():
            latest[path.relative_to(REFERENCE).parts[0]] = path
    return list(latest.values()) + sorted(REFERENCE.rglob("bootstrap.checkpoint"))[:2]


@pytest.fixture(scope="module")
def node_snapshot(tmp_path_factory) -> Path:
    return latest_snapshot(run_node_until_snapshot(tmp_path_factory.mktemp("kafkawire-node")))


def run_kafka_shell(kafka_tool, *args, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Kafka's MetadataShell, retried: now and then it never gets past waitUntilCaughtUp (its
    loader has not published an image when the file's last batch, a control batch, is read),
    so a run that takes far longer than its ~2 s is killed and started again."""
    failures = []
    for _ in range(KAFKA_SHELL_ATTEMPTS):
        try:
            return kafka_tool(METADATA_SHELL, *args, input=stdin, timeout=KAFKA_SHELL_TIMEOUT_S)
        except KafkaProcessError as exc:
            failures.append(str(exc)[:300])
    pytest.fail(f"MetadataShell {args} hung {KAFKA_SHELL_ATTEMPTS} times:\n" + "\n".join(failures))


def normalise(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not OUR_LOCAL_NODES.match(line.strip()))


def run_ours(*args, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "metadata-shell", *map(str, args)], cwd=REPO,
                          input=stdin, capture_output=True, text=True, timeout=120,
                          stdin=None if stdin is not None else subprocess.DEVNULL)


def session_differences(kafka_tool, snapshot: Path, commands: list[str]) -> tuple[int, list[str]]:
    """Run both shells on ``commands`` (then exit); (lines compared, differences)."""
    stdin = "".join(f"{c}\n" for c in commands) + "exit\n"
    ours = run_ours("--snapshot", snapshot, stdin=stdin).stdout.split(PROMPT)
    for _ in range(KAFKA_SHELL_ATTEMPTS):
        theirs = run_kafka_shell(kafka_tool, "--snapshot", snapshot, stdin=stdin).stdout.split(PROMPT)
        if commands[0] != "cat /image/provenance" or theirs[1:2] == ours[1:2]:
            break
        # Kafka's shell starts once its loader published anything (waitUntilCaughtUp checks
        # for an offset > 0), so on a file of many batches it can answer from part of it.
    differences = []
    if len(theirs) != len(ours):
        differences.append(f"{snapshot}: Kafka answered {len(theirs) - 1} prompts, ours {len(ours) - 1}")
    for command, a, b in zip(["(banner)", *commands, "exit"], theirs, ours):
        if normalise(a) != normalise(b):
            differences.append(f"{snapshot} `{command}`:\n  Kafka: {a[:600]!r}\n  ours:  {b[:600]!r}")
    return sum(len(part.splitlines()) for part in theirs), differences


def check_sessions(kafka_tool, snapshots: list[Path], title: str) -> None:
    lines, differences = 0, []
    for snapshot in snapshots:
        n, found = session_differences(kafka_tool, snapshot, SESSION)
        lines += n
        differences += found
    print(f"\nmetadata-shell {title}: {len(snapshots)} snapshots x {len(SESSION)} commands, {lines} lines, "
          f"{len(snapshots) * (len(SESSION) + 2) - len(differences)} answers identical, {len(differences)} differ")
    assert not differences, "\n".join(differences[:10])


def test_interactive_sessions_on_reference_snapshots(kafka_tool):
    require(REFERENCE)
    snapshots = reference_snapshots()
    assert len(snapshots) >= 10
    check_sessions(kafka_tool, snapshots, "reference snapshots")


def test_interactive_session_on_a_snapshot_our_node_wrote(kafka_tool, node_snapshot):
    check_sessions(kafka_tool, [node_snapshot], "kafkawire node's snapshot")


def test_interactive_session_on_the_latest_snapshot_kafka_wrote_in_the_run(kafka_tool, kafka_written):
    """The reference-snapshot session above on a fresh clone: the latest snapshot of the Kafka
    4.3.1 node of tests/interop/kafka_written.py (topics of every codec, a compacted one, a
    transactional producer's id, a consumer group's broker)."""
    from tests.interop.kafka_written import snapshots
    check_sessions(kafka_tool, [max(snapshots(kafka_written.metadata_dir))], "Kafka node's latest snapshot")


@pytest.mark.parametrize("command", [["find", "/"], ["cat", "/image/features/metadataVersion"],
                                     ["cat", f"/image/cluster/brokers/{BROKER_ID}"],
                                     ["cat", f"/image/topics/byName/{TOPIC}/1"]])
def test_one_shot_commands(kafka_tool, node_snapshot, command):
    """The command after the options, as both tools take it, on our node's snapshot. (Only
    there: Kafka's one-shot mode may answer before its loader has read a file of many batches,
    see session_differences, and a one-shot answer does not tell.)"""
    ours = run_ours("--snapshot", node_snapshot, *command)
    assert ours.returncode == 0, ours.stderr
    for _ in range(KAFKA_SHELL_ATTEMPTS):      # a run that answered from part of the file is run again
        theirs = run_kafka_shell(kafka_tool, "--snapshot", node_snapshot, *command)
        assert theirs.returncode == 0 and theirs.stdout.strip(), theirs.stderr[-2000:]
        if normalise(ours.stdout) == normalise(theirs.stdout):
            break
    assert normalise(ours.stdout) == normalise(theirs.stdout)


KAFKA_CONFIG_NAMES = """
import java.util.TreeSet;

public class ConfigNames {
    public static void main(String[] args) {
        System.out.println("TOPIC " + String.join(",",
            new TreeSet<>(org.apache.kafka.storage.internals.log.LogConfig.configNames())));
        System.out.println("GROUP " + String.join(",",
            new TreeSet<>(org.apache.kafka.coordinator.group.GroupConfig.CONFIG_DEF.names())));
        System.out.println("CLIENT_METRICS " + String.join(",",
            new TreeSet<>(org.apache.kafka.server.metrics.ClientMetricsConfigs.configDef().names())));
    }
}
"""


def test_the_config_names_the_image_keeps_are_kafkas(kafka_libs, tmp_path):
    """The names DefaultSupportedConfigChecker lets into Kafka's image, asked of Kafka's classes."""
    import shutil
    from tests.interop import kafka_dist
    from kafkawire.metadata.image import (CLIENT_METRICS_RESOURCE, GROUP_RESOURCE, SUPPORTED_CONFIGS,
                                          TOPIC_RESOURCE)
    if not shutil.which("javac"):
        from tests.conftest import unavailable
        unavailable("javac is needed to ask Kafka's classes")
    (tmp_path / "ConfigNames.java").write_text(KAFKA_CONFIG_NAMES)
    subprocess.run(["javac", "-cp", kafka_dist.classpath(), "-d", str(tmp_path), str(tmp_path / "ConfigNames.java")],
                   check=True, capture_output=True, timeout=120)
    result = subprocess.run(["java", "-Xmx256m", "-cp", f"{tmp_path}:{kafka_dist.classpath()}", "ConfigNames"],
                            capture_output=True, text=True, timeout=120)
    kafka = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.count(" ") == 1)
    assert set(kafka) == {"TOPIC", "GROUP", "CLIENT_METRICS"}, result.stdout + result.stderr[-2000:]
    ours = {"TOPIC": SUPPORTED_CONFIGS[TOPIC_RESOURCE], "GROUP": SUPPORTED_CONFIGS[GROUP_RESOURCE],
            "CLIENT_METRICS": SUPPORTED_CONFIGS[CLIENT_METRICS_RESOURCE]}
    for kind, names in kafka.items():
        assert set(names.split(",")) == set(ours[kind]), kind
