"""The log cleaner's speed (kafkawire.broker.cleaner_work.Cleaner.clean, one log): MB of dirty log
cleaned per second, and how long the event loop waits at most while a cleaning runs on the
cleaner's thread (the reason the work is on a thread).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/log_cleaner.py

The log: 200,000 records of 100-byte values in batches of 100 (uncompressed, as a producer without
compression writes them), 8 MiB segments, keys drawn from 10,000 (most records superseded, as in
__consumer_offsets) or all distinct (every record kept: the batches are copied as they are).
Prints the median of 3 cleanings of a fresh copy of each log, and, for the first log cleaned on
the thread, the longest gap between ticks of a 1 ms timer on the event loop. Quote the load
average (``uptime``) with the numbers: the machine is shared.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import tempfile
import time

from kafkawire.broker.cleaner_filter import OffsetMap
from kafkawire.broker.cleaner_work import Cleaner, CleaningJob, SourceSegment
from kafkawire.broker.log_config import LogSettings
from kafkawire.records.builder import build_batch
from kafkawire.storage.log import Log

RECORDS, PER_BATCH, VALUE = 200_000, 100, b"v" * 100
SEGMENT_BYTES = 8 << 20
ROUNDS = 3


def make_log(directory: str, distinct_keys: int) -> int:
    log_ = Log(directory, segment_bytes=SEGMENT_BYTES)
    now = int(time.time() * 1000)
    for start in range(0, RECORDS, PER_BATCH):
        log_.append(build_batch([(b"key-%d" % (i % distinct_keys), VALUE, [], now)
                                 for i in range(start, start + PER_BATCH)]), assign_offsets=True)
    log_.roll()
    log_.append(build_batch([(b"last", VALUE, [], now)]), assign_offsets=True)
    size = sum(s.size for s in log_.segments[:-1])
    log_.close()
    return size


def job_of(directory: str) -> CleaningJob:
    log_ = Log(directory, segment_bytes=SEGMENT_BYTES)
    segments = log_.segments
    sources = [SourceSegment(s.base_offset, segments[i + 1].base_offset, s.log_path, s.size,
                             int(os.stat(s.log_path).st_mtime * 1000), s.max_timestamp, -1,
                             s.offset_index.size_in_bytes, s.time_index.size_in_bytes)
               for i, s in enumerate(segments[:-1])]
    end = segments[-1].base_offset
    log_.close()
    return CleaningJob("bench-0", directory, sources, 0, end, LogSettings(cleanup_policy=("compact",),
                       segment_bytes=SEGMENT_BYTES), int(time.time() * 1000))


def clean_once(template: str, work: str) -> float:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(template, work)
    cleaner = Cleaner(OffsetMap(128 << 20))
    job = job_of(work)
    start = time.perf_counter()
    cleaner.clean(job, swap=lambda new_base, old_bases: True)
    return time.perf_counter() - start


async def longest_loop_gap(template: str, work: str) -> tuple[float, float, float]:
    """(seconds of the cleaning on a thread, the longest gap between 1 ms ticks meanwhile, the longest
    gap over one idle second before: the machine's own noise)."""
    idle, last, until = 0.0, time.perf_counter(), time.perf_counter() + 1
    while last < until:
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        idle, last = max(idle, now - last), now
    loop = asyncio.get_running_loop()
    task = loop.run_in_executor(None, clean_once, template, work)
    worst, last = 0.0, time.perf_counter()
    while not task.done():
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        worst, last = max(worst, now - last), now
    return await task, worst, idle


def main() -> None:
    base = tempfile.mkdtemp(prefix="cleaner-bench-")
    try:
        for label, keys in (("10,000 keys", 10_000), ("all distinct", RECORDS)):
            template, work = os.path.join(base, f"t-{keys}"), os.path.join(base, "w-0")
            size = make_log(template, keys)
            seconds = statistics.median(clean_once(template, work) for _ in range(ROUNDS))
            print(f"{label:>13}: {size / 1e6:6.1f} MB dirty, median {seconds:6.2f} s, {size / 1e6 / seconds:6.1f} MB/s, "
                  f"{RECORDS / seconds / 1e3:6.0f} k records/s")
            if keys == 10_000:
                total, gap, idle = asyncio.run(longest_loop_gap(template, work))
                print(f"{'':>13}  on a thread: {total:6.2f} s, longest event-loop gap {gap * 1000:.1f} ms "
                      f"(idle: {idle * 1000:.1f} ms)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
