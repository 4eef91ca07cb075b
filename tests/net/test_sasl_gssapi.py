"""SASL/GSSAPI (Kerberos) on a SASL_PLAINTEXT listener against a throwaway MIT KDC (tests/net/kdc.py):
kafka-python and a hand-driven RFC 4752 client authenticate, a stale keytab, an unknown principal
and another service's ticket are refused with Kafka's message, the principal goes through
``sasl.kerberos.principal.to.local.rules``; those rules against Kafka's documented examples (no
KDC needed); a missing ``gssapi`` package named with its extra."""
from __future__ import annotations

import logging
import sys

import pytest

from kafkawire._extras import MissingExtra
from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.messages.metadata_response import MetadataResponse
from kafkawire.messages.sasl_authenticate_request import SaslAuthenticateRequest
from kafkawire.messages.sasl_handshake_request import SaslHandshakeRequest
from kafkawire.net.config import ConfigError, parse_server_config
from kafkawire.net.client import AuthenticationFailed, NetworkClient
from kafkawire.net.kerberos_names import KerberosShortNamer, NoMatchingRule
from kafkawire.net.security import client_options, client_options_from_properties
from kafkawire.net.server import KafkaServer
from tests.conftest import unavailable
from tests.kafka_python_refusal import kafka_python_refusal, logging_to

from .kdc import REALM, Kdc, kdc_binaries_missing, running_kdc
from .netlib import RawConnection, run

METADATA, SASL_HANDSHAKE, SASL_AUTHENTICATE = 3, 17, 36
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism GSSAPI"


# --- sasl.kerberos.principal.to.local.rules (pure) ----------------------------------------------

@pytest.mark.parametrize("rules, principal, name", [
    # Kafka's documentation (security.html, "Kerberos principal to local rules")
    (r"RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//,DEFAULT", "alice@MYDOMAIN.COM", "alice"),
    (r"RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//,DEFAULT", "bob@EXAMPLE.COM", "bob"),
    (r"RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//L,DEFAULT", "John@MYDOMAIN.COM", "john"),
    (r"RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//U,DEFAULT", "John@MYDOMAIN.COM", "JOHN"),
    # DEFAULT: the first component in the default realm, whatever the host
    ("DEFAULT", "kafka/broker1.example.com@EXAMPLE.COM", "kafka"),
    ("DEFAULT", "plain-name", "plain-name"),
    # two-component rules, global replacement, case
    (r"RULE:[2:$1](App\..*)s/App\.(.*)/$1/g,DEFAULT", "App.service-name/example.com@EXAMPLE.COM", "service-name"),
    (r"RULE:[2:$1](Test.*)s/ABC///L,DEFAULT", "TestABC/host@FOO.COM", "test"),
    (r"RULE:[2:$1](ABC.*)s/ABC/XYZ/g/L,DEFAULT", "ABC_User_ABC/host@FOO.COM", "xyz_user_xyz"),
    (r"RULE:[2:$1;$2],DEFAULT", "svc/host@FOO.COM", "svc;host"),
    (r"RULE:[1:$1]/L", "User@ANY.REALM", "user"),
])
def test_principal_to_local_rules_map_as_kafka_documents(rules, principal, name):
    assert KerberosShortNamer(rules, "EXAMPLE.COM").short_name(principal) == name


@pytest.mark.parametrize("rules, principal, words", [
    ("DEFAULT", "eve@OTHER.COM", "No rules apply to eve@OTHER.COM, rules [DEFAULT]"),
    (r"RULE:[1:$1@$0]", "eve@OTHER.COM", "Non-simple name eve@OTHER.COM after auth_to_local rule"),
    (r"RULE:[1:$3]", "eve@OTHER.COM", "index 3 from $3 is outside of the valid range 0 to 1"),
    ("DEFAULT", "a@b@C", "Malformed Kerberos name: a@b@C"),
])
def test_a_principal_no_rule_maps_fails(rules, principal, words):
    with pytest.raises(NoMatchingRule, match=words.replace("[", r"\[").replace("$", r"\$")):
        KerberosShortNamer(rules, "EXAMPLE.COM").short_name(principal)


@pytest.mark.parametrize("rules, words", [
    ("RULE:[1:$1]x", "unmatched substring: `x`"),
    ("NOPE", "invalid rule: NOPE"),
    ("DEFAULT,DEFAULT", "must not be duplicated"),
    (r"RULE:[1:$1](a(b)", "does not compile"),
    (r"RULE:[:$1]", "does not compile"),
])
def test_rules_that_do_not_parse_name_the_key(rules, words):
    with pytest.raises(ConfigError, match="sasl.kerberos.principal.to.local.rules") as raised:
        KerberosShortNamer(rules, "EXAMPLE.COM")
    assert words in str(raised.value)


