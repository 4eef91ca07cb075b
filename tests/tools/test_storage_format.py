"""`kafkawire storage`: format writes what Kafka's Formatter writes, byte for byte where the
content can be made equal, and refuses what Kafka refuses with Kafka's messages."""
from __future__ import annotations

import base64
import os
import re
import uuid
from pathlib import Path

import pytest

from kafkawire.messages.k_raft_version_record import KRaftVersionRecord
from kafkawire.messages.voters_record import VotersRecord
from kafkawire.metadata import decode_metadata_record
from kafkawire.net.config import parse_server_config
from kafkawire.records import iter_batches
from kafkawire.records.control import ControlRecordType
from kafkawire.storage.snapshot import SnapshotReader
from kafkawire.storage.state_files import read_meta_properties, uuid_to_kafka
from tests.conftest import REFERENCE
from kafkawire.tools.cli import main
from kafkawire.tools.storage import (StorageError, bootstrap_records, format_storage, java_hashmap_order, metadata_version,
                           parse_dynamic_voter, random_uuid, write_bootstrap_checkpoint)

KRAFT_DATA = REFERENCE / "kraft-data"
SNAPSHOT = "00000000000000000000-0000000000.checkpoint"
CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def reference_bootstraps() -> list[Path]:
    return sorted(KRAFT_DATA.rglob("bootstrap.checkpoint")) if KRAFT_DATA.is_dir() else []


