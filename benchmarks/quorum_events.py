"""benchmarks/quorum.py --events: what was happening in each node when a commit took over
20 ms (issue 28 goal 4: p99 <= 20 ms over a whole window).

On a shared machine a wall-clock p99 mixes our stalls with a process waiting for a core, so
each node runs under EVENTS_NODE, which records during the measuring window (SIGUSR1 to
SIGUSR2, as --profile), on CLOCK_MONOTONIC, which every process shares:

* tail commits: every commit-latency sample (a chunk of appends, weighted) over 20 ms, with
  its end and its latency (the leader's LatencyWindow._add);
* collections: each CPython collection of 2 ms or more, its generation and duration;
* loop holds: a task on the node's loop asks to sleep 2 ms; when it wakes 5 ms late or more,
  the hold and how much CPU the loop's thread used meanwhile. A hold whose CPU is at least half
  its wall time was the loop working (ours: a long callback); less, the thread waiting for a
  core or for the GIL (the machine's load, or another thread of ours holding the GIL);
* where the loop worked through a hold: a thread samples the loop thread's stack every 1 ms
  while the loop has not turned for 5 ms and its thread's CPU advanced at least half the time
  (the innermost kafkawire frames and the outermost);
* fsyncs of 5 ms or more (os.fsync, any thread), snapshots written (write_image) and segment
  rolls (Log.roll).

``summarize`` then counts, for the tail commits, the share whose time (end - latency .. end)
overlaps each kind of event on any node; a commit may overlap several kinds, and "none"
counts those that overlap no recorded event.
"""
from __future__ import annotations

import glob
import json
import os
import sys

TAIL_MS = 20.0

EVENTS_NODE = r"""
import asyncio, gc, json, os, runpy, signal, sys, time
out = os.path.join(os.environ["QUORUM_BENCH_EVENTS_DIR"], f"events-{os.getpid()}.json")
ev = {"tail": [], "gc": [], "hold": [], "fsync": [], "snapshot": [], "roll": [], "stack": {}}
on = [False]
def start(*_):
    for v in ev.values():
        v.clear()
    on[0] = True
def stop(*_):
    on[0] = False
    with open(out, "w") as f:
        json.dump(ev, f)
signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, stop)
gc_start = [0.0]
def gc_cb(phase, info):
    if phase == "start":
        gc_start[0] = time.monotonic()
    elif on[0]:
        took = (time.monotonic() - gc_start[0]) * 1000
        if took >= 2:
            ev["gc"].append((gc_start[0] * 1000, took, info["generation"]))
gc.callbacks.append(gc_cb)
real_fsync = os.fsync
def fsync(fd):
    t = time.monotonic()
    try:
        return real_fsync(fd)
    finally:
        took = (time.monotonic() - t) * 1000
        if on[0] and took >= 5:
            ev["fsync"].append((t * 1000, took))
os.fsync = fsync
from kafkawire.raft.node import metrics, driver_snapshots, load_generator
real_add = metrics.LatencyWindow._add
def add(self, when, ms, weight):
    if on[0] and ms > %(tail)s:
        ev["tail"].append((when, ms, weight))
    return real_add(self, when, ms, weight)
metrics.LatencyWindow._add = add
real_write = driver_snapshots.write_image
def write_image(*a, **k):
    t = time.monotonic()
    try:
        return real_write(*a, **k)
    finally:
        if on[0]:
            ev["snapshot"].append((t * 1000, (time.monotonic() - t) * 1000))
driver_snapshots.write_image = write_image
from kafkawire.storage import log as storage_log
real_roll = storage_log.Log.roll
def roll(self, *a, **k):
    t = time.monotonic()
    try:
        return real_roll(self, *a, **k)
    finally:
        if on[0]:
            ev["roll"].append((t * 1000, (time.monotonic() - t) * 1000))
storage_log.Log.roll = roll
beat = [time.monotonic()]
def where(frame):
    # The innermost kafkawire frames of the loop thread (where the loop works), and the
    # outermost one of them below the loop's callback.
    names = []
    while frame is not None:
        code = frame.f_code
        if "kafkawire" in code.co_filename:
            names.append(f"{code.co_filename.rsplit('kafkawire/', 1)[-1]}:{code.co_name}")
        frame = frame.f_back
    return " < ".join(names[:2] + names[-1:]) if names else "(outside kafkawire)"
def sampler(loop_tid, clock):
    # Every 1 ms (it gets the GIL at the loop thread's switch interval when that thread works):
    # while the loop has not turned for 5 ms and its thread used at least half of that in CPU,
    # where it is.
    last_cpu, last_t = time.clock_gettime(clock), time.monotonic()
    while True:
        time.sleep(0.001)
        now, cpu = time.monotonic(), time.clock_gettime(clock)
        working = cpu - last_cpu >= (now - last_t) / 2
        last_cpu, last_t = cpu, now
        if on[0] and working and now - beat[0] >= 0.005:
            frame = sys._current_frames().get(loop_tid)
            key = where(frame)
            ev["stack"][key] = ev["stack"].get(key, 0) + 1
async def watch_loop():
    import threading
    tid = threading.get_ident()
    threading.Thread(target=sampler, args=(tid, time.pthread_getcpuclockid(tid)), daemon=True).start()
    while True:
        t, c = time.monotonic(), time.thread_time()
        beat[0] = t
        await asyncio.sleep(0.002)
        beat[0] = time.monotonic()
        late = (time.monotonic() - t) * 1000 - 2
        if on[0] and late >= 5:
            ev["hold"].append((t * 1000, late + 2, (time.thread_time() - c) * 1000))
real_run = load_generator.LoadGenerator.run
async def run(self):
    asyncio.ensure_future(watch_loop())
    return await real_run(self)
load_generator.LoadGenerator.run = run
sys.argv = ["kafkawire", *sys.argv[3:]]
runpy.run_module("kafkawire.tools.cli", run_name="__main__")
""" % {"tail": TAIL_MS}


