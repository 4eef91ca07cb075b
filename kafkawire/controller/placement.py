"""Replica placement for new partitions: Kafka's StripedReplicaPlacer without racks.

Usable brokers are the registered ones not in controlled shutdown. The unfenced and the fenced
ones are each shuffled once; partition p's first replica (its leader) is the unfenced broker at
(start + p) in the rotation, the others follow it around the unfenced list and only then take
fenced brokers, so leaders spread evenly and never land on a fenced broker. The refusals and
their messages are Kafka's.
"""
from __future__ import annotations

import random as _random


class InvalidReplicationFactor(ValueError):
    """StripedReplicaPlacer's InvalidReplicationFactorException; the message is Kafka's."""


def check_placeable(replication_factor: int, unfenced: list[int], fenced: list[int]) -> None:
    """The refusals ``place`` makes before placing any partition."""
    if replication_factor <= 0:
        raise InvalidReplicationFactor(f"Invalid replication factor {replication_factor}: the replication factor "
                                       "must be positive.")
    if not unfenced:
        raise InvalidReplicationFactor("All brokers are currently fenced, or have all their log directories "
                                       "cordoned.")
    total = len(unfenced) + len(fenced)
    if replication_factor > total:
        raise InvalidReplicationFactor(f"The target replication factor of {replication_factor} cannot be reached "
                                       f"because only {total} broker(s) are registered or some brokers have all their log "
                                       "directories cordoned.")


def place(num_partitions: int, replication_factor: int, unfenced: list[int], fenced: list[int],
          rng: _random.Random) -> list[list[int]]:
    check_placeable(replication_factor, unfenced, fenced)
    unfenced, fenced = sorted(unfenced), sorted(fenced)
    rng.shuffle(unfenced)
    rng.shuffle(fenced)
    start = rng.randrange(len(unfenced))
    placements = []
    for p in range(num_partitions):
        first = (start + p) % len(unfenced)
        order = unfenced[first:] + unfenced[:first] + fenced
        placements.append(order[:replication_factor])
    return placements
