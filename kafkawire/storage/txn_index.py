"""Kafka's transaction index (``.txnindex``, TransactionIndex): the aborted transactions of a
segment, one 34-byte entry each (big-endian, no header)::

    version int16 | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64
"""
from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = ["AbortedTxn", "ENTRY_SIZE", "read_txn_index"]

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
