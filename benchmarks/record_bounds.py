"""What a request past the controller's record bound (MAX_RECORDS_PER_USER_OP = 10,000) costs the
active controller, against a request at the bound. Run by hand (not part of the tests):

    PYTHONPATH=. .venv/bin/python benchmarks/record_bounds.py [--runs 7]

An in-process MetadataController (tests/controller/harness.py's fake raft) with three unfenced
brokers and a topic ``t`` of one partition. Each case is one request through the controller's
handler, validate-only where it would otherwise write, so every round starts from the same state:

* CreatePartitions t to 2^31-1 partitions: refused before any placement;
* CreatePartitions t to 10,001 partitions: at the bound, 10,000 placed (validate-only);
* CreateTopics with 2^31-1 partitions: refused on the count asked for, before any placement;
* CreateTopics with 9,999 partitions: 10,000 records, at the bound (validate-only);
* CreateAcls with 10,001 new ACLs: refused at the 10,001st record.

Numbers are milliseconds of process CPU time, the median of ``--runs`` rounds.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafkawire.messages.create_acls_request import AclCreation, CreateAclsRequest  # noqa: E402
from kafkawire.messages.create_partitions_request import (CreatePartitionsRequest,  # noqa: E402
                                                          CreatePartitionsTopic)
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest  # noqa: E402
from tests.controller.harness import (Ctx, FakeQuorum, Running, add_controller, broker_request,  # noqa: E402
                                      heartbeat, until)

HUGE = 2**31 - 1


def grow(count: int) -> CreatePartitionsRequest:
    return CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="t", count=count, assignments=None)],
                                   timeout_ms=60_000, validate_only=True)


def topic(name: str, partitions: int, validate_only: bool = True) -> CreateTopicsRequest:
    return CreateTopicsRequest(timeout_ms=60_000, validate_only=validate_only, topics=[
        CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)])


ACLS = CreateAclsRequest(creations=[AclCreation(resource_type=2, resource_name="t", resource_pattern_type=3,
                                                principal=f"User:u{i}", host="*", operation=3, permission_type=3)
                                    for i in range(10_001)])
CASES = [
    ("CreatePartitions to 2^31-1 (refused)", 37, 3, grow(HUGE)),
    ("CreatePartitions to 10,001 (at the bound)", 37, 3, grow(10_001)),
    ("CreateTopics of 2^31-1 partitions (refused)", 19, 7, topic("huge", HUGE)),
    ("CreateTopics of 9,999 partitions (at the bound)", 19, 7, topic("big", 9_999)),
    ("CreateAcls of 10,001 (refused)", 30, 3, ACLS),
]


async def measure(runs: int) -> dict[str, list[float]]:
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1, acls_enabled=True)
    times: dict[str, list[float]] = {name: [] for name, *_ in CASES}
    async with Running(leader):
        quorum.elect(1)
        await until(lambda: leader.is_active() and leader.registration.registered(), "activation")
        for b in (1, 2, 3):
            reply = await leader.handlers()[62].handle(Ctx(0), broker_request(b, log_dirs=[uuid.UUID(int=1000 + b)]))
            await leader.handlers()[63].handle(Ctx(0), heartbeat(b, reply.broker_epoch, quorum.end_offset))
        await leader.handlers()[19].handle(Ctx(7), topic("t", 1, validate_only=False))
        for _ in range(runs):
            for name, key, version, request in CASES:
                began = time.process_time()
                await leader.handlers()[key].handle(Ctx(version, key), request)
                times[name].append((time.process_time() - began) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    times = asyncio.run(measure(args.runs))
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, median in medians.items():
        print(f"{name:50s} {median:9.2f} ms")
    at_bound = medians["CreatePartitions to 10,001 (at the bound)"]
    print(f"refusing count=2^31-1 costs {medians['CreatePartitions to 2^31-1 (refused)'] / at_bound:.4f}x "
          "placing 10,000 partitions")


if __name__ == "__main__":
    main()
