"""Spike: the v2 record loop (varints, key/value/headers) in C and in Rust/PyO3 against the
pure path and aiokafka's Cython extension. Records/s of CPU time, median of 7 rounds."""
import statistics
import sys
from pathlib import Path
sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[2]), str(Path(__file__).parents[1])]
import records as bench  # benchmarks/records.py: same workload
import spike_c, spike_rs
import aiokafka.record.default_records as ak
from kafkawire.records import RecordBatch

buf = bench.kw_encode()
b = RecordBatch.from_buffer(buf)
start, end, n = 61, len(buf), b.records_count
assert spike_c.decode(buf, start, end, n) == spike_rs.decode(buf, start, end, n)

def tuples(dec):
    def run():
        for off, ts, k, v, h, a in dec(buf, start, end, n):
            pass
    return run

calls = {
    "pure Python (kafkawire today)": lambda: bench.kw_decode(buf),
    "C ext, list of tuples, bytes": tuples(spike_c.decode),
    "Rust/PyO3 abi3, list of tuples, bytes": tuples(spike_rs.decode),
    "aiokafka C ext (Cython)": lambda: bench._batch_decoder(ak.DefaultRecordBatch)(buf),
}
rates = bench.measure_all(calls, 7, 0.3)
for name, r in rates.items():
    print(f"{name:<40} {statistics.median(r):>12,.0f} rec/s")
