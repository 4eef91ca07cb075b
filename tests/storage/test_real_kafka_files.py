"""Our storage code against data directories real Kafka brokers/controllers wrote
(../shared/reference/kraft-data and kafka-fixtures; see their README/SOURCE files)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from kafkawire.records import iter_batches
from kafkawire.storage import Log, OffsetIndex, TimeIndex
from kafkawire.storage import state_files as sf
from tests.conftest import REFERENCE as SHARED_REFERENCE
from tests.kafka_data_checks import check_index_against_log, check_segment_recovers, check_snapshot

REFERENCE = SHARED_REFERENCE
ROOTS = [REFERENCE / "kraft-data", REFERENCE / "kafka-fixtures"]


def _files(pattern, name_re=None):
    out = []
    for root in ROOTS:
        if root.exists():
            out += sorted(p for p in root.rglob(pattern) if p.is_file()
                          and (name_re is None or re.match(name_re, p.name)))
    return out


def _ids(paths):
    return [str(p.relative_to(REFERENCE)) for p in paths]


def _require(paths, what):
    if not REFERENCE.exists():
        pytest.skip(f"reference data not available: {REFERENCE} is missing "
                    "(it lives in ../shared beside the repo)")
    if not paths:
        pytest.skip(f"no {what} in {REFERENCE}")


SEGMENTS = _files("*.log", r"^\d{20}\.log$")
SNAPSHOTS = _files("*.checkpoint", r"^(\d{20}-\d{10}|bootstrap)\.checkpoint$")
INDEXES = _files("*.index", r"^\d{20}\.index$")
TIME_INDEXES = _files("*.timeindex", r"^\d{20}\.timeindex$")


def _param(paths):
    return pytest.mark.parametrize("path", paths or [None], ids=_ids(paths) if paths else ["none"])


@_param(SEGMENTS)
def test_segment_recovers_with_nothing_cut(path, tmp_path):
    _require(SEGMENTS, "log segments")
    check_segment_recovers(path, tmp_path)


def test_metadata_log_directories_open(tmp_path):
    dirs = sorted({p.parent for p in SEGMENTS})
    _require(dirs, "log directories")
    check_log_directories_open(dirs, tmp_path)


def check_log_directories_open(dirs, tmp_path) -> None:
    """Each directory's segments, copied, open as a Log with nothing cut and its log end offset
    where the last batch ends (tests/interop/test_held_out_claims_on_kafka_data.py runs it on
    the directories Kafka wrote in the run)."""
    checked = 0
    for d in dirs:
        dest = tmp_path / f"d{checked}"
        dest.mkdir()
        for p in d.glob("*.log"):
            shutil.copy(p, dest / p.name)
        log = Log(dest)
        assert all(not r.truncated for r in log.recovery_reports)
        leo = log.log_end_offset
        last = None
        for b in iter_batches((d / f"{log.active_segment.base_offset:020d}.log").read_bytes()):
            last = b
        if last is not None:
            assert leo == last.next_offset
        log.close()
        checked += 1
    assert checked == len(dirs)


@_param(INDEXES)
def test_kafka_offset_index_loads(path):
    _require(INDEXES, ".index files (the kraft-data README says they were not copied)")
    check_index_against_log(path, OffsetIndex)


@_param(TIME_INDEXES)
def test_kafka_time_index_loads(path):
    _require(TIME_INDEXES, ".timeindex files (the kraft-data README says they were not copied)")
    check_index_against_log(path, TimeIndex)


@_param(SNAPSHOTS)
def test_snapshot_reads_with_header_and_footer(path):
    _require(SNAPSHOTS, "snapshots")
    check_snapshot(path)


STATE_FILES = {
    "quorum-state": (sf.parse_quorum_state, lambda v: sf.format_quorum_state(*v)),
    "meta.properties": (sf.MetaProperties.parse, lambda m: m.format()),
    "partition.metadata": (sf.parse_partition_metadata, sf.format_partition_metadata),
    "leader-epoch-checkpoint": (lambda t: sf.parse_checkpoint(t, fields=2), sf.format_checkpoint),
    "replication-offset-checkpoint": (lambda t: sf.parse_checkpoint(t, fields=3), sf.format_checkpoint),
    "recovery-point-offset-checkpoint": (lambda t: sf.parse_checkpoint(t, fields=3), sf.format_checkpoint),
    "log-start-offset-checkpoint": (lambda t: sf.parse_checkpoint(t, fields=3), sf.format_checkpoint),
    "cleaner-offset-checkpoint": (lambda t: sf.parse_checkpoint(t, fields=3), sf.format_checkpoint),
}
STATE_PATHS = [p for name in STATE_FILES for p in _files(name) if p.name == name]


@_param(STATE_PATHS)
def test_state_file_round_trips_to_identical_bytes(path):
    _require(STATE_PATHS, "state files")
    parse, fmt = STATE_FILES[path.name]
    raw = path.read_bytes()
    value = parse(raw.decode("utf-8"))
    if raw == b"":
        assert value == []  # Kafka reads an empty checkpoint as no entries
        return
    assert fmt(value).encode("utf-8") == raw


def test_typed_readers_on_real_files():
    _require(STATE_PATHS, "state files")
    seen = {}
    for p in STATE_PATHS:
        if p.name == "quorum-state":
            state, version = sf.read_quorum_state(p)
            assert version == 0 and state.leader_epoch >= 0 and state.current_voters
        elif p.name == "meta.properties":
            meta = sf.read_meta_properties(p)
            assert meta.version in (0, 1) and meta.node_id is not None
        elif p.name == "partition.metadata":
            sf.read_partition_metadata(p)
        elif p.name == "leader-epoch-checkpoint":
            entries = sf.read_leader_epoch_checkpoint(p)
            assert [e.epoch for e in entries] == sorted({e.epoch for e in entries})
        seen[p.name] = seen.get(p.name, 0) + 1
    assert seen.get("quorum-state") and seen.get("meta.properties")


def test_leader_epoch_checkpoint_matches_the_log():
    """For metadata partitions, each checkpointed epoch starts where the log says."""
    _require(SEGMENTS, "log segments")
    checked = 0
    for d in sorted({p.parent for p in SEGMENTS}):
        cp = d / "leader-epoch-checkpoint"
        if not cp.exists() or len(list(d.glob("*.log"))) != 1:
            continue
        log_path = next(d.glob("*.log"))
        first = {}
        for b in iter_batches(log_path.read_bytes()):
            first.setdefault(b.partition_leader_epoch, (b.base_offset, b.last_offset))
        entries = sf.read_leader_epoch_checkpoint(cp)
        for e in entries:
            if e.start_offset >= int(log_path.name[:20]) and e.epoch in first:
                # The epoch starts inside the first batch written with it (its base offset
                # for every __cluster_metadata log; one test-topic in apache/kafka's
                # committed test data says base+1).
                base, last = first[e.epoch]
                assert base <= e.start_offset <= last, (cp, e, first[e.epoch])
                if "__cluster_metadata" in str(d):
                    assert base == e.start_offset, (cp, e)
                checked += 1
    assert checked
