"""kafkawire.storage.leader_epoch_cache against Kafka's LeaderEpochFileCache rules: entries added
only for a new epoch and kept increasing, Kafka's endOffsetFor answers, truncation from the end
(a log cut by recovery) and from the start, the file in LeaderEpochCheckpointFile's format
(a literal as Kafka writes it, and the real files under ../shared/reference when present)."""
from __future__ import annotations

import logging
import shutil

import pytest

from kafkawire.records.builder import build_batch
from kafkawire.storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache
from kafkawire.storage.log import Log
from kafkawire.storage.state_files import EpochEntry
from tests.conftest import REFERENCE

# As Kafka's LeaderEpochCheckpointFile writes it: version 0, the count, "epoch startOffset" lines,
# each ended by a newline (BufferedWriter.newLine on Linux).
KAFKA_FILE = b"0\n3\n1 0\n3 120\n7 350\n"


def cache_of(*pairs) -> LeaderEpochFileCache:
    return LeaderEpochFileCache(None, [EpochEntry(e, s) for e, s in pairs])


def pairs(cache) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in cache.entries]


def test_an_entry_is_added_only_for_a_new_epoch_or_an_earlier_start_of_the_latest():
    cache = cache_of()
    assert cache.assign(2, 0) and cache.assign(4, 10)
    assert not cache.assign(4, 15)              # appends in the latest epoch change nothing
    assert cache.assign(4, 8)                   # an earlier start of the latest epoch replaces it
    assert pairs(cache) == [(2, 0), (4, 8)]
    with pytest.raises(ValueError, match="invalid partition leader epoch entry"):
        cache.assign(-1, 3)


def test_a_new_entry_removes_the_entries_it_contradicts_with_a_warning(caplog):
    """Kafka's maybeTruncateNonMonotonicEntries: an epoch at or above the new one, or a start at
    or after its start, goes (a lower epoch re-elected after a truncated log)."""
    cache = cache_of((1, 0), (3, 10), (5, 20))
    with caplog.at_level(logging.WARNING, "kafkawire.storage.leader_epoch_cache"):
        assert cache.assign(4, 12)
    assert pairs(cache) == [(1, 0), (3, 10), (4, 12)] and "conflicting" in caplog.text
    caplog.clear()
    assert cache.assign(6, 12)                  # an empty epoch replaced: no data contradicted
    assert pairs(cache) == [(1, 0), (3, 10), (6, 12)] and caplog.text == ""


@pytest.mark.parametrize("requested, expected", [
    (-1, (-1, -1)),             # UNDEFINED_EPOCH
    (7, (7, 500)),              # the latest epoch ends at the log end
    (3, (3, 350)),              # a known epoch ends where the next one starts
    (5, (3, 350)),              # an unknown one between: the largest below it, and the next start
    (0, (0, 0)),                # below every known epoch: the first start, the requested epoch
    (9, (-1, -1)),              # above every known epoch
])
def test_end_offset_for_answers_as_kafkas_end_offset_for(requested, expected):
    assert cache_of((1, 0), (3, 120), (7, 350)).end_offset_for(requested, 500) == expected


def test_an_empty_cache_knows_no_epoch():
    cache = cache_of()
    assert cache.end_offset_for(0, 10) == (-1, -1) and cache.latest() == -1 and cache.epoch_of(5) == -1


def test_epoch_of_an_offset_is_the_last_epoch_started_at_or_before_it():
    cache = cache_of((1, 5), (3, 120))
    assert [cache.epoch_of(o) for o in (4, 5, 119, 120, 10**12)] == [-1, 1, 1, 3, 3]


def test_truncation_from_the_end_drops_the_epochs_starting_at_or_after_the_cut():
    cache = cache_of((1, 0), (3, 120), (7, 350))
    assert not cache.truncate_from_end(351)
    assert cache.truncate_from_end(120) and pairs(cache) == [(1, 0)]


def test_truncation_from_the_start_moves_the_epoch_in_force_to_the_new_start():
    cache = cache_of((1, 0), (3, 120), (7, 350))
    assert not cache.truncate_from_start(0)
    assert cache.truncate_from_start(200) and pairs(cache) == [(3, 200), (7, 350)]
    assert cache.truncate_from_start(350) and pairs(cache) == [(7, 350)]


def test_the_file_kafka_writes_is_read_and_written_back_in_its_format(tmp_path):
    log = Log(tmp_path)
    log.append(build_batch([(b"k", b"v")] * 360), assign_offsets=True, leader_epoch=7)
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_bytes(KAFKA_FILE)
    cache = LeaderEpochFileCache.load(log)
    log.close()
    assert pairs(cache) == [(1, 0), (3, 120), (7, 350)]
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_bytes() == KAFKA_FILE     # nothing to change
    cache.assign(9, 360)
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_bytes() == b"0\n4\n1 0\n3 120\n7 350\n9 360\n"


