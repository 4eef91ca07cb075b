"""The error answer to any request, as Kafka's ``AbstractRequest.getErrorResponse(throttleTimeMs, e)``
of the request's class gives it (kafka-clients 4.3.1): what the connection sends when a handler
raises (UNKNOWN_SERVER_ERROR: a bug, an authorizer that has not loaded the ACLs yet), unless the
handler has its own ``error_response``, and what a broker answers for a forwarded request that
failed.

    response = error_response(api_key, request, version, code)    # None: close the connection

Each API key's builder is in ERROR_RESPONSES (from kafkawire.net.admin_error_responses,
client_error_responses and group_error_responses); an API without one is answered with a default
response carrying the code in its top-level error code where its version has one (what Kafka's
getErrorResponse does for those: a version without one gets the bare default response). Messages: where Kafka
writes ``ApiError.fromThrowable(e).message()`` (none for UNKNOWN_SERVER_ERROR, or the exception's
own text) the builders write none, and where it writes ``Errors.message()`` they write the code's
default text, so UNKNOWN_SERVER_ERROR's answer is byte for byte Kafka's (tests/interop/
test_error_responses_vs_kafka.py).
"""
from __future__ import annotations

from kafkawire.net.admin_error_responses import ADMIN_ERROR_RESPONSES
from kafkawire.net.client_error_responses import CLIENT_ERROR_RESPONSES
from kafkawire.net.group_error_responses import GROUP_ERROR_RESPONSES
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.handler import top_level_error_response

__all__ = ["ERROR_RESPONSES", "error_response", "failed_request_response"]

ERROR_RESPONSES = {**ADMIN_ERROR_RESPONSES, **CLIENT_ERROR_RESPONSES, **GROUP_ERROR_RESPONSES}


def error_response(api_key: int, request, version: int, code: int):
    """The answer carrying ``code`` to ``request`` (of ``api_key`` at ``version``), or None when
    Kafka's answer is no response (Produce with acks 0: the connection is closed; a
    DescribeUserScramCredentials for every user, whose getErrorResponse throws)."""
    build = ERROR_RESPONSES.get(api_key)
    if build is not None:
        return build(request, version, int(code))
    response_cls = api_table()[api_key].response
    return top_level_error_response(response_cls, version, int(code)) or response_cls()


def failed_request_response(handler, ctx, request, code: int):
    """The answer to a request (of ``ctx.api_key`` at ``ctx.api_version``) whose ``handler`` (an
    ApiHandler) failed: its own ``error_response`` if it has one, else ``error_response``'s;
    None: close the connection."""
    if handler.error_response is not None:
        return handler.error_response(ctx, request, code)
    return error_response(ctx.api_key, request, ctx.api_version, code)