# --- the listener's configuration ---------------------------------------------------------------

def node_text(keytab="/nonexistent.keytab", principal=f"kafka/localhost@{REALM}", extra="",
              jaas_extra="", service="sasl.kerberos.service.name=kafka\n"):
    return ("process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
            "listeners=CONTROLLER://127.0.0.1:0\ncontroller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT\nsasl.enabled.mechanisms=GSSAPI\n"
            "sasl.mechanism.controller.protocol=GSSAPI\n" + service +
            "listener.name.controller.gssapi.sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule "
            f'required useKeyTab=true storeKey=true keyTab="{keytab}" principal="{principal}" {jaas_extra};\n'
            + extra)


def test_gssapi_without_the_gssapi_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gssapi", None)       # import gssapi now raises ImportError
    with pytest.raises(MissingExtra, match=r"SASL/GSSAPI needs gssapi: pip install 'kafkawire\[kerberos\]'"):
        parse_server_config(node_text())


@pytest.mark.parametrize("text, key, words", [
    (node_text(service=""), "sasl.kerberos.service.name", "No serviceName defined in either JAAS or Kafka config"),
    (node_text(jaas_extra="serviceName=other"), "sasl.kerberos.service.name", "Conflicting serviceName values"),
    (node_text().replace("useKeyTab=true", "useKeyTab=false"), "gssapi.sasl.jaas.config", "needs useKeyTab=true"),
    (node_text(principal=""), "gssapi.sasl.jaas.config", "needs a principal option"),
    (node_text(extra="sasl.kerberos.principal.to.local.rules=RULE:[1:$1]junk\n"),
     "sasl.kerberos.principal.to.local.rules", "unmatched substring"),
])
def test_gssapi_configuration_refusals_name_the_key(text, key, words):
    pytest.importorskip("gssapi", reason="the gssapi package (the extra kerberos) is not installed")
    with pytest.raises(ConfigError) as raised:
        parse_server_config(text).security_of("CONTROLLER")
    assert key in str(raised.value) and words in str(raised.value)


# --- against a KDC --------------------------------------------------------------------------------

class Realm:
    """The KDC and its keytabs: the listener's (``server``), one made stale by a later export
    (``stale_server``), alice's, and ``other/localhost`` (a service the listener has no key for)."""

    def __init__(self, kdc: Kdc):
        self.kdc = kdc
        kdc.add_principal("kafka/localhost")
        self.stale_server = kdc.export("kafka/localhost", "stale")     # the next export changes the key
        self.server = kdc.export("kafka/localhost", "server")
        self.alice = kdc.keytab("alice")
        self.bob = kdc.keytab("bob")
        self.other_service = kdc.keytab("other/localhost")

    def config(self, keytab=None, extra=""):
        return parse_server_config(node_text(keytab or self.server, extra=extra))

    def security(self, keytab=None, extra=""):
        return self.config(keytab, extra).security_of("CONTROLLER")


@pytest.fixture(scope="module")
def realm(tmp_path_factory):
    with running_kdc(tmp_path_factory.mktemp("kdc")) as kdc:
        yield Realm(kdc)


def initiator(keytab, principal: str, service: str):
    """A GSS-API initiator context for ``service@localhost`` with ``principal``'s key from ``keytab``."""
    import gssapi
    credentials = gssapi.Credentials(name=gssapi.Name(f"{principal}@{REALM}", gssapi.NameType.kerberos_principal),
                                     usage="initiate", store={"client_keytab": str(keytab),
                                                              "ccache": f"MEMORY:{principal}-{id(keytab)}"})
    target = gssapi.Name(f"{service}@localhost", gssapi.NameType.hostbased_service)
    return gssapi.SecurityContext(name=target, creds=credentials, usage="initiate",
                                  flags=[gssapi.RequirementFlag.mutual_authentication])


