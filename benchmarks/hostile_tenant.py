"""The controller under a hostile tenant (issue 24): the cost of one big request's authorization,
of CreateTopics' collision check and of one authorizer decision, as the request, the topics or
the ACLs grow. Linear work shows as a constant cost per item (a ratio near 1 between sizes);
quadratic work as a per-item cost growing with the size.

Run by hand (not part of the tests), in process (no sockets: the wrapped handlers and the
controller functions are called directly, with a request context as the unit tests make it):

    PYTHONPATH=. .venv/bin/python benchmarks/hostile_tenant.py [--sizes 1000,10000,100000]
        [--acl-sizes 100,10000,100000] [--runs 3] [--only describe]

Cases:

* ``<api> wrapper``: the authorization wrapper of CreateTopics, CreatePartitions,
  IncrementalAlterConfigs, DescribeConfigs and DeleteTopics (v6, by name) for a request of N
  distinct topic names from User:mallory, through a StandardAuthorizer reading a metadata image
  as the controller node does (ControllerNode._acls), the controller behind it a stub that
  answers every entry it gets. "no ACLs": the image has none (everything refused); "ACLs on
  half": mallory has ALL on every other name (half kept, half refused).
* ``collision check``: the controller's CreateTopics for min(N, 10,000) names 't.<i>' (one
  partition each: a request of more is refused whole by the 10,000-partition bound before any
  per-name work) against an image of N topics 't_<i>' (each name collides; no placement
  happens). From 10,000 to 100,000 the request stays the same and only the unrelated topics
  grow, so the ratio there is the cost of the existing topics alone.
* ``decision``: one authorizer decision (DESCRIBE_CONFIGS on a topic, for a user with no
  rights) with N unrelated ACLs in the image (LITERAL and PREFIXED ACLs of other names and
  users), the mean of 200 decisions.

Each figure is the median of ``--runs`` runs, in seconds of process CPU time (the garbage
collector off while timing), then the cost per
item (per name, or per decision), and the ratio of the per-item cost to that of the previous
size. The script imports only what the code before issue 24's fix also has, so the same file
run in a checkout of 79f8ea6 shows the cost before.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafkawire.controller.state import ControllerState  # noqa: E402
from kafkawire.controller.topics import create_topics  # noqa: E402
from kafkawire.messages.access_control_entry_record import AccessControlEntryRecord  # noqa: E402
from kafkawire.messages.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic  # noqa: E402
from kafkawire.messages.create_partitions_response import (CreatePartitionsResponse,  # noqa: E402
                                                           CreatePartitionsTopicResult)
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest  # noqa: E402
from kafkawire.messages.create_topics_response import CreatableTopicResult, CreateTopicsResponse  # noqa: E402
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState  # noqa: E402
from kafkawire.messages.delete_topics_response import DeletableTopicResult, DeleteTopicsResponse  # noqa: E402
from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource  # noqa: E402
from kafkawire.messages.describe_configs_response import DescribeConfigsResponse, DescribeConfigsResult  # noqa: E402
from kafkawire.messages.incremental_alter_configs_request import (AlterConfigsResource,  # noqa: E402
                                                                  IncrementalAlterConfigsRequest)
from kafkawire.messages.incremental_alter_configs_response import (AlterConfigsResourceResponse,  # noqa: E402
                                                                   IncrementalAlterConfigsResponse)
from kafkawire.messages.topic_record import TopicRecord  # noqa: E402
from kafkawire.metadata.image import MetadataImage  # noqa: E402
from kafkawire.net.admin_authorization import (authorizing_alter_configs, authorizing_create_partitions,  # noqa: E402
                                               authorizing_delete_topics, authorizing_describe_configs)
from kafkawire.net.authorizer import (AuthorizerSettings, Op, StandardAuthorizer,  # noqa: E402
                                      authorizing_create_topics)
from kafkawire.net.server import ApiHandler, RequestContext  # noqa: E402
from kafkawire.raft.node.controller_node import ControllerNode  # noqa: E402

TOPIC, GROUP = 2, 3
LITERAL, PREFIXED = 3, 4
ALLOW = 3
MALLORY = "User:mallory"
DECISIONS = 200


def ctx(api_key: int, version: int) -> RequestContext:
    return RequestContext(api_key, version, 1, "c", ("10.0.0.1", 0), "CONTROLLER", "conn", principal=MALLORY)


def image_with_acls(acls) -> MetadataImage:
    image = MetadataImage()
    for i, (resource_type, name, pattern, principal, operation) in enumerate(acls):
        image.apply(AccessControlEntryRecord(id=uuid.UUID(int=i + 1), resource_type=resource_type,
                                             resource_name=name, pattern_type=pattern, principal=principal,
                                             host="*", operation=operation, permission_type=ALLOW))
    return image


def node_authorizer(image: MetadataImage) -> StandardAuthorizer:
    """The authorizer as the controller node builds it: its ACLs read through ControllerNode._acls."""
    node = SimpleNamespace(_image=lambda: image)
    return StandardAuthorizer(AuthorizerSettings(), lambda: ControllerNode._acls(node), lambda: True)


# --- the wrapped handlers: a stub controller behind each wrapper ------------------------------------

async def _create_topics(context, request):
    return CreateTopicsResponse(topics=[CreatableTopicResult(name=t.name) for t in request.topics])


async def _create_partitions(context, request):
    return CreatePartitionsResponse(results=[CreatePartitionsTopicResult(name=t.name) for t in request.topics])


async def _alter_configs(context, request):
    return IncrementalAlterConfigsResponse(responses=[AlterConfigsResourceResponse(
        resource_type=r.resource_type, resource_name=r.resource_name) for r in request.resources])


async def _describe_configs(context, request):
    return DescribeConfigsResponse(results=[DescribeConfigsResult(
        resource_type=r.resource_type, resource_name=r.resource_name) for r in request.resources])


async def _delete_topics(context, request):
    return DeleteTopicsResponse(responses=[DeletableTopicResult(name=t.name) for t in request.topics])


WRAPPERS = {
    # api: (wrap(authorizer) -> handler, request(names), context)
    "CreateTopics": (lambda a: authorizing_create_topics(ApiHandler(_create_topics), a),
                     lambda names: CreateTopicsRequest(topics=[CreatableTopic(name=n) for n in names]), ctx(19, 7)),
    "CreatePartitions": (lambda a: authorizing_create_partitions(ApiHandler(_create_partitions), a),
                         lambda names: CreatePartitionsRequest(topics=[CreatePartitionsTopic(name=n, count=2)
                                                                       for n in names]), ctx(37, 3)),
    "IncrementalAlterConfigs": (
        lambda a: authorizing_alter_configs(ApiHandler(_alter_configs), a, AlterConfigsResourceResponse),
        lambda names: IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(resource_type=TOPIC,
                                                                                     resource_name=n)
                                                                for n in names]), ctx(44, 1)),
    "DescribeConfigs": (lambda a: authorizing_describe_configs(ApiHandler(_describe_configs), a),
                        lambda names: DescribeConfigsRequest(resources=[DescribeConfigsResource(
                            resource_type=TOPIC, resource_name=n) for n in names]), ctx(32, 4)),
    "DeleteTopics": (lambda a: authorizing_delete_topics(ApiHandler(_delete_topics), a, lambda topic_id: None),
                     lambda names: DeleteTopicsRequest(topics=[DeleteTopicState(name=n) for n in names]), ctx(20, 6)),
}


def wrapper_case(api: str, with_acls: bool):
    wrap, make_request, context = WRAPPERS[api]

    def prepare(size: int):
        names = [f"topic-{i}" for i in range(size)]
        acls = [(TOPIC, n, LITERAL, MALLORY, Op.ALL) for n in names[::2]] if with_acls else []
        handler = wrap(node_authorizer(image_with_acls(acls)))
        request = make_request(names)
        return lambda: asyncio.run(handler.handle(context, request)), size
    return prepare


MAX_PARTITIONS_PER_REQUEST = 10_000       # Kafka's bound (topics.MAX_PARTITIONS_PER_BATCH, not imported: see above)


def collision_case(size: int):
    state = ControllerState()
    for i in range(size):
        state.image.apply(TopicRecord(name=f"t_{i}", topic_id=uuid.UUID(int=i + 1)))
    names = min(size, MAX_PARTITIONS_PER_REQUEST)
    request = CreateTopicsRequest(topics=[CreatableTopic(name=f"t.{i}", num_partitions=1, replication_factor=1)
                                          for i in range(names)])
    return lambda: create_topics(state, request), names


def decision_case(size: int):
    acls = []
    for i in range(size):
        kind = i % 4
        if kind == 0:
            acls.append((TOPIC, f"other-{i}", LITERAL, "User:bob", Op.READ))
        elif kind == 1:
            acls.append((TOPIC, f"team{i % 1000}-", PREFIXED, f"User:team{i}", Op.ALL))
        elif kind == 2:
            acls.append((GROUP, f"orders-{i}", LITERAL, MALLORY, Op.READ))
        else:
            acls.append((TOPIC, f"orders-{i}", LITERAL, "User:carol", Op.DESCRIBE_CONFIGS))
    authorizer = node_authorizer(image_with_acls(acls))

    def decide():
        for i in range(DECISIONS):
            authorizer.authorize(MALLORY, "10.0.0.1", Op.DESCRIBE_CONFIGS, TOPIC, "orders")
    return decide, DECISIONS


# --- harness -----------------------------------------------------------------------------------------

def measure(prepare, size: int, runs: int) -> tuple[float, int]:
    """(median CPU seconds of ``runs`` calls, items per call)."""
    call, items = prepare(size)
    times = []
    for _ in range(runs):
        gc.collect()
        gc.disable()                # the collector's passes over a big heap are noise here
        try:
            t0 = time.process_time()
            call()
            times.append(time.process_time() - t0)
        finally:
            gc.enable()
    return statistics.median(times), items


def report(label: str, prepare, sizes: list[int], runs: int) -> None:
    cells, previous = [], None
    for size in sizes:
        seconds, items = measure(prepare, size, runs)
        per_item = seconds / items * 1e6
        ratio = "" if previous is None else f" x{per_item / previous:.2f}"
        cells.append(f"{size:>7,}: {seconds:8.4f}s {per_item:8.2f}us/item{ratio}")
        previous = per_item
    print(f"{label:<46} " + " | ".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="names per request / topics")
    parser.add_argument("--acl-sizes", default="100,10000,100000", help="unrelated ACLs in the image")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="", help="run the cases whose label contains this text")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    acl_sizes = [int(s) for s in args.acl_sizes.split(",")]
    print(f"median CPU seconds of {args.runs} runs; per item: per name (wrappers, collision check) or per "
          f"decision; xR: per-item cost / the previous size's (1.0 = linear, or constant for decisions)")
    cases = [(f"{api} wrapper, {'ACLs on half' if with_acls else 'no ACLs'}", wrapper_case(api, with_acls), sizes)
             for api in WRAPPERS for with_acls in (False, True)]
    cases.append(("CreateTopics collisions (<=10k vs N topics)", collision_case, sizes))
    cases.append((f"decision ({DECISIONS}), N unrelated ACLs", decision_case, acl_sizes))
    for label, prepare, case_sizes in cases:
        if args.only.lower() in label.lower():
            report(label, prepare, case_sizes, args.runs)


if __name__ == "__main__":
    main()
