"""Kafka's transaction index (``.txnindex``, TransactionIndex): the aborted transactions of a
segment, one 34-byte entry each (big-endian, no header)::

    version int16 | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64

Version 0 (AbortedTxn.CURRENT_VERSION). The file sits beside its segment's ``.log``
(``<base offset on 20 digits>.txnindex``) and exists only once an aborted transaction's marker
was written into that segment.
"""
from __future__ import annotations

import os
import struct
from typing import NamedTuple

__all__ = ["AbortedTxn", "ENTRY_SIZE", "TXN_INDEX_SUFFIX", "TransactionIndex", "encode_aborted_txn", "read_txn_index"]

TXN_INDEX_SUFFIX = ".txnindex"

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size   # 34


class AbortedTxn(NamedTuple):
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def read_txn_index(data) -> tuple[list[AbortedTxn], int | None]:
    """The whole entries of a ``.txnindex`` file's bytes, and the byte position where a partial
    last entry starts (None when the size is a multiple of 34)."""
    usable = len(data) - len(data) % ENTRY_SIZE
    entries = [AbortedTxn(*fields) for fields in _ENTRY.iter_unpack(data[:usable])]
    return entries, (usable if usable != len(data) else None)


def encode_aborted_txn(entry: AbortedTxn) -> bytes:
    """One 34-byte entry, as TransactionIndex.append writes AbortedTxn's buffer."""
    return _ENTRY.pack(*entry)


class TransactionIndex:
    """A segment's ``.txnindex`` file as its log writes it (Kafka's TransactionIndex): aborted
    transactions appended in the order of their markers, read back from the file each time
    (the file is small and rarely read: only read_committed fetches of aborted data ask)."""

    def __init__(self, path):
        self.path = os.fspath(path)

    def entries(self) -> list[AbortedTxn]:
        """The whole entries of the file (none when it does not exist; a partial tail ignored)."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        return read_txn_index(data)[0]

    def append(self, entry: AbortedTxn, *, last_offset: int | None = None) -> None:
        """Append one entry; its last offset must be above the last entry's (``last_offset``, when
        the caller knows it), as TransactionIndex.append insists."""
        if last_offset is not None and last_offset >= entry.last_offset:
            raise ValueError(f"The last offset of appended transactions must increase sequentially, but "
                             f"{entry.last_offset} is not greater than current last offset {last_offset} of "
                             f"index {self.path}")
        with open(self.path, "ab") as f:
            f.write(encode_aborted_txn(entry))

    def sync_handle(self) -> int | None:
        """A descriptor of the file for an fsync (the caller fsyncs and closes it); None without a file."""
        try:
            return os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose transaction ended at or after ``offset`` (TransactionIndex.truncateTo)."""
        entries = self.entries()
        keep = 0
        while keep < len(entries) and entries[keep].last_offset < offset:
            keep += 1
        if keep < len(entries) or (os.path.exists(self.path) and os.path.getsize(self.path) != keep * ENTRY_SIZE):
            with open(self.path, "r+b") as f:
                f.truncate(keep * ENTRY_SIZE)

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """TransactionIndex.collectAbortedTxns: the entries overlapping [fetch_offset,
        upper_bound_offset), and whether the search is complete (an entry's last stable offset
        reached the upper bound, so no later segment can hold one that overlaps)."""
        found = []
        for entry in self.entries():
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound_offset:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False