async def rfc4752_exchange(security, context, authorization_id=b"", layer=1, again=None, lifetimes=None):
    """Drive SaslHandshake v1 and SaslAuthenticate v2 with ``context`` as RFC 4752 says, then one
    Metadata: (the principal the handler saw, or None; the refusal's message, or None). With
    ``again`` (another context), re-authenticate with it on the same connection (KIP-368) first;
    ``lifetimes`` gets each completed authentication's SessionLifetimeMs."""
    lifetimes = [] if lifetimes is None else lifetimes
    seen = []

    async def handler(ctx, request):
        seen.append(ctx.principal)
        return MetadataResponse()

    async with KafkaServer({METADATA: handler}, security=security) as server:
        conn = await RawConnection.open(server.port)
        refusal, correlation = await authenticate_on(conn, context, authorization_id, layer, 0, lifetimes)
        if refusal is None and again is not None:
            refusal, correlation = await authenticate_on(conn, again, authorization_id, layer, correlation, lifetimes)
        if refusal is not None:
            return None, refusal
        await conn.send(MetadataRequest(topics=[]), 12, correlation)
        await conn.read_response(METADATA, 12)
    return seen[0], None


async def authenticate_on(conn, context, authorization_id, layer, correlation, lifetimes):
    """One GSSAPI authentication on ``conn``: (the refusal's message or None, the next correlation id)."""
    await conn.send(SaslHandshakeRequest(mechanism="GSSAPI"), 1, correlation)
    assert (await conn.read_response(SASL_HANDSHAKE, 1))[1].error_code == 0
    token, correlation = context.step(None), correlation + 1
    while True:
        await conn.send(SaslAuthenticateRequest(auth_bytes=token), 2, correlation)
        answer = (await conn.read_response(SASL_AUTHENTICATE, 2))[1]
        correlation += 1
        if answer.error_code:
            return answer.error_message, correlation
        if not context.complete:
            token = context.step(bytes(answer.auth_bytes)) or b""
        elif answer.auth_bytes:
            offer = context.unwrap(bytes(answer.auth_bytes)).message
            assert offer[0] == 1, "the server must offer no security layer only"
            token = context.wrap(bytes([layer]) + b"\0\0\0" + authorization_id, False).message
        else:
            lifetimes.append(answer.session_lifetime_ms)
            return None, correlation


def test_a_kerberos_client_authenticates_as_its_short_name(realm):
    context = initiator(realm.alice, "alice", "kafka")
    assert run(rfc4752_exchange(realm.security(), context)) == ("User:alice", None)


def test_the_authorization_id_is_ignored_and_the_rules_name_the_principal(realm):
    """Kafka's server callback authorizes any authorization id and keeps the authenticated name."""
    security = realm.security(extra=r"sasl.kerberos.principal.to.local.rules=RULE:[1:k-$1]/U" + "\n")
    context = initiator(realm.alice, "alice", "kafka")
    assert run(rfc4752_exchange(security, context, authorization_id=b"admin")) == ("User:K-ALICE", None)


def test_a_reauthentication_keeps_the_principal(realm):
    """connections.max.reauth.ms: the session has a lifetime (no credential lifetime: Kafka's JDK
    server gives none), alice re-authenticates on the open connection with a new ticket exchange,
    and bob may not take her connection over."""
    security = realm.security(extra="connections.max.reauth.ms=60000\n")
    again, lifetimes = initiator(realm.alice, "alice", "kafka"), []
    assert run(rfc4752_exchange(security, initiator(realm.alice, "alice", "kafka"), again=again,
                                lifetimes=lifetimes)) == ("User:alice", None)
    assert lifetimes == [60000, 60000]
    bob = initiator(realm.bob, "bob", "kafka")
    assert run(rfc4752_exchange(security, initiator(realm.alice, "alice", "kafka"), again=bob)) == \
        (None, "Cannot change principals during re-authentication from User.alice: User.bob")


def test_a_principal_no_rule_maps_is_refused(realm):
    security = realm.security(extra=r"sasl.kerberos.principal.to.local.rules=RULE:[2:$1]" + "\n")
    assert run(rfc4752_exchange(security, initiator(realm.alice, "alice", "kafka"))) == (None, GENERIC)


def test_a_security_layer_the_server_did_not_offer_is_refused(realm):
    assert run(rfc4752_exchange(realm.security(), initiator(realm.alice, "alice", "kafka"), layer=4)) == \
        (None, GENERIC)


def test_a_ticket_for_another_service_is_refused(realm):
    """The client asks the KDC for other/localhost, which exists, and the listener holds no key for."""
    assert run(rfc4752_exchange(realm.security(), initiator(realm.alice, "alice", "other"))) == (None, GENERIC)


def test_a_listener_with_a_stale_keytab_refuses_every_client(realm):
    assert run(rfc4752_exchange(realm.security(realm.stale_server), initiator(realm.alice, "alice", "kafka"))) == \
        (None, GENERIC)


def test_a_keytab_without_the_principal_stops_the_listener(realm):
    with pytest.raises(ConfigError, match="gives no usable key for principal kafka/localhost@EXAMPLE.COM"):
        KafkaServer({}, security=realm.security(realm.alice))


