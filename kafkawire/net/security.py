"""Listener security as Kafka configures it: the ssl.* and sasl.* keys of server.properties,
resolved per listener, and the TLS contexts built from them.

Resolution follows Kafka's ``KafkaConfig.valuesWithPrefixOverride(listenerName.configPrefix())``:
``listener.name.<listener, lower case>.<key>`` wins over ``<key>``. JAAS configuration is looked
up as Kafka's ``JaasContext.loadServerContext`` does, per mechanism:
``listener.name.<listener>.<mechanism, lower case>.sasl.jaas.config``. The node's own outbound
clients authenticate as Kafka's do (``ChannelBuilders.clientChannelBuilder`` with
``JaasContext.Type.SERVER``: the listener's server JAAS entry, its ``username`` and ``password``):
the raft client with the first controller listener's settings and
``sasl.mechanism.controller.protocol``; the replica fetchers and the transaction markers with the
inter-broker listener's settings and ``sasl.mechanism.inter.broker.protocol``.

Supported keystore and truststore types: PEM (files at ``ssl.keystore.location`` /
``ssl.truststore.location``, or the PEM text in ``ssl.keystore.certificate.chain`` +
``ssl.keystore.key`` / ``ssl.truststore.certificates``), JKS (Kafka's default), PKCS12 and JCEKS, loaded
by kafkawire.net.tls_stores.
"""
from __future__ import annotations

import dataclasses
import re
import ssl
from dataclasses import dataclass, field

from kafkawire.net.config import ConfigError, _deferred, java_int
from kafkawire.net.authorizer import AuthorizerSettings, STANDARD_AUTHORIZER
from kafkawire.net.reauthentication import is_reauth_key, max_reauth_by_mechanism
from kafkawire.net.sasl import SaslClient, require_mechanism
from kafkawire.net import sasl_oauthbearer
from kafkawire.net.sasl_gssapi import KERBEROS_ACCEPTED_KEYS, GssapiAcceptor, GssapiClient, login_options
from kafkawire.net.ssl_principal_mapper import MAPPING_RULES_KEY, SslPrincipalMapper
from kafkawire.net.tls_stores import load_keystore, load_truststore

__all__ = ["SslSettings", "ListenerSecurity", "JaasEntry", "resolve_listener_security",
           "controller_client_security", "inter_broker_client_security",
           "client_options", "with_client_security", "parse_jaas_config", "server_ssl_context", "client_ssl_context",
           "is_security_key", "SUPPORTED_MECHANISMS", "ClientSecurity"]

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
SUPPORTED_STORE_TYPES = ("PEM", "JKS", "PKCS12", "JCEKS")
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}

# SslConfigs / BrokerSecurityConfigs / SaslConfigs defaults (Kafka 4.x).
SSL_DEFAULTS = {
    "ssl.protocol": "TLSv1.3",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.cipher.suites": "",
    "ssl.keystore.type": "JKS",
    "ssl.keystore.location": None,
    "ssl.keystore.password": None,
    "ssl.key.password": None,
    "ssl.keystore.certificate.chain": None,
    "ssl.keystore.key": None,
    "ssl.truststore.type": "JKS",
    "ssl.truststore.location": None,
    "ssl.truststore.password": None,
    "ssl.truststore.certificates": None,
    "ssl.client.auth": "none",
    "ssl.endpoint.identification.algorithm": "https",
}
SASL_DEFAULTS = {
    "sasl.enabled.mechanisms": "GSSAPI",
    "sasl.mechanism.controller.protocol": "GSSAPI",
    "sasl.mechanism.inter.broker.protocol": "GSSAPI",
    # BrokerSecurityConfigs: INT, no validator; -1 is NetworkReceive.UNLIMITED.
    "sasl.server.max.receive.size": "524288",
}
DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE = 524288
# Keys Kafka defines that kafkawire reads no further than accepting (their defaults are what we do).
_ACCEPTED = {"ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
             MAPPING_RULES_KEY, "super.users",
             "authorizer.class.name", "allow.everyone.if.no.acl.found"}
_LISTENER_PREFIX = re.compile(r"^listener\.name\.([^.]+)\.(.+)$")


