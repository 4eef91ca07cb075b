"""kafkawire metadata-shell: every reference sample shows the topics, brokers and
metadata.version its records say (counted here independently, by scanning the records, and
checked against SOURCE.md and README.md), and the commands behave as kafka-metadata-shell's."""
from __future__ import annotations

import io
import re
import sys
import uuid

import pytest

from dumplog_testlib import KRAFT_DATA
from kafkawire.metadata import decode_metadata_record, encode_metadata_record
from kafkawire.records import iter_batches
from kafkawire.storage.snapshot import list_snapshots, snapshot_file_name
from kafkawire.tools.cli import main


def shell(capsys, *argv, stdin: str | None = None):
    if stdin is not None:
        old = sys.stdin
        sys.stdin = io.StringIO(stdin)
    try:
        status = main(["metadata-shell", *map(str, argv)])
    finally:
        if stdin is not None:
            sys.stdin = old
    out = capsys.readouterr()
    return status, out.out, out.err


# --- facts read independently from the samples ------------------------------------------------

def mv_release_names() -> dict[int, str]:
    """README.md's 'metadata.version (MV) level -> release' line, e.g. 14=3.6-IV2."""
    text = (KRAFT_DATA / "README.md").read_text()
    start = text.index("level -> release")
    paragraph = text[start:text.index("(from server-common", start)]
    return {int(level): name for level, name in re.findall(r"(\d+)=(\d+\.\d+-IV\d+)", paragraph)}


def source_features(path) -> set[tuple[str, int]]:
    """The (feature, level) pairs SOURCE.md lists for one file."""
    sample = next(p for p in path.parents if p.parent == KRAFT_DATA)
    rel = str(path.relative_to(sample))
    for line in (sample / "SOURCE.md").read_text().splitlines():
        if line.startswith(f"| {rel} |"):
            return {(name, int(level)) for name, level in re.findall(r'"([a-z.]+) level=(\d+)"', line)}
    return set()


class Scan:
    """Topic names, broker ids and metadata.version from the records themselves."""

    def __init__(self):
        self.topics: dict = {}
        self.brokers: set[int] = set()
        self.mv: int | None = None
        self.features: dict[str, int] = {}
        self.zk_migration = False
        self.aborts = 0

    def feed(self, path, start_offset: int = 0) -> None:
        for batch in iter_batches(path.read_bytes()):
            if batch.is_control:
                continue
            for r in batch:
                if r.offset < start_offset:
                    continue
                try:
                    m = decode_metadata_record(r.value).message
                except ValueError:
                    continue
                kind = type(m).NAME
                if kind == "TopicRecord":
                    self.topics[m.topic_id] = m.name
                elif kind == "RemoveTopicRecord":
                    self.topics.pop(m.topic_id, None)
                elif kind == "RegisterBrokerRecord":
                    self.brokers.add(m.broker_id)
                elif kind == "UnregisterBrokerRecord":
                    self.brokers.discard(m.broker_id)
                elif kind == "FeatureLevelRecord" and m.name == "metadata.version":
                    self.mv = m.feature_level
                elif kind == "FeatureLevelRecord":
                    self.features[m.name] = m.feature_level
                    if m.feature_level == 0:
                        del self.features[m.name]
                elif kind == "ZkMigrationStateRecord":
                    self.zk_migration = True
                elif kind == "AbortTransactionRecord":
                    self.aborts += 1


def metadata_dirs():
    if not KRAFT_DATA.is_dir():
        return []
    return [d for d in sorted(KRAFT_DATA.rglob("__cluster_metadata-0"))
            if any(p.suffix == ".log" and p.stat().st_size for p in d.iterdir()) or list_snapshots(d)]


def snapshot_files():
    if not KRAFT_DATA.is_dir():
        return []
    return [p for p in sorted(KRAFT_DATA.rglob("*.checkpoint")) if p.stat().st_size]


def _id(p):
    return str(p.relative_to(KRAFT_DATA)) if p else "absent"


def session(capsys, source_args, commands: list[str]):
    """Run commands in one interactive session (one replay); returns (status, outputs, stderr)."""
    status, out, err = shell(capsys, *source_args, stdin="".join(c + "\n" for c in commands))
    blocks = out.split(">> ")
    assert blocks[0] == "Loading...\nStarting...\n[ Kafka Metadata Shell ]\n" and blocks[-1] == "\n"
    return status, blocks[1:-1], err


def check_shell_shows(capsys, scan: Scan, files, *source_args):
    assert scan.aborts == 0   # the samples hold only committed transactions, so the scan needs none
    commands = ["ls /image/topics/byName", "ls /image/cluster/brokers", "cat /image/features/metadataVersion",
                "ls /image/features"] + [f"cat /image/features/finalized_{name}" for name in scan.features]
    status, outputs, err = session(capsys, source_args, commands)
    pre_release = any("apache__kafka" in f.parts for f in files)
    assert status == 0 or (pre_release and "PartitionRecord v1, field Directories" in err), err
    topics, brokers, mv, features, *levels = outputs
    assert topics.splitlines() == sorted(scan.topics.values())
    assert brokers.splitlines() == sorted(str(b) for b in scan.brokers)
    listed = set().union(*(source_features(f) for f in files))
    if scan.mv is None:
        assert mv == "Optional.empty\n"
    else:
        assert mv == f"Optional[{mv_release_names()[scan.mv]}]\n"      # Kafka 4.3 prints the Optional
        assert ("metadata.version", scan.mv) in listed
    expected = ["metadataVersion"] + [f"finalized_{name}" for name in scan.features]
    assert features.splitlines() == sorted(expected)
    for (name, level), shown in zip(scan.features.items(), levels):
        assert (name, level) in listed
        assert shown == f"{level}\n"


