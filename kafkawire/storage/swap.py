"""The file protocol by which the log cleaner replaces segments, and its recovery when a log opens
(Kafka's LocalLog.replaceSegments and the first three passes of LogLoader.load).

A cleaning writes one new segment per group of old segments, under names ending ``.cleaned``
(``00000000000000000000.log.cleaned``, ``.index.cleaned``, ``.timeindex.cleaned``, ``.txnindex.cleaned``).
The swap then, in this order:

1. renames the new segment's files ``.cleaned`` -> ``.swap``;
2. renames the old segments' files ``.deleted`` (removed ``file.delete.delay.ms`` later);
3. renames the new segment's files ``.swap`` -> their final names.

A stop at any point is completed or rolled back when the log opens (``recover_interrupted_swaps``):
every ``.cleaned`` file is deleted, and so is every ``.swap`` file whose base offset is at or above
the smallest ``.cleaned`` base offset (a swap not wholly past step 1); for each remaining
``.log.swap`` the segment files of other names whose base offset is in [its base offset, its next
offset) are deleted (the old segments it replaces), and every remaining ``.swap`` file takes its
final name.

    recover_interrupted_swaps(directory)            # before the log's segments are listed
    rename_segment_files(directory, 0, CLEANED_SUFFIX, SWAP_SUFFIX)
"""
from __future__ import annotations

import logging
import os
import re

from kafkawire.records import iter_batches

__all__ = ["CLEANED_SUFFIX", "SWAP_SUFFIX", "SEGMENT_FILE_SUFFIXES", "rename_segment_files",
           "recover_interrupted_swaps", "segment_file_paths"]

log = logging.getLogger(__name__)
CLEANED_SUFFIX = ".cleaned"            # LogFileUtils.CLEANED_FILE_SUFFIX
SWAP_SUFFIX = ".swap"                  # LogFileUtils.SWAP_FILE_SUFFIX
SEGMENT_FILE_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")
_OFFSET_PREFIX = re.compile(r"^(\d+)\.")        # LogFileUtils.offsetFromFile: the digits before the first dot


def segment_file_paths(directory: str, base_offset: int, suffix: str = "") -> list[str]:
    """The existing files of the segment at ``base_offset`` whose names end ``suffix``."""
    stem = os.path.join(directory, f"{base_offset:020d}")
    return [path for path in (stem + ext + suffix for ext in SEGMENT_FILE_SUFFIXES) if os.path.exists(path)]


def rename_segment_files(directory: str, base_offset: int, old_suffix: str, new_suffix: str) -> list[str]:
    """Rename the files of a segment from ``old_suffix`` to ``new_suffix`` (LogSegment.changeFileSuffixes);
    the new paths."""
    renamed = []
    for path in segment_file_paths(directory, base_offset, old_suffix):
        target = path[:len(path) - len(old_suffix)] + new_suffix
        os.replace(path, target)
        renamed.append(target)
    return renamed


def _offset_of(name: str) -> int | None:
    match = _OFFSET_PREFIX.match(name)
    return int(match.group(1)) if match else None


def _next_offset(path: str, base_offset: int) -> int:
    """One past the last offset of a ``.log.swap`` file's whole batches (LogSegment.readNextOffset)."""
    with open(path, "rb") as f:
        data = f.read()
    next_offset = base_offset
    for batch in iter_batches(data, verify_crc=False):
        next_offset = batch.next_offset
    return next_offset


def _remove(path: str, why: str) -> None:
    log.info("%s: %s", why, path)
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _valid_swap_files(directory: str, names: list[str]) -> list[str]:
    """Pass one: ``.cleaned`` files deleted, and the ``.swap`` files at or past the smallest of them."""
    cleaned = [n for n in names if n.endswith(CLEANED_SUFFIX)]
    min_cleaned = min((_offset_of(n) for n in cleaned if _offset_of(n) is not None), default=None)
    valid = []
    for name in names:
        if not name.endswith(SWAP_SUFFIX):
            continue
        offset = _offset_of(name)
        if min_cleaned is not None and offset is not None and offset >= min_cleaned:
            _remove(os.path.join(directory, name), "Deleting a swap file of an incomplete swap")
        else:
            valid.append(name)
    for name in cleaned:
        _remove(os.path.join(directory, name), "Deleting a stray .cleaned file")
    return valid


def recover_interrupted_swaps(directory: str) -> list[str]:
    """Complete or roll back the swaps a stop interrupted (see the module docstring); the files
    that took their final names."""
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    swaps = _valid_swap_files(directory, names)
    low, high = None, None
    for name in swaps:
        if name.endswith(".log" + SWAP_SUFFIX):
            base = _offset_of(name)
            if base is None:
                continue
            end = _next_offset(os.path.join(directory, name), base)
            low = base if low is None else min(low, base)
            high = end if high is None else max(high, end)
    if low is not None:
        for name in os.listdir(directory):
            offset = _offset_of(name)
            if name.endswith(SWAP_SUFFIX) or offset is None or not low <= offset < high:
                continue
            if os.path.isfile(os.path.join(directory, name)):
                _remove(os.path.join(directory, name), "Deleting a segment file replaced by an interrupted swap")
    recovered = []
    for name in swaps:
        path = os.path.join(directory, name)
        os.replace(path, path[:-len(SWAP_SUFFIX)])
        log.info("Recovered %s by renaming it from %s", name, SWAP_SUFFIX)
        recovered.append(path[:-len(SWAP_SUFFIX)])
    return recovered