def is_security_key(key: str) -> bool:
    """Whether ``key`` is one of the security keys this module reads (listener-prefixed or not)."""
    m = _LISTENER_PREFIX.match(key)
    rest = m.group(2) if m else key
    if rest in SSL_DEFAULTS or rest in SASL_DEFAULTS or rest in _ACCEPTED or rest in KERBEROS_ACCEPTED_KEYS:
        return True
    if sasl_oauthbearer.is_oauthbearer_key(rest):
        return True
    return m is not None and (rest.endswith(".sasl.jaas.config") or is_reauth_key(rest))


@dataclass(frozen=True)
class JaasEntry:
    """One login module of a ``sasl.jaas.config`` value."""
    key: str                      # the property it came from, for error messages
    module: str
    flag: str
    options: dict = field(default_factory=dict)

    def users(self) -> dict[str, str]:
        """PlainLoginModule's ``user_<name>=<password>`` options: the PLAIN server's credentials."""
        return {k[len("user_"):]: v for k, v in self.options.items() if k.startswith("user_")}


@dataclass(frozen=True)
class SslSettings:
    values: dict            # ssl.* key -> resolved raw value (None when unset)
    keys: dict              # ssl.* key set in the file -> the property it came from (prefixed or not)

    def get(self, key: str):
        return self.values.get(key)

    def where(self, key: str) -> str:
        return self.keys.get(key, key)


@dataclass(frozen=True)
class ListenerSecurity:
    listener_name: str
    protocol: str                                   # PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
    ssl: SslSettings | None = None                  # for SSL and SASL_SSL
    client_auth: str = "none"
    mechanisms: tuple[str, ...] = ()                # sasl.enabled.mechanisms, for SASL_*
    jaas: dict = field(default_factory=dict)        # mechanism -> JaasEntry
    # The largest frame read before authentication completes (SaslServerAuthenticator), for SASL_*.
    sasl_server_max_receive_size: int = DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE
    max_reauth_ms: dict = field(default_factory=dict)  # mechanism -> connections.max.reauth.ms
    # ssl.principal.mapping.rules, for SSL and SASL_SSL (a certificate's principal on SSL only).
    principal_mapper: SslPrincipalMapper | None = None
    # OAUTHBEARER's token validator (kafkawire.net.sasl_oauthbearer), when the listener enables it.
    oauthbearer: object | None = field(default=None, compare=False, repr=False)
    gssapi: GssapiAcceptor | None = None            # when the listener enables GSSAPI

    @property
    def uses_ssl(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class ClientSecurity:
    """How one of the node's outbound clients (raft, replica fetchers, transaction markers)
    connects to a listener of its peers."""
    protocol: str
    ssl: SslSettings | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)     # kept out of tracebacks and logs
    # OAUTHBEARER: the SaslClient factory made from the JAAS entry's unsecuredLogin* options.
    sasl_factory: object | None = field(default=None, repr=False, compare=False)
    kerberos: tuple | None = None       # GSSAPI: (principal, keytab or None, service name)


def _lookup(props: dict, listener: str, key: str, default):
    """(value, source key): the listener-prefixed key, else the plain key, else the default."""
    prefixed = f"listener.name.{listener.lower()}.{key}"
    if prefixed in props:
        return props[prefixed], prefixed
    if key in props:
        return props[key], key
    return default, key


def ssl_settings(props: dict, listener: str) -> SslSettings:
    values, keys = {}, {}
    for key, default in SSL_DEFAULTS.items():
        raw, source = _lookup(props, listener, key, default)
        secret = key in ("ssl.keystore.password", "ssl.key.password", "ssl.truststore.password")
        values[key] = raw.strip() if isinstance(raw, str) and not secret else raw
        if source in props:
            keys[key] = source
    return SslSettings(values, keys)


