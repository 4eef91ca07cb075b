"""``kafkawire dump-log``: Kafka's kafka-dump-log (DumpLogSegments), line for line.

Reads ``.log`` segments, KRaft snapshots (``<offset>-<epoch>.checkpoint``),
``bootstrap.checkpoint``, ``.index``, ``.timeindex``, producer-state ``.snapshot`` and
``.txnindex`` files and prints what Kafka's tool prints (the 4.x text: batch lines, ``| offset:``
record lines, control records as ``LeaderChange: {...}``, ``SnapshotHeader {...}`` and so on,
metadata payloads as ``{"type":"TOPIC_RECORD","version":0,"data":{...}}``).

Where Kafka's tool would crash or say nothing, this one reports on stderr, naming the file and
the byte position, and goes on where the framing allows it:

* a size below 14 bytes (the smallest message): the rest of the file cannot be framed; stop;
* a batch that runs past the end of the file (a torn write): stop, and print Kafka's
  ``Found N invalid bytes at the end of <name>``;
* an unknown magic, a v2 batch shorter than its 61-byte header, an unknown codec: skip that
  batch (its size is known) and go on;
* a CRC mismatch: print the batch (``isvalid: false``), as Kafka does, and its records if they
  decode;
* a record or metadata payload that does not decode: report it and go on with the next batch
  (Kafka prints ``Error at <offset>, skipping. ...`` as the payload; so does this tool).

The exit status is 1 if anything was invalid (Kafka's own tool exits 0 for ``isvalid: false``).

``--json`` writes one JSON object per line instead of Kafka's text (documented in docs/tools.md,
"Tools: dump-log and metadata-shell"), with a ``type`` of ``file``, ``batch``, ``record``,
``trailingBytes``, ``indexEntry``, ``timeIndexEntry``, ``indexSanity``, ``producerState``,
``abortedTxn``, ``finding`` or ``error``.

Here: the command line, the walk over files and batches, and the reports. Framing is
kafkawire.records.scan_log's and the index files are read by kafkawire.storage; the record lines
are in dump_log_records, the index dumps in dump_log_indexes, the outputs in dump_log_output,
the coordinator decoders in dump_log_coordinators.
"""
from __future__ import annotations

import argparse
import os
import struct
import sys

from kafkawire.controller.java_order import string_computed_hashmap_order
from kafkawire.metadata.record_json import PayloadDecoder
from kafkawire.records import CorruptRecordError, TruncatedTail, scan_log
from kafkawire.records.compression import CODEC_NAMES
from kafkawire.records.layout import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD
from kafkawire.records.scan import MIN_ENTRY_SIZE, SIZE_BELOW_MINIMUM, UNKNOWN_MAGIC, Corruption
from kafkawire.storage.snapshot import BOOTSTRAP_FILE_NAME, parse_snapshot_file_name
from kafkawire.tools.dump_log_coordinators import CoordinatorDecoder, add_decoder_arguments, chosen_folder
from kafkawire.tools.dump_log_indexes import IndexDumper
from kafkawire.tools.dump_log_native import NativeLines
from kafkawire.tools.dump_log_output import JsonOutput, TextOutput
from kafkawire.tools.dump_log_records import RecordPrinter

COMMAND = "dump-log"
HELP = "print the batches and records of log segments, snapshots and indexes, as kafka-dump-log does"

