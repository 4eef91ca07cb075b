"""The authorizer's one refusal that is not a denial: a non-super user asking before the ACLs of
the committed metadata are loaded (StandardAuthorizerData's AuthorizerNotReadyException).

Kept apart from kafkawire.net.authorizer, which imports a dozen message modules, so that the
connection can answer it without importing them: a check that meets it anywhere, on a broker's
handler or a controller's, gets its request answered UNKNOWN_SERVER_ERROR, as Kafka's
KafkaApis and ControllerApis answer it (the exception carries no error code of its own)."""
from __future__ import annotations

import logging

__all__ = ["AuthorizerNotReady", "log_not_loaded"]

# The controller's and the broker's checks log on this one name (operators filter on it).
log = logging.getLogger("kafkawire.authorizer")


class AuthorizerNotReady(Exception):
    """StandardAuthorizerData: a non-super user before the ACLs are loaded."""


def log_not_loaded(api_key: int, ctx) -> None:
    log.info("refusing api key %d from %s at %s: the authorizer has not loaded the metadata yet",
             api_key, ctx.principal, ctx.peer[0])
