"""The part of Kafka's Admin client that kafkawire's admin tools need, over NetworkClient.

    config = AdminConfig.create(bootstrap_controller="127.0.0.1:9093", timeout_ms=5000)
    async with Admin(config) as admin:
        result = await admin.call("describeMetadataQuorum", make_request, handle_response)

What it copies from Kafka's KafkaAdminClient (and AdminMetadataManager, ClientUtils):

* ``bootstrap.servers`` / ``bootstrap.controllers``: a comma-separated ``host:port`` list
  (``[ipv6]:port`` too), refused as ``Invalid url in bootstrap.servers: x`` or ``No resolvable
  bootstrap urls given in bootstrap.servers``.
* With bootstrap controllers (KIP-919) the cluster is learned with DescribeCluster v1+
  (EndpointType 2): its nodes are the controllers, its ControllerId the active one, and every
  call goes to the active controller. With bootstrap servers the cluster is first learned with
  Metadata (no topics; a node without the Metadata API, a Kafka controller's listener, fails
  every call with "The node does not support METADATA"), then a call goes to a bootstrap broker
  (a broker forwards what is the controller's to the controller). A call for one node id
  (``node_id``) goes to that controller or broker, waiting until the deadline for the metadata
  to name it.
* A call has a deadline (``default.api.timeout.ms``, 60 s) and each request a timeout
  (``request.timeout.ms``, 30 s); a request's own TimeoutMs field is the time left. A failed
  connection, a request that times out and a retriable error (NOT_CONTROLLER, which also makes
  the active controller be looked up again, or whatever a call's handler marks retriable) are
  retried after ``retry.backoff.ms`` doubling to ``retry.backoff.max.ms``, until the deadline,
  then the call fails with Kafka's TimeoutException.
* Errors are Kafka's exceptions: ``str(KafkaApiError)`` is what Kafka's tools print from
  ``ExecutionException.getMessage()``, ``org.apache.kafka.common.errors.VoterNotFoundException:
  <message>``, where the message is the response's ErrorMessage or, when that is null, the
  error's default message (Errors.exception(null)).

``--command-config`` files are read for the keys above plus ``client.id``,
``socket.connection.setup.timeout.ms`` and the security keys (``security.protocol``,
``sasl.mechanism`` PLAIN or SCRAM-SHA-256/512, ``sasl.jaas.config``, ``ssl.truststore.*``,
``ssl.keystore.*``, ``ssl.endpoint.identification.algorithm``; see kafkawire.net.security).
Other keys are ignored, as an Admin client ignores keys it does not know.
"""
from __future__ import annotations

import asyncio
import logging
import random
import socket
import time
from dataclasses import dataclass, field

from kafkawire.net.backoff import ExponentialBackoff
from kafkawire.net.client import (AuthenticationFailed, NetworkClient, NodeBackingOff, ProtocolError, RequestTimedOut,
                                  TransportError, UnsupportedVersion)
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.errors import UnsupportedVersionError
from kafkawire.storage.state_files import JavaProperties

_DEADLINE_MARGIN_S = 0.01          # asyncio fires a timer when it is within the clock resolution
# A fixed name, shared by the tools that act as Kafka's Admin: it ends their WARN lines, as the README shows.
log = logging.getLogger("kafkawire.admin")

__all__ = ["ToolError", "KafkaApiError", "AdminConfig", "Admin", "exception_class_name", "load_properties",
           "parse_bootstrap", "run_sync", "admin_config", "add_connection_arguments", "connection_options",
           "show_warnings"]

