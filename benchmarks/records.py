"""Record batch encode / decode throughput: kafkawire.records against other Python clients.

Run by hand (not part of the tests):

    PYTHONPATH=. .venv/bin/python benchmarks/records.py [--runs 7] [--seconds 0.3] [--arrow-only]

Workload: one uncompressed v2 batch of 100 records, 10-byte keys, 100-byte values, one
header (6-byte key, 8-byte value) per record. "encode" builds the batch from the inputs;
"decode" parses the batch and materializes every record (offset, timestamp, key, value,
headers are read). kafkawire hands out memoryviews (zero-copy) where the others copy
into bytes, so its decode is also run with key, value and header values copied to bytes.
Every decoder reads the same bytes (kafkawire's, equal to kafka-python's).
Numbers are records/s of process CPU time (robust to other load on a shared machine),
the median of ``--runs`` interleaved rounds; ratios (kafkawire / other) are the median
of the per-round ratios.

kafkawire runs twice (issue 26): "kafkawire native" (the C extension, when built) and
"kafkawire pure" (the pure-Python loop and append, as with KAFKAWIRE_PURE=1); a second table
puts both against aiokafka's C extension and kafka-python on batches of every codec: encode
(built and compressed; compressed in C by kafkawire native where compress.c writes the pure
path's bytes) and the whole consumer step (CRC-32C checked, decompressed, records read).
``--compressed-only`` runs that table alone.
"""

from __future__ import annotations

import argparse
import datetime
import io
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafkawire import _native  # noqa: E402
from kafkawire.records import GZIP, LZ4, SNAPPY, ZSTD, RecordBatch, RecordBatchBuilder, iter_batches  # noqa: E402
from kafkawire.records import batch as _batch_module  # noqa: E402
from kafkawire.records import record_decoding as _decoding  # noqa: E402

N_RECORDS = 100
TIMESTAMP = 1_700_000_000_000
KEYS = [b"key-%06d" % i for i in range(N_RECORDS)]                     # 10 bytes
VALUES = [os.urandom(50).hex().encode()[:100] for _ in range(N_RECORDS)]  # 100 bytes
HEADERS = [("header", b"hdrvalue")]
assert all(len(k) == 10 for k in KEYS) and all(len(v) == 100 for v in VALUES)


# --- kafkawire ------------------------------------------------------------------------

def kw_encode():
    b = RecordBatchBuilder(partition_leader_epoch=0)
    append = b.append
    for i in range(N_RECORDS):
        append(KEYS[i], VALUES[i], HEADERS, TIMESTAMP + i)
    return b.build()


def kw_decode(buf):
    for r in RecordBatch.from_buffer(buf):
        r.offset, r.timestamp, r.key, r.value, r.headers


def kw_decode_bytes(buf):
    for r in RecordBatch.from_buffer(buf):
        r.offset, r.timestamp, bytes(r.key), bytes(r.value), [(k, bytes(v)) for k, v in r.headers]


def _kw_path(native: bool, call):
    """``call`` with RecordBatch iteration and RecordBatchBuilder.append on one path."""
    decode = _decoding.decode_records_native if native else _decoding.decode_records_pure
    append = _NATIVE_APPEND if native else RecordBatchBuilder._append_pure

    def run(*args):
        _batch_module.decode_records = decode
        RecordBatchBuilder.append = append
        return call(*args)
    return run


_NATIVE_APPEND = RecordBatchBuilder.append
HAVE_NATIVE = _decoding.decode_records_native is not None


def kw_consume(buf):
    """The consumer's step: CRC checked, decompressed, every record read."""
    for batch in iter_batches(buf, verify_crc=True):
        for r in batch:
            r.offset, r.timestamp, r.key, r.value, r.headers


def kw_encode_codec(codec, level=None):
    def encode():
        b = RecordBatchBuilder(partition_leader_epoch=0, compression_type=codec, compression_level=level)
        append = b.append
        for i in range(N_RECORDS):
            append(KEYS[i], VALUES[i], HEADERS, TIMESTAMP + i)
        return b.build()
    return encode


# --- kafka-python / aiokafka (same API lineage) ----------------------------------------