def storage(capsys, *argv) -> tuple[int, str, str]:
    status = main(["storage", *map(str, argv)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def write_config(tmp_path, *, roles="controller", voters=None, log_dirs=("logs-a",), metadata_dir=None,
                 listeners="CONTROLLER://localhost:9093", extra="") -> Path:
    lines = [f"process.roles={roles}", "node.id=1", "controller.listener.names=CONTROLLER",
             f"listeners={listeners}", "log.dirs=" + ",".join(str(tmp_path / d) for d in log_dirs)]
    lines.append(f"controller.quorum.voters={voters}" if voters else "controller.quorum.bootstrap.servers=localhost:9093")
    if metadata_dir:
        lines.append(f"metadata.log.dir={tmp_path / metadata_dir}")
    path = tmp_path / "server.properties"
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def formatting_lines(out: str) -> list[str]:
    """format's output after its first line, which must be the "Bootstrap metadata: " line."""
    lines = out.splitlines()
    assert lines and lines[0].startswith("Bootstrap metadata: BootstrapMetadata(records=[ApiMessageAndVersion("), out
    return lines[1:]


# --- bootstrap.checkpoint, byte for byte against Kafka's ------------------------------------------

@pytest.mark.parametrize("reference", reference_bootstraps(), ids=lambda p: str(p.relative_to(KRAFT_DATA)))
def test_bootstrap_checkpoint_is_byte_identical_to_kafkas(reference, tmp_path):
    assert_bootstrap_checkpoint_is_kafkas(reference, tmp_path)


def assert_bootstrap_checkpoint_is_kafkas(reference: Path, tmp_path: Path) -> None:
    """Ours, at the file's metadata.version and with its timestamps, is the file's bytes
    (tests/interop/test_held_out_claims_on_kafka_data.py runs it on the one Kafka wrote in the run)."""
    data = reference.read_bytes()
    batches = list(iter_batches(data))
    # Kafka stamps the header batch, the records batch and the footer batch with the time it wrote
    # each: take those from the file, and the metadata.version from its first record.
    times = iter([b.base_timestamp for b in batches])
    level = decode_metadata_record(next(iter(batches[1])).value).message.feature_level
    ours = write_bootstrap_checkpoint(tmp_path, level, time_ms=lambda: next(times))
    assert Path(ours).read_bytes() == data


def test_every_release_versions_bootstrap_records_match_the_reference_samples():
    samples = reference_bootstraps()
    if not samples:
        pytest.skip(f"reference material not available: {KRAFT_DATA} is missing")
    seen = set()
    for path in samples:
        records = [decode_metadata_record(r.value).message for b in iter_batches(path.read_bytes())
                   if not b.is_control for r in b]
        level = records[0].feature_level
        ours = bootstrap_records(level)
        assert [(r.name, r.feature_level) for r in ours] == [(r.name, r.feature_level) for r in records], path
        seen.add(level)
    assert len(seen) >= 8


def test_release_versions_as_kafka_parses_them():
    assert metadata_version("4.1") == ("4.1-IV1", 27)
    assert metadata_version("4.1.0") == ("4.1-IV1", 27)
    assert metadata_version("3.9-IV0") == ("3.9-IV0", 21)
    assert metadata_version("3.3") == ("3.3-IV3", 7)
    assert [(r.name, r.feature_level) for r in bootstrap_records(29)] == [
        ("metadata.version", 29), ("eligible.leader.replicas.version", 1), ("group.version", 1),
        ("share.version", 1), ("streams.version", 1), ("transaction.version", 2)]
    with pytest.raises(StorageError, match=r"^Unknown metadata.version '3.2'. Supported metadata.version are: "
                                           r"3.3-IV3, 3.4-IV0, .*, 4.2-IV1, 4.3-IV0$"):
        metadata_version("3.2")
    # 4.4-IV0 is known to Kafka 4.3.1 but not production: refused, and "4.4" names no production IV.
    for unstable in ("4.4-IV0", "4.4"):
        with pytest.raises(StorageError, match=rf"^Unknown metadata.version '{unstable}'. .* 4.2-IV1, 4.3-IV0$"):
            metadata_version(unstable)
    assert metadata_version("4.3") == metadata_version("4.3.1") == ("4.3-IV0", 30)


# --- format ---------------------------------------------------------------------------------------

def read_snapshot(path: Path):
    reader = SnapshotReader(path)
    control = {t: v for t, v in reader.control_records}
    kraft = KRaftVersionRecord.decode(control[ControlRecordType.KRAFT_VERSION], 0)
    voters = VotersRecord.decode(control[ControlRecordType.KRAFT_VOTERS], 0)
    return reader, kraft, voters


def test_format_standalone_writes_meta_properties_bootstrap_and_the_voters_snapshot(tmp_path, capsys):
    config = write_config(tmp_path, log_dirs=("logs-b", "logs-a"), metadata_dir="meta")
    status, out, err = storage(capsys, "format", "--cluster-id", CLUSTER, "--config", config, "--standalone")
    assert (status, err) == (0, "")
    dirs = sorted(str(tmp_path / d) for d in ("logs-a", "logs-b", "meta"))
    # (formatted in the order of Kafka's HashMap of the paths: tests/interop/test_storage_vs_kafka.py checks it)
    assert sorted(formatting_lines(out)) == [f"Formatting data directory {dirs[0]} with metadata.version 4.3-IV0.",
                                    f"Formatting data directory {dirs[1]} with metadata.version 4.3-IV0.",
                                    f"Formatting dynamic metadata voter directory {dirs[2]} with metadata.version "
                                    f"4.3-IV0."]
    ids = set()
    for d in dirs:
        meta = read_meta_properties(Path(d) / "meta.properties")
        assert (meta.version, meta.cluster_id, meta.node_id) == (1, CLUSTER, 1)
        ids.add(meta.directory_id)
        text = (Path(d) / "meta.properties").read_text()
        # Properties.store(writer, ""): "#", the date, then the keys in order (JDK 18+ sorts them).
        assert re.fullmatch(r"#\n#\w{3} \w{3} \d\d \d\d:\d\d:\d\d UTC \d{4}\ncluster\.id=\S+\ndirectory\.id=[\w-]{22}\n"
                            r"node\.id=1\nversion=1\n", text), text
        bootstrap = SnapshotReader(Path(d) / "bootstrap.checkpoint")
        assert bootstrap.header.last_contained_log_timestamp == 0
        assert [(m.name, m.feature_level) for m in (decode_metadata_record(r.value).message for r in bootstrap.records())] \
            == [(r.name, r.feature_level) for r in bootstrap_records(30)]
        assert all(b.partition_leader_epoch == 0 for b in bootstrap.batches)
    assert len(ids) == 3 and uuid.UUID(int=0) not in ids
    for d in dirs[:2]:
        assert not (Path(d) / "__cluster_metadata-0").exists()
    reader, kraft, voters = read_snapshot(Path(dirs[2]) / "__cluster_metadata-0" / SNAPSHOT)
    assert (kraft.version, kraft.k_raft_version) == (0, 1)
    meta_dir_id = read_meta_properties(Path(dirs[2]) / "meta.properties").directory_id
    assert [(v.voter_id, v.voter_directory_id, [(e.name, e.host, e.port) for e in v.endpoints],
             v.k_raft_version_feature.min_supported_version, v.k_raft_version_feature.max_supported_version)
            for v in voters.voters] == [(1, meta_dir_id, [("CONTROLLER", "localhost", 9093)], 0, 1)]
    # One control batch with the header, kraft.version and voters records, then the footer batch.
    assert [(b.base_offset, len(b), b.is_control, b.partition_leader_epoch) for b in reader.batches] == \
        [(0, 3, True, 0), (3, 1, True, 0)]
    assert [t for t, _ in reader.control_records] == [ControlRecordType.SNAPSHOT_HEADER, ControlRecordType.KRAFT_VERSION,
                                                      ControlRecordType.KRAFT_VOTERS, ControlRecordType.SNAPSHOT_FOOTER]
    header_batch = reader.batches[0]
    assert reader.header.last_contained_log_timestamp > 0
    assert reader.header.last_contained_log_timestamp <= header_batch.base_timestamp


def test_format_with_initial_controllers(tmp_path, capsys):
    config = write_config(tmp_path, roles="controller")
    ids = [random_uuid() for _ in range(3)]
    voters = ",".join(f"{n}@host{n}:{9090 + n}:{uuid_to_kafka(i)}" for n, i in zip((3, 1, 2), ids))
    status, out, err = storage(capsys, "format", "-t", CLUSTER, "-c", config, "--initial-controllers", voters,
                               "--release-version", "3.9")
    assert status == 0, err
    data_dir = tmp_path / "logs-a"
    assert formatting_lines(out) == [f"Formatting dynamic metadata voter directory {data_dir} with metadata.version "
                                     f"3.9-IV0."]
    assert read_meta_properties(data_dir / "meta.properties").directory_id == ids[1]     # node 1's
    _, kraft, record = read_snapshot(data_dir / "__cluster_metadata-0" / SNAPSHOT)
    assert [(v.voter_id, v.voter_directory_id, v.endpoints[0].host, v.endpoints[0].port) for v in record.voters] == \
        [(1, ids[1], "host1", 9091), (2, ids[2], "host2", 9092), (3, ids[0], "host3", 9093)]
    bootstrap = SnapshotReader(data_dir / "bootstrap.checkpoint")
    assert [decode_metadata_record(r.value).message.feature_level for r in bootstrap.records()] == [21]


def test_format_as_a_non_voter_of_the_initial_controllers(tmp_path, capsys):
    config = write_config(tmp_path)
    voters = f"2@h:1:{uuid_to_kafka(random_uuid())}"
    status, out, _ = storage(capsys, "format", "-t", CLUSTER, "-c", config, "-I", voters)
    assert status == 0 and formatting_lines(out)[0].startswith("Formatting dynamic metadata directory ")
    _, _, record = read_snapshot(tmp_path / "logs-a" / "__cluster_metadata-0" / SNAPSHOT)
    assert [v.voter_id for v in record.voters] == [2]


def test_format_with_no_initial_controllers_and_with_static_voters_writes_no_snapshot(tmp_path, capsys):
    config = write_config(tmp_path)
    assert storage(capsys, "format", "-t", CLUSTER, "-c", config, "--no-initial-controllers")[0] == 0
    assert (tmp_path / "logs-a" / "bootstrap.checkpoint").exists()
    assert not (tmp_path / "logs-a" / "__cluster_metadata-0").exists()
    static = tmp_path / "static"
    static.mkdir()
    config = write_config(static, voters="1@localhost:9093")
    status, out, _ = storage(capsys, "format", "-t", CLUSTER, "-c", config)
    assert status == 0 and formatting_lines(out)[0].startswith("Formatting metadata directory ")
    assert not (static / "logs-a" / "__cluster_metadata-0").exists()


@pytest.mark.parametrize("flags, config_options, message", [
    ((), {}, "Because controller.quorum.voters is not set on this controller, you must specify one of the following: "
             "--standalone, --initial-controllers, or --no-initial-controllers."),
    (("--standalone",), {"voters": "1@localhost:9093"},
     "You cannot specify controller.quorum.voters and format the node with --initial-controllers or --standalone. "
     "If you want to use dynamic quorum, please remove controller.quorum.voters and specify "
     "controller.quorum.bootstrap.servers instead."),
    (("--standalone",), {"roles": "broker", "listeners": "PLAINTEXT://:9092"},
     "You can only use --standalone on a controller."),
    (("--release-version", "9.9"), {"voters": "1@localhost:9093"}, "Unknown metadata.version '9.9'."),
    (("--initial-controllers", "1@h:1"), {}, "No colon following port could be found."),
])
def test_format_refusals(tmp_path, capsys, flags, config_options, message):
    config = write_config(tmp_path, **config_options)
    status, out, err = storage(capsys, "format", "-t", CLUSTER, "-c", config, *flags)
    assert status == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "logs-a" / "meta.properties").exists()


def test_an_already_formatted_directory_is_refused_unless_ignored(tmp_path, capsys):
    config = write_config(tmp_path, log_dirs=("logs-a", "logs-b"))
    first = ["format", "-t", CLUSTER, "-c", config, "-N"]
    assert storage(capsys, *first)[0] == 0
    before = (tmp_path / "logs-a" / "meta.properties").read_bytes()
    status, _, err = storage(capsys, *first)
    assert status == 1
    assert err.strip() == (f"Log directory {tmp_path / 'logs-a'} is already formatted. Use --ignore-formatted to "
                           f"ignore this directory and format the others.")
    status, out, _ = storage(capsys, *first, "--ignore-formatted")
    assert (status, out) == (0, "All of the log directories are already formatted.\n")
    # A new directory joins: only it is formatted, the others are left as they were.
    config = write_config(tmp_path, log_dirs=("logs-a", "logs-b", "logs-c"))
    status, out, _ = storage(capsys, "format", "-t", CLUSTER, "-c", config, "-N", "-g")
    assert status == 0
    assert formatting_lines(out) == [f"Formatting data directory {tmp_path / 'logs-c'} with metadata.version 4.3-IV0."]
    assert (tmp_path / "logs-a" / "meta.properties").read_bytes() == before


def test_a_directory_of_another_cluster_or_node_is_refused_even_when_ignoring(tmp_path, capsys):
    config = write_config(tmp_path)
    assert storage(capsys, "format", "-t", CLUSTER, "-c", config, "-N")[0] == 0
    path = tmp_path / "logs-a" / "meta.properties"
    status, _, err = storage(capsys, "format", "-t", "OtherClusterId", "-c", config, "-N", "-g")
    assert status == 1 and err.strip() == f"Invalid cluster.id in: {path}. Expected OtherClusterId, but read {CLUSTER}"
    config.write_text(config.read_text().replace("node.id=1", "node.id=2"))
    status, _, err = storage(capsys, "format", "-t", CLUSTER, "-c", config, "-N", "-g")
    assert status == 1 and err.startswith(f"Stored node id 1 doesn't match previous node id 2 in {path}.")


def test_a_bad_config_is_reported_not_raised(tmp_path, capsys):
    config = tmp_path / "server.properties"
    config.write_text("process.roles=controller\nnode.id=x\n")
    status, _, err = storage(capsys, "format", "-t", CLUSTER, "-c", config, "-N")
    assert status == 1 and err.strip() == "node.id: 'x' is not a number of type INT"


# --- dynamic voters, uuids, info ---------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("1h:1:x", "No @ found in dynamic voter string."),
    ("@h:1:x", "Invalid @ at beginning of dynamic voter string."),
    ("a@h:1:x", "Failed to parse node id in dynamic voter string."),
    ("-1@h:1:x", "Invalid negative node id -1 in dynamic voter string."),
    ("1@", "No hostname found after node id."),
    ("1@[::1:9093:x", "Hostname began with left bracket, but no right bracket was found."),
    ("1@host", "No colon following hostname could be found."),
    ("1@[::1]9093:x", "Port section must start with a colon."),
    ("1@h:p:x", "Failed to parse port in dynamic voter string."),
    ("1@h:70000:x", "Invalid port 70000 in dynamic voter string."),
    ("1@h:1:notauuid", "Failed to parse directory ID in dynamic voter string"),
])
def test_dynamic_voter_parse_errors_are_kafkas(text, message):
    with pytest.raises(StorageError) as info:
        parse_dynamic_voter(text)
    assert str(info.value).startswith(message)


