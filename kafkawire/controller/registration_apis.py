"""The controller's handlers for the requests that register nodes and keep brokers' sessions:
ControllerRegistration (70), BrokerRegistration (62) and BrokerHeartbeat (63), as Kafka's
QuorumController processes them (registerController, registerBroker, processBrokerHeartbeat).
Their records come from kafkawire.controller.cluster; the broker sessions they touch are the
controller's (kafkawire.controller.heartbeats).
"""
from __future__ import annotations

import logging

from kafkawire.messages.broker_heartbeat_response import BrokerHeartbeatResponse
from kafkawire.messages.broker_registration_response import BrokerRegistrationResponse
from kafkawire.messages.controller_registration_response import ControllerRegistrationResponse
from kafkawire.protocol.handler import ApiHandler
from kafkawire.storage.state_files import uuid_to_kafka

from . import cluster
from .errors import ApiError, WriteTimedOut

log = logging.getLogger(__name__)

CONTROLLER_REGISTRATION, BROKER_REGISTRATION, BROKER_HEARTBEAT = 70, 62, 63


def handlers(controller) -> dict:
    """ApiHandlers bound to ``controller`` (a MetadataController)."""

    async def controller_registration(ctx, request):
        try:
            await controller.write(lambda: (cluster.controller_registration_records(controller.state, request), None))
        except ApiError as exc:
            return ControllerRegistrationResponse(error_code=exc.code, error_message=exc.message)
        log.info("controller %d: registered controller %d (incarnation %s)", controller.node_id, request.controller_id,
                 uuid_to_kafka(request.incarnation_id))
        return ControllerRegistrationResponse()

    async def broker_registration(ctx, request):
        """A fenced previous incarnation in many ISRs leaves them first, in bounded events
        (fencing.py): the first write then only starts that job, and the registration is the
        event after it (without a job: what is left is written in that one event, as Kafka)."""
        def generate(moves):
            previous = controller.state.image.brokers.get(request.broker_id)
            records, epoch = cluster.broker_registration_records(
                controller.state, request, cluster_id=controller.cluster_id, broker_epoch=controller.next_offset(),
                sessions=controller.sessions, now_ms=controller.clock(), kraft_version=controller.raft.kraft_version(),
                request_version=ctx.api_version, moves=moves)
            if not isinstance(epoch, int):
                return records, epoch               # the job's end, to wait for
            # As Kafka's registerBroker, the session changes with the records, before they commit.
            if previous is not None and previous.incarnation_id == request.incarnation_id:
                controller.sessions.amended_registration(request.broker_id, previous.fenced)
            else:
                controller.sessions.new_registration(request.broker_id, controller.clock())
                controller.stats.contacted([request.broker_id], controller.clock())
            return records, epoch
        try:
            epoch, _ = await controller.write(lambda: generate(controller.moves))
            if not isinstance(epoch, int):
                await epoch                         # the previous incarnation's partitions moved
                epoch, _ = await controller.write(lambda: generate(None))
        except ApiError as exc:
            return BrokerRegistrationResponse(error_code=exc.code)
        log.info("controller %d: registered broker %d with epoch %d", controller.node_id, request.broker_id, epoch)
        return BrokerRegistrationResponse(broker_epoch=epoch)

    async def broker_heartbeat(ctx, request):
        """QuorumController.processBrokerHeartbeat: the contact counts on arrival, before the
        heartbeat's turn (Kafka's lockless BrokerHeartbeatTracker), and the heartbeat's deadline is
        half of broker.heartbeat.interval.ms; one that times out still records the broker's
        metadata offset (processExpiredBrokerHeartbeat), so a busy controller fences no one."""
        controller.stats.contacted([request.broker_id], controller.clock())     # before any check, as Kafka
        def generate():
            return cluster.heartbeat(controller.state, request, sessions=controller.sessions, now_ms=controller.clock(),
                                     moves=controller.moves)
        track_heartbeat(request, expired=False)
        try:
            reply, last_offset = await controller.write(generate, timeout_ms=controller.heartbeat_deadline_ms,
                                                   reads_uncommitted=lambda _: registration_in_flight(request))
        except WriteTimedOut as exc:
            track_heartbeat(request, expired=True)
            return BrokerHeartbeatResponse(error_code=exc.code)
        except ApiError as exc:
            return BrokerHeartbeatResponse(error_code=exc.code)
        if reply.in_controlled_shutdown and last_offset is not None:
            controller.sessions.note_controlled_shutdown(request.broker_id, last_offset)
        return BrokerHeartbeatResponse(is_caught_up=reply.is_caught_up, is_fenced=reply.is_fenced,
                                       should_shut_down=reply.should_shut_down)

    def registration_in_flight(request) -> bool:
        """Whether a write in flight changed the broker's registration. A heartbeat that writes
        nothing answers from its broker's registration alone (fenced, in controlled shutdown,
        its epoch; a change of state writes records, and waits for them), so when the
        registration is the committed one the answer holds nothing uncommitted, and it leaves
        at once instead of waiting for the commit of unrelated writes (Kafka's read-only
        operations wait for the newest write in flight: a deliberate difference, which only
        makes such answers earlier; docs/differences.md)."""
        broker_id = request.broker_id
        return controller.state.image.brokers.get(broker_id) is not controller.image.brokers.get(broker_id)

    def track_heartbeat(request, *, expired: bool) -> None:
        """Note a heartbeat of the registered broker epoch, while active (sessions exist only
        then): its contact time on arrival, its metadata offset when it timed out."""
        broker = controller.state.image.brokers.get(request.broker_id)
        if not controller.is_active() or broker is None or broker.epoch != request.broker_epoch:
            return
        if expired:
            controller.stats.timed_out_heartbeats += 1
            log.error("controller %d: event queue overloaded; timed out heartbeat from broker %d",
                      controller.node_id, request.broker_id)
            controller.sessions.touch(request.broker_id, None, request.current_metadata_offset)
        else:
            controller.sessions.touch(request.broker_id, controller.clock())
    return {CONTROLLER_REGISTRATION: ApiHandler(controller_registration),
            BROKER_REGISTRATION: ApiHandler(broker_registration),
            BROKER_HEARTBEAT: ApiHandler(broker_heartbeat)}


__all__ = ["handlers"]
