"""`kafkawire api-versions`: Kafka's kafka-broker-api-versions (BrokerApiVersionsCommand, 4.3.1).

    kafkawire api-versions --bootstrap-server H:P[,...] [--command-config F] [--timeout MS]
    kafkawire api-versions --local [--include-unstable]

With ``--bootstrap-server`` it does what Kafka's tool does: a Metadata request (all topics) to
the bootstrap servers in turn until one answers, then an ApiVersions request to every broker
that answer names, printed in the order of the Java HashMap Kafka's tool collects them in, as
``host:port (id: N rack: null isFenced: false) -> (`` and NodeApiVersions' lines:
``Name(key): min to max [usable: N]`` (``min`` alone when min = max), ``UNSUPPORTED`` for an API
of Kafka's broker listener the node does not advertise, ``UNKNOWN(key)`` for a key Kafka 4.3.1
does not know, ``[unusable: node too new|too old]``. "Usable" is the newest version both the
node and a Kafka 4.3.1 client speak: Kafka 4.3.1's ApiKeys ranges, which are our schemas'
except where kafkawire.protocol.kafka_api_keys says otherwise (RANGE_IN_4_3_1: our schemas
also hold Kafka 3.9's older versions, and ApiVersions v5 of a later Kafka). A broker that does
not answer is ``host:port (...) -> ERROR: <the exception>``. If no bootstrap server answers
Metadata: ``Request METADATA failed on brokers [...]`` on stderr, exit 1 (Kafka's tool adds a
Java stack trace, ours does not). Each failed attempt is a WARN line on stderr, as Kafka's
client logs one. Kafka 4.3.1's tool has no ``--bootstrap-controller``: a Kafka controller has no
Metadata API, so it fails as Kafka's does; our controllers answer Metadata.

``--local`` asks no server: it prints what a kafkawire controller node advertises in
ApiVersions, computed from the handlers a node registers (``advertised_api_versions``), in the
same format. ``--include-unstable`` (with --local) also
counts the unstable last versions, which a node does not advertise.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from dataclasses import dataclass

from kafkawire.protocol.error_codes import Errors
from kafkawire.tools.admin_client import KafkaApiError, ToolError, load_properties, parse_bootstrap, run_sync, show_warnings
from kafkawire.controller.java_order import grown_capacity, hashmap_order, string_hash
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.net.client import NetworkClient, RequestTimedOut, TransportError
from kafkawire.protocol.apis import api_table
from kafkawire.tools.admin_client import _config_int

COMMAND = "api-versions"
HELP = "ask a server which APIs and versions it supports, as kafka-broker-api-versions does"
DEFAULT_REQUEST_TIMEOUT_MS = 5000          # BrokerApiVersionsCommand.AdminClient's request.timeout.ms
NO_BROKERS_RETRY_MS = 50                   # awaitBrokers' sleep when Metadata names no broker
# A fixed name, shared by the tools that act as Kafka's Admin: it ends their WARN lines, as the README shows.
log = logging.getLogger("kafkawire.admin")


# --- what a Kafka 4.3.1 client knows: ApiKeys ------------------------------------------------------

@dataclass(frozen=True)
class ClientApi:
    key: int
    name: str
    oldest: int
    latest: int                 # ApiKeys.latestVersion(): an unstable last version included
    broker: bool                # in ApiKeys.clientApis(): listed UNSUPPORTED when a node lacks it


def kafka_client_apis() -> dict[int, ClientApi]:
    """Kafka 4.3.1's ApiKeys: our schemas' names and ranges, corrected where 4.3.1 differs, and the
    APIs we have no schema for."""
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.protocol import kafka_api_keys as k
    apis = {}
    for key, api in api_table().items():
        if key not in k.KEYS_IN_4_3_1:
            continue            # a later Kafka's API: UNKNOWN(key) to a 4.3.1 client
        low, high = k.RANGE_IN_4_3_1.get(key, (api.min_version, api.max_version))
        apis[key] = ClientApi(key, api.name, low, high, key in k.BROKER_LISTENER_KEYS)
    for key, (name, low, high) in k.NOT_IN_OUR_SCHEMAS.items():
        apis[key] = ClientApi(key, name, low, high, key in k.BROKER_LISTENER_KEYS)
    return dict(sorted(apis.items()))


# --- NodeApiVersions.toString(true) ---------------------------------------------------------------------

def _api_text(key: int, low: int, high: int, client: ClientApi | None) -> str:
    versions = str(low) if low == high else f"{low} to {high}"
    if client is None:
        return f"UNKNOWN({key}): {versions}"
    if client.latest < low:
        usable = "[unusable: node too new]"
    elif high < client.oldest:
        usable = "[unusable: node too old]"
    else:
        usable = f"[usable: {min(client.latest, high)}]"
    return f"{client.name}({key}): {versions} {usable}"


def node_api_versions_text(advertised) -> str:
    """``advertised``: (api key, min, max) triples, as an ApiVersions response lists them."""
    clients = kafka_client_apis()
    lines = {key: _api_text(key, low, high, clients.get(key)) for key, low, high in advertised}
    for key, api in clients.items():
        if api.broker and key not in lines:
            lines[key] = f"{api.name}({key}): UNSUPPORTED"
    return "(\n\t" + ",\n\t".join(lines[key] for key in sorted(lines)) + "\n)"


def node_text(node_id: int, host: str, port: int, rack: str | None = None) -> str:
    """org.apache.kafka.common.Node.toString (Metadata's nodes are never fenced)."""
    return f"{host}:{port} (id: {node_id} rack: {'null' if rack is None else rack} isFenced: false)"


def _java_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >> 31 else value


def node_hash(node_id: int, host: str, port: int, rack: str | None = None) -> int:
    """Node.hashCode, so brokers print in the order of the tool's HashMap<Node, ...>."""
    h = 31 + string_hash(host)
    h = 31 * _java_int(h) + node_id
    h = 31 * _java_int(h) + port
    h = 31 * _java_int(h) + (0 if rack is None else string_hash(rack))
    return (31 * _java_int(h) + 1237) & 0xFFFFFFFF          # Boolean.hashCode(false)


def in_hashmap_order(brokers: list[tuple[int, str, int, str | None]]) -> list:
    return hashmap_order(brokers, lambda b: node_hash(*b), grown_capacity(len(brokers)))


# --- asking the servers -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Options:
    bootstrap: tuple[tuple[str, int], ...]
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    connect_timeout_ms: int = 10_000        # socket.connection.setup.timeout.ms
    no_brokers_deadline_ms: int = 60_000    # kafkawire's bound on Kafka's endless awaitBrokers
    client_options: dict | None = None


def options_from(bootstrap: str, properties: dict | None = None, timeout_ms: int | None = None) -> Options:
    """The tool's flags and its --command-config keys (request.timeout.ms, the security keys)."""
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.net.config import ConfigError
    from kafkawire.net.security import client_options_from_properties
    props = properties or {}
    try:
        client_options = client_options_from_properties(props)
    except ConfigError as exc:
        raise ToolError(f"--command-config: {exc}") from None
    if timeout_ms is not None and timeout_ms <= 0:
        raise ToolError(f"--timeout must be a positive number of milliseconds, not {timeout_ms}")
    request_timeout = _config_int(props, "request.timeout.ms", DEFAULT_REQUEST_TIMEOUT_MS)
    connect_timeout = _config_int(props, "socket.connection.setup.timeout.ms", 10_000, "LONG")
    if timeout_ms is not None:
        request_timeout, connect_timeout = min(request_timeout, timeout_ms), min(connect_timeout, timeout_ms)
    return Options(parse_bootstrap(bootstrap, "bootstrap.servers"), request_timeout, connect_timeout,
                   timeout_ms or 60_000, client_options)


def _bootstrap_nodes(options: Options) -> list[str]:
    """Metadata.bootstrap's nodes: ids -1, -2, ... in the order given."""
    return [node_text(-1 - i, host, port) for i, (host, port) in enumerate(options.bootstrap)]


async def _metadata_brokers(client, options: Options) -> list[tuple[int, str, int, str | None]]:
    """sendAnyNode(Metadata for all topics): the bootstrap servers in turn; each failure is a WARN."""
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.messages.metadata_request import MetadataRequest
    nodes = _bootstrap_nodes(options)
    for i, peer in enumerate(options.bootstrap):
        try:
            response = await client.send(peer, MetadataRequest(topics=None, allow_auto_topic_creation=True))
            return [(b.node_id, b.host, b.port, b.rack) for b in response.brokers]
        except TransportError as exc:
            following = f"asking {nodes[i + 1]} next" if i + 1 < len(nodes) else "no bootstrap server left"
            log.warning("Request METADATA to bootstrap server %s failed: %s; %s (a request waits up to "
                        "request.timeout.ms=%d, set it in --command-config)", nodes[i], _reason(exc), following,
                        options.request_timeout_ms)
    raise ToolError(f"Request METADATA failed on brokers [{', '.join(nodes)}]")


def _reason(exc) -> str:
    text = str(exc)
    prefix = f"{exc.peer[0]}:{exc.peer[1]}: "
    return text[len(prefix):] if text.startswith(prefix) else text


async def _await_brokers(client, options: Options) -> list:
    """awaitBrokers: Metadata until it names a broker (Kafka's tool waits for ever; ours until
    --timeout, 60 s by default, saying so once)."""
    deadline = time.monotonic() + options.no_brokers_deadline_ms / 1000
    brokers = await _metadata_brokers(client, options)
    if not brokers:
        log.warning("the Metadata answer names no broker; asking again every %d ms for up to %d ms (--timeout MS)",
                    NO_BROKERS_RETRY_MS, options.no_brokers_deadline_ms)
    while not brokers:
        if time.monotonic() >= deadline:
            raise ToolError(f"No broker named in the metadata of [{', '.join(_bootstrap_nodes(options))}] after "
                            f"{options.no_brokers_deadline_ms} ms")
        import asyncio
        await asyncio.sleep(NO_BROKERS_RETRY_MS / 1000)
        brokers = await _metadata_brokers(client, options)
    return brokers


async def _node_api_versions(client, host: str, port: int) -> str:
    """getNodeApiVersions: the node's ApiVersions as NodeApiVersions prints them, or ``ERROR: ...``."""
    try:
        response = await client.send((host, port), ApiVersionsRequest(client_software_name="kafkawire",
                                                                      client_software_version="0.1.0"))
    except RequestTimedOut as exc:
        log.warning("Request API_VERSIONS to %s:%d failed: %s", host, port, _reason(exc))
        return "ERROR: org.apache.kafka.common.errors.TimeoutException"
    except TransportError as exc:
        log.warning("Request API_VERSIONS to %s:%d failed: %s", host, port, _reason(exc))
        return "ERROR: org.apache.kafka.common.errors.DisconnectException"
    if response.error_code != Errors.NONE:
        return f"ERROR: {KafkaApiError(response.error_code)}"
    return node_api_versions_text([(a.api_key, a.min_version, a.max_version) for a in response.api_keys])


async def broker_api_versions_async(options: Options) -> list[str]:
    """The lines Kafka's tool prints: one ``node -> (...)`` or ``node -> ERROR: ...`` per broker."""
    client = NetworkClient(client_id="admin-1", request_timeout_ms=options.request_timeout_ms,
                           connect_timeout_ms=options.connect_timeout_ms, **(options.client_options or {}))
    try:
        brokers = await _await_brokers(client, options)
        return [f"{node_text(*broker)} -> {await _node_api_versions(client, broker[1], broker[2])}"
                for broker in in_hashmap_order(brokers)]
    finally:
        await client.close()


def broker_api_versions(bootstrap: str, **options) -> list[str]:
    return run_sync(broker_api_versions_async(options_from(bootstrap, **options)))


# --- --local: what a kafkawire node advertises ----------------------------------------------------------

def local_text(include_unstable: bool = False) -> str:
    advertised = advertised_api_versions(include_unstable=include_unstable)
    return f"kafkawire controller node (local, not asked) -> {node_api_versions_text(advertised)}"


# --- command line ---------------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]",
                        help="REQUIRED (unless --local): the server(s) to connect to.")
    parser.add_argument("--command-config", metavar="FILE",
                        help="A property file containing configs to be passed to Admin Client.")
    parser.add_argument("--timeout", type=int, metavar="MS",
                        help="kafkawire: bound on each request and on waiting for a broker to be named "
                             "(default: request.timeout.ms 5000, and 60000)")
    parser.add_argument("--local", action="store_true",
                        help="kafkawire: ask no server; print what a kafkawire controller node advertises")
    parser.add_argument("--include-unstable", action="store_true",
                        help="with --local: also count the unstable last versions, which a node does not advertise")
    parser.set_defaults(api_versions_parser=parser)


