"""UnregisterBroker (64) as Kafka's controller answers it (ReplicationControlManager.unregisterBroker
under QuorumController.unregisterBroker): the broker leaves every ISR and ELR it is in (its
partitions elect other leaders where they can), then an UnregisterBrokerRecord removes its
registration. A broker id not registered is BROKER_ID_NOT_REGISTERED ("Broker ID <id> is not
currently registered"). ControllerApis asks ALTER on the cluster (kafkawire.net.authorizer).

    records, response = unregister_broker(state, broker_id, static_min_isr=...)
"""
from __future__ import annotations

from kafkawire.messages.unregister_broker_response import UnregisterBrokerResponse
from kafkawire.metadata.registrations import NO_LEADER
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler

from .errors import ApiError
from .frames import frame
from .replication import leader_and_isr_updates
from .state import ControllerState

__all__ = ["unregister_broker", "unregister_broker_handlers", "UNREGISTER_BROKER"]

UNREGISTER_BROKER = 64


def unregister_broker(state: ControllerState, broker_id: int, *, static_min_isr: int):
    """(records, UnregisterBrokerResponse); raises ApiError for a broker not registered."""
    image, index = state.image, state.partition_index
    registration = image.brokers.get(broker_id)
    if registration is None:
        raise ApiError(Errors.BROKER_ID_NOT_REGISTERED, f"Broker ID {broker_id} is not currently registered")
    records = []
    for chosen in (index.with_broker_in_isr(image, broker_id), index.with_broker_in_elr(image, broker_id)):
        records += leader_and_isr_updates(image, broker_to_remove=broker_id, broker_to_add=NO_LEADER, chosen=chosen,
                                          static_min_isr=static_min_isr)
    records.append(frame("UnregisterBrokerRecord", 0, broker_id=broker_id, broker_epoch=registration.epoch))
    return records, UnregisterBrokerResponse()


def unregister_broker_handlers(controller) -> dict[int, ApiHandler]:
    """UnregisterBroker bound to ``controller`` (a MetadataController): no deadline, as Kafka's
    ControllerApis gives it none; a refusal is getErrorResponse (the error and its message)."""
    async def handle(ctx, request):
        try:
            response, _ = await controller.write(lambda: unregister_broker(
                controller.state, request.broker_id, static_min_isr=controller.static_min_insync_replicas))
        except ApiError as exc:
            return UnregisterBrokerResponse(error_code=exc.code, error_message=exc.message)
        return response
    return {UNREGISTER_BROKER: ApiHandler(handle)}
