"""sasl.server.max.receive.size: before a SASL connection has authenticated, a frame whose size
field announces more than the setting (default 524288) closes the connection as soon as its 4
bytes are read, the body never read or held (Kafka's SaslServerAuthenticator reads every
pre-authentication receive through a bounded NetworkReceive: CVE-2022-34917). The ApiVersions
and SaslHandshake requests, the SaslAuthenticate tokens and the raw tokens after a SaslHandshake
v0 are all bounded; after authentication socket.request.max.bytes applies again."""
import logging
import struct

import pytest

from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.sasl_authenticate_request import SaslAuthenticateRequest
from kafkawire.messages.sasl_handshake_request import SaslHandshakeRequest
from kafkawire.net.config import ConfigError
from kafkawire.net.server import KafkaServer
from kafkawire.protocol.framing import encode_request

from .netlib import RawConnection, run
from .test_sasl import METADATA, empty_metadata, lookup, node_config

DEFAULT = 524288


async def _served(config, steps, announced: int):
    """On a fresh connection, send ``steps`` (request, version, answered?), then a size field
    announcing ``announced`` bytes and 16 bytes of body: whether the server closed the connection
    without the rest of the body, and the memory it held for requests when it did."""
    async with KafkaServer({METADATA: empty_metadata}, security=config.security_of("CONTROLLER"),
                           scram_lookup=lookup) as server:
        conn = await RawConnection.open(server.port)
        for i, (request, version) in enumerate(steps):
            await conn.send(request, version, i)
            assert await conn.read_frame(timeout=5) is not None
        await conn.write(struct.pack(">i", announced) + b"\0" * 16)
        closed = await conn.at_eof(timeout=5)
        return closed, server.memory_pool.used


HANDSHAKE_V1 = [(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)]
HANDSHAKE_V0 = [(SaslHandshakeRequest(mechanism="PLAIN"), 0)]


@pytest.mark.parametrize("phase, steps", [("first request (ApiVersions or SaslHandshake)", []),
                                          ("SaslAuthenticate token", HANDSHAKE_V1),
                                          ("raw token after SaslHandshake v0", HANDSHAKE_V0)])
def test_a_pre_authentication_size_over_the_bound_closes_before_the_body_is_read(phase, steps, caplog):
    caplog.set_level(logging.INFO, logger="kafkawire.net")
    closed, held = run(_served(node_config(), steps, DEFAULT + 1))
    assert closed, f"{phase}: a size of {DEFAULT + 1} did not close the connection"
    assert held == 0
    assert "Failing SASL authentication due to invalid receive size" in caplog.text


def test_a_frame_at_the_bound_is_read_and_authenticates_and_the_bound_ends_with_authentication():
    """The listener-prefixed setting wins; a PLAIN token of exactly the bound authenticates; after
    that, a request larger than the bound is served (socket.request.max.bytes applies)."""
    config = node_config(extra="sasl.server.max.receive.size=100000\n"
                               "listener.name.controller.sasl.server.max.receive.size=300\n")
    assert config.security_of("CONTROLLER").sasl_server_max_receive_size == 300

    async def main():
        async with KafkaServer({METADATA: empty_metadata}, security=config.security_of("CONTROLLER")) as server:
            conn = await RawConnection.open(server.port)
            await conn.send(SaslHandshakeRequest(mechanism="PLAIN"), 1, 1)
            await conn.read_frame(timeout=5)
            request = SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret")
            unpadded = len(encode_request(request, 2, 2, client_id="")) - 4
            frame = encode_request(request, 2, 2, client_id="t" * (300 - unpadded))   # exactly the bound
            assert len(frame) - 4 == 300
            await conn.write(frame)
            cid, answer = await conn.read_response(36, 2, timeout=5)
            big = MetadataRequest(topics=[MetadataRequestTopic(name="x" * 1000)])
            await conn.send(big, 12, 3)
            metadata_cid, _ = await conn.read_response(METADATA, 12, timeout=5)
            await conn.aclose()
            return answer.error_code, metadata_cid

    assert run(main()) == (0, 3)


def test_the_setting_defaults_to_kafkas_and_refuses_a_value_that_is_not_an_int():
    assert node_config().security_of("CONTROLLER").sasl_server_max_receive_size == DEFAULT
    with pytest.raises(ConfigError, match="sasl.server.max.receive.size: 'big' is not a number of type INT"):
        node_config(extra="listener.name.controller.sasl.server.max.receive.size=big\n").security_of("CONTROLLER")
