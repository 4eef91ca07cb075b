"""The log cleaner on real partition directories, in process with fake clocks (kafkawire.broker.log_cleaner,
cleaner_work, kafkawire.storage.swap): a round cleans the dirtiest compacted log into segments that
kafkawire's strict reader and dump-log read, with the indexes a rebuild gives; the old segments go
``.deleted``; ``cleaner-offset-checkpoint`` has Kafka's format; a stop at each point of the swap is
completed or rolled back when the log opens (LogLoader); a full offset map cleans in several rounds;
the cleaner applies retention to ``compact,delete`` logs (the retention task skips compacted logs);
a log changed under a cleaning is not swapped.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import time

import pytest

from kafkawire.broker.log_cleaner import CLEANER_CHECKPOINT
from kafkawire.broker.log_manager import LogManager
from kafkawire.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from kafkawire.records.builder import build_batch
from kafkawire.storage.log import Log
from kafkawire.storage.reader import read_log_directory
from kafkawire.storage.segment import LogSegment
from kafkawire.storage.state_files import read_checkpoint
from kafkawire.storage.swap import CLEANED_SUFFIX, SWAP_SUFFIX, rename_segment_files
from kafkawire.tools import cli

from .test_log_retention import HOUR, NOW, FakeBroker, led_image


def compacted(tmp_path, topic_configs=None, **keys) -> FakeBroker:
    configs = {"cleanup.policy": "compact", **(topic_configs or {})}
    return FakeBroker(tmp_path, image=led_image("c", configs={(TOPIC_RESOURCE, "c"): configs}), **keys)


def fill(partition, keys: str, per_segment: int = 3, ts: int = NOW - HOUR, active_ts: int = NOW - HOUR) -> None:
    """One record per key letter (value: its offset), a new segment every ``per_segment`` records, then a
    last record in the active segment."""
    for i, key in enumerate(keys):
        partition.log.append(build_batch([(key.encode(), str(i).encode(), [], ts)]), assign_offsets=True)
        if i % per_segment == per_segment - 1:
            partition.log.roll()
    partition.log.roll()
    partition.log.append(build_batch([(b"z", b"active", [], active_ts)]), assign_offsets=True)


def content(partition) -> list[tuple[int, str]]:
    return [(r.offset, bytes(r.key).decode()) for b in partition.log.batches() for r in b]


def round_of(broker) -> bool:
    return asyncio.run(broker.log_manager.cleaner.clean_once())


def test_a_round_keeps_the_latest_record_per_key_and_the_files_read_back_strictly(tmp_path):
    broker = compacted(tmp_path, log_segment_delete_delay_ms=1000)
    p = broker.open("c")
    fill(p, "abcabcabcd")
    assert round_of(broker) is True
    assert content(p) == [(6, "a"), (7, "b"), (8, "c"), (9, "d"), (10, "z")]
    assert [s.base_offset for s in p.log.segments] == [0, 10]
    assert read_checkpoint(os.path.join(broker.log_dir, CLEANER_CHECKPOINT), fields=3) == [["c", "0", "10"]]
    names = set(os.listdir(p.log.directory))
    assert {"00000000000000000003.log.deleted", "00000000000000000000.log.deleted"} <= names
    broker.now[0] += 1000
    assert broker.log_manager.delete_due_files() > 0
    assert not [n for n in os.listdir(p.log.directory) if n.endswith((".deleted", CLEANED_SUFFIX, SWAP_SUFFIX))]
    assert round_of(broker) is False                     # clean now: nothing to do
    broker.close()
    strict = read_log_directory(tmp_path, verify_crc=True).partition("c", 0)
    assert [r.offset for r in strict.records()] == [6, 7, 8, 9, 10]


def test_the_cleaned_segments_indexes_are_those_a_rebuild_gives_and_dump_log_reads_it(tmp_path, capsys):
    broker = compacted(tmp_path)
    p = broker.open("c")
    p.log.index_interval_bytes = 100           # an index entry every couple of batches
    fill(p, "abcdefghijabcdefghijklmnop", per_segment=13)
    assert round_of(broker)
    broker.close()
    cleaned = os.path.join(tmp_path, "c-0", "00000000000000000000")
    with open(cleaned + ".index", "rb") as f:
        index = f.read()
    with open(cleaned + ".timeindex", "rb") as f:
        time_index = f.read()
    copy = tmp_path / "copy"
    copy.mkdir()
    for ext in (".log", ".index", ".timeindex"):
        shutil.copy(cleaned + ext, copy / ("00000000000000000000" + ext))
    rebuilt = LogSegment(copy, 0, index_interval_bytes=100, load_indexes=False)
    rebuilt.recover()
    rebuilt.on_become_inactive()
    assert (rebuilt.offset_index.to_bytes(), rebuilt.time_index.to_bytes()) == (index, time_index)
    assert len(index) >= 16
    rebuilt.close()
    assert cli.main(["dump-log", "--files", cleaned + ".log", "--print-data-log"]) == 0
    out = capsys.readouterr().out
    assert "isvalid: true" in out and "baseOffset: 10 lastOffset: 10 count: 1" in out


def cleaned_but_not_swapped(tmp_path):
    """A log of segments 0, 3, 6 and the active 9 whose first three were cleaned into 0.cleaned files."""
    broker = compacted(tmp_path)
    p = broker.open("c")
    fill(p, "abcabcabc")
    job = broker.log_manager.cleaner.grab_filthiest()
    broker.log_manager.cleaner.cleaner.clean(job, swap=lambda new_base, old_bases: True)
    broker.log_manager.cleaner.shutdown()
    p.log.close()
    return p.log.directory


OLD = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
NEW = [6, 7, 8, 9]


def stop_at(directory: str, step: str) -> None:
    """Leave the files as a stop at ``step`` of the swap does (kafkawire.storage.swap's order)."""
    stem = os.path.join(directory, "00000000000000000000")
    if step == "cleaned":
        return
    if step == "half-swap":                    # the .log renamed, its indexes not yet
        os.replace(stem + ".log" + CLEANED_SUFFIX, stem + ".log" + SWAP_SUFFIX)
        return
    rename_segment_files(directory, 0, CLEANED_SUFFIX, SWAP_SUFFIX)
    if step == "swapped":
        return
    old = [0, 3] if step == "half-deleted" else [0, 3, 6]
    for base in old:
        for ext in (".log", ".index", ".timeindex"):
            path = os.path.join(directory, f"{base:020d}{ext}")
            os.replace(path, path + ".deleted")
    if step == "half-renamed":                 # the new .log has its name, its indexes not yet
        os.replace(stem + ".log" + SWAP_SUFFIX, stem + ".log")


@pytest.mark.parametrize("step, offsets", [
    ("cleaned", OLD), ("half-swap", OLD),                  # rolled back: the .cleaned (and .swap) files go
    ("swapped", NEW), ("half-deleted", NEW), ("deleted", NEW), ("half-renamed", NEW),   # completed
])
def test_a_stop_at_each_point_of_the_swap_is_rolled_back_or_completed_when_the_log_opens(tmp_path, step, offsets):
    directory = cleaned_but_not_swapped(tmp_path)
    stop_at(directory, step)
    log_ = Log(directory)
    assert [r.offset for b in log_.batches() for r in b] == offsets
    assert not [n for n in os.listdir(directory) if n.endswith((CLEANED_SUFFIX, SWAP_SUFFIX))]
    assert [s.base_offset for s in log_.segments] == ([0, 3, 6, 9] if offsets == OLD else [0, 9])
    log_.close()


def test_a_full_offset_map_cleans_the_log_in_several_rounds(tmp_path):
    """log.cleaner.dedupe.buffer.size for 3 slots: 2 keys a round (Kafka's partial cleaning)."""
    broker = compacted(tmp_path, {"min.cleanable.dirty.ratio": "0.01"}, log_cleaner_dedupe_buffer_size=72)
    p = broker.open("c")
    fill(p, "abcdabcd", per_segment=2)
    checkpoints = []
    while round_of(broker):
        checkpoints.append(broker.log_manager.cleaner.checkpoints[("c", 0)])
        assert len(checkpoints) < 10
    assert checkpoints == sorted(checkpoints) and len(checkpoints) > 1 and checkpoints[-1] == 8
    assert sorted(key for _, key in content(p)) == ["a", "b", "c", "d", "z"]
    broker.close()


def test_compact_delete_logs_get_retention_from_the_cleaner_not_the_retention_task(tmp_path):
    broker = compacted(tmp_path, {"cleanup.policy": "compact,delete", "retention.ms": str(HOUR)})
    p = broker.open("c")
    fill(p, "abcdef", ts=NOW - 2 * HOUR, active_ts=NOW)
    assert broker.log_manager.cleanup_logs() == 0          # LogManager.cleanupLogs leaves compacted logs
    round_of(broker)
    assert p.log.log_start_offset == 6 and content(p) == [(6, "z")]
    broker.close()


def grabbed(tmp_path):
    """A compacted log of three dirty segments, chosen by the cleaner: (broker, partition, cleaner, job)."""
    broker = compacted(tmp_path)
    p = broker.open("c")
    fill(p, "abcabcabc")
    cleaner = broker.log_manager.cleaner
    return broker, p, cleaner, cleaner.grab_filthiest()


def test_a_log_changed_during_its_cleaning_is_not_swapped(tmp_path):
    broker, p, cleaner, job = grabbed(tmp_path)
    p.log.retire_oldest_segments(1)                 # retention or DeleteRecords meanwhile
    loop = asyncio.new_event_loop()
    swapped = loop.run_until_complete(cleaner._swap(0, [0, 3, 6]))
    loop.close()
    assert swapped is False and job is not None
    broker.close()


def test_only_one_cleaner_thread_and_a_disabled_cleaner_is_none(tmp_path):
    with pytest.raises(Exception, match="log.cleaner.threads=2"):
        FakeBroker(tmp_path, log_cleaner_threads=2)
    assert LogManager(FakeBroker(tmp_path, log_cleaner_enable=False)).cleaner is None


def test_the_cleaner_takes_its_dynamic_settings_at_its_next_round(tmp_path):
    """LogCleaner.reconfigure: backoff, I/O rate, offset map size and load factor set for this
    broker (else for every broker) apply from the next round; a map too small for one entry is
    not taken (the current one stays)."""
    broker = compacted(tmp_path, log_cleaner_dedupe_buffer_size=24 * 1000 * 1000)
    cleaner = broker.log_manager.cleaner
    assert (cleaner.backoff_ms, cleaner.cleaner.throttler.rate, cleaner.offset_map.slots) == (
        15_000, float(2 ** 1024 - 2 ** 971), 1_000_000)
    broker.image().configs[(BROKER_RESOURCE, "")] = {"log.cleaner.backoff.ms": "50",
                                                     "log.cleaner.dedupe.buffer.size": str(24 * 500 * 1000)}
    broker.image().configs[(BROKER_RESOURCE, "1")] = {"log.cleaner.backoff.ms": "20",
                                                      "log.cleaner.io.max.bytes.per.second": "1048576",
                                                      "log.cleaner.io.buffer.load.factor": "0.5"}
    assert round_of(broker) is False
    assert (cleaner.backoff_ms, cleaner.cleaner.throttler.rate) == (20, 1048576.0)
    assert cleaner.offset_map is cleaner.cleaner.offset_map
    assert (cleaner.offset_map.slots, cleaner.offset_map.max_entries) == (500_000, 250_000)
    broker.image().configs[(BROKER_RESOURCE, "1")]["log.cleaner.dedupe.buffer.size"] = "10"
    assert round_of(broker) is False
    assert cleaner.offset_map.slots == 500_000
    broker.close()


def test_the_cleaner_keys_have_kafkas_defaults_and_bounds():
    from kafkawire.broker.log_cleaner import offset_map_memory
    from kafkawire.net.config import ConfigError, parse_server_config

    from .test_log_retention import CONFIG
    c = CONFIG
    assert (c.log_cleaner_enable, c.log_cleaner_threads, c.log_cleaner_backoff_ms, c.log_cleaner_io_max_bytes_per_second,
            c.log_cleaner_dedupe_buffer_size, c.log_cleaner_io_buffer_size, c.log_cleaner_io_buffer_load_factor) == (
        True, 1, 15_000, 1.7976931348623157e308, 128 << 20, 512 << 10, 0.9)
    assert (c.log_cleaner_delete_retention_ms, c.log_cleaner_min_compaction_lag_ms, c.log_cleaner_max_compaction_lag_ms,
            c.log_cleaner_min_cleanable_ratio) == (86_400_000, 0, (1 << 63) - 1, 0.5)
    assert offset_map_memory(c) == 128 << 20
    base = ("process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
            "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
            "controller.quorum.bootstrap.servers=127.0.0.1:9093\n")
    for bad in ("log.cleaner.min.cleanable.ratio=1.5", "log.cleaner.threads=-1", "log.cleaner.max.compaction.lag.ms=0",
                "log.cleaner.io.max.bytes.per.second=fast"):
        with pytest.raises(ConfigError, match=bad.split("=")[0]):
            parse_server_config(base + bad + "\n")


def test_the_topic_configs_win_over_the_log_cleaner_synonyms(tmp_path):
    broker = compacted(tmp_path, {"delete.retention.ms": "5", "min.cleanable.dirty.ratio": "0.25"},
                       log_cleaner_min_compaction_lag_ms=7, log_cleaner_max_compaction_lag_ms=9,
                       log_cleaner_delete_retention_ms=11)
    s = broker.log_manager.settings(broker.image(), "c")
    assert (s.delete_retention_ms, s.min_cleanable_dirty_ratio, s.min_compaction_lag_ms, s.max_compaction_lag_ms) == (
        5, 0.25, 7, 9)
    broker.close()


def test_a_log_that_fails_to_clean_is_marked_uncleanable_and_left_as_it_was(tmp_path):
    """A record that does not decode (its length varint garbled): Kafka's markPartitionUncleanable."""
    broker = compacted(tmp_path)
    p = broker.open("c")
    fill(p, "abcabcabc")
    path = p.log.segments[1].log_path
    with open(path, "r+b") as f:
        f.seek(61)                              # the first record's length, after the 61-byte header
        f.write(b"\x7f")
    before = {n: os.path.getsize(os.path.join(p.log.directory, n)) for n in os.listdir(p.log.directory)}
    assert round_of(broker) is True
    assert broker.log_manager.cleaner.uncleanable == {("c", 0): p}
    assert {n: os.path.getsize(os.path.join(p.log.directory, n)) for n in os.listdir(p.log.directory)} == before
    assert round_of(broker) is False
    broker.close()


def test_aborted_records_leave_the_cleaned_segment_and_its_txnindex_keeps_the_abort(tmp_path):
    """Hand-built: producer 5's transaction (offsets 0-1) aborted by the marker at 2, in a segment whose
    .txnindex has its entry."""
    import struct

    from kafkawire.records.builder import build_end_txn_marker_batch
    from kafkawire.storage.txn_index import AbortedTxn, read_txn_index
    broker = compacted(tmp_path)
    p = broker.open("c")
    txn = dict(producer_id=5, producer_epoch=0, is_transactional=True)
    p.log.append(build_batch([(b"x", b"1", [], NOW)], base_offset=0, base_sequence=0, **txn))
    p.log.append(build_batch([(b"y", b"1", [], NOW)], base_offset=1, base_sequence=1, **txn))
    p.log.append(build_end_txn_marker_batch(False, producer_id=5, producer_epoch=0, coordinator_epoch=0, timestamp=NOW,
                                            base_offset=2))
    p.log.append(build_batch([(b"z", b"1", [], NOW)], base_offset=3))
    entry = AbortedTxn(0, 5, 0, 2, 3)
    with open(os.path.join(p.log.directory, "00000000000000000000.txnindex"), "wb") as f:
        f.write(struct.pack(">hqqqq", *entry))
    p.log.roll()
    p.log.append(build_batch([(b"w", b"1", [], NOW)], base_offset=4))
    assert round_of(broker)
    assert [(b.base_offset, b.is_control) for b in p.log.batches()] == [(2, True), (3, False), (4, False)]
    with open(os.path.join(p.log.directory, "00000000000000000000.txnindex"), "rb") as f:
        assert read_txn_index(f.read()) == ([entry], None)
    assert os.path.exists(os.path.join(p.log.directory, "00000000000000000000.txnindex.deleted"))
    broker.close()


def test_a_log_deleted_during_its_cleaning_stops_it_without_marking_anything(tmp_path):
    broker, p, cleaner, job = grabbed(tmp_path)
    del broker.partitions[("c", 0)]                 # the topic deleted (LogDeleter) meanwhile
    asyncio.run(cleaner._clean(job))
    assert cleaner.uncleanable == {} and ("c", 0) not in cleaner.checkpoints
    assert not [n for n in os.listdir(p.log.directory) if n.endswith(CLEANED_SUFFIX)]
    p.close()
    broker.close()


def test_an_io_error_cleaning_takes_the_logs_directory_offline(tmp_path, monkeypatch):
    """LogCleaner's IOException (here: the .cleaned segment cannot be created): the log's directory
    goes offline with Kafka's message, rather than the log being marked uncleanable; a broker
    without directory failures marks it uncleanable as before."""
    broker = compacted(tmp_path)
    p = broker.open("c")
    fill(p, "abcabcabc")
    failed = []
    broker.fail_log_dir = lambda path, error, *, message: failed.append((path, message))

    def cannot_create(*args, **kwargs):
        raise OSError(30, "Read-only file system")
    monkeypatch.setattr("kafkawire.broker.cleaner_work.LogSegment", cannot_create)
    assert round_of(broker) is True
    assert failed == [(str(tmp_path), f"Failed to clean up log for c-0 in dir {tmp_path} due to IOException")]
    assert broker.log_manager.cleaner.uncleanable == {}
    del broker.fail_log_dir
    assert round_of(broker) is True
    assert broker.log_manager.cleaner.uncleanable == {("c", 0): p}
    broker.close()


def test_a_cleaner_checkpoint_that_cannot_be_written_takes_its_directory_offline(tmp_path, monkeypatch):
    """CheckpointFileWithFailureHandler: the cleaner-offset-checkpoint's I/O error takes the log
    directory offline ("Error while writing to checkpoint file ..."), after the cleaning round."""
    broker = compacted(tmp_path)
    fill(broker.open("c"), "abcabcabc")
    failed = []
    broker.fail_log_dir = lambda path, error, *, message: failed.append((path, message))

    def cannot_write(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr("kafkawire.broker.log_cleaner.write_offset_checkpoint", cannot_write)

    async def go():
        assert await broker.log_manager.cleaner.clean_once() is True
        deadline = time.monotonic() + 30
        while not failed:
            assert time.monotonic() < deadline, "the checkpoint's failure was not reported"
            await asyncio.sleep(0.01)
    asyncio.run(go())
    assert failed == [(str(tmp_path), f"Error while writing to checkpoint file {tmp_path / CLEANER_CHECKPOINT}")]
    broker.close()