ENDPOINT_TYPE_BROKER = 1
ENDPOINT_TYPE_CONTROLLER = 2
_ERRORS_PACKAGE = "org.apache.kafka.common.errors"
# Errors whose exception class is not the error's name in CamelCase + "Exception" (Errors.java).
_EXCEPTION_CLASSES = {
    "UNKNOWN_SERVER_ERROR": "UnknownServerException", "CORRUPT_MESSAGE": "CorruptRecordException", "REQUEST_TIMED_OUT": "TimeoutException",
    "MESSAGE_TOO_LARGE": "RecordTooLargeException", "STALE_CONTROLLER_EPOCH": "ControllerMovedException",
    "OFFSET_METADATA_TOO_LARGE": "OffsetMetadataTooLarge", "NETWORK_EXCEPTION": "NetworkException",
    "INVALID_TOPIC_EXCEPTION": "InvalidTopicException", "RECORD_LIST_TOO_LARGE": "RecordBatchTooLargeException",
    "TOPIC_AUTHORIZATION_FAILED": "TopicAuthorizationException",
    "GROUP_AUTHORIZATION_FAILED": "GroupAuthorizationException",
    "CLUSTER_AUTHORIZATION_FAILED": "ClusterAuthorizationException", "TOPIC_ALREADY_EXISTS": "TopicExistsException",
    "INVALID_CONFIG": "InvalidConfigurationException", "OUT_OF_ORDER_SEQUENCE_NUMBER": "OutOfOrderSequenceException",
    "DUPLICATE_SEQUENCE_NUMBER": "DuplicateSequenceException",
    "INVALID_PRODUCER_ID_MAPPING": "InvalidPidMappingException",
    "INVALID_TRANSACTION_TIMEOUT": "InvalidTxnTimeoutException",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "TransactionalIdAuthorizationException",
    "KAFKA_STORAGE_ERROR": "KafkaStorageException", "SASL_AUTHENTICATION_FAILED": "SaslAuthenticationException",
    "DELEGATION_TOKEN_AUTH_DISABLED": "DelegationTokenDisabledException",
    "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED": "UnsupportedByAuthenticationException",
    "DELEGATION_TOKEN_AUTHORIZATION_FAILED": "DelegationTokenAuthorizationException",
    "NON_EMPTY_GROUP": "GroupNotEmptyException",
    "PRINCIPAL_DESERIALIZATION_FAILURE": "PrincipalDeserializationException",
    "FETCH_SESSION_TOPIC_ID_ERROR": "FetchSessionTopicIdException",
    "INVALID_REGULAR_EXPRESSION": "InvalidRegularExpression",
}


def exception_class_name(error: Errors) -> str:
    """The simple name of the Java exception class Kafka's Errors maps ``error`` to."""
    special = _EXCEPTION_CLASSES.get(error.name)
    if special is not None:
        return special
    return "".join(word.capitalize() for word in error.name.split("_")) + "Exception"


class ToolError(Exception):
    """A refusal the tool prints as it is, on one line of stderr, exiting 1 (Kafka's TerseException)."""


class KafkaApiError(ToolError):
    """A Kafka error, as the Java exception ``Errors.exception(message)`` gives it.

    ``error`` is the Errors member, ``message`` the exception's own message (Throwable.getMessage),
    ``str(self)`` the exception's toString, which is what Kafka's tools print.
    """

    def __init__(self, error, message: str | None = None, *, retriable: bool | None = None):
        self.error = Errors.for_code(int(error))
        self.message = self.error.message if message is None else message
        self.retriable = self.error.retriable if retriable is None else retriable
        self.exception_class = exception_class_name(self.error)
        super().__init__(f"{_ERRORS_PACKAGE}.{self.exception_class}: {self.message}")


def not_controller_check(*codes: int) -> None:
    """Kafka's handleNotControllerError: NOT_CONTROLLER anywhere in a response means try again
    once the active controller is known again."""
    if Errors.NOT_CONTROLLER in codes:
        raise KafkaApiError(Errors.NOT_CONTROLLER, retriable=True)


# --- configuration ------------------------------------------------------------------------------