INT_MAX = 0x7FFFFFFF
_ENTRY_SIZE = struct.Struct(">i")  # an entry's size field, after its offset
# A file of something else dumped with a decoder fails on every record; say so a few times.
MAX_ERRORS_SHOWN_PER_FILE = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--files", required=True, metavar="file1,file2,...",
                        help="REQUIRED: the comma separated list of data and index log files to be dumped")
    parser.add_argument("--print-data-log", action="store_true",
                        help="print the record contents (implied by the decoder options)")
    parser.add_argument("--deep-iteration", action="store_true",
                        help="print every record, not only the batches (implied by --print-data-log)")
    parser.add_argument("--cluster-metadata-decoder", action="store_true",
                        help="decode the values as __cluster_metadata records")
    add_decoder_arguments(parser)
    parser.add_argument("--skip-record-metadata", action="store_true",
                        help="leave out the per-record metadata (and the control records)")
    parser.add_argument("--verify-index-only", action="store_true",
                        help="check index entries against the log without printing them")
    parser.add_argument("--index-sanity-check", action="store_true",
                        help="only run Kafka's start-up sanity check on index files")
    parser.add_argument("--max-bytes", type=int, default=INT_MAX, metavar="size",
                        help="read at most this many bytes of each .log/.checkpoint file")
    parser.add_argument("--max-message-size", type=int, default=5 * 1024 * 1024, metavar="size",
                        help="the largest batch an index entry may point at (default 5 MiB)")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per line instead of Kafka's text (see docs/tools.md)")


class Options:
    def __init__(self, args):
        files = args.files.split(",")
        while files and not files[-1]:
            files.pop()  # Java's String.split drops trailing empty strings
        self.files = files
        # Kafka's precedence: offsets, transaction log, cluster metadata, share group state.
        self.coordinator = chosen_folder(args)
        self.cluster_metadata = args.cluster_metadata_decoder and self.coordinator is None
        self.print_data = args.print_data_log or self.cluster_metadata or self.coordinator is not None
        self.deep = args.deep_iteration or self.print_data
        self.skip_record_metadata = args.skip_record_metadata
        self.verify_only = args.verify_index_only
        self.index_sanity_only = args.index_sanity_check
        self.max_bytes = args.max_bytes
        self.max_message_size = args.max_message_size
        self.json = args.json


def run(args: argparse.Namespace) -> int:
    opts = Options(args)
    out = JsonOutput(sys.stdout) if opts.json else TextOutput(sys.stdout)
    dumper = Dumper(opts, out, sys.stderr)
    try:
        for name in opts.files:
            dumper.dump_file(name)
        dumper.print_findings()
    finally:
        out.flush()
    return 1 if dumper.failed else 0


