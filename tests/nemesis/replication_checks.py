"""What must hold after the replication nemesis, for each partition of the replicated topic:

- the replicas' logs agree byte for byte below the high watermark (read from the segment files);
- every acknowledged value is in every replica's log exactly once, at its acknowledged offset
  (``lost``: absent; ``misplaced``: elsewhere; ``duplicated``: a value anywhere twice). An
  idempotent librdkafka producer acknowledges without an offset (None) a batch whose own answer
  was lost when a later batch of its shows the broker has it (its "implicit ack"): such a value
  must be there once, wherever;
- the consumer read every acknowledged value once, at its offset, and every value of a
  committed transaction; it never read a value of an aborted transaction.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from kafkawire.records import iter_batches

from .checks import batches_below


def values_by_offset(batches: list[bytes]) -> dict[int, str]:
    """offset -> value of every data record of the batches (control batches skipped)."""
    out = {}
    for raw in batches:
        for batch in iter_batches(raw):
            if batch.is_control:
                continue
            for record in batch:
                out[record.offset] = bytes(record.value).decode(errors="replace")
    return out


@dataclass
class ReplicationVerdict:
    replicas_agree: bool = True
    records_below_hw: int = 0
    lost: list = field(default_factory=list)              # acked, absent from a replica's log
    misplaced: list = field(default_factory=list)         # acked, at another offset
    duplicated: list = field(default_factory=list)        # a value twice in the log
    not_read: list = field(default_factory=list)          # acked or committed, never read by the consumer
    read_twice: list = field(default_factory=list)
    read_misplaced: list = field(default_factory=list)
    aborted_read: list = field(default_factory=list)      # a value of an aborted transaction, read committed

    @property
    def ok(self) -> bool:
        return self.replicas_agree and not (self.lost or self.misplaced or self.duplicated or self.not_read
                                            or self.read_twice or self.read_misplaced or self.aborted_read)


def check_replicas(dirs_by_partition: dict[int, dict[int, str]], high_watermarks: dict[int, int],
                   acked: dict[str, tuple], verdict: ReplicationVerdict) -> None:
    """``dirs_by_partition``: partition -> node -> its partition directory; ``acked``: value ->
    (partition, offset, ...)."""
    for index, dirs in dirs_by_partition.items():
        logs = {node: batches_below(d, high_watermarks[index]) for node, d in dirs.items()}
        reference = next(iter(logs.values()))
        verdict.replicas_agree &= all(log == reference for log in logs.values())
        for node, batches in logs.items():
            by_offset = values_by_offset(batches)
            verdict.records_below_hw += len(by_offset) if node == next(iter(dirs)) else 0
            where = defaultdict(list)
            for offset, value in by_offset.items():
                where[value].append(offset)
            verdict.duplicated += [(node, index, v, o) for v, o in where.items() if len(o) > 1]
            for value, (partition, offset, *_rest) in acked.items():
                if partition != index:
                    continue
                if value not in where:
                    verdict.lost.append((node, index, value, offset))
                elif offset is not None and where[value] != [offset]:
                    verdict.misplaced.append((node, index, value, offset, where[value]))


def check_reads(read: dict[str, list], acked: dict[str, tuple], committed: set[str], aborted: set[str],
                verdict: ReplicationVerdict) -> None:
    for value, (partition, offset, *_rest) in acked.items():
        seen = read.get(value, [])
        if not seen:
            verdict.not_read.append(value)
        elif len(seen) > 1:
            verdict.read_twice.append((value, seen))
        elif offset is not None and seen[0] != (partition, offset):
            verdict.read_misplaced.append((value, (partition, offset), seen[0]))
    verdict.not_read += sorted(v for v in committed if v not in read)
    verdict.read_twice += sorted((v, read[v]) for v in committed if len(read.get(v, ())) > 1)
    verdict.aborted_read += sorted(v for v in aborted if v in read)