def test_an_unknown_principal_gets_no_ticket(realm):
    """mallory is not in the KDC: the client fails before the listener sees a token."""
    import gssapi
    with pytest.raises(gssapi.exceptions.GSSError):
        initiator(realm.alice, "mallory", "kafka").step(None)


class _ServerLog:
    def __init__(self):
        self.handler = logging.Handler(logging.DEBUG)
        self.refusals, self.authenticated = [], []
        self.handler.emit = self._emit

    def _emit(self, record):
        message = record.getMessage()
        if message.startswith("Failed authentication"):
            self.refusals.append(message)
        if " authenticated as " in message:
            self.authenticated.append(message)


def test_kafka_python_reads_over_gssapi_and_a_stale_listener_keytab_refuses_it(realm, tmp_path, monkeypatch):
    from .metadata_log import write_metadata_log
    from .served import ServedLog
    from .test_secure_clients import kafka_python_read
    monkeypatch.setenv("KRB5_CLIENT_KTNAME", str(realm.alice))      # kafka-python's default credentials
    monkeypatch.setenv("KRB5CCNAME", "MEMORY:kafka-python")
    log_dir, written = write_metadata_log(tmp_path / "log", epochs=1, batches_per_epoch=2, records_per_batch=2,
                                          segment_bytes=4096)
    want = [(w.offset, w.value) for w in written if not w.is_control]
    options = dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI", sasl_kerberos_service_name="kafka",
                   sasl_kerberos_domain_name="localhost")
    with ServedLog(log_dir, server_options={"security": realm.security()}) as served:
        assert kafka_python_read(served.port, len(want), **options) == want
    server = _ServerLog()
    with ServedLog(log_dir, server_options={"security": realm.security(realm.stale_server)}) as served, \
            logging_to(server.handler, "kafkawire.net.authentication"):
        refusal = kafka_python_refusal(f"127.0.0.1:{served.port}", lambda: bool(server.refusals), **options)
    assert server.refusals and "GSSAPI" in server.refusals[0], server.refusals
    assert refusal.records == [] and not server.authenticated


async def node_client_exchange(server_config, client_options):
    """The node's own NetworkClient (its raft client's options) sends one Metadata to a listener of
    ``server_config``: the principal the listener saw."""
    seen = []

    async def handler(ctx, request):
        seen.append(ctx.principal)
        return MetadataResponse()

    async with KafkaServer({METADATA: handler}, security=server_config.security_of("CONTROLLER")) as server:
        async with NetworkClient(request_timeout_ms=10000, **client_options) as client:
            await client.send(("127.0.0.1", server.port), MetadataRequest(topics=[]))
    return seen


def test_the_nodes_own_client_logs_in_with_the_listeners_keytab(realm):
    """sasl.mechanism.controller.protocol=GSSAPI: the raft client logs in as kafka/localhost (the
    listener's JAAS entry), asks for kafka/<the peer's name> (127.0.0.1 looked up in reverse, as
    Java does) and is User:kafka on the other side."""
    config = realm.config()
    assert run(node_client_exchange(config, client_options(config.raft_client_security()))) == ["User:kafka"]


def test_the_nodes_own_client_without_a_key_fails_authentication(realm):
    config = realm.config()
    without_key = realm.config(realm.alice)             # alice's keytab has no key for kafka/localhost
    with pytest.raises(AuthenticationFailed, match="GSSAPI: kafka/localhost@EXAMPLE.COM could not get a ticket"):
        run(node_client_exchange(config, client_options(without_key.raft_client_security())))


def test_an_admin_command_config_with_a_keytab_authenticates(realm, tmp_path):
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.kerberos.service.name": "kafka",
             "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
                                 f'keyTab="{realm.alice}" principal="alice@{REALM}";'}
    assert run(node_client_exchange(realm.config(), client_options_from_properties(props))) == ["User:alice"]