def node_interpreter(directory: str, script_name: str, source: str, directory_variable: str) -> str:
    """An interpreter for LocalQuorum (a shell script in ``directory``) that runs each node under
    ``source``, written to ``script_name`` there, with ``directory_variable`` naming ``directory``."""
    script = os.path.join(directory, script_name)
    with open(script, "w") as f:
        f.write(source)
    wrapper = os.path.join(directory, "python")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\n{directory_variable}="{directory}" exec "{sys.executable}" "{script}" "$@"\n')
    os.chmod(wrapper, 0o755)
    return wrapper


def events_python(directory: str) -> str:
    """An interpreter for LocalQuorum that runs each node under EVENTS_NODE."""
    return node_interpreter(directory, "events_node.py", EVENTS_NODE, "QUORUM_BENCH_EVENTS_DIR")


def _overlaps(start: float, end: float, events, length=lambda e: e[1]) -> bool:
    return any(e[0] < end and e[0] + length(e) > start for e in events)


def summarize(directory: str, leader_pid: int | None) -> list[str]:
    """Lines that say what the tail commits overlapped; the files are removed."""
    nodes = {}
    for path in glob.glob(os.path.join(directory, "events-*.json")):
        with open(path) as f:
            nodes[int(path.rsplit("-", 1)[1].split(".")[0])] = json.load(f)
        os.remove(path)
    if not nodes:
        return ["events: no node wrote its events"]
    tail = nodes.get(leader_pid, {}).get("tail", [])
    kinds = {
        "a collection (any node)": [e for n in nodes.values() for e in n["gc"]],
        "a loop hold, working (any node)": [e for n in nodes.values() for e in n["hold"] if e[2] >= e[1] / 2],
        "a loop hold, waiting for a core or the GIL (any node)":
            [e for n in nodes.values() for e in n["hold"] if e[2] < e[1] / 2],
        "an fsync of 5 ms or more (any node)": [e for n in nodes.values() for e in n["fsync"]],
        "a snapshot write (any node)": [e for n in nodes.values() for e in n["snapshot"]],
        "a segment roll (any node)": [e for n in nodes.values() for e in n["roll"]],
    }
    weight = sum(w for _, _, w in tail)
    lines = [f"events: {weight} appends committed in over {TAIL_MS:.0f} ms, in {len(tail)} samples; "
             f"what their time overlapped (appends, share):"]
    matched = [False] * len(tail)
    for kind, events in kinds.items():
        hit = 0
        for i, (end, ms, w) in enumerate(tail):
            if _overlaps(end - ms, end, events):
                hit += w
                matched[i] = True
        lines.append(f"  {kind}: {hit} ({hit / weight:.0%})" if weight else f"  {kind}: -")
    none = sum(w for (_, _, w), m in zip(tail, matched) if not m)
    lines.append(f"  none of these: {none} ({none / weight:.0%})" if weight else "  none of these: -")
    for pid, n in sorted(nodes.items()):
        role = "leader" if pid == leader_pid else "follower"
        gcs = n["gc"]
        work = [e for e in n["hold"] if e[2] >= e[1] / 2]
        wait = [e for e in n["hold"] if e[2] < e[1] / 2]
        lines.append(
            f"  {role} {pid}: collections >= 2 ms {len(gcs)} (gen2 {sum(g[2] == 2 for g in gcs)}, longest "
            f"{max((g[1] for g in gcs), default=0):.0f} ms); loop holds >= 5 ms working {len(work)} (longest "
            f"{max((h[1] for h in work), default=0):.0f} ms), waiting {len(wait)} (longest "
            f"{max((h[1] for h in wait), default=0):.0f} ms); fsyncs >= 5 ms {len(n['fsync'])} (longest "
            f"{max((f[1] for f in n['fsync']), default=0):.0f} ms); snapshots {len(n['snapshot'])} (longest "
            f"{max((w[1] for w in n['snapshot']), default=0):.0f} ms); segment rolls {len(n['roll'])}")
    for pid, n in sorted(nodes.items()):
        top = sorted(n["stack"].items(), key=lambda kv: -kv[1])[:4]
        if top:
            lines.append(f"  where node {pid}'s loop worked through holds (1 ms samples): "
                         + "; ".join(f"{count} {where}" for where, count in top))
    return lines
