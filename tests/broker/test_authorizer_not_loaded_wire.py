"""A broker's ACL check that meets an authorizer which has not loaded the ACLs yet
(AuthorizerNotReady: a principal that is not a super user, before the initial load) is answered
UNKNOWN_SERVER_ERROR, as Kafka's KafkaApis answers StandardAuthorizer's
AuthorizerNotReadyException through handleError, and logged as a one-line refusal on
kafkawire.authorizer rather than as a handler's traceback. Through a real connection on
127.0.0.1, since the connection is what answers it."""
from __future__ import annotations

import logging

from kafkawire.broker.authorization import wrap
from kafkawire.broker.group_authorization import _init_producer_id
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.messages.init_producer_id_response import InitProducerIdResponse
from kafkawire.net.authorizer import AuthorizerSettings, StandardAuthorizer
from kafkawire.net.server import ApiHandler, KafkaServer
from kafkawire.protocol.error_codes import Errors
from tests.net.netlib import RawConnection, run

INIT_PRODUCER_ID, VERSION = 22, 4


def _init_producer_id_behind(authorizer, served: list):
    async def coordinator(ctx, request):
        served.append(ctx.principal)
        return InitProducerIdResponse(producer_id=7, producer_epoch=0)
    return wrap(ApiHandler(coordinator), _init_producer_id, authorizer)


def _ask(super_users: frozenset) -> tuple[InitProducerIdResponse, list]:
    authorizer = StandardAuthorizer(AuthorizerSettings(super_users=super_users), lambda: [], lambda: False)
    served: list = []

    async def main():
        async with KafkaServer({INIT_PRODUCER_ID: _init_producer_id_behind(authorizer, served)}) as server:
            conn = await RawConnection.open(server.port)
            # No transactional id: IDEMPOTENT_WRITE on the cluster, else WRITE on any topic
            # (authorizeByResourceType), both questions for the authorizer.
            await conn.send(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), VERSION, 5)
            _, response = await conn.read_response(INIT_PRODUCER_ID, VERSION)
            await conn.aclose()
        return response

    return run(main()), served


def test_before_the_acls_are_loaded_a_checked_request_is_answered_unknown_server_error_without_a_traceback(caplog):
    with caplog.at_level(logging.INFO):
        response, served = _ask(frozenset())
    assert response.error_code == int(Errors.UNKNOWN_SERVER_ERROR)
    # InitProducerIdRequest.getErrorResponse: no producer id and no epoch (NO_PRODUCER_EPOCH)
    assert (response.producer_id, response.producer_epoch) == (-1, -1)
    assert served == []
    refusals = [r for r in caplog.records if r.name == "kafkawire.authorizer"]
    assert [r.getMessage().split(" from ")[0] for r in refusals] == [f"refusing api key {INIT_PRODUCER_ID}"]
    assert "the authorizer has not loaded the metadata yet" in refusals[0].getMessage()
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_super_user_is_served_before_the_load():
    response, served = _ask(frozenset({"User:ANONYMOUS"}))
    assert (response.error_code, response.producer_id) == (0, 7)
    assert served == ["User:ANONYMOUS"]