def resolve_listener_security(props: dict, listener: str, protocol: str) -> ListenerSecurity:
    """The security of one listener from server.properties ``props``; ConfigError names the key."""
    if protocol == "PLAINTEXT":
        return ListenerSecurity(listener, protocol)
    settings = ssl_settings(props, listener) if protocol in ("SSL", "SASL_SSL") else None
    client_auth = "none"
    if settings is not None:
        prefixed = f"listener.name.{listener.lower()}.ssl.client.auth"
        # ChannelBuilders: on a SASL_SSL listener only the listener-prefixed ssl.client.auth counts.
        if protocol == "SSL" or prefixed in props:
            client_auth = settings.get("ssl.client.auth").lower()
            if client_auth not in CLIENT_AUTH:
                raise ConfigError(settings.where("ssl.client.auth"), settings.get("ssl.client.auth"),
                                  "must be one of none, requested, required")
        _check_ssl(settings)
    mechanisms, jaas, max_receive, gssapi = (), {}, DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE, None
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        raw, source = _lookup(props, listener, "sasl.server.max.receive.size",
                              SASL_DEFAULTS["sasl.server.max.receive.size"])
        max_receive = java_int(source, raw)
        raw, source = _lookup(props, listener, "sasl.enabled.mechanisms", SASL_DEFAULTS["sasl.enabled.mechanisms"])
        mechanisms = tuple(m.strip() for m in raw.split(",") if m.strip())
        if not mechanisms:
            raise ConfigError(source, raw, f"must enable at least one SASL mechanism for listener {listener}")
        for mechanism in mechanisms:
            if mechanism not in SUPPORTED_MECHANISMS:
                raise ConfigError(source, raw, f"enables {mechanism}, which kafkawire does not support "
                                               f"(supported: {', '.join(SUPPORTED_MECHANISMS)})")
            require_mechanism(mechanism)
            jaas[mechanism] = _jaas_for(props, listener, mechanism)
            if mechanism == "GSSAPI":
                gssapi = GssapiAcceptor.from_config(jaas[mechanism], lambda key: _lookup(props, listener, key, None))
            if mechanism == "PLAIN" and not jaas[mechanism].users():
                raise ConfigError(jaas[mechanism].key, "(hidden)", "has no user_<name>=<password> option: "
                                                                   "no client could authenticate with PLAIN")
    oauthbearer = None
    if "OAUTHBEARER" in jaas:
        oauthbearer = sasl_oauthbearer.server_validator(props, listener, jaas["OAUTHBEARER"])
    mapper = None
    if settings is not None:        # SslChannelBuilder and SaslChannelBuilder both read the rules
        rules, source = _lookup(props, listener, MAPPING_RULES_KEY, None)
        mapper = SslPrincipalMapper(rules, source)
    return ListenerSecurity(listener, protocol, settings, client_auth, mechanisms, jaas, max_receive,
                            max_reauth_by_mechanism(props, listener, mechanisms), mapper, oauthbearer, gssapi)


def _jaas_for(props: dict, listener: str, mechanism: str) -> JaasEntry:
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    if key not in props:
        raise ConfigError(key, None, f"is required: listener {listener} enables SASL mechanism {mechanism} "
                                     "(kafkawire reads no static JAAS file)")
    return parse_jaas_config(key, props[key])


def controller_client_security(props: dict, listener: str, protocol: str) -> ClientSecurity:
    """The raft client's security towards controllers on ``listener`` (the first controller listener)."""
    return _node_client_security(props, listener, protocol, "sasl.mechanism.controller.protocol",
                                 "the controller authenticates to other controllers")


def inter_broker_client_security(props: dict, listener: str, protocol: str) -> ClientSecurity:
    """The security of a broker's connections to other brokers on the inter-broker ``listener``
    (ReplicaFetcherThread's BrokerBlockingSender, TransactionMarkerChannelManager). As KafkaConfig
    requires, a SASL listener must enable ``sasl.mechanism.inter.broker.protocol``."""
    return _node_client_security(props, listener, protocol, "sasl.mechanism.inter.broker.protocol",
                                 "the broker authenticates to other brokers", must_be_enabled=True)