def _write_epochs(directory, epochs) -> Log:
    """A log with one two-record batch per entry of ``epochs`` (its partition leader epoch)."""
    log = Log(directory)
    for epoch in epochs:
        log.append(build_batch([(b"k", b"a"), (b"k", b"b")]), assign_offsets=True, leader_epoch=epoch)
    log.flush()
    return log


def test_a_log_cut_by_recovery_takes_its_epochs_with_it(tmp_path):
    """Kafka's LogLoader truncates the cache to the recovered log end: the epoch whose only
    batch was torn is gone from the cache and from the file."""
    log = _write_epochs(tmp_path, [0, 0, 2, 5])
    LeaderEpochFileCache.load(log).assign(5, 6)
    segment = log.active_segment.log_path
    log.close()
    with open(segment, "r+b") as f:
        f.truncate(f.seek(0, 2) - 5)            # the last batch (epoch 5) torn
    log = Log(tmp_path)
    assert log.log_end_offset == 6
    cache = LeaderEpochFileCache.load(log)
    assert pairs(cache) == [(0, 0), (2, 4)]
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_bytes() == b"0\n2\n0 0\n2 4\n"
    log.close()


def test_without_a_file_the_epochs_are_rebuilt_from_the_batches_and_written(tmp_path):
    log = _write_epochs(tmp_path, [1, 1, 4, 6, 6])
    cache = LeaderEpochFileCache.load(log)
    log.close()
    assert pairs(cache) == [(1, 0), (4, 4), (6, 6)]
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_bytes() == b"0\n3\n1 0\n4 4\n6 6\n"


def test_an_empty_file_is_an_empty_cache_as_kafka_reads_it(tmp_path):
    """Kafka creates the file empty with the log; its reader finds no entries and its loading
    does not look for epochs in batches that recovery does not go through: neither does this."""
    log = _write_epochs(tmp_path, [1, 4])
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_bytes(b"")
    cache = LeaderEpochFileCache.load(log)
    log.close()
    assert pairs(cache) == [] and (tmp_path / LEADER_EPOCH_CHECKPOINT).read_bytes() == b""


@pytest.mark.parametrize("garbage", [b"0\n2\n1 0\n", b"3\n0\n", b"0\n1\n-4 0\n", b"0\n1\nx y\n", b"\xff\xfe"])
def test_an_unreadable_file_is_rebuilt_from_the_log_with_a_warning(tmp_path, garbage, caplog):
    """Where Kafka would take the log directory offline: the one directory here holds every
    partition, and the batches say where each epoch starts."""
    log = _write_epochs(tmp_path, [2, 3])
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_bytes(garbage)
    with caplog.at_level(logging.WARNING, "kafkawire.storage.leader_epoch_cache"):
        cache = LeaderEpochFileCache.load(log)
    log.close()
    assert pairs(cache) == [(2, 0), (3, 2)] and "rebuilding" in caplog.text
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_bytes() == b"0\n2\n2 0\n3 2\n"


REAL_FILES = sorted(p for p in (REFERENCE / "kraft-data").rglob(LEADER_EPOCH_CHECKPOINT)
                    if not p.parent.name.startswith("__cluster_metadata")
                    and any(p.parent.glob("*.log"))) if (REFERENCE / "kraft-data").exists() else []


@pytest.mark.parametrize("path", REAL_FILES or [None],
                         ids=[str(p.relative_to(REFERENCE)) for p in REAL_FILES] or ["none"])
def test_real_kafka_partitions_load_with_their_epochs_kept_and_the_file_unchanged(path, tmp_path):
    """A partition directory a Kafka broker wrote (log, checkpoint): loading keeps every entry
    that starts before the log end, as Kafka's own loading does, and leaves the file's bytes
    alone when nothing was cut."""
    if path is None:
        pytest.skip(f"no leader-epoch-checkpoint of a data partition under {REFERENCE / 'kraft-data'}")
    check_partition_epochs_load(path, tmp_path)


def check_partition_epochs_load(path, tmp_path) -> None:
    """The check above on one leader-epoch-checkpoint (tests/interop/test_held_out_claims_on_kafka_data.py
    runs it on the partitions Kafka wrote in the run)."""
    copy = tmp_path / path.parent.name
    copy.mkdir()
    for f in [*path.parent.glob("*.log"), path]:
        shutil.copy(f, copy / f.name)
    original = path.read_bytes()
    log = Log(copy)
    cache = LeaderEpochFileCache.load(log)
    assert log.log_start_offset == 0, "a copied log starts at its first segment (no log-start checkpoint)"
    expected = [e for e in _kafka_entries(original) if e.start_offset < log.log_end_offset]
    log.close()
    assert cache.entries == expected
    if len(expected) == len(_kafka_entries(original)):
        assert (copy / LEADER_EPOCH_CHECKPOINT).read_bytes() == original


def _kafka_entries(text: bytes) -> list[EpochEntry]:
    """Read independently of kafkawire; an empty file (Kafka creates one with its log) has none."""
    if not text:
        return []
    lines = text.decode().split("\n")
    return [EpochEntry(int(e), int(s)) for e, s in (line.split() for line in lines[2:2 + int(lines[1])])]
