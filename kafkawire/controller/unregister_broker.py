"""UnregisterBroker (64) as Kafka's controller answers it (ReplicationControlManager.unregisterBroker
under QuorumController.unregisterBroker): the broker leaves every ISR and ELR it is in (its
partitions elect other leaders where they can), then an UnregisterBrokerRecord removes its
registration. A broker id not registered is BROKER_ID_NOT_REGISTERED ("Broker ID <id> is not
currently registered"). ControllerApis asks ALTER on the cluster (kafkawire.net.authorizer).

Kafka collects the records in a BoundedList of MAX_RECORDS_PER_USER_OP (10,000): a broker whose
removal needs more is refused as any too large operation is (POLICY_VIOLATION, "Unable to
perform excessively large batch operation.", nothing written), after walking its partitions
only until the list is full. A fenced broker in more ISRs and ELRs than one event moves, but
fewer than that bound (so Kafka's one event would succeed), has them moved first in bounded
events (fencing.py, UNREGISTER), the request's own event coming once they are done.

    records, response = unregister_broker(state, broker_id)
"""
from __future__ import annotations

from kafkawire.messages.unregister_broker_response import UnregisterBrokerResponse
from kafkawire.metadata.registrations import NO_LEADER
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler

from . import bounded
from .errors import ApiError
from .fencing import UNREGISTER, PartitionMoves, partitions_to_visit
from .frames import frame
from .replication import leader_and_isr_updates
from .state import ControllerState

__all__ = ["unregister_broker", "unregister_broker_handlers", "UNREGISTER_BROKER"]

UNREGISTER_BROKER = 64


def unregister_broker(state: ControllerState, broker_id: int, *,
                      moves: PartitionMoves | None = None):
    """(records, UnregisterBrokerResponse); raises ApiError for a broker not registered and
    BoundedListTooLong past Kafka's bound. With ``moves`` (the active controller's), for a
    broker whose partitions go first in bounded events: ([], the future of their job's end)."""
    image, index = state.image, state.partition_index
    registration = image.brokers.get(broker_id)
    if registration is None:
        raise ApiError(Errors.BROKER_ID_NOT_REGISTERED, f"Broker ID {broker_id} is not currently registered")
    if (moves is not None and registration.fenced and moves.needs_job(state, broker_id, UNREGISTER)
            and partitions_to_visit(state, broker_id, UNREGISTER) < bounded.MAX_RECORDS_PER_USER_OP):
        moves.start(state, broker_id, UNREGISTER)
        return [], moves.waiter(broker_id)
    records = bounded.BoundedList()
    for chosen in (index.walk_isr(image, broker_id), index.walk_elr(image, broker_id)):
        leader_and_isr_updates(image, broker_to_remove=broker_id, broker_to_add=NO_LEADER, chosen=chosen,
                               node_configs=state.node_configs, out=records)
    records.append(frame("UnregisterBrokerRecord", 0, broker_id=broker_id, broker_epoch=registration.epoch))
    return records, UnregisterBrokerResponse()


def unregister_broker_handlers(controller) -> dict[int, ApiHandler]:
    """UnregisterBroker bound to ``controller`` (a MetadataController): no deadline, as Kafka's
    ControllerApis gives it none; a refusal is getErrorResponse (the error and its message).
    A broker whose partitions move first (fencing.py) is answered after the event that follows
    them: the one that writes its UnregisterBrokerRecord, committed."""
    async def handle(ctx, request):
        try:
            response, _ = await controller.write(lambda: unregister_broker(
                controller.state, request.broker_id,
                moves=controller.moves))
            if not isinstance(response, UnregisterBrokerResponse):
                await response                      # its partitions moved: now its own event, in one
                response, _ = await controller.write(lambda: unregister_broker(
                    controller.state, request.broker_id))
        except ApiError as exc:
            return UnregisterBrokerResponse(error_code=exc.code, error_message=exc.message)
        return response
    return {UNREGISTER_BROKER: ApiHandler(handle)}
