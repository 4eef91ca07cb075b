"""The TLS handshake Kafka 4.3.1 makes before it takes a changed key or trust store on the
inter-broker listener (SslFactory's SslEngineValidator, as the listener's channel builder was
made with keystoreVerifiableUsingTruststore): a server with the current stores must accept a
client with the new ones, then a server with the new stores a client with the current ones, so
that brokers holding either can still talk. Here the two handshakes run in memory between
OpenSSL contexts built as the listener builds them, the client's host name not checked (Kafka's
validator sets no endpoint identification).

kafkawire.metadata.dynamic_reconfiguration calls it through kafkawire.broker.config_apis (the
metadata layer does not build TLS contexts).
"""
from __future__ import annotations

import ssl

from .config import ConfigError
from .security import client_ssl_context, resolve_listener_security, server_ssl_context

__all__ = ["handshake_refusal"]

_ROUNDS = 16          # a TLS 1.2 or 1.3 handshake takes 2 to 4 flights each way


def handshake_refusal(listener: str, protocol: str, old_props: dict, new_props: dict) -> str | None:
    """Why a broker with the listener's current stores (``old_props``) and one with its new ones
    (``new_props``) cannot complete a handshake either way, else None."""
    try:
        old_server, old_client = _contexts(old_props, listener, protocol)
        new_server, new_client = _contexts(new_props, listener, protocol)
    except ConfigError as exc:
        return str(exc)
    for server, client in ((old_server, new_client), (new_server, old_client)):
        refusal = _handshake(server, client)
        if refusal is not None:
            return refusal
    return None


def _contexts(props: dict, listener: str, protocol: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    security = resolve_listener_security(props, listener, protocol)
    assert security.ssl is not None                 # an SSL or SASL_SSL listener
    server = server_ssl_context(security)
    client = client_ssl_context(security.ssl)
    client.check_hostname = False
    return server, client


def _handshake(server_context: ssl.SSLContext, client_context: ssl.SSLContext) -> str | None:
    """One handshake over memory buffers; the first side's failure, as OpenSSL words it."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    client_out, server_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_context.wrap_bio(to_client, client_out, server_side=False)
    server = server_context.wrap_bio(to_server, server_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(_ROUNDS):
        for side, end, outgoing, peer in (("client", client, client_out, to_server),
                                          ("server", server, server_out, to_client)):
            if not done[side]:
                try:
                    end.do_handshake()
                    done[side] = True
                except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    pass
                except ssl.SSLError as exc:
                    verify = getattr(exc, "verify_message", None)
                    return f"{exc.reason or exc}" + (f" ({verify})" if verify else "")
            peer.write(outgoing.read())
        if all(done.values()):
            return None
    return "the handshake did not finish"