@pytest.mark.parametrize("directory", metadata_dirs() or [None], ids=_id)
def test_every_sample_directory(directory, capsys):
    if directory is None:
        pytest.skip(f"reference material not available: {KRAFT_DATA} is missing")
    scan, files, start = Scan(), [], 0
    snapshots = list_snapshots(directory)
    if snapshots:
        snapshot = directory / snapshot_file_name(snapshots[-1])
        scan.feed(snapshot)
        files.append(snapshot)
        start = snapshots[-1].end_offset
    for log in sorted(directory.glob("*.log")):
        scan.feed(log, start)
        files.append(log)
    check_shell_shows(capsys, scan, files, "--directory", directory)


@pytest.mark.parametrize("path", snapshot_files() or [None], ids=_id)
def test_every_sample_snapshot(path, capsys):
    if path is None:
        pytest.skip(f"reference material not available: {KRAFT_DATA} is missing")
    scan = Scan()
    scan.feed(path)
    check_shell_shows(capsys, scan, [path], "--snapshot", path)
    _, out, _ = shell(capsys, "--snapshot", path, "cat", "/image/provenance")
    # as Kafka's MetadataShell: the last metadata batch of the file, in the file's own offsets
    last = [b for b in iter_batches(path.read_bytes()) if not b.is_control][-1]
    assert out.startswith(f"offset {last.last_offset}, epoch {last.partition_leader_epoch}, time ")


# --- commands on a small log ------------------------------------------------------------------

TOPIC = uuid.UUID(int=0x0102030405060708090A0B0C0D0E0F10)


def small_log(tmp_path):
    from kafkawire import messages
    from kafkawire.records import RecordBatchBuilder
    records = [messages.by_name("FeatureLevelRecord")(name="metadata.version", feature_level=21),
               messages.by_name("TopicRecord")(name="orders", topic_id=TOPIC),
               messages.by_name("PartitionRecord")(partition_id=0, topic_id=TOPIC, replicas=[1], isr=[1], leader=1,
                                                   leader_epoch=0, partition_epoch=0),
               messages.by_name("PartitionRecord")(partition_id=1, topic_id=TOPIC, replicas=[1], isr=[1], leader=1,
                                                   leader_epoch=0, partition_epoch=0),
               messages.by_name("ConfigRecord")(resource_type=2, resource_name="orders", name="retention.ms",
                                                value="1000")]
    builder = RecordBatchBuilder(base_offset=0, partition_leader_epoch=3)
    for m in records:
        builder.append(None, encode_metadata_record(m, max(type(m).versions())), (), 1_700_000_000_000)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(builder.build())
    return path


def test_one_shot_commands(tmp_path, capsys):
    log = small_log(tmp_path)
    status, out, _ = shell(capsys, "--snapshot", log, "ls", "/")
    assert status == 0 and out == "image\nlocal\n"
    _, out, _ = shell(capsys, "--snapshot", log, "ls", "/image/topics/byName/orders")
    assert out == "0\n1\nid\nname\n"
    _, out, _ = shell(capsys, "--snapshot", log, "cat", "/image/provenance")
    assert out == "offset 4, epoch 3, time 2023-11-14T22:13:20Z[UTC]\n"
    _, out, _ = shell(capsys, "--snapshot", log, "cat", "/image/features/metadataVersion",
                      "/image/configs/TOPIC:orders/retention.ms")
    assert out == "Optional[3.9-IV0]\n1000\n"
    _, out, _ = shell(capsys, "--snapshot", log, "tree", "/image/configs")
    assert out == "TOPIC:orders:\n  retention.ms:\n    1000\n"
    _, out, _ = shell(capsys, "--snapshot", log, "find", "/image/topics/byName")
    assert out.splitlines() == ["/image/topics/byName", "/image/topics/byName/orders",
                                "/image/topics/byName/orders/0", "/image/topics/byName/orders/1",
                                "/image/topics/byName/orders/id", "/image/topics/byName/orders/name"]
    # globs, and ls of several targets as LsCommandHandler.printTargets lays them out
    _, out, _ = shell(capsys, "--snapshot", log, "ls", "/image/topics/byName/orders/[0-9]", "/image/producerIds")
    assert out == "0\n1\n\nproducerIds:\nnextProducerId\n"
    _, out, _ = shell(capsys, "--snapshot", log, "cat", "/image/topics/byId/*/name")
    assert out == "orders\n"