def load_properties(path) -> dict[str, str]:
    """A ``--command-config`` file: Java properties (MetadataQuorumCommand.getProperties' refusal)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise ToolError(f"Properties file {path} does not exist.") from None
    except OSError as exc:
        raise ToolError(f"Properties file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        return dict(JavaProperties.parse(raw.decode("latin-1")).items)
    except ValueError as exc:
        raise ToolError(f"Properties file {path} is not valid Java properties syntax: {exc}") from None


def parse_bootstrap(text: str, key: str = "bootstrap.servers", *, resolve: bool = True) -> tuple[tuple[str, int], ...]:
    """ClientUtils.parseAndValidateAddresses: ``host:port`` entries, trimmed, empty ones skipped;
    hosts that do not resolve are dropped, and none resolving is refused."""
    import re
    host_port = re.compile(r".*?\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)$")     # Utils.HOST_PORT_PATTERN
    addresses = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        m = host_port.match(entry)
        if not m or not m.group(1) or int(m.group(2)) > 65535:
            raise ToolError(f"Invalid url in {key}: {entry}")
        addresses.append((m.group(1), int(m.group(2))))
    if resolve:
        addresses = [a for a in addresses if _resolves(*a)]
    if not addresses:
        raise ToolError(f"No resolvable bootstrap urls given in {key}")
    return tuple(addresses)


def _resolves(host: str, port: int) -> bool:
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return True
    except (socket.gaierror, UnicodeError):
        return False


def _config_int(props: dict, key: str, default: int, kind: str = "INT") -> int:
    raw = props.get(key)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ToolError(f"Invalid value {raw} for configuration {key}: Not a number of type {kind}") from None
    if value < 0:
        raise ToolError(f"Invalid value {raw} for configuration {key}: Value must be at least 0")
    return value


@dataclass(frozen=True)
class AdminConfig:
    bootstrap: tuple[tuple[str, int], ...]
    use_controllers: bool                      # bootstrap.controllers (KIP-919) rather than bootstrap.servers
    request_timeout_ms: int = 30_000           # AdminClientConfig defaults
    default_api_timeout_ms: int = 60_000
    connect_timeout_ms: int = 10_000           # socket.connection.setup.timeout.ms
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    client_id: str = "kafkawire-admin"
    client_options: dict = field(default_factory=dict, compare=False, hash=False)   # ssl_context, sasl

    @classmethod
    def create(cls, *, bootstrap_server: str | None = None, bootstrap_controller: str | None = None,
               properties: dict | None = None, timeout_ms: int | None = None) -> AdminConfig:
        """From the tools' flags: exactly one of the bootstrap lists, the ``--command-config``
        properties, and kafkawire's ``--timeout`` (a bound on the whole call, and so on each request)."""
        if (bootstrap_server is None) == (bootstrap_controller is None):
            raise ToolError("Exactly one of --bootstrap-server and --bootstrap-controller must be given.")
        props = properties or {}
        # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
        from kafkawire.net.config import ConfigError
        from kafkawire.net.security import client_options_from_properties
        try:
            client_options = client_options_from_properties(props)
        except ConfigError as exc:
            raise ToolError(f"--command-config: {exc}") from None
        key = "bootstrap.controllers" if bootstrap_controller is not None else "bootstrap.servers"
        bootstrap = parse_bootstrap(bootstrap_controller if bootstrap_controller is not None else bootstrap_server, key)
        request_timeout = _config_int(props, "request.timeout.ms", 30_000)
        # AdminClientConfig: a default.api.timeout.ms below request.timeout.ms is raised to it.
        api_timeout = max(_config_int(props, "default.api.timeout.ms", 60_000), request_timeout)
        connect_timeout = _config_int(props, "socket.connection.setup.timeout.ms", 10_000, "LONG")
        if timeout_ms is not None:
            if timeout_ms <= 0:
                raise ToolError(f"--timeout must be a positive number of milliseconds, not {timeout_ms}")
            api_timeout = timeout_ms
            request_timeout = min(request_timeout, timeout_ms)
            connect_timeout = min(connect_timeout, timeout_ms)
        return cls(bootstrap=bootstrap, use_controllers=bootstrap_controller is not None,
                   request_timeout_ms=request_timeout, default_api_timeout_ms=api_timeout,
                   connect_timeout_ms=connect_timeout,
                   retry_backoff_ms=_config_int(props, "retry.backoff.ms", 100, "LONG"),
                   retry_backoff_max_ms=_config_int(props, "retry.backoff.max.ms", 1000, "LONG"),
                   client_id=props.get("client.id", "").strip() or "kafkawire-admin", client_options=client_options)


# --- the client -----------------------------------------------------------------------------------