def test_the_replica_fetchers_and_transaction_markers_log_in_with_gssapi(realm, tmp_path):
    """sasl.mechanism.inter.broker.protocol=GSSAPI: a broker's replica fetchers and transaction
    markers use the inter-broker listener's Krb5LoginModule entry, and are User:kafka to a peer."""
    from tests.broker.test_inter_broker_sasl import fetch_as_peer, make_broker
    config = parse_server_config(
        "process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        "listeners=BROKER://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n"
        "listener.security.protocol.map=BROKER:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        f"inter.broker.listener.name=BROKER\ncontroller.quorum.bootstrap.servers=127.0.0.1:1\nlog.dirs={tmp_path}\n"
        "sasl.enabled.mechanisms=GSSAPI\nsasl.mechanism.inter.broker.protocol=GSSAPI\nsasl.kerberos.service.name=kafka\n"
        "listener.name.broker.gssapi.sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required "
        f'useKeyTab=true storeKey=true keyTab="{realm.server}" principal="kafka/localhost@{REALM}";\n')
    broker = make_broker(config)
    options, unusable = broker.replica_roles.client_options()
    assert unusable is None and options["sasl"]().mechanism == "GSSAPI"
    assert broker.txn_apis.router.peers.client().sasl().principal == f"kafka/localhost@{REALM}"
    assert run(fetch_as_peer(config, options)) == ["User:kafka"]


def test_a_replayed_authenticator_closes_the_connection_unanswered(realm, caplog):
    """The same AP-REQ twice: the acceptor's replay cache refuses the second, which Kafka takes for
    a network error the client retries (KerberosError.REPLAY): closed, no SaslAuthenticate answer."""
    async def main():
        token = initiator(realm.alice, "alice", "kafka").step(None)
        async with KafkaServer({METADATA: empty_metadata}, security=realm.security()) as server:
            answers = []
            for correlation in (0, 2):
                conn = await RawConnection.open(server.port)
                await conn.send(SaslHandshakeRequest(mechanism="GSSAPI"), 1, correlation)
                await conn.read_response(SASL_HANDSHAKE, 1)
                await conn.send(SaslAuthenticateRequest(auth_bytes=token), 2, correlation + 1)
                answers.append(await conn.read_frame(timeout=10))
            return answers
    with caplog.at_level(logging.INFO, logger="kafkawire.net.authentication"):
        first, replayed = run(main())
    assert first is not None and replayed is None
    assert "Request is a replay" in caplog.text


async def empty_metadata(ctx, request):
    return MetadataResponse()


def test_the_nodes_own_client_re_authenticates_with_a_new_ticket_exchange(realm, monkeypatch):
    """connections.max.reauth.ms=2000 on the listener: the node's GSSAPI client re-authenticates
    on its open connection before each session ends (KIP-368), as User:kafka each time. The
    sessions' clock is moved by hand (as tests/net/test_reauthentication.py does); the KDC's is real."""
    from types import SimpleNamespace

    from kafkawire.net import client as client_module
    from kafkawire.net import reauthentication
    now = [1_800_000_000.0]
    monkeypatch.setattr(reauthentication, "monotonic", lambda: now[0])
    monkeypatch.setattr(reauthentication, "now_ms", lambda: round(now[0] * 1000))
    monkeypatch.setattr(client_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    config = realm.config(extra="connections.max.reauth.ms=2000\n")
    seen = []

    async def handler(ctx, request):
        seen.append(ctx.principal)
        return MetadataResponse()

    async def main():
        async with KafkaServer({METADATA: handler}, security=config.security_of("CONTROLLER")) as server:
            async with NetworkClient(request_timeout_ms=10000, **client_options(config.raft_client_security())) as client:
                peer = ("127.0.0.1", server.port)
                await client.send(peer, MetadataRequest(topics=[]))
                first, counts = client._peers[peer].connection, []
                for _ in range(2):
                    now[0] += 1.96                  # past 95% of the lifetime, before its end
                    await client.send(peer, MetadataRequest(topics=[]))
                    counts.append(server.reauthentications)
                return counts, client._peers[peer].connection is first
    assert run(main()) == ([1, 2], True)
    assert seen == ["User:kafka"] * 3


def test_an_admin_command_config_with_a_kinit_ticket_cache_authenticates(realm, tmp_path):
    """useTicketCache=true (no keytab), as a Kafka client after kinit: the cache's principal."""
    import shutil
    import subprocess
    kinit = shutil.which("kinit")
    if kinit is None:
        unavailable("no kinit here (apt-get install krb5-user)")
    cache = tmp_path / "alice.ccache"
    subprocess.run([kinit, "-k", "-t", str(realm.alice), "-c", str(cache), f"alice@{REALM}"], check=True,
                   capture_output=True, timeout=30)
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.kerberos.service.name": "kafka",
             "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true "
                                 f'ticketCache="{cache}";'}
    assert run(node_client_exchange(realm.config(), client_options_from_properties(props))) == ["User:alice"]
    props["sasl.jaas.config"] = "com.sun.security.auth.module.Krb5LoginModule required;"
    with pytest.raises(ConfigError, match="needs useKeyTab=true.*or useTicketCache=true"):
        client_options_from_properties(props)