def test_one_shot_errors(tmp_path, capsys):
    log = small_log(tmp_path)
    status, out, _ = shell(capsys, "--snapshot", log, "cat", "/image/nope")
    assert status == 1 and out == "cat: /image/nope: No such file or directory.\n"
    status, out, _ = shell(capsys, "--snapshot", log, "cat", "/image")
    assert status == 1 and out == "cat: /image: Is a directory\n"
    status, out, _ = shell(capsys, "--snapshot", log, "pwd")      # shell-only, as in Kafka
    assert status == 1 and out == "invalid choice: 'pwd' (choose from 'cat', 'find', 'ls', 'tree')\n"
    status, out, _ = shell(capsys, "--snapshot", log, "l")
    assert status == 1 and out == "invalid choice: 'l': did you mean 'ls'?\n"


@pytest.mark.parametrize("command", [["ls"], []], ids=["one-shot", "interactive"])
def test_a_missing_source_prints_only_the_error(tmp_path, capsys, command):
    """Kafka's shell fails before it shows anything: no image/local listing, no banner, exit 1
    (its first line: 'Unexpected error: java.nio.file.NoSuchFileException: F')."""
    missing = tmp_path / "missing.log"
    status, out, err = shell(capsys, "--snapshot", missing, *command, stdin="ls\n")
    assert (status, out, err) == (1, "", f"Unexpected error: java.nio.file.NoSuchFileException: {missing}\n")
    status, out, err = shell(capsys, "--directory", tmp_path / "nowhere", *command, stdin="ls\n")
    assert (status, out) == (1, "") and err.startswith("Unexpected error: ") and "nowhere" in err
    assert err.count("\n") == 1


def test_interactive_session_on_stdin(tmp_path, capsys):
    log = small_log(tmp_path)
    session = "pwd\ncd /image/topics/byName/orders\npwd\nls\ncat 1\ncd id\ncd ..\ncd ../..\npwd\nman ls\nhistory 2\nexit\n"
    status, out, _ = shell(capsys, "--snapshot", log, stdin=session)
    assert status == 0
    blocks = out.split(">> ")
    assert blocks[0] == "Loading...\nStarting...\n[ Kafka Metadata Shell ]\n"
    assert blocks[1:] == [
        "/\n", "", "/image/topics/byName/orders\n", "0\n1\nid\nname\n",
        "PartitionRegistration(replicas=[1], directories=[AAAAAAAAAAAAAAAAAAAAAA], isr=[1], removingReplicas=[], "
        "addingReplicas=[], elr=[], lastKnownElr=[], leader=1, leaderRecoveryState=RECOVERED, leaderEpoch=0, "
        "partitionEpoch=0)\n",
        "cd: id: not a directory.\n", "", "", "/image\n",
        "ls: List metadata nodes.\n\nusage: ls [targets [targets ...]]\n\npositional arguments:\n"
        "  targets                The metadata node paths to list.\n",
        "    9  man ls\n   10  history 2\n", ""]


def test_local_node(tmp_path, capsys):
    log = small_log(tmp_path)
    _, out, _ = shell(capsys, "--snapshot", log, "ls", "/local")
    assert out.splitlines() == ["commitId", "lastReadEpoch", "lastReadOffset", "problems", "raft", "sources",
                                "version"]
    _, out, _ = shell(capsys, "--snapshot", log, "cat", "/local/lastReadOffset", "/local/lastReadEpoch",
                      "/local/problems", "/local/raft/kraftVersion")
    assert out == "4\n3\nnone\n0\n"


def test_arguments_help_and_errors_as_kafkas_argparse4j(tmp_path, capsys):
    """Texts as Kafka 4.3.1's shell printed them (tests/interop compares them live)."""
    log = small_log(tmp_path)
    commands = ["ls -h", "ls -l /image", "ls /image -a", "ls -- -l", "ls -1", "cat --", "pwd -h", "man cd", "help"]
    status, out, _ = shell(capsys, "--snapshot", log, stdin="".join(c + "\n" for c in commands))
    blocks = out.split(">> ")[1:-1]
    assert blocks[0] == ("usage:  ls [-h] [targets [targets ...]]\n\npositional arguments:\n"
                         "  targets                The metadata node paths to list.\n\noptional arguments:\n"
                         "  -h, --help             show this help message and exit\n")
    assert blocks[1] == "unrecognized arguments: '-l'\n" and blocks[2] == "unrecognized arguments: '-a'\n"
    assert blocks[3] == "ls: -l: no such file or directory.\n" and blocks[4] == "ls: -1: no such file or directory.\n"
    assert blocks[5] == "too few arguments\n"
    assert blocks[6] == "usage:  pwd [-h]\n\noptional arguments:\n  -h, --help             show this help message and exit\n"
    assert blocks[7] == ("cd: Set the current working directory.\n\nusage: cd [target]\n\npositional arguments:\n"
                         "  target                 The directory to change to.\n")
    # argparse4j fills help to 75 columns and justifies a line it had to break
    assert ("    tree                 Show the contents  of  metadata  nodes  in  a tree\n"
            "                         structure.\n") in blocks[8]