class Admin:
    """Calls with Kafka's Admin routing, retries and deadlines. ``cluster_id`` and ``controllers``
    ({id: (host, port)}) are what the last DescribeCluster of the controllers said."""

    def __init__(self, config: AdminConfig, *, rng: random.Random | None = None):
        self.config = config
        self._client = NetworkClient(client_id=config.client_id, request_timeout_ms=config.request_timeout_ms,
                                     connect_timeout_ms=config.connect_timeout_ms, **config.client_options)
        self._rng = rng or random.Random()
        # KafkaAdminClient.retryBackoff: retry.backoff.ms doubling to retry.backoff.max.ms, 20% jitter
        self._retry_backoff = ExponentialBackoff(config.retry_backoff_ms, 2, config.retry_backoff_max_ms, 0.2, self._rng)
        self._bootstrap_index = 0
        self._active: tuple[str, int] | None = None
        self._broker_metadata = False    # bootstrap servers: a broker answered Metadata
        self.brokers: dict[int, tuple[str, int]] = {}      # what that Metadata named
        self._answered = False           # some node answered: a timeout is no longer "waiting for a node"
        self._waiting_for_node = False   # ... unless the call's own node never appeared in the metadata
        self.cluster_id: str | None = None
        self.controllers: dict[int, tuple[str, int]] = {}

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def close(self) -> None:
        await self._client.close()

    async def call(self, name: str, make_request, handle_response, *, node_id: int | None = None):
        """Send ``make_request(timeout_ms)`` where Kafka's Admin would (to node ``node_id``, a
        controller or a broker by the bootstrap kind, when given: ConstantNodeIdProvider), and
        return ``handle_response(response)``; retry what is retriable until the deadline."""
        deadline = time.monotonic() + self.config.default_api_timeout_ms / 1000
        tries, last_error = 0, None
        failed_attempts = 0             # connections and look-ups too, not only requests sent: the backoff grows with it
        next_allowed_try_ms = 0         # Kafka's Call.nextAllowedTryMs: the last failure plus its backoff
        while True:
            remaining_ms = int((deadline - time.monotonic()) * 1000)
            if remaining_ms <= 0:
                raise self._timed_out(name, tries, last_error, deadline, next_allowed_try_ms)
            try:
                node = await self._node(deadline) if node_id is None else await self._node_by_id(node_id, deadline)
                if node is None:        # not in the metadata (yet): the call waits for a node
                    await self._sleep(self._backoff_ms(1), deadline)
                    continue
                request = make_request(remaining_ms)
                tries += 1
                try:
                    response = await self._send(node, request, deadline)
                except NodeBackingOff:
                    tries -= 1          # nothing was sent
                    raise
                return handle_response(response)
            except NodeBackingOff as exc:
                last_error = last_error or exc
                await self._sleep(exc.retry_after_ms, deadline)
                continue
            except TransportError as exc:
                # Cut short by the call's own deadline: the call times out, no attempt failed. The
                # loop's timers may fire up to its clock resolution early, hence the margin.
                if isinstance(exc, RequestTimedOut) and time.monotonic() >= deadline - _DEADLINE_MARGIN_S:
                    continue
                last_error = exc
                self._node_failed(exc.peer)
            except KafkaApiError as exc:
                if not exc.retriable:
                    raise
                last_error = exc
                self._active = None          # look the active controller up again
            failed_attempts += 1
            backoff_ms = self._backoff_ms(failed_attempts)
            next_allowed_try_ms = int(time.time() * 1000 + backoff_ms)
            if not getattr(last_error, "warned", False):
                # A node that cannot be reached is one WARN line per failed attempt, as Kafka's
                # NetworkClient logs "Connection to node -1 ... could not be established", with
                # what bounds the wait; an error answer retried (NOT_CONTROLLER) is INFO, as
                # Kafka's Admin keeps its retries to DEBUG.
                level = logging.WARNING if isinstance(last_error, TransportError) else logging.INFO
                log.log(level, "%s: attempt %d failed: %s; %s", name, failed_attempts, last_error,
                        self._what_next(backoff_ms, deadline))
            await self._sleep(backoff_ms, deadline)

    async def describe_cluster(self):
        """Admin.describeCluster: DescribeCluster for the bootstrap kind (brokers or controllers)."""
        # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
        from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
        endpoint_type = ENDPOINT_TYPE_CONTROLLER if self.config.use_controllers else ENDPOINT_TYPE_BROKER

        def handle(response):
            not_controller_check(response.error_code)
            if response.error_code != Errors.NONE:
                raise KafkaApiError(response.error_code, response.error_message, retriable=False)
            return response
        # KafkaAdminClient.describeCluster names its call "listNodes", which its timeouts print.
        return await self.call("listNodes", lambda _: DescribeClusterRequest(endpoint_type=endpoint_type), handle)

    # -- routing --

    async def _node(self, deadline) -> tuple[str, int]:
        if not self.config.use_controllers:
            if not self._broker_metadata:
                await self._fetch_broker_metadata(deadline)
            return self.config.bootstrap[self._bootstrap_index]
        if self._active is None:
            await self._find_active_controller(deadline)
        return self._active

    async def _node_by_id(self, node_id: int, deadline) -> tuple[str, int] | None:
        """The node with this id in the admin's metadata, which is looked up again when it does
        not name it (Kafka's Admin waits for it to appear until the call's deadline)."""
        if self.config.use_controllers:
            if not self.controllers:
                await self._find_active_controller(deadline)
            address = self.controllers.get(node_id)
            if address is None:
                self.controllers = {}
        else:
            if not self._broker_metadata:
                await self._fetch_broker_metadata(deadline)
            address = self.brokers.get(node_id)
            if address is None:
                self._broker_metadata = False
        self._waiting_for_node = address is None
        return address

    async def _find_active_controller(self, deadline) -> None:
        """AdminMetadataManager with bootstrap controllers: DescribeCluster (EndpointType 2) to a
        bootstrap controller names the controllers and the active one."""
        # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
        from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
        peer = self.config.bootstrap[self._bootstrap_index]
        response = await self._send(peer, DescribeClusterRequest(endpoint_type=ENDPOINT_TYPE_CONTROLLER), deadline)
        if response.error_code != Errors.NONE:
            raise KafkaApiError(response.error_code, response.error_message)
        self.cluster_id = response.cluster_id
        self.controllers = {b.broker_id: (b.host, b.port) for b in response.brokers}
        active = self.controllers.get(response.controller_id)
        if active is None:
            # Ask the next bootstrap controller next time: this one may stay leaderless (an
            # Unattached voter cut off from the quorum) while the others know the leader.
            self._bootstrap_index = (self._bootstrap_index + 1) % len(self.config.bootstrap)
            following = self.config.bootstrap[self._bootstrap_index]
            log.warning("bootstrap controller %s:%s knows no active controller; asking %s:%s next (the call "
                        "gives up after %d ms: --timeout MS)", *peer, *following, self.config.default_api_timeout_ms)
            error = KafkaApiError(Errors.NOT_CONTROLLER,
                                  f"{peer[0]}:{peer[1]} knows no active controller (DescribeCluster ControllerId "
                                  f"{response.controller_id})", retriable=True)
            error.warned = True         # said above: the retry loop does not say it again
            raise error
        self._active = active

    async def _fetch_broker_metadata(self, deadline) -> None:
        """AdminMetadataManager with bootstrap servers: the cluster is first learned with a
        Metadata request (no topics). A node without Metadata (a controller listener of Kafka's)
        is a fatal metadata error that fails every call, as in Kafka."""
        # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
        from kafkawire.messages.metadata_request import MetadataRequest
        peer = self.config.bootstrap[self._bootstrap_index]
        try:
            response = await self._send(peer, MetadataRequest(topics=[], allow_auto_topic_creation=True), deadline)
        except KafkaApiError as exc:
            if exc.error == Errors.UNSUPPORTED_VERSION and self._client.peer_versions(peer) is not None \
                    and 3 not in self._client.peer_versions(peer):
                raise KafkaApiError(Errors.UNSUPPORTED_VERSION, "The node does not support METADATA",
                                    retriable=False) from None
            raise
        self.brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
        self._broker_metadata = True

    def _node_failed(self, peer) -> None:
        if self.config.use_controllers and peer == self._active:
            self._active = None
        elif peer == self.config.bootstrap[self._bootstrap_index]:
            self._bootstrap_index = (self._bootstrap_index + 1) % len(self.config.bootstrap)

    async def _send(self, peer, request, deadline):
        remaining_ms = max(int((deadline - time.monotonic()) * 1000), 1)
        try:
            response = await self._client.send(peer, request,
                                               timeout_ms=min(self.config.request_timeout_ms, remaining_ms))
        except UnsupportedVersion as exc:
            raise KafkaApiError(Errors.UNSUPPORTED_VERSION, str(exc)) from None
        except AuthenticationFailed as exc:
            # Kafka's Admin fails the call at once on an authentication error (not retriable).
            if exc.error_code is None:
                raise ToolError(f"{_ERRORS_PACKAGE}.SslAuthenticationException: SSL handshake failed") from None
            raise KafkaApiError(exc.error_code, exc.server_message, retriable=False) from None
        except ProtocolError as exc:
            raise ToolError(f"bad response from {exc}") from None
        except UnsupportedVersionError as exc:       # a field the negotiated version cannot carry
            raise KafkaApiError(Errors.UNSUPPORTED_VERSION,
                                f"{peer[0]}:{peer[1]}: {type(request).__name__}: {exc}") from None
        self._answered = True
        return response

    # -- timing --

    def _what_next(self, backoff_ms: float, deadline) -> str:
        left_ms = int((deadline - time.monotonic()) * 1000)
        how = (f"the call's timeout is {self.config.default_api_timeout_ms} ms: change it with --timeout MS or "
               f"default.api.timeout.ms in --command-config")
        if left_ms <= backoff_ms:
            return f"giving up; {how}"
        return f"trying again in {int(backoff_ms)} ms, giving up in {left_ms} ms; {how}"

    def _backoff_ms(self, tries: int) -> float:
        """KafkaAdminClient's retryBackoff.backoff(tries - 1): the wait after the ``tries``-th
        failed attempt."""
        return self._retry_backoff.backoff_ms(max(tries - 1, 0))

    @staticmethod
    async def _sleep(ms: float, deadline) -> None:
        await asyncio.sleep(max(min(ms / 1000, deadline - time.monotonic()), 0))

    def _timed_out(self, name, tries, last_error, deadline, next_allowed_try_ms: int = 0) -> KafkaApiError:
        # Kafka's two TimeoutException messages: no node ever usable, or a call that ran out of time.
        if not self._answered or self._waiting_for_node:
            message = f"Timed out waiting for a node assignment. Call: {name}"
        else:
            now_ms = int(time.time() * 1000)
            deadline_ms = now_ms - int((time.monotonic() - deadline) * 1000)
            message = f"Call(callName={name}, deadlineMs={deadline_ms}, tries={tries}, " \
                      f"nextAllowedTryMs={next_allowed_try_ms}) timed out at {now_ms} after {tries} attempt(s)"
        if last_error is not None:
            message += f" (last error: {last_error})"
        return KafkaApiError(Errors.REQUEST_TIMED_OUT, message, retriable=False)