def test_dynamic_voter_with_an_ipv6_host():
    dir_id = random_uuid()
    voter = parse_dynamic_voter(f" 4@[::1]:9093:{uuid_to_kafka(dir_id)} ")
    assert (voter.node_id, voter.host, voter.port, voter.directory_id) == (4, "::1", 9093, dir_id)


HASHMAP_CASES = [[0, 1, 16], [3, 5, 100], list(range(12)), [1, 17, 33, 2], list(range(11)) + [16],
                 [1000, 2000, 3000, 65536, 65537, 7], list(range(40, 0, -3))]


def test_voters_come_in_java_hashmap_order():
    # Integer keys hash to themselves: 16 and 0 share bucket 0 of a 16-slot table. With twelve
    # keys VoterSet's copy has a 32-slot table, where 16 moves after 10.
    assert java_hashmap_order([0, 1, 16]) == [0, 16, 1]
    assert java_hashmap_order([3, 5, 100]) == [3, 100, 5]            # 100 & 7 == 4
    assert java_hashmap_order(list(range(11)) + [16]) == list(range(11)) + [16]


JAVA_HASHMAP = """
import java.util.*;
public class HashMapOrder {
    public static void main(String[] args) {
        for (String line : args) {
            Map<Integer, String> first = new HashMap<>();       // DynamicVoters.toVoterSet
            for (String k : line.split(",")) first.put(Integer.parseInt(k), k);
            Map<Integer, String> copy = new HashMap<>(first);    // VoterSet.fromMap
            StringJoiner out = new StringJoiner(",");
            for (Integer k : copy.keySet()) out.add(k.toString());
            System.out.println(out);
        }
    }
}
"""


