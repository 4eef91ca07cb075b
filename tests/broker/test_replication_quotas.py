"""Replication quotas (KIP-73, kafkawire.broker.replication_quotas) as Kafka 4.3.1's
ReplicationQuotaManager: the rate from the dynamic broker configs, the throttled partitions from
the topic configs, the leader's answers to followers out of the ISR emptied while the quota is
exceeded (and their throttled bytes counted), the follower's throttled partitions left out of
its fetches while its quota is exceeded (and their fetched bytes counted). In-process: stand-in
images and brokers, the fetcher with the fake client of test_replica_follower."""
from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

from kafkawire.broker.fetch import FetchApi
from kafkawire.broker.quotas import fetch_response_size
from kafkawire.broker.replica_state import LeaderReplicas
from kafkawire.broker.replication_quotas import (ALL_PARTITIONS, FOLLOWER, LEADER, ReplicationQuota, SimpleRate,
                                                 throttled_partitions)
from kafkawire.messages.fetch_response import FetchableTopicResponse, FetchResponse, PartitionData

from .test_replica_follower import batch, fetch_answer, fetcher_for, follower_at

TOPIC, BROKER = 2, 4


def image(configs: dict, offset: int = 1):
    return SimpleNamespace(configs=configs, provenance=SimpleNamespace(offset=offset),
                           topics_by_name={}, topics_by_id={})


def quota(kind, configs, broker_id=1, now=None):
    now = now if now is not None else [0]
    images = [image(configs)]
    return ReplicationQuota(kind, lambda: images[0], broker_id, 11, 1, clock=lambda: now[0]), images, now


def test_throttled_replicas_are_all_or_the_partitions_paired_with_this_broker():
    assert throttled_partitions(" * ", 1) == ALL_PARTITIONS
    assert throttled_partitions("0:1,1:2,2:1", 1) == {0, 2}
    assert throttled_partitions("0:2", 1) == frozenset()


def test_the_simple_rate_counts_at_least_one_window_not_samples_minus_one():
    rate = SimpleRate(11, 1000)
    rate.record(500.0, 0)
    assert rate.measure(0) == 500.0                      # Rate would say 50 (10 windows at first)
    rate.record(500.0, 4000)
    assert rate.measure(4000) == 250.0                   # 1000 bytes over the 4 s since the first sample


def test_the_rate_is_this_brokers_then_the_cluster_default_and_the_partitions_come_from_the_topic():
    configs = {(BROKER, ""): {"leader.replication.throttled.rate": "1000"},
               (TOPIC, "t"): {"leader.replication.throttled.replicas": "0:1,1:2",
                              "follower.replication.throttled.replicas": "*"}}
    leader, images, now = quota(LEADER, configs)
    assert leader.is_throttled("t", 0) and not leader.is_throttled("t", 1) and not leader.is_throttled("u", 0)
    leader.record(900)
    assert not leader.is_quota_exceeded()
    leader.record(200)
    assert leader.is_quota_exceeded()                    # 1100 bytes in the first second
    now[0] = 1100
    assert not leader.is_quota_exceeded()                # 1100 over 1.1 s
    images[0] = image({**configs, (BROKER, "1"): {"leader.replication.throttled.rate": "500"}}, offset=2)
    assert leader.is_quota_exceeded()                    # this broker's own rate wins over the default
    follower, _, _ = quota(FOLLOWER, configs)
    assert follower.is_throttled("t", 7)
    follower.record(10 ** 9)
    assert not follower.is_quota_exceeded()              # no follower rate set: no bound


def leader_broker(configs, isr):
    leader, _, _ = quota(LEADER, configs)
    replicas = LeaderReplicas(1, max_lag_ms=30_000, broker_epoch=lambda broker_id: 1)
    replicas.make_leader(replicas=[1, 2, 3], isr=sorted(isr), leader_epoch=1, partition_epoch=1, log_end_offset=0,
                         now_ms=0, is_new_leader=True)
    partition = SimpleNamespace(replicas=replicas)
    topic = SimpleNamespace(name="t", id=uuid.UUID(int=9))
    broker = SimpleNamespace(leader_quota=leader, image=lambda: SimpleNamespace(topics_by_id={topic.id: topic},
                                                                                topics_by_name={"t": topic}))
    return FetchApi.__new__(FetchApi), broker, partition, topic


def test_the_leader_empties_a_throttled_partition_for_a_follower_out_of_the_isr_while_over_its_quota():
    configs = {(BROKER, "1"): {"leader.replication.throttled.rate": "100"},
               (TOPIC, "t"): {"leader.replication.throttled.replicas": "0:1"}}
    api, broker, partition, topic = leader_broker(configs, isr={1, 2})
    api.broker = broker
    assert not api._leader_throttles(partition, "t", 0, 3)          # within the quota
    broker.leader_quota.record(1000)
    assert api._leader_throttles(partition, "t", 0, 3)              # out of the ISR, throttled, over the quota
    assert not api._leader_throttles(partition, "t", 0, 2)          # in the ISR: never (no ISR thrashing)
    assert not api._leader_throttles(partition, "t", 1, 3)          # partition 1 is not throttled here
    # each answer to a follower counts its throttled partitions' size (v13+: topics by id)
    api, broker, _, topic = leader_broker(configs, isr={1})
    api.broker = broker
    throttled = PartitionData(partition_index=0, records=b"x" * 300)
    answer = FetchResponse(responses=[FetchableTopicResponse(topic="", topic_id=topic.id, partitions=[
        throttled, PartitionData(partition_index=1, records=b"y" * 5000)])])
    api._record_replication(answer, 16)
    expected = fetch_response_size(FetchResponse(responses=[FetchableTopicResponse(
        topic="", topic_id=topic.id, partitions=[throttled])]), 16)
    assert broker.leader_quota.rate.measure(0) == expected and 300 < expected < 400


def test_the_follower_leaves_out_a_throttled_partition_not_caught_up_while_over_its_quota(tmp_path):
    configs = {(BROKER, ""): {"follower.replication.throttled.rate": "100"},
               (TOPIC, "t"): {"follower.replication.throttled.replicas": "0:1"}}
    follower = follower_at(tmp_path)
    fetcher, client, clock = fetcher_for(follower)
    fetcher.quota, _, _ = quota(FOLLOWER, configs)
    records = batch(0, 3, 2)
    client.answers.append(fetch_answer(follower, high_watermark=10, log_start_offset=0, records=records))
    asyncio.run(fetcher.do_work())                                  # not over the quota yet: fetched
    state = fetcher.partitions[follower.key]
    assert (state.fetch_offset, state.lag) == (2, 8)
    assert fetcher.quota.rate.measure(0) == len(records)           # recorded
    fetcher.quota.record(1000)                                     # now over it
    fetcher.settings = fetcher.settings.__class__(replica_id=1, backoff_ms=10)

    async def held_back():
        await asyncio.wait_for(fetcher.do_work(), 2)               # waits the backoff, sends nothing
    asyncio.run(held_back())
    assert len(client.sent) == 1
    state.lag = 0                                                  # caught up: fetched despite the quota
    client.answers.append(fetch_answer(follower, high_watermark=2, log_start_offset=0, records=b""))
    asyncio.run(fetcher.do_work())
    assert len(client.sent) == 2