def admin_config(bootstrap: str, *, controllers: bool = True, properties: dict | None = None,
                 timeout_ms: int | None = None) -> AdminConfig:
    """The tools' API form: ``bootstrap`` is --bootstrap-controller's value when ``controllers``,
    else --bootstrap-server's."""
    return AdminConfig.create(bootstrap_controller=bootstrap if controllers else None,
                              bootstrap_server=None if controllers else bootstrap,
                              properties=properties, timeout_ms=timeout_ms)


def add_connection_arguments(parser, *, controllers_are: str, command_config_help: str,
                             required: bool = True) -> None:
    """The flags every admin tool has: --bootstrap-server | --bootstrap-controller (one required,
    unless ``required`` is False: a tool with commands that ask no server checks it itself),
    --command-config, and kafkawire's --timeout."""
    connection = parser.add_mutually_exclusive_group(required=required)
    connection.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]",
                            help="A comma-separated list of host:port pairs to use for establishing the connection "
                                 "to the Kafka cluster.")
    connection.add_argument("--bootstrap-controller", metavar="HOST:PORT[,...]",
                            help="A comma-separated list of host:port pairs to use for establishing the connection "
                                 f"to the {controllers_are}.")
    parser.add_argument("--command-config", metavar="FILE", help=command_config_help)
    parser.add_argument("--timeout", type=int, metavar="MS",
                        help="kafkawire: give up after this many milliseconds (default: the command config's "
                             "default.api.timeout.ms, 60000)")