def _node_client_security(props: dict, listener: str, protocol: str, mechanism_key: str, who: str,
                          must_be_enabled: bool = False) -> ClientSecurity:
    if protocol == "PLAINTEXT":
        return ClientSecurity(protocol)
    settings = ssl_settings(props, listener) if protocol in ("SSL", "SASL_SSL") else None
    if settings is not None:
        _check_ssl(settings)
    if protocol == "SSL":
        return ClientSecurity(protocol, settings)
    raw = props.get(mechanism_key, SASL_DEFAULTS[mechanism_key]).strip()
    if raw not in SUPPORTED_MECHANISMS:
        raise ConfigError(mechanism_key, raw, f"is not supported by kafkawire (supported: "
                                              f"{', '.join(SUPPORTED_MECHANISMS)})")
    if must_be_enabled:
        enabled, _ = _lookup(props, listener, "sasl.enabled.mechanisms", SASL_DEFAULTS["sasl.enabled.mechanisms"])
        if raw not in [m.strip() for m in enabled.split(",")]:
            raise ConfigError(mechanism_key, raw, f"must be included in sasl.enabled.mechanisms (of listener "
                                                  f"{listener}) when SASL is used for inter-broker communication")
    require_mechanism(raw)
    entry = _jaas_for(props, listener, raw)
    if raw == sasl_oauthbearer.MECHANISM:
        factory = sasl_oauthbearer.node_client(lambda name: _mechanism_lookup(props, listener, raw, name),
                                               entry.options, entry.key)
        return ClientSecurity(protocol, settings, raw, sasl_factory=factory)
    if raw == "GSSAPI":
        # The listener's Krb5LoginModule entry: the node logs in as its principal, with its keytab.
        kerberos = login_options(entry, lambda key: _lookup(props, listener, key, None))
        return ClientSecurity(protocol, settings, raw, kerberos=kerberos)
    username, password = entry.options.get("username"), entry.options.get("password")
    if username is None or password is None:
        raise ConfigError(entry.key, "(hidden)", f"needs username and password options: {who} with {raw}")
    return ClientSecurity(protocol, settings, raw, username, password)


def _mechanism_lookup(props: dict, listener: str, mechanism: str, key: str):
    """(value, source key): ``listener.name.<l>.<mechanism>.<key>``, else ``_lookup``'s order."""
    prefixed = f"listener.name.{listener.lower()}.{mechanism.lower()}.{key}"
    if prefixed in props:
        return props[prefixed], prefixed
    return _lookup(props, listener, key, None)


def with_client_security(config, props: dict):
    """``config`` (a ServerConfig) with the ClientSecurity of its connections to controllers and,
    for a broker, to other brokers (each a ConfigError instead, raised when the node starts)."""
    protocols = dict(config.listener_security_protocol_map)
    changes = {}
    if config.controller_listener_names:
        name = config.controller_listener_names[0]
        changes["controller_client_security"] = _deferred(controller_client_security, props, name,
                                                          protocols.get(name, "PLAINTEXT"))
    listener = config.inter_broker_listener
    if listener is not None:
        changes["inter_broker_client_security"] = _deferred(inter_broker_client_security, props, listener,
                                                            protocols.get(listener, "PLAINTEXT"))
    return dataclasses.replace(config, **changes) if changes else config


def client_options(security: ClientSecurity | None) -> dict:
    """NetworkClient options (ssl_context, sasl) for connections with ``security`` (None: PLAINTEXT)."""
    if security is None or security.protocol == "PLAINTEXT":
        return {}
    options: dict = {}
    if security.ssl is not None:
        options["ssl_context"] = client_ssl_context(security.ssl)
    if security.sasl_factory is not None:
        options["sasl"] = security.sasl_factory
    elif security.mechanism == "GSSAPI":
        kerberos = security.kerberos
        options["sasl"] = lambda: GssapiClient(*kerberos)
    elif security.mechanism is not None:
        mechanism, username, password = security.mechanism, security.username, security.password
        options["sasl"] = lambda: SaslClient(mechanism, username, password)
    return options


