"""ElectLeaders over every partition (TopicPartitions null: `kafka-leader-election
--all-topic-partitions`) of a large cluster, in bounded steps.

Kafka's controller walks every partition in one event (ReplicationControlManager.electLeaders),
1.0 s of CPU at 1M partitions. Here the same walk in one event held the active controller's
loop 2.7-3.5 s at 1M, past the followers' fetch timeout, and cost it its leadership
(benchmarks/README.md, "The cost curve beside Kafka's controller"). So above STEP_PARTITIONS
partitions the topics (named as the image lists them when the request comes) are taken in
steps of whole topics, a step ending after the topic that takes it to STEP_PARTITIONS
partitions that needed an election or WALK_PARTITIONS partitions looked at (the two costs
differ a hundredfold: at 100k partitions with a tenth of them refused, 50 steps of 2,000
became 5; benchmarks/README.md), each step a write of its own
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
from .leader_election import StepBudget, elect_in_topics, election_type

__all__ = ["STEP_PARTITIONS", "WALK_PARTITIONS", "needs_steps", "elect_every_partition_in_steps"]

STEP_PARTITIONS = 2_000      # elections a step tries (~20 us each that writes a record, ~2.5 us a refusal)
WALK_PARTITIONS = 50_000     # partitions a step looks at in all (~0.25 us each that needs no election)


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


async def elect_every_partition_in_steps(controller, request, api_version: int, timeout_ms: int):
    """The answer to ``request`` (TopicPartitions null) by ``controller`` (a MetadataController)."""
    election = election_type(request, api_version)
    deadline_ms = controller.clock() + max(timeout_ms, 0)
    names = list(controller.state.image.topics_by_name)
    budget = StepBudget(partitions=WALK_PARTITIONS, elections=STEP_PARTITIONS)
    results, written = [], [0]
    while budget.position < len(names):

        def generate():
            budget.next_step()
            records, step_results = elect_in_topics(controller.state, names, election,
                                                    BoundedList(MAX_RECORDS_PER_USER_OP), budget)
            if written[0] + len(records) > MAX_RECORDS_PER_USER_OP:
                raise BoundedListTooLong(f"Cannot add another element to the list because it would exceed the "
                                         f"maximum length of {MAX_RECORDS_PER_USER_OP}")
            written[0] += len(records)
            return records, step_results

        step_results, _ = await controller.write(generate, timeout_ms=max(deadline_ms - controller.clock(), 0))
        results.extend(step_results)
        await asyncio.sleep(0)          # the loop's turn (its I/O included) before the next step
    return ElectLeadersResponse(error_code=0, replica_election_results=results)
