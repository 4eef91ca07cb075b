"""The controller's handlers for what brokers send besides registration and heartbeats:
AllocateProducerIds (67), AlterPartition (56) and AssignReplicasToDirs (73).

Each computes its records from the committed state through the controller's serialized write
path, with no deadline (Kafka's ControllerApis gives these three none), and answers as Kafka's ControllerApis does: a refusal of the whole request (not the
active controller, a stale broker epoch) goes into the response's top-level error code
(getErrorResponse), per-partition errors into their partitions.
"""
from __future__ import annotations

from kafkawire.messages.allocate_producer_ids_response import AllocateProducerIdsResponse
from kafkawire.messages.alter_partition_response import AlterPartitionResponse
from kafkawire.messages.assign_replicas_to_dirs_response import AssignReplicasToDirsResponse
from kafkawire.net.server import ApiHandler

from .alter_partition import alter_partition
from .assign_dirs import assign_replicas_to_dirs
from .errors import ApiError
from .producer_ids import allocate_producer_ids

ALTER_PARTITION, ALLOCATE_PRODUCER_IDS, ASSIGN_REPLICAS_TO_DIRS = 56, 67, 73
ALTER_PARTITION_MIN_VERSION = 2          # Kafka 4.x serves AlterPartition v2-v3 (topic ids)


def handlers(controller) -> dict:
    """ApiHandlers bound to ``controller`` (a MetadataController)."""

    async def allocate(ctx, request):
        try:
            (first, length), _ = await controller.write(
                lambda: allocate_producer_ids(controller.state, request.broker_id, request.broker_epoch))
        except ApiError as exc:
            return AllocateProducerIdsResponse(error_code=exc.code)
        return AllocateProducerIdsResponse(producer_id_start=first, producer_id_len=length)

    async def alter(ctx, request):
        try:
            response, _ = await controller.write(
                lambda: alter_partition(controller.state, request, ctx.api_version))
        except ApiError as exc:
            return AlterPartitionResponse(error_code=exc.code)
        return response

    async def assign(ctx, request):
        try:
            response, _ = await controller.write(
                lambda: assign_replicas_to_dirs(controller.state, request))
        except ApiError as exc:
            return AssignReplicasToDirsResponse(error_code=exc.code)
        return response

    return {
        ALLOCATE_PRODUCER_IDS: ApiHandler(allocate),
        ALTER_PARTITION: ApiHandler(alter, min_version=ALTER_PARTITION_MIN_VERSION),
        ASSIGN_REPLICAS_TO_DIRS: ApiHandler(assign),
    }