def _check_ssl(s: SslSettings) -> None:
    for key in ("ssl.keystore.type", "ssl.truststore.type"):
        kind = s.get(key).upper()
        location = "ssl.keystore.location" if key == "ssl.keystore.type" else "ssl.truststore.location"
        inline = "ssl.keystore.certificate.chain" if key == "ssl.keystore.type" else "ssl.truststore.certificates"
        in_use = s.get(location) is not None or s.get(inline) is not None
        if in_use and kind not in SUPPORTED_STORE_TYPES:
            raise ConfigError(s.where(key), s.get(key), "is not supported: kafkawire reads PEM, JKS, PKCS12 and JCEKS "
                                                        "stores only; convert the store with keytool "
                                                        "-importkeystore -deststoretype PKCS12")
        if s.get(inline) is not None and kind != "PEM":
            raise ConfigError(s.where(inline), "(value)", f"is only valid with {key}=PEM")
    protocols = [p.strip() for p in s.get("ssl.enabled.protocols").split(",") if p.strip()]
    for p in protocols:
        if p not in _TLS_VERSIONS:
            raise ConfigError(s.where("ssl.enabled.protocols"), s.get("ssl.enabled.protocols"),
                              f"names {p}; kafkawire supports TLSv1.2 and TLSv1.3")
    if not protocols:
        raise ConfigError(s.where("ssl.enabled.protocols"), s.get("ssl.enabled.protocols"), "must not be empty")
    algorithm = s.get("ssl.endpoint.identification.algorithm")
    if algorithm not in ("https", ""):
        raise ConfigError(s.where("ssl.endpoint.identification.algorithm"), algorithm,
                          "must be https or empty (no host name check)")


# --- JAAS ---------------------------------------------------------------------------------------

_JAAS_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=)|(;))')


def parse_jaas_config(key: str, text: str) -> JaasEntry:
    """``<LoginModule class> <flag> [name=value ...];`` as Kafka's JaasConfig reads a sasl.jaas.config
    value (values may be double-quoted). Exactly one login module, as Kafka requires."""
    tokens, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _JAAS_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ConfigError(key, "(hidden)", f"is not a JAAS login module configuration (at character {pos})")
        quoted, word, eq, semi = m.groups()
        if quoted is not None:
            tokens.append(("value", re.sub(r"\\(.)", r"\1", quoted)))
        elif word is not None:
            tokens.append(("word", word))
        else:
            tokens.append(("=", "=") if eq else (";", ";"))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    modules = _jaas_modules(key, tokens)
    if len(modules) != 1:
        raise ConfigError(key, "(hidden)", f"contains {len(modules)} login modules, should be 1 module")
    return modules[0]


