"""A partition-move job's timeline, at DEBUG on this module's logger (issue 28, goal 1: "fencing a
broker that leads 10% of 1M partitions: the leader changes committed within 2 s"): where the
wall time of a fence goes between its steps' generation on the active controller, their commit
and their replay on the other voters.

Off (the default, INFO), each hook costs one level check. On (``kafka-configs --entity-type
broker-loggers --entity-name N --alter --add-config kafkawire.controller.fence_timeline=DEBUG``,
or ``python -m tests.nemesis.paced_storm --fence fence --timeline``, which sets it on every node
before the fence), every node logs:

* the active controller, each job step (fencing.py, one event of at most MAX_MOVES_PER_EVENT
  partitions): its offsets, the CPU of its generation and apply, and how many of the broker's
  leaderships are left to move after it;
* every node, each committed batch: its offsets, whether it had been applied ahead (the active
  controller's own writes), and the CPU of its replay otherwise (a follower's).

Each line carries ``t=`` (time.time(), to the 0.1 ms: the nodes share the machine's clock), which
benchmarks/fence_timeline.py reads from the nodes' logs into the timeline.
"""
from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)


def enabled() -> bool:
    return log.isEnabledFor(logging.DEBUG)


def job_started(broker_id: int, leaderships: int, partitions: int, started: float) -> None:
    """``started``: time.monotonic() at the job's start, before its partitions were listed."""
    listed_s = time.monotonic() - started
    log.debug("t=%.4f job of broker %d started: %d leaderships, %d partitions to visit (listed in %.1f ms)",
              time.time() - listed_s, broker_id, leaderships, partitions, listed_s * 1000)


def step(node_id: int, first_offset: int, records: int, cpu_s: float, leaderships_left: int) -> None:
    log.debug("controller %d: t=%.4f step offsets %d-%d (%d records) generated and applied in %.2f ms of CPU; "
              "%d leaderships left", node_id, time.time(), first_offset, first_offset + records - 1, records,
              cpu_s * 1000, leaderships_left)


def committed(node_id: int, base_offset: int, records: int, replay_cpu_s: float | None) -> None:
    how = "applied ahead" if replay_cpu_s is None else f"replayed in {replay_cpu_s * 1000:.2f} ms of CPU"
    log.debug("controller %d: t=%.4f committed offsets %d-%d (%d records), %s", node_id, time.time(),
              base_offset, base_offset + records - 1, records, how)