def test_java_hashmap_order_against_a_real_jvm(tmp_path):
    import shutil
    import subprocess
    java = shutil.which("java")
    if java is None:
        from tests.conftest import unavailable
        unavailable("no java on PATH to compare HashMap iteration order with")
    source = tmp_path / "HashMapOrder.java"
    source.write_text(JAVA_HASHMAP)
    args = [",".join(map(str, sorted(keys))) for keys in HASHMAP_CASES]     # TreeMap order, as DynamicVoters
    result = subprocess.run([java, str(source), *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    java_orders = [list(map(int, line.split(","))) for line in result.stdout.split()]
    assert java_orders == [java_hashmap_order(sorted(keys)) for keys in HASHMAP_CASES]


def test_random_uuid_is_kafkas(capsys):
    drawn = [random_uuid() for _ in range(3000)]
    texts = [uuid_to_kafka(u) for u in drawn]
    # One in 64 random uuids would start with '-'; Kafka draws again, and so do we.
    assert not any(t.startswith("-") for t in texts)
    assert all(u.version == 4 for u in drawn) and len(set(drawn)) == len(drawn)
    status, out, _ = storage(capsys, "random-uuid")
    text = out.strip()
    assert status == 0 and len(text) == 22 and not text.startswith("-")
    assert len(base64.urlsafe_b64decode(text + "==")) == 16


def test_info(tmp_path, capsys):
    config = write_config(tmp_path, log_dirs=("logs-a", "logs-b"))
    status, out, _ = storage(capsys, "info", "-c", config)
    assert status == 1 and f"  {tmp_path / 'logs-a'} does not exist" in out
    assert storage(capsys, "format", "-t", CLUSTER, "-c", config, "-N")[0] == 0
    status, out, _ = storage(capsys, "info", "-c", config)
    meta = read_meta_properties(tmp_path / "logs-a" / "meta.properties")
    assert status == 0
    assert out == (f"Found log directories:\n  {tmp_path / 'logs-a'}\n  {tmp_path / 'logs-b'}\n\n"
                   f"Found metadata: {{cluster.id={CLUSTER}, directory.id={uuid_to_kafka(meta.directory_id)}, "
                   f"node.id=1, version=1}}\n\n")


def test_format_storage_is_usable_without_the_cli(tmp_path):
    config = parse_server_config(write_config(tmp_path).read_text())
    lines = []

    class Out:
        def write(self, s):
            lines.append(s)

    format_storage(config, CLUSTER, mode="standalone", out=Out())
    assert os.path.exists(tmp_path / "logs-a" / "__cluster_metadata-0" / SNAPSHOT)
    assert formatting_lines("".join(lines))[0].startswith("Formatting dynamic metadata voter directory")


def test_an_unreadable_directory_is_reported_and_left_alone(tmp_path, capsys, caplog):
    config = write_config(tmp_path, log_dirs=("logs-a", "logs-b"))
    (tmp_path / "logs-b").mkdir()
    (tmp_path / "logs-b" / "meta.properties").write_text("version=x\n")
    status, out, err = storage(capsys, "format", "-t", CLUSTER, "-c", config, "-N")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    # Kafka's Formatter: the unreadable directory (its Loader logs why), then the bootstrap line
    assert lines[0] == f"I/O error trying to read log directory {tmp_path / 'logs-b'}. Ignoring..."
    assert formatting_lines("\n".join(lines[1:])) == [
        f"Formatting metadata directory {tmp_path / 'logs-a'} with metadata.version 4.3-IV0."]
    assert "Error while reading meta.properties file" in caplog.text and "bad version 'x'" in caplog.text
    assert (tmp_path / "logs-b" / "meta.properties").read_text() == "version=x\n"
    config = write_config(tmp_path, log_dirs=("logs-b",))
    status, out, err = storage(capsys, "format", "-t", CLUSTER, "-c", config, "-N")
    assert (status, err.strip()) == (1, "No available log directories to format.")