class Dumper(RecordPrinter, IndexDumper):
    """Dumps files one by one: the batches of logs and snapshots (records: dump_log_records),
    indexes and producer state (dump_log_indexes), and the reports Kafka prints at the end."""

    def __init__(self, opts: Options, out, err):
        self.opts = opts
        self.out = out
        self.err = err
        self.failed = False
        self.errors_in_file = 0
        self.decode_payload = PayloadDecoder()
        self.coordinator = CoordinatorDecoder(opts.coordinator) if opts.coordinator else None
        # The C text loop for plain v2 batches, if the extension is built (else None: pure)
        self.native_lines = NativeLines.for_options(opts, self.coordinator)
        self.json = opts.json
        # Kafka's end-of-run reports, keyed by absolute path.
        self.non_consecutive: dict[str, dict[int, int]] = {}
        self.index_mismatches: dict[str, dict[int, int]] = {}
        self.time_index_mismatches: dict[str, list] = {}
        self.time_index_out_of_order: dict[str, list] = {}
        self.time_index_not_found: dict[str, list] = {}

    # -- reporting --

    def error(self, file: str, position, message: str) -> None:
        self.failed = True
        self.errors_in_file += 1
        if self.errors_in_file > MAX_ERRORS_SHOWN_PER_FILE:
            return  # counted, and summed up once the file is done
        where = f" at byte {position}" if position is not None else ""
        self.out.flush()
        print(f"Error: {file}{where}: {message}", file=self.err, flush=True)
        if self.json:
            self.out.line("", {"type": "error", "file": file, "position": position, "message": message})

    def _end_file(self, name: str) -> None:
        hidden = self.errors_in_file - MAX_ERRORS_SHOWN_PER_FILE
        if hidden > 0:
            self.out.flush()
            print(f"Error: {name}: {hidden} more errors not shown ({self.errors_in_file} in all)",
                  file=self.err, flush=True)
            if self.json:
                self.out.line("", {"type": "error", "file": name, "position": None,
                                   "message": f"{hidden} more errors not shown", "errors": self.errors_in_file})

    def dump_file(self, name: str) -> None:
        self.errors_in_file = 0
        self.out.line(f"Dumping {name}", {"type": "file", "file": name})
        base = os.path.basename(name)
        suffix = base[base.rfind("."):] if "." in base else ""
        if suffix in (".log", ".checkpoint"):
            self.dump_log(name)
        elif suffix == ".index":
            self.dump_index(name)
        elif suffix == ".timeindex":
            self.dump_time_index(name)
        elif suffix == ".snapshot":
            self.dump_producer_snapshot(name)
        elif suffix == ".txnindex":
            self.dump_txn_index(name)
        else:
            self.out.flush()
            print(f"Ignoring unknown file {name}", file=self.err, flush=True)
            if self.json:
                self.out.line("", {"type": "ignored", "file": name})
        self._end_file(name)
        self.out.maybe_flush()

    def _read(self, name: str, limit: int | None = None) -> bytes | None:
        try:
            with open(name, "rb") as f:
                return f.read() if limit is None else f.read(max(limit, 0))
        except OSError as exc:
            self.error(name, None, f"cannot read the file: {exc.strerror or exc}")
            return None

    # -- .log and .checkpoint --

    def dump_log(self, name: str) -> None:
        base = os.path.basename(name)
        if base.endswith(".log"):
            stem = base.split(".")[0]
            if stem.isdigit():
                self.out.line(f"Log starting offset: {int(stem)}",
                              {"type": "logStartOffset", "file": name, "offset": int(stem)})
            else:
                self.error(name, None, f"a segment name must be its base offset (20 digits), not {base!r}")
        elif base == BOOTSTRAP_FILE_NAME:
            self.out.line("KRaft bootstrap snapshot", {"type": "bootstrapSnapshot", "file": name})
        else:
            parsed = parse_snapshot_file_name(base)
            if parsed is None:
                self.error(name, None, "a snapshot name must be <20-digit end offset>-<10-digit epoch>.checkpoint")
            else:
                sid = parsed[0]
                self.out.line(f"Snapshot end offset: {sid.end_offset}, epoch: {sid.epoch}",
                              {"type": "snapshot", "file": name, "endOffset": sid.end_offset, "epoch": sid.epoch})
        limit = None if self.opts.max_bytes == INT_MAX else self.opts.max_bytes
        data = self._read(name, limit)
        if data is None:
            return
        # With --max-bytes the read stops where it was told to, usually inside a batch: that
        # batch is left out, as Kafka's slice leaves it out, and is no error.
        cut = limit is not None and len(data) == limit and os.path.getsize(name) > limit
        self._dump_batches(name, data, cut)


    def _dump_batches(self, name: str, data: bytes, cut: bool = False) -> None:
        stop = len(data)        # where framing ended: the bytes from there on are "invalid"
        last_offset = [-1]      # as Kafka's: a segment starting past 0 is "-1 is followed by <base>"
        entries = scan_log(data, file=name) if self.native_lines is None else \
            self._entries_around_native_runs(name, data, last_offset)
        for entry in entries:
            if isinstance(entry, TruncatedTail):
                stop = entry.position
                if not cut:
                    self._torn_tail(name, entry)
                break
            if isinstance(entry, Corruption):
                if entry.kind == SIZE_BELOW_MINIMUM:
                    stop = entry.position
                    self.error(name, entry.at, f"found record size {entry.size} smaller than minimum record "
                                               f"overhead ({MIN_ENTRY_SIZE}); the rest of the file cannot be framed")
                    break
                self._corrupt_batch(name, entry)
            else:
                self._dump_batch(name, entry, last_offset)
            self.out.maybe_flush()
        trailing = len(data) - stop
        if trailing > 0 and self.opts.max_bytes == INT_MAX:
            self.out.line(f"Found {trailing} invalid bytes at the end of {os.path.basename(name)}",
                          {"type": "trailingBytes", "file": name, "position": stop, "bytes": trailing})

    def _entries_around_native_runs(self, name: str, data: bytes, last_offset: list):
        """scan_log's entries that the C loop (NativeLines.run, which writes the batches it
        takes on) leaves to the pure loop: each time, the one it stopped at."""
        position = 0
        while True:
            position = self.native_lines.run(data, position, last_offset, self.out)
            entry = next(scan_log(data, position, file=name), None)
            if entry is None:
                return
            yield entry
            if isinstance(entry, TruncatedTail) or (isinstance(entry, Corruption) and entry.kind == SIZE_BELOW_MINIMUM):
                return  # the pure loop stops there too
            position += LOG_OVERHEAD + _ENTRY_SIZE.unpack_from(data, position + 8)[0]

    def _torn_tail(self, name: str, tail: TruncatedTail) -> None:
        if tail.available <= HEADER_SIZE_UP_TO_MAGIC:
            self.error(name, tail.position, f"the file ends inside a batch: {tail.available} bytes left, fewer "
                                            f"than the {HEADER_SIZE_UP_TO_MAGIC + 1} needed to read a batch header")
        else:
            self.error(name, tail.position, f"truncated batch: it declares {tail.needed} bytes but only "
                                            f"{tail.available} are left in the file")

    def _corrupt_batch(self, name: str, entry: Corruption) -> None:
        if entry.kind == UNKNOWN_MAGIC:
            self.error(name, entry.at, f"{entry.reason}; skipping this batch of {entry.size + LOG_OVERHEAD} bytes")
        else:
            self.error(name, entry.at, entry.reason)

    def _dump_batch(self, name: str, batch, last_offset: list) -> None:
        position = batch.position
        try:
            if batch.magic == 2:
                if batch.attributes & 0x07 not in CODEC_NAMES:
                    raise CorruptRecordError(f"unknown compression codec id {batch.attributes & 0x07}",
                                             position + 21, name)
                self._dump_v2_batch(batch, name, position, last_offset)
            else:
                self._dump_legacy_batch(batch, name, position, last_offset)
        except CorruptRecordError as exc:
            self.error(name, exc.position if exc.position is not None else position, exc.reason)

    # -- the end-of-run reports Kafka prints on stderr --

    def print_findings(self) -> None:
        self.out.flush()
        err = self.err
        findings = []
        for path, pairs in _in_hashmap_order(self.index_mismatches):
            self.failed = True
            findings.append(f"Mismatches in :{path}")
            for index_offset in sorted(pairs, reverse=True):
                findings.append(f"  Index offset: {index_offset}, log offset: {pairs[index_offset]}")
        for path, pairs in _in_hashmap_order(self.time_index_mismatches):
            self.failed = True
            findings.append(f"Found timestamp mismatch in :{path}")
            findings += [f"  Index timestamp: {a}, log timestamp: {b}" for a, b in pairs]
        for path, pairs in _in_hashmap_order(self.time_index_out_of_order):
            self.failed = True
            findings.append(f"Found out of order timestamp in :{path}")
            findings += [f"  Index timestamp: {a}, Previously indexed timestamp: {b}" for a, b in pairs]
        for path, pairs in _in_hashmap_order(self.time_index_not_found):
            self.failed = True
            findings.append(f"The following indexed offsets are not found in :{path}")
            findings += [f"Indexed offset: {a}, found log offset: {b}" for a, b in pairs]
        for path, pairs in _in_hashmap_order(self.non_consecutive):
            findings.append(f"Non-consecutive offsets in {path}")
            findings += [f"  {a} is followed by {pairs[a]}" for a in sorted(pairs)]
        if findings:
            print("\n".join(findings), file=err, flush=True)
            if self.json:
                self.out.line("", {"type": "findings", "lines": findings})
                self.out.flush()


def _in_hashmap_order(by_path: dict):
    """Kafka keeps each report in a HashMap keyed by the file's absolute path, filled with
    computeIfAbsent as each file's first finding comes (``by_path`` has that insertion order)."""
    return [(path, by_path[path]) for path in string_computed_hashmap_order(by_path)]
