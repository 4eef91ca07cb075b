"""Faults a simulation injects besides message loss, duplication and delay: crashes,
symmetric and one-way partitions, corrupt Fetch and FetchSnapshot payloads, and per-node
clocks that run at their own rate from their own origin.

A mixin of Simulation: it uses the simulation's clock, random stream, nodes and event heap.
"""
from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from typing import TYPE_CHECKING

from kafkawire.protocol import framing

if TYPE_CHECKING:
    from .node import SimNode
    from .world import SimSettings

FETCH, FETCH_SNAPSHOT = 1, 59


class FaultInjection:
    # What the mixin uses of Simulation, the class it is mixed into:
    seed: int
    settings: SimSettings
    rng: random.Random
    now: int
    nodes: dict[int, SimNode]
    blocked: set[tuple[int, int]]
    stats: Counter
    faults_enabled: bool

    if TYPE_CHECKING:
        def log(self, line: str) -> None: ...
        def _push(self, time: int, kind: str, *data: object) -> None: ...
        def _crash(self, node: SimNode, restart_after_ms: int) -> None: ...

    # --- crashes and partitions -------------------------------------------------------------------
    def _next_fault_delay(self) -> int:
        return max(1, int(self.rng.expovariate(1.0 / self.settings.fault_every_ms)))

    def _on_fault(self) -> None:
        if self.faults_enabled:
            s = self.settings
            kinds = ["crash"] * s.crash_weight + ["partition"] * s.partition_weight + ["one_way"] * s.one_way_weight \
                + ["heal"] * 2
            kind = self.rng.choice(kinds)
            ids = sorted(self.nodes)
            if kind == "crash":
                alive = [i for i in ids if self.nodes[i].alive]
                if alive:
                    self._crash(self.nodes[self.rng.choice(alive)], self.rng.randint(200, 5000))
            elif kind == "partition":
                group = set(self.rng.sample(ids, self.rng.randint(1, max(1, len(ids) // 2))))
                self.blocked = {(a, b) for a in ids for b in ids if (a in group) != (b in group)}
                self.stats["partitions"] += 1
                self.log(f"partition {sorted(group)} | {sorted(set(ids) - group)}")
            elif kind == "one_way" and len(ids) >= 2:
                a, b = self.rng.sample(ids, 2)
                self.blocked.add((a, b))
                self.stats["one_way_cuts"] += 1
                self.log(f"one-way cut {a} -> {b}")
            elif kind == "heal":
                self.blocked.clear()
                self.log("heal the network")
        self._push(self.now + self._next_fault_delay(), "fault")

    # --- corrupt payloads ---------------------------------------------------------------------------
    def _maybe_corrupt(self, frame: bytes, api_key: int, version: int) -> bytes:
        """With probability ``corrupt_rate``, the records of a Fetch response or the chunk of a
        FetchSnapshot response arrive damaged: 1 to 128 random bytes in their place (Kafka's
        testRandomRecords), or 1 to 3 bytes of them changed. The follower must refuse them and
        keep its log as it was."""
        if not (self.faults_enabled and self.settings.corrupt_rate and api_key in (FETCH, FETCH_SNAPSHOT)
                and self.rng.random() < self.settings.corrupt_rate):
            return frame
        correlation_id, body = framing.decode_response(frame[4:], api_key, version)
        partition = _payload_partition(body, api_key)
        if partition is None:
            return frame
        field = "records" if api_key == FETCH else "unaligned_records"
        payload = bytearray(getattr(partition, field) or b"")
        if payload and self.rng.random() < 0.5:
            for _ in range(self.rng.randint(1, 3)):
                payload[self.rng.randrange(len(payload))] = self.rng.getrandbits(8)
            how = "changed bytes"
        else:
            payload = bytearray(self.rng.getrandbits(8) for _ in range(self.rng.randint(1, 128)))
            how = "random bytes"
        setattr(partition, field, bytes(payload))
        self.stats[f"corrupt_{'fetch' if api_key == FETCH else 'fetch_snapshot'}_payloads"] += 1
        self.log(f"corrupt the payload of response #{correlation_id} ({how})")
        return framing.encode_response(body, version, correlation_id)

    # --- clocks -----------------------------------------------------------------------------------
    def _set_up_clocks(self) -> None:
        """Each node's clock: local = origin + rate * simulated time, with the rate within
        ``clock_drift`` of 1 and a random origin (0 to an hour). Drawn from a stream of their
        own, so that runs without drift replay as before."""
        drift = self.settings.clock_drift
        rng = random.Random(self.seed * 7 + 3)
        self.clocks = {i: (rng.randint(0, 3_600_000), 1.0 + rng.uniform(-drift, drift)) if drift else (0, 1.0)
                       for i in sorted(self.nodes)}

    def local_time(self, node_id: int) -> int:
        origin, rate = self.clocks[node_id]
        return origin + int(self.now * rate)

    def _to_simulated(self, node_id: int, local_ms: int) -> int:
        """The first simulated time at which the node's clock reads ``local_ms`` or later."""
        origin, rate = self.clocks[node_id]
        at = max(0, math.ceil((local_ms - origin) / rate))
        while origin + int(at * rate) < local_ms:
            at += 1
        return at

    def _on_local_clock(self, node_id: int, event):
        return dataclasses.replace(event, now_ms=self.local_time(node_id))


def _payload_partition(body, api_key: int):
    topics = body.responses if api_key == FETCH else body.topics
    if not topics or not topics[0].partitions:
        return None
    return topics[0].partitions[0]
