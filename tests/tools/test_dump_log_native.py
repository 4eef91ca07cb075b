"""dump-log's C text loop (kafkawire/tools/dump_log_native.py, _native_src/dump_*.c) writes
exactly what the pure loop writes (the oracle), byte for byte, on metadata logs holding every
metadata record type and version and on data logs with the cases it hands back to the pure
loop (ill-formed UTF-8, non-consecutive offsets, undecodable metadata values, doubles)."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafkawire import messages
from kafkawire.metadata import encode_metadata_record
from kafkawire.records import build_batch
from kafkawire.records.compression import GZIP, ZSTD
from kafkawire.tools import dump_log_native
from tests.codec.strategies import instances
from tests.tools.dumplog_testlib import dump

pytestmark = pytest.mark.skipif(dump_log_native._native_module is None,
                                reason="the C extension is not built (or KAFKAWIRE_PURE=1): only the pure loop runs")


def _metadata_types():
    out = []
    for api_key in range(128):
        try:
            cls = messages.metadata_record(api_key)
        except KeyError:
            continue
        out += [(cls, version) for version in sorted(cls._DECODERS)]
    return out


METADATA_TYPES = _metadata_types()


class _Counting:
    """Wraps the C loops (dump_run over a run of batches, dump_records over one) to count the
    batches they wrote, batch line included, and those they handed back to the pure loop (a
    second call for a batch's record lines alone is not counted)."""

    def __init__(self, module):
        self.run, self.records = module.dump_run, module.dump_records
        self.written = self.handed_back = 0

    def dump_run(self, *args):
        result = self.run(*args)
        self.written += sum(1 for line in result[0].split("\n") if line.startswith("baseOffset: "))
        return result

    def dump_records(self, *args):
        result = self.records(*args)
        if args[12] is None:
            pass
        elif result is None:
            self.handed_back += 1
        else:
            self.written += 1
        return result


def native_and_pure(monkeypatch, capsys, *argv):
    """(native output, pure output, the counting wrapper): the same command both ways."""
    module = dump_log_native._native_module
    counting = _Counting(module)
    with monkeypatch.context() as m:
        m.setattr(module, "dump_run", counting.dump_run, raising=False)
        m.setattr(module, "dump_records", counting.dump_records, raising=False)
        native = dump(capsys, *argv)
    with monkeypatch.context() as m:
        m.setattr(dump_log_native.NativeLines, "for_options", classmethod(lambda cls, opts, coordinator: None))
        pure = dump(capsys, *argv)
    return native, pure, counting


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_every_metadata_record_type_and_version_dumps_as_the_pure_loop_does(data, tmp_path_factory, monkeypatch,
                                                                            capsys):
    """--cluster-metadata-decoder: one batch per (record type, version), records drawn from
    the schema (nulls, escapes, tagged fields, unknown tags), and the C loop's text equals the
    pure loop's; it writes the batches itself except those holding doubles."""
    batches, offset = [], 0
    for cls, version in METADATA_TYPES:
        values = [encode_metadata_record(data.draw(instances(cls, version)), version) for _ in range(2)]
        batches.append(build_batch([(None, v) for v in values], base_offset=offset, base_timestamp=1_700_000_000_000))
        offset += len(values)
    path = tmp_path_factory.mktemp("meta") / "00000000000000000000.log"
    path.write_bytes(b"".join(batches))
    native, pure, counting = native_and_pure(monkeypatch, capsys, "--cluster-metadata-decoder", "--files", path)
    assert native == pure
    with_doubles = sum(1 for cls, version in METADATA_TYPES if dump_log_native.json_format(cls, version) is None)
    assert counting.written == len(METADATA_TYPES) - with_doubles
    assert with_doubles <= 2    # ClientQuotaRecord's value is the one double of the metadata schemas


def _metadata_log_with_odd_values() -> bytes:
    topic = encode_metadata_record(messages.by_name("TopicRecord")(name="t\u00e9\n\"x\u0001", topic_id=uuid.UUID(int=7)), 0)
    quota = encode_metadata_record(messages.by_name("ClientQuotaRecord").from_json(
        {"entity": [{"entityType": "user", "entityName": None}], "key": "k", "value": 1e7, "remove": False}, 0), 0)
    return b"".join([
        build_batch([(None, topic), (None, topic)], base_offset=0),
        build_batch([(None, b"\x01\x7f\x00"), (None, topic)], base_offset=2),    # unknown record type
        build_batch([(None, topic[:-2])], base_offset=4),                          # truncated record
        build_batch([(None, None)], base_offset=5),                                # null value
        build_batch([(None, quota)], base_offset=6),                               # a double
        build_batch([(None, topic)], base_offset=9),                               # offsets 6 then 9
        build_batch([(None, topic)] * 3, base_offset=10, compression_type=ZSTD, producer_id=5, base_sequence=7),
    ])


def test_metadata_values_the_c_loop_hands_back_dump_as_the_pure_loop_does(tmp_path, monkeypatch, capsys):
    """Undecodable, null and unknown metadata values, doubles and an offset gap: the C loop
    hands those batches back and the whole output (stdout, stderr, status) is the pure loop's."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_metadata_log_with_odd_values())
    native, pure, counting = native_and_pure(monkeypatch, capsys, "--cluster-metadata-decoder", "--files", path)
    assert native == pure
    assert counting.written == 2 and counting.handed_back == 5


def _data_log() -> bytes:
    return b"".join([
        build_batch([(b"k", b"v\xc3\xa9", [("h1", b"x"), (b"h\xc3\xa9", None)]), (None, b""), (b"", None)],
                    base_offset=0, producer_id=3, producer_epoch=1, base_sequence=0x7FFFFFFF),
        build_batch([(b"bad \xed\xa0\x80 utf8", b"v")], base_offset=3),           # a UTF-8 surrogate
        build_batch([(b"k", b"v", [(b"bad\xff", b"")])], base_offset=4),          # ill-formed header key
        build_batch([(b"k", b"\x00\x1f\"\\")] * 4, base_offset=5, compression_type=GZIP, timestamp_type=1,
                    base_timestamp=5, max_timestamp=99),
        build_batch([(None, b"gap")], base_offset=20),
        build_batch([(b"t", b"x")], base_offset=21, is_transactional=True, producer_id=9, producer_epoch=2,
                    base_sequence=4, has_delete_horizon=True, base_timestamp=123),
        _with_bad_crc(build_batch([(b"crc", b"x")], base_offset=22)),
    ])


def _with_bad_crc(batch: bytes) -> bytes:
    return batch[:17] + bytes([batch[17] ^ 0xFF]) + batch[18:]


# flags -> (batches the C loops write, batches they hand back)
DATA_LOG_COUNTS = {(): (6, 0), ("--deep-iteration",): (4, 3), ("--print-data-log",): (3, 4),
                   ("--deep-iteration", "--print-data-log"): (3, 4)}


@pytest.mark.parametrize("flags", list(DATA_LOG_COUNTS))
def test_data_logs_dump_as_the_pure_loop_does(tmp_path, monkeypatch, capsys, flags):
    """--deep-iteration and --print-data-log: headers, nulls, empty keys, wrapping sequences,
    log-append time, compression, transactions, delete horizons, Java's UTF-8 replacement, offset
    gaps and a CRC mismatch (reported by the pure loop), the same text."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_data_log())
    native, pure, counting = native_and_pure(monkeypatch, capsys, *flags, "--files", path)
    assert native == pure
    assert (counting.written, counting.handed_back) == DATA_LOG_COUNTS[flags]


def test_kafkawire_pure_writes_what_the_native_path_writes(tmp_path, capsys):
    """KAFKAWIRE_PURE=1 (no C at all: codecs, records, text) dumps a log of every metadata
    record type and version, and the odd values, to the same bytes as the native path."""
    values = [encode_metadata_record(cls(), version) for cls, version in METADATA_TYPES]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_batch([(None, v) for v in values], base_offset=0)
                     + build_batch([(None, v) for v in values[:3]], base_offset=len(values), compression_type=GZIP))
    odd = tmp_path / "00000000000000000100.log"
    odd.write_bytes(_metadata_log_with_odd_values())
    argv = ["dump-log", "--cluster-metadata-decoder", "--files", f"{path},{odd}"]
    native = dump(capsys, *argv[1:])
    pure = subprocess.run([sys.executable, "-c", "import sys; from kafkawire.tools.cli import main; sys.exit(main())",
                           *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "KAFKAWIRE_PURE": "1"})
    assert (pure.returncode, pure.stdout, pure.stderr) == native