def _jaas_modules(key: str, tokens: list) -> list[JaasEntry]:
    modules, i = [], 0
    while i < len(tokens):
        if i + 1 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "word":
            raise ConfigError(key, "(hidden)", "must start with a login module class and a control flag")
        module, flag = tokens[i][1], tokens[i + 1][1].lower()
        if flag not in ("required", "requisite", "sufficient", "optional"):
            raise ConfigError(key, "(hidden)", f"has control flag {flag!r}; expected required, requisite, "
                                               "sufficient or optional")
        i += 2
        options = {}
        while i < len(tokens) and tokens[i][0] != ";":
            if i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "=" \
                    or tokens[i + 2][0] not in ("word", "value"):
                raise ConfigError(key, "(hidden)", f"has a malformed option in login module {module} "
                                                   "(expected name=value)")
            options[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ConfigError(key, "(hidden)", f"login module {module} does not end with ';'")
        i += 1
        modules.append(JaasEntry(key, module, flag, options))
    return modules


# --- TLS contexts -------------------------------------------------------------------------------

def _tls_range(context: ssl.SSLContext, s: SslSettings) -> None:
    versions = sorted(_TLS_VERSIONS[p.strip()] for p in s.get("ssl.enabled.protocols").split(",") if p.strip())
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    ciphers = s.get("ssl.cipher.suites")
    if ciphers:
        try:
            context.set_ciphers(":".join(c.strip() for c in ciphers.split(",") if c.strip()))
        except ssl.SSLError:
            raise ConfigError(s.where("ssl.cipher.suites"), ciphers, "names no cipher suite OpenSSL knows") from None


def server_ssl_context(security: ListenerSecurity) -> ssl.SSLContext:
    """The listener's TLS context; ConfigError names the key of a missing or unreadable store
    (checked when the listener starts, as Kafka's SslFactory does, not when the file is loaded)."""
    s = security.ssl
    if s.get("ssl.keystore.location") is None and s.get("ssl.keystore.certificate.chain") is None:
        raise ConfigError(f"listener.name.{security.listener_name.lower()}.ssl.keystore.location", None,
                          f"is required: listener {security.listener_name} is {security.protocol} and needs a "
                          "key and certificate (ssl.keystore.location, or ssl.keystore.certificate.chain and "
                          "ssl.keystore.key)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _tls_range(context, s)
    load_keystore(context, s)
    context.verify_mode = CLIENT_AUTH[security.client_auth]
    if context.verify_mode != ssl.CERT_NONE:
        load_truststore(context, s)
    return context


def client_ssl_context(s: SslSettings) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _tls_range(context, s)
    context.check_hostname = s.get("ssl.endpoint.identification.algorithm") == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    load_truststore(context, s)
    if s.get("ssl.keystore.location") is not None or s.get("ssl.keystore.certificate.chain") is not None:
        load_keystore(context, s)            # for listeners with ssl.client.auth=required
    return context


def client_options_from_properties(props: dict) -> dict:
    """NetworkClient options (ssl_context, sasl) from a Kafka client's properties, as an admin
    tool's ``--command-config`` gives them: ``security.protocol``, ``sasl.mechanism`` (default
    GSSAPI, as Kafka's), ``sasl.jaas.config`` with username and password (for GSSAPI a
    Krb5LoginModule with a keytab or a ticket cache, and ``sasl.kerberos.service.name``), and the unprefixed ssl.*
    keys. ConfigError names the key."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise ConfigError("security.protocol", props.get("security.protocol"),
                          "is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")
    options = {}
    if protocol in ("SSL", "SASL_SSL"):
        settings = ssl_settings(props, "client")
        _check_ssl(settings)
        options["ssl_context"] = client_ssl_context(settings)
    if protocol.startswith("SASL"):
        mechanism = props.get("sasl.mechanism", "GSSAPI").strip()
        if mechanism not in SUPPORTED_MECHANISMS:
            raise ConfigError("sasl.mechanism", mechanism,
                              f"is not supported by kafkawire (supported: {', '.join(SUPPORTED_MECHANISMS)})")
        require_mechanism(mechanism)
        if "sasl.jaas.config" not in props:
            raise ConfigError("sasl.jaas.config", None, f"is required with security.protocol={protocol}")
        entry = parse_jaas_config("sasl.jaas.config", props["sasl.jaas.config"])
        if mechanism == sasl_oauthbearer.MECHANISM:
            options["sasl"] = sasl_oauthbearer.node_client(lambda name: (props.get(name), name), entry.options,
                                                           entry.key)
            return options
        if mechanism == "GSSAPI":
            kerberos = login_options(entry, lambda key: (props.get(key), key), ticket_cache_allowed=True)
            options["sasl"] = lambda: GssapiClient(*kerberos)
            return options
        username, password = entry.options.get("username"), entry.options.get("password")
        if username is None or password is None:
            raise ConfigError("sasl.jaas.config", "(hidden)", "needs username and password options")
        options["sasl"] = lambda: SaslClient(mechanism, username, password)
    return options


def authorizer_settings(props: dict):
    """``authorizer.class.name`` (Kafka's StandardAuthorizer, or unset for none), ``super.users``
    (``User:a;User:b``) and ``allow.everyone.if.no.acl.found``; None when no authorizer is set."""
    name = props.get("authorizer.class.name", "").strip()
    if not name:
        return None
    if name != STANDARD_AUTHORIZER:
        raise ConfigError("authorizer.class.name", name, f"is not supported: kafkawire implements "
                                                         f"{STANDARD_AUTHORIZER} only")
    super_users = frozenset(u.strip() for u in props.get("super.users", "").split(";") if u.strip())
    for user in super_users:
        kind, sep, rest = user.partition(":")
        if not sep or not kind or not rest:
            raise ConfigError("super.users", props["super.users"], f"has {user!r}, which is not a principal "
                                                                   "(TYPE:NAME, e.g. User:admin)")
    allow = props.get("allow.everyone.if.no.acl.found", "false").strip().lower()
    if allow not in ("true", "false"):
        raise ConfigError("allow.everyone.if.no.acl.found", props["allow.everyone.if.no.acl.found"],
                          "is not a BOOLEAN: expected value to be either true or false")
    return AuthorizerSettings(super_users, allow == "true")
