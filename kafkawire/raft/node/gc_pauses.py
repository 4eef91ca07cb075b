"""Logs CPython's long garbage collections. A full (generation 2) collection walks every
container object the process tracks and holds the event loop for all of it: at a million
partitions the controller's image is millions of objects, and a pause longer than
controller.quorum.fetch.timeout.ms costs the leader its followers' fetches (issue 28). The
line says how long and which generation, so such a pause can be told from other stalls in
the node's log."""
from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger(__name__)

LONG_PAUSE_MS = 100
_started: list[float] = []


def _on_collection(phase: str, info: dict) -> None:
    if phase == "start":
        _started[:] = [time.perf_counter()]
        return
    if not _started:
        return
    took_ms = (time.perf_counter() - _started.pop()) * 1000
    if took_ms >= LONG_PAUSE_MS:
        log.warning("garbage collection of generation %d took %.0f ms (%d objects collected, %d uncollectable)",
                    info.get("generation", -1), took_ms, info.get("collected", 0), info.get("uncollectable", 0))


def log_long_pauses() -> None:
    """Install the callback once per process."""
    if _on_collection not in gc.callbacks:
        gc.callbacks.append(_on_collection)