def run(args: argparse.Namespace) -> int:
    if args.local:
        print(local_text(args.include_unstable))
        return 0
    if args.bootstrap_server is None:
        if args.command_config is None and args.timeout is None:
            # No option at all: Kafka's tool prints its help on stderr and exits 1.
            args.api_versions_parser.print_help(sys.stderr)
            return 1
        # CommandLineUtils.checkRequiredArgs' line (Kafka's tool prints its option table after it)
        print('Missing required argument "[bootstrap-server]"', file=sys.stderr)
        return 1
    show_warnings()
    try:
        if args.command_config is not None and not os.path.isfile(args.command_config):
            raise ToolError(args.command_config)      # Utils.loadProps' NoSuchFileException message
        properties = load_properties(args.command_config) if args.command_config else None
        lines = broker_api_versions(args.bootstrap_server, properties=properties, timeout_ms=args.timeout)
    except ToolError as exc:
        print(exc, file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0


def advertised_api_versions(include_unstable: bool = False) -> list[tuple[int, int, int]]:
    """(key, min, max) that a kafkawire controller node's listener puts in ApiVersions, without a
    node: ControllerNode._register itself runs on a KafkaServer that is never bound, for a node
    whose raft driver, metadata topic and metadata controller are bare objects (registering only
    reads their handlers' version bounds; nothing is called). tests/tools/test_api_versions.py
    checks the result against a running node."""
    from types import SimpleNamespace

    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.controller.controller import MetadataController
    from kafkawire.net.metadata_topic import MetadataTopic
    from kafkawire.net.server import KafkaServer
    from kafkawire.raft.node.controller_node import ControllerNode

    async def never_called(ctx, request):
        raise AssertionError("advertised_api_versions' handlers only carry version bounds")
    node = ControllerNode.__new__(ControllerNode)
    node.driver = SimpleNamespace(handle_request=never_called)
    node.topic = MetadataTopic.__new__(MetadataTopic)
    node.state_machine = MetadataController.__new__(MetadataController)
    node.max_versions, node.authorizer = {}, None
    server = KafkaServer({})
    node._register(server)
    advertised = server.api_versions()
    if include_unstable:
        table = api_table()
        advertised = [(key, low, high + 1 if table[key].request.LATEST_VERSION_UNSTABLE
                       and high == table[key].max_version - 1 else high) for key, low, high in advertised]
    return advertised
