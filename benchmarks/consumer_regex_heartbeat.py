"""KIP-848 regex subscriptions over many topics (kafkawire.broker.consumer_regex_refresh), without
I/O: the cost of a steady heartbeat of a regex member after a metadata change (Kafka's and now
kafkawire's: the group's topics come from the last resolution, no matching), and that of one
resolution (every topic matched once; at most once per group per 10 s).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/consumer_regex_heartbeat.py [--topics 100000] [--beats 30]

Prints the medians. Writes go nowhere (no log).
"""
from __future__ import annotations

import argparse
import statistics
import time
import uuid

from kafkawire.broker.consumer_coordinator import ConsumerCoordinator, ConsumerSettings, TopicsView
from kafkawire.broker.consumer_regex_refresh import resolve
from kafkawire.broker.group_coordinator import GroupCoordinator, GroupSettings
from kafkawire.messages.consumer_group_heartbeat_request import ConsumerGroupHeartbeatRequest

REGEX = "topic-1.*"


class Timer:
    """Keeps the timers; ``run_regex`` runs the pending regex resolutions (the session timers never fire)."""

    def __init__(self):
        self.now, self.due = 0, {}

    def schedule(self, key, delay_ms, callback):
        self.due[key] = callback

    def cancel(self, key):
        self.due.pop(key, None)

    def run_regex(self):
        for key in [k for k in self.due if k.startswith("consumer-regex")]:
            self.due.pop(key)()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=100_000)
    parser.add_argument("--beats", type=int, default=30)
    args = parser.parse_args()
    timer = Timer()
    view = TopicsView.of((f"topic-{i}", uuid.UUID(int=i + 1), 1) for i in range(args.topics))
    classic = GroupCoordinator(GroupSettings(), timer=timer, persist=lambda g, r: 0, now_ms=lambda: timer.now)
    coordinator = ConsumerCoordinator(classic, ConsumerSettings(assignment_interval_ms=0), topics=lambda: view)

    def beat(epoch, regex=None):
        return coordinator.heartbeat(ConsumerGroupHeartbeatRequest(
            group_id="g", member_id="m", member_epoch=epoch, rebalance_timeout_ms=30_000 if epoch == 0 else -1,
            subscribed_topic_regex=regex, topic_partitions=[] if epoch == 0 else None),
            version=1, client_id="c", client_host="/h")

    response = beat(0, REGEX)
    timer.run_regex()
    if response.member_epoch == 0:
        response = beat(0, REGEX)
    epoch, samples = response.member_epoch, []
    for _ in range(args.beats):
        timer.now += 1000
        coordinator.topics_changed({f"topic-{args.topics - 1}"})     # a topic grown: the group re-hashes
        start = time.perf_counter()
        response = beat(epoch)
        samples.append(time.perf_counter() - start)
        assert response.error_code == 0, response
        epoch = response.member_epoch
        timer.run_regex()
    resolutions = []
    for _ in range(5):
        start = time.perf_counter()
        resolve([REGEX], view)
        resolutions.append(time.perf_counter() - start)
    print(f"{args.topics} topics: heartbeat median {statistics.median(samples) * 1000:.2f} ms over {args.beats}; "
          f"one resolution median {statistics.median(resolutions) * 1000:.1f} ms over 5")


if __name__ == "__main__":
    main()