def connection_options(args, *, with_properties: bool = True) -> tuple[str, dict]:
    """(bootstrap, options for admin_config) from the parsed flags."""
    options = dict(controllers=args.bootstrap_controller is not None, timeout_ms=args.timeout)
    if with_properties:
        options["properties"] = load_properties(args.command_config) if args.command_config else None
    return args.bootstrap_controller or args.bootstrap_server, options


class _CurrentStderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record comes (a test may swap it)."""

    def __init__(self):
        super().__init__()

    @property
    def stream(self):
        import sys
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


class _KafkaToolsFormatter(logging.Formatter):
    def format(self, record):
        record.kafka_level = "WARN" if record.levelno == logging.WARNING else record.levelname   # log4j's name
        return super().format(record)


def show_warnings() -> None:
    """Show WARN and above on stderr in the layout of Kafka's tools-log4j (``[2026-01-01
    12:00:00,000] WARN <message> (<logger>)``): what a tool is trying while it waits. Called by
    the network tools' run(); idempotent."""
    root = logging.getLogger()
    if any(getattr(h, "kafkawire_tool_warnings", False) for h in root.handlers):
        return
    handler = _CurrentStderrHandler()
    handler.setFormatter(_KafkaToolsFormatter("[%(asctime)s] %(kafka_level)s %(message)s (%(name)s)"))
    handler.setLevel(logging.WARNING)
    handler.kafkawire_tool_warnings = True
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)


def run_sync(coro):
    """Run a tool coroutine to completion from synchronous code (the CLI and the sync API)."""
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.net.loop import run
    return run(coro)
