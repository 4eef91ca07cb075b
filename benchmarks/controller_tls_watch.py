"""What watching the controller listeners' TLS stores costs the active controller of a
controller-only node, per commit, at a cluster's size (kafkawire.tools.server_start
watch_controller_ssl_stores), in process: benchmarks/controller_scale.py's Cluster (the fake
raft of tests/controller/harness.py, appends commit on the next loop turn; --brokers brokers,
topics of 100 partitions), then --rounds writes one after the other, each timed in the thread's
CPU (time.thread_time) from the request until its answer and one more turn of the loop (the
watcher's work after the commit included). Every tenth write is an IncrementalAlterConfigs of
this node's broker config (the record the watcher acts on: it rebuilds nothing, the stores are
unchanged), the others a CreateTopics of 10 partitions. Between rounds, once a second has
passed, every broker heartbeats (untimed). The watchers are measured one after the other on the
same cluster, in the order given.

--watch picks the watcher:
* ``none``: no TLS controller listener, nothing watched;
* ``view``: as before this stop: a publisher of the committed image (a view of it made at each
  publish, and held until the next, so each commit copies the maps it changes), the watcher
  reading the broker's configs from the view;
* ``configs``: now: the watcher reads the broker's two config maps from the committed image
  (CommittedImage.resource_configs), no view.

    .venv/bin/python benchmarks/controller_tls_watch.py [--partitions 100000,1000000] [--rounds 300]
        [--watch none,view,configs]
"""
from __future__ import annotations

import asyncio
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.controller_scale import (CREATE_TOPICS, _topic, cpu_summary, each_size, frozen_cluster,  # noqa: E402
                                         write_cost_arguments)
from kafkawire.broker.listener_ssl_reload import ListenerSslReload  # noqa: E402
from kafkawire.messages.create_topics_request import CreateTopicsRequest  # noqa: E402
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,  # noqa: E402
                                                                  IncrementalAlterConfigsRequest)
from kafkawire.tools.server_start import CommittedConfigs, broker_metadata  # noqa: E402
from tests.controller.harness import Ctx  # noqa: E402

INCREMENTAL_ALTER_CONFIGS = 44
NODE = 1
WATCHERS = ("none", "view", "configs")


def watch(controller, how: str):
    """The watcher as watch_controller_ssl_stores sets it up (no listener to rebuild: what is
    measured is finding out whether a record of the broker arrived); returns what removes it."""
    if how == "none":
        return lambda: None
    reload = ListenerSslReload({}, NODE, check_changes=True)
    listeners = controller.committed.listeners
    if how == "view":
        published = broker_metadata(controller)
        published.listeners.append(lambda: reload.on_metadata(published.image, []))
        added = published.committed_moved
    else:
        committed = CommittedConfigs(controller.committed)
        added = lambda: reload.on_metadata(committed, [])      # noqa: E731
        listeners.append(added)
    return lambda: listeners.remove(added)


def _request(i: int):
    if i % 10 == 9:
        return INCREMENTAL_ALTER_CONFIGS, IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=4, resource_name=str(NODE), configs=[
                AlterableConfig(name="log.retention.ms", config_operation=0, value=str(60_000 + i))])])
    return CREATE_TOPICS, CreateTopicsRequest(topics=[_topic(f"watch{i}", 10)], timeout_ms=30_000)


def _ok(response) -> bool:
    results = getattr(response, "topics", None) or getattr(response, "responses", None)
    return all(r.error_code == 0 for r in results)


async def measure(partitions: int, brokers: int, rounds: int, watchers: list[str]) -> list[dict]:
    cluster, built_s = await frozen_cluster(partitions, brokers)
    rows = []
    for how in watchers:
        unwatch, samples = watch(cluster.controller, how), []
        for i in range(rounds):
            await cluster.keep_sessions()               # untimed
            api, request = _request(len(rows) * rounds + i)
            cpu = time.thread_time()
            response = await cluster.handlers[api].handle(Ctx(5), request)
            await asyncio.sleep(0)                      # the publish scheduled by the commit
            samples.append((time.thread_time() - cpu) * 1e6)
            assert _ok(response), response
        unwatch()
        rows.append({"watch": how, **cpu_summary(samples)})
    await cluster.stop()
    for row in rows:
        row.update({"partitions": partitions, "built s": built_s})
    return rows


def main() -> None:
    parser = write_cost_arguments(__doc__)
    parser.add_argument("--watch", default="none,view,configs", help="watchers to compare, comma-separated")
    args = parser.parse_args()
    watchers = args.watch.split(",")
    if not set(watchers) <= set(WATCHERS):
        parser.error(f"--watch {args.watch!r}: comma-separated names among {', '.join(WATCHERS)}")
    for partitions in each_size(args.partitions):
        for row in asyncio.run(measure(partitions, args.brokers, args.rounds, watchers)):
            print(f"{row['partitions']:>8} partitions (built in {row['built s']:.0f} s), watch {row['watch']:>7}: CPU "
                  f"per write p50 {row['p50 us']:.0f} us, p90 {row['p90 us']:.0f} us, mean {row['mean us']:.0f} us "
                  f"({args.rounds} rounds, 1 in 10 a broker config)", flush=True)


if __name__ == "__main__":
    main()
