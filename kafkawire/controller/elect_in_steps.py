"""ElectLeaders over every partition (TopicPartitions null: `kafka-leader-election
--all-topic-partitions`) of a large cluster, in bounded steps.

Kafka's controller walks every partition in one event (ReplicationControlManager.electLeaders),
1.0 s of CPU at 1M partitions. Here the same walk in one event held the active controller's
loop 2.7-3.5 s at 1M, past the followers' fetch timeout, and cost it its leadership
(benchmarks/README.md, "The cost curve beside Kafka's controller"). So above STEP_PARTITIONS
partitions the topics (named as the image lists them when the request comes) are taken in
steps of whole topics of about STEP_PARTITIONS partitions, each step a write of its own
(generated against the uncommitted image of its moment, a topic deleted meanwhile left out,
one created meanwhile not visited), with the loop given back between steps, so heartbeats and
other writes run between them. The answer is the steps' answers joined, in the image's topic
order, as the one-event walk gives it.

Differences from Kafka's one event, both deliberate and documented (docs/differences.md):
a step's elections are written when it runs, so when the request's deadline passes or the
MAX_RECORDS_PER_USER_OP bound is crossed in a later step (REQUEST_TIMED_OUT, POLICY_VIOLATION
for the whole request, as Kafka answers them) the earlier steps' elections stay written; and
the partitions are judged at their step's moment, not all at one.
"""
from __future__ import annotations

import asyncio

from kafkawire.messages.elect_leaders_response import ElectLeadersResponse

from .bounded import MAX_RECORDS_PER_USER_OP, BoundedList, BoundedListTooLong
from .leader_election import elect_in_topics, election_type

__all__ = ["STEP_PARTITIONS", "needs_steps", "elect_every_partition_in_steps"]

STEP_PARTITIONS = 2_000      # ~5 ms a step when nothing needs electing, ~40 ms when all are tried


def needs_steps(state, request) -> bool:
    """Every partition asked for, and more of them than one step takes (counted only that far)."""
    if request.topic_partitions is not None:
        return False
    seen = 0
    for topic in state.image.topics_by_name.values():
        seen += len(topic.partitions)
        if seen > STEP_PARTITIONS:
            return True
    return False


def _steps(image, names: list[str]) -> list[list[str]]:
    steps, current, size = [], [], 0
    for name in names:
        topic = image.topics_by_name.get(name)
        current.append(name)
        size += len(topic.partitions) if topic is not None else 0
        if size >= STEP_PARTITIONS:
            steps.append(current)
            current, size = [], 0
    if current:
        steps.append(current)
    return steps


async def elect_every_partition_in_steps(controller, request, api_version: int, timeout_ms: int):
    """The answer to ``request`` (TopicPartitions null) by ``controller`` (a MetadataController)."""
    election = election_type(request, api_version)
    deadline_ms = controller.clock() + max(timeout_ms, 0)
    results, written = [], [0]
    for names in _steps(controller.state.image, list(controller.state.image.topics_by_name)):

        def generate(names=names):
            records, step_results = elect_in_topics(controller.state, names, election,
                                                    controller.static_min_insync_replicas,
                                                    BoundedList(MAX_RECORDS_PER_USER_OP))
            if written[0] + len(records) > MAX_RECORDS_PER_USER_OP:
                raise BoundedListTooLong(f"Cannot add another element to the list because it would exceed the "
                                         f"maximum length of {MAX_RECORDS_PER_USER_OP}")
            written[0] += len(records)
            return records, step_results

        step_results, _ = await controller.write(generate, timeout_ms=max(deadline_ms - controller.clock(), 0))
        results.extend(step_results)
        await asyncio.sleep(0)          # the loop's turn (its I/O included) before the next step
    return ElectLeadersResponse(error_code=0, replica_election_results=results)