def _builder_encoder(builder_cls):
    def encode():
        b = builder_cls(magic=2, compression_type=0, is_transactional=0, producer_id=-1,
                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
        for i in range(N_RECORDS):
            b.append(i, timestamp=TIMESTAMP + i, key=KEYS[i], value=VALUES[i], headers=HEADERS)
        return bytes(b.build())
    return encode


def _batch_decoder(batch_cls):
    def decode(buf):
        for r in batch_cls(buf):
            r.offset, r.timestamp, r.key, r.value, r.headers
    return decode


def _aiokafka_consume(batch_cls):
    def consume(buf):
        batch = batch_cls(buf)
        assert batch.validate_crc()
        for r in batch:
            r.offset, r.timestamp, r.key, r.value, r.headers
    return consume


def _aiokafka_encode_codec(builder_cls, codec):
    def encode():
        b = builder_cls(magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
        for i in range(N_RECORDS):
            b.append(i, timestamp=TIMESTAMP + i, key=KEYS[i], value=VALUES[i], headers=HEADERS)
        return bytes(b.build())
    return encode


# --- kio --------------------------------------------------------------------------------

def _kio():
    from kio.records.readers import read_batch
    from kio.records.schema import NewRecordBatch, Record, RecordHeader
    from kio.records.writers import write_new_batch
    from kio.static.primitive import i8, i16, i32, i64

    ts = [datetime.datetime.fromtimestamp((TIMESTAMP + i) / 1000, datetime.UTC)
          for i in range(N_RECORDS)]

    def encode():
        records = tuple(
            Record(attributes=i8(0), timestamp=ts[i], offset=i64(i), key=KEYS[i],
                   value=VALUES[i], headers=(RecordHeader(key=b"header", value=b"hdrvalue"),))
            for i in range(N_RECORDS))
        out = io.BytesIO()
        write_new_batch(out, NewRecordBatch(producer_id=i64(-1), producer_epoch=i16(-1),
                                            base_sequence=i32(-1), records=records,
                                            attributes=i16(0)))
        return out.getvalue()

    def decode(buf):
        batch, _ = read_batch(buf, 0)
        for r in batch.records:
            r.offset, r.timestamp, r.key, r.value, r.headers

    return encode, decode


# --- harness ----------------------------------------------------------------------------

def calibrate(call, seconds):
    """How many calls take about ``seconds`` (after a warm-up)."""
    t0, n = time.process_time(), 0
    while time.process_time() - t0 < seconds / 3:
        call()
        n += 1
    return max(1, n * 3)


def measure_all(calls, runs, seconds):
    """Records/s of every call in each of ``runs`` rounds. Rounds interleave the calls
    so that load from other processes hits every implementation alike."""
    loops = {name: calibrate(call, seconds) for name, call in calls.items()}
    rates = {name: [] for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            n = loops[name]
            t0 = time.process_time()
            for _ in range(n):
                call()
            rates[name].append(n * N_RECORDS / (time.process_time() - t0))
    return rates


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=0.3)
    ap.add_argument("--arrow-only", action="store_true", help="only the records_to_arrow table")
    ap.add_argument("--compressed-only", action="store_true",
                    help="only the table of compressed batches (encode and consume, against aiokafka and kafka-python)")
    args = ap.parse_args()
    if args.arrow_only:
        arrow_table(args)
        return

    import kafka.record.default_records as kp
    import aiokafka.record.default_records as ak
    if args.compressed_only:
        consumer_table(ak, kp, args)
        return

    impls = {"kafkawire": (_kw_path(HAVE_NATIVE, kw_encode), _kw_path(HAVE_NATIVE, kw_decode))}
    if HAVE_NATIVE:
        impls["kafkawire pure"] = (_kw_path(False, kw_encode), _kw_path(False, kw_decode))
    impls["aiokafka C ext"] = (_builder_encoder(ak.DefaultRecordBatchBuilder), _batch_decoder(ak.DefaultRecordBatch))
    impls["aiokafka pure-py"] = (_builder_encoder(ak._DefaultRecordBatchBuilderPy),
                                 _batch_decoder(ak._DefaultRecordBatchPy))
    impls["kafka-python"] = (_builder_encoder(kp.DefaultRecordBatchBuilder), _batch_decoder(kp.DefaultRecordBatch))
    impls["kio"] = _kio()
    assert ak.DefaultRecordBatch is not ak._DefaultRecordBatchPy, "aiokafka C extension not loaded"

    ours = kw_encode()
    # Every decoder reads the same bytes: ours, equal to kafka-python's (both epoch 0 here).
    assert ours == _builder_encoder(kp.DefaultRecordBatchBuilder)()

    calls = {}
    for name, (enc, dec) in impls.items():
        calls[(name, "enc")] = enc
        calls[(name, "dec")] = (lambda dec: lambda: dec(ours))(dec)
    calls[("kafkawire", "dec-bytes")] = _kw_path(HAVE_NATIVE, lambda: kw_decode_bytes(ours))
    rates = measure_all(calls, args.runs, args.seconds)
    med = {key: statistics.median(r) for key, r in rates.items()}

    def ratio(name, what):
        # Median of per-round ratios: each round measures both sides close in time.
        return statistics.median(a / b for a, b in zip(rates[("kafkawire", what)], rates[(name, what)], strict=True))

    results = {name: (med[(name, "enc")], med[(name, "dec")], ratio(name, "enc"), ratio(name, "dec"))
               for name in impls}
    kw_bytes = med[("kafkawire", "dec-bytes")]

    print(f"{N_RECORDS} records/batch, 10 B keys, 100 B values, 1 header, uncompressed; "
          f"median of {args.runs} runs; Python {sys.version.split()[0]}; "
          f"'kafkawire' is {'native (C extension)' if HAVE_NATIVE else 'pure Python (no C extension)'}")
    print(f"{'implementation':<18} {'encode rec/s':>14} {'decode rec/s':>14} "
          f"{'kw/enc':>8} {'kw/dec':>8}")
    for name, (enc, dec, r_enc, r_dec) in results.items():
        print(f"{name:<18} {enc:>14,.0f} {dec:>14,.0f} {r_enc:>7.2f}x {r_dec:>7.2f}x")
    print(f"{'kafkawire, bytes()':<18} {'':>14} {kw_bytes:>14,.0f}   (decode copying key/value/header values to bytes)")
    pure = ("aiokafka pure-py", "kafka-python", "kio")
    best = max(pure, key=lambda k: results[k][1])
    bytes_ratio = statistics.median(
        a / b for a, b in zip(rates[("kafkawire", "dec-bytes")], rates[(best, "dec")], strict=True))
    print(f"fastest other pure-Python decoder: {best}; kafkawire decodes {results[best][3]:.2f}x "
          f"as fast ({bytes_ratio:.2f}x when copying to bytes)")
    consumer_table(ak, kp, args)
    arrow_table(args)


ARROW_BATCHES = 100
ARROW_CODECS = (("gzip", GZIP), ("snappy", SNAPPY), ("lz4", LZ4), ("zstd", ZSTD))


def _codecs_in(in_c: bool, call):
    """``call`` with the compiled-in codecs decompressing in C (in_c) or all of them in Python
    (kafkawire._native_records.use_codecs: the same C record loops either way)."""
    if _native.records is None:
        return call
    every = _native.native_codecs()

    def run(*args):
        _native.records.use_codecs(every if in_c else ())
        try:
            return call(*args)
        finally:
            _native.records.use_codecs(every)
    return run


def arrow_table(args):
    """records_to_arrow over a buffer of many batches: native (decompressing in C, and in
    Python) and the pure oracle path."""
    try:
        from kafkawire.spark.record_columns import records_to_arrow
    except ImportError:
        print("\n(pyarrow missing: no Arrow numbers)")
        return
    data = b"".join(kw_encode() for _ in range(ARROW_BATCHES))
    n = ARROW_BATCHES * N_RECORDS
    calls = {}
    for verify in (True, False):
        for native in ((True, False) if HAVE_NATIVE else (False,)):
            calls[(native, verify)] = (lambda native, verify: lambda: records_to_arrow(
                data, verify_crc=verify, native=native, topic="t", partition=0))(native, verify)
    paths = (("native", True, True), ("native, Python codec", True, False)) if HAVE_NATIVE else ()
    for codec_name, codec in ARROW_CODECS:
        compressed = b"".join(kw_encode_codec(codec)() for _ in range(ARROW_BATCHES))
        for label, native, in_c in (*paths, ("pure (Record objects)", False, False)):
            calls[(label, codec_name)] = _codecs_in(in_c, (lambda native, buf: lambda: records_to_arrow(
                buf, native=native, topic="t", partition=0))(native, compressed))
    rates = {key: [r * n / N_RECORDS for r in rs] for key, rs in measure_all(calls, args.runs, args.seconds).items()}
    print(f"\nrecords_to_arrow: {ARROW_BATCHES} batches x {N_RECORDS} records into one Arrow table (records/s); "
          f"{_native.status()}; load {os.getloadavg()[0]:.2f}")
    for (path, what), r in rates.items():
        label = f"CRC {'checked' if what else 'skipped'}" if isinstance(what, bool) else f"{what}, CRC checked"
        name = path if isinstance(path, str) else "native" if path else "pure (Record objects)"
        print(f"{name:<22} {label:<20} {statistics.median(r):>14,.0f}")
    for codec_name, _ in ARROW_CODECS if HAVE_NATIVE else ():
        ratio = statistics.median(a / b for a, b in zip(rates[("native", codec_name)],
                                                         rates[("native, Python codec", codec_name)], strict=True))
        print(f"{codec_name}: decompressing in C is {ratio:.2f}x decompressing in Python (median of per-round ratios)")


def consumer_table(ak, kp, args):
    """Native and pure kafkawire against aiokafka's C extension (and kafka-python) on batches of
    every codec: the batch built and compressed (encode), and CRC-checked, decompressed and read
    (decode). 'kw native, py codec' is the native path with every codec in Python (use_codecs):
    the C record loops, compression and decompression by the pure codecs."""
    sides = {"kafkawire native": (True, True), "kw native, py codec": (True, False),
             "kafkawire pure": (False, False)} if HAVE_NATIVE else {"kafkawire pure": (False, False)}
    peers = {"aiokafka C ext": ak, "kafka-python": kp}
    print(f"\nwith CRC-32C checked and the batch decompressed (records/s of CPU time; ratio = implementation / "
          f"aiokafka C ext); {_native.status()}; load {os.getloadavg()[0]:.2f}")
    print(f"{'codec':<6} {'implementation':<20} {'encode rec/s':>14} {'decode rec/s':>14} {'enc ratio':>10} {'dec ratio':>10}")
    # aiokafka and kafka-python gzip at level 9, kafkawire at Kafka's default (zlib's 6) unless
    # compression.gzip.level says otherwise: "gzip-9" is kafkawire at 9 against the same peers.
    for codec_name, codec, level in (("none", 0, None), ("gzip", GZIP, None), ("gzip-9", GZIP, 9),
                                     ("snappy", SNAPPY, None), ("lz4", LZ4, None), ("zstd", ZSTD, None)):
        data = kw_encode_codec(codec, level)()
        calls = {}
        for name, module in peers.items():
            calls[(name, "enc")] = _aiokafka_encode_codec(module.DefaultRecordBatchBuilder, codec)
            calls[(name, "dec")] = (lambda consume: lambda: consume(data))(_aiokafka_consume(module.DefaultRecordBatch))
        for name, (native, in_c) in sides.items():
            calls[(name, "enc")] = _codecs_in(in_c, _kw_path(native, kw_encode_codec(codec, level)))
            calls[(name, "dec")] = _codecs_in(in_c, _kw_path(native, lambda: kw_consume(data)))
        rates = measure_all(calls, args.runs, args.seconds)
        for name in [*sides, *peers]:
            ratios = [statistics.median(a / b for a, b in zip(rates[(name, what)], rates[("aiokafka C ext", what)],
                                                              strict=True)) for what in ("enc", "dec")]
            print(f"{codec_name:<6} {name:<20} {statistics.median(rates[(name, 'enc')]):>14,.0f} "
                  f"{statistics.median(rates[(name, 'dec')]):>14,.0f} {ratios[0]:>9.2f}x {ratios[1]:>9.2f}x")


if __name__ == "__main__":
    main()
