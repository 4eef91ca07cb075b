"""KIP-848 heartbeats in the coordinator (kafkawire.broker.consumer_coordinator), without I/O: the
cost of a steady heartbeat (nothing to do) against that of a member joining a group whose target
assignment the uniform assignor then computes again, in one run.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/consumer_group_heartbeat.py [--members 100] [--partitions 1000]
        [--topics 1] [--heterogeneous]

A group of ``--members`` members subscribed to ``--topics`` topics of ``--partitions`` partitions
each (with ``--heterogeneous``, member i subscribes to topics 0 and i % topics, so the
subscriptions differ); prints the median of 5 rounds of: one steady heartbeat of each
member, and one new member joining (a new target for everyone, the records written), with the
ratio. Writes go to a list (no log).
"""
from __future__ import annotations

import argparse
import statistics
import time
import uuid

from kafkawire.broker.consumer_coordinator import ConsumerCoordinator, ConsumerSettings, TopicsView
from kafkawire.broker.group_coordinator import GroupCoordinator, GroupSettings
from kafkawire.messages.consumer_group_heartbeat_request import ConsumerGroupHeartbeatRequest

ROUNDS = 5


class Timer:
    def schedule(self, key, delay_ms, callback):
        pass

    def cancel(self, key):
        pass


def group(members: int, partitions: int, topics: int, heterogeneous: bool):
    written: list = []
    classic = GroupCoordinator(GroupSettings(), timer=Timer(), persist=lambda g, r: written.extend(r) or 0,
                               now_ms=lambda: 0)
    view = TopicsView.of((f"t{i}", uuid.UUID(int=i + 1), partitions) for i in range(topics))
    coordinator = ConsumerCoordinator(classic, ConsumerSettings(assignment_interval_ms=0), topics=lambda: view)

    def names(i):
        return sorted({"t0", f"t{i % topics}"}) if heterogeneous else [f"t{t}" for t in range(topics)]

    def join(member_id, i):
        return coordinator.heartbeat(ConsumerGroupHeartbeatRequest(
            group_id="g", member_id=member_id, member_epoch=0, rebalance_timeout_ms=30_000,
            subscribed_topic_names=names(i), topic_partitions=[]), version=1, client_id="c", client_host="/h")
    for i in range(members):
        join(f"m{i}", i)
    return coordinator, join, written


def steady(coordinator) -> float:
    g = coordinator.groups["g"]
    started = time.perf_counter()
    for member in list(g.members.values()):
        coordinator.heartbeat(ConsumerGroupHeartbeatRequest(group_id="g", member_id=member.member_id,
                                                            member_epoch=member.member_epoch),
                              version=1, client_id="c", client_host="/h")
    return (time.perf_counter() - started) / len(g.members)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=1)
    parser.add_argument("--heterogeneous", action="store_true")
    args = parser.parse_args()
    steady_s, join_s = [], []
    for _ in range(ROUNDS):
        coordinator, join, written = group(args.members, args.partitions, args.topics, args.heterogeneous)
        steady_s.append(steady(coordinator))
        before = len(written)
        started = time.perf_counter()
        join("newcomer", args.members)
        join_s.append(time.perf_counter() - started)
        records = len(written) - before
    s, j = statistics.median(steady_s), statistics.median(join_s)
    print(f"{args.members} members, {args.topics} x {args.partitions} partitions"
          f"{' (heterogeneous)' if args.heterogeneous else ''}:")
    print(f"  steady heartbeat   median {s * 1e6:9.1f} us")
    print(f"  joining heartbeat  median {j * 1e3:9.2f} ms ({records} records)   ratio {j / s:.0f}x")


if __name__ == "__main__":
    main()
