"""`kafkawire server-start CONFIG`: run one KRaft controller, as kafka-server-start does
with process.roles=controller, a combined node (process.roles=broker,controller: the
controller and, on the other listeners, kafkawire.broker's broker; docs/broker.md), or a
broker-only node (process.roles=broker: a raft observer of the controller quorum and the
broker, kafkawire.tools.broker_node).

    kafkawire server-start config/controller.properties [--override key=value ...]

The configuration is a Kafka server.properties file; ``--override`` replaces or adds a key
(kafka-server-start's flag). Unknown keys are warned about; a wrong value stops the start
with the key named. Logs go to stderr in Kafka's layout ("[date] LEVEL message (logger)").
SIGTERM and SIGINT stop the node gracefully (a leader resigns first); a second signal stops
it at once. Exit status 0 after a clean stop, 1 when the node could not start or failed.

This is where the node meets the metadata controller: ``run`` hands ``serve`` (and so
ControllerNode) the controller's StateMachineFactory (kafkawire.raft.contract); the node
imports no controller. The node, the controller and the network are imported inside the
functions that run them: `kafkawire` imports every subcommand's module to build its parser,
and importing them at the top doubled the start-up time of every command (0.8 s to 1.7 s).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import TYPE_CHECKING
from kafkawire.feature_versions import KRAFT_VERSION

if TYPE_CHECKING:
    from kafkawire.net.config import ServerConfig
    from kafkawire.raft.contract import StateMachineFactory

COMMAND = "server-start"
HELP = "run a KRaft controller, a combined broker and controller, or a broker, from a Kafka server.properties file (kafka-server-start)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="the server.properties file")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="a property that replaces the file's value (repeatable)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARN", "ERROR"],
                        help="what to log to stderr (default INFO)")
    add_max_api_versions(parser)


def add_max_api_versions(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-api-versions", type=parse_max_api_versions, default={}, metavar="KEY:VERSION,...",
                        help="kafkawire's own: advertise at most these versions (e.g. 3:9,1:11 for a packet "
                             "dissector that knows only older ones)")


def parse_max_api_versions(text: str) -> dict[int, int]:
    out = {}
    for item in filter(None, text.split(",")):
        key, sep, version = item.partition(":")
        if not sep or not key.strip().isdigit() or not version.strip().isdigit():
            raise argparse.ArgumentTypeError(f"{item!r} is not API_KEY:MAX_VERSION")
        out[int(key)] = int(version)
    return out


class _KafkaLayout(logging.Formatter):
    """log4j's "[%d] %p %m (%c)%n", the layout of Kafka's default log4j2 configuration."""

    def format(self, record: logging.LogRecord) -> str:
        when = self.formatTime(record, "%Y-%m-%d %H:%M:%S") + f",{int(record.msecs):03d}"
        level = {"WARNING": "WARN", "CRITICAL": "FATAL"}.get(record.levelname, record.levelname)
        text = f"[{when}] {level} {record.getMessage()} ({record.name})"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def load_config(path: str, overrides: list[str]) -> ServerConfig:
    from kafkawire.net.config import ConfigError, parse_server_config     # lazy: CLI start-up (see above)
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except OSError as exc:
        raise ConfigError("config file", path, f"cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError("config file", path, f"is not UTF-8 (byte {exc.start})") from None
    for item in overrides:
        if "=" not in item:
            raise ConfigError("--override", item, "is not KEY=VALUE")
        text += "\n" + item
    return parse_server_config(text)


def setup_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_KafkaLayout())
    logging.basicConfig(level=getattr(logging, {"WARN": "WARNING"}.get(level, level)), handlers=[handler], force=True)


async def serve(config: ServerConfig, state_machine_factory: StateMachineFactory,
                max_versions: dict[int, int] | None = None) -> int:
    """Run a node with the state machine ``state_machine_factory`` makes until a signal or a failure."""
    from kafkawire.raft.node.controller_node import ControllerNode, NodeStartError    # lazy: CLI start-up
    log = logging.getLogger(__name__)
    if config.is_controller:
        node = ControllerNode(config, state_machine_factory=state_machine_factory, max_versions=max_versions)
    else:                                   # process.roles=broker: a raft observer and the broker
        # imported only here: the broker's modules are a controller-only node's slowest second of start-up
        from kafkawire.tools.broker_node import BrokerOnlyNode
        node = BrokerOnlyNode(config, max_versions=max_versions)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = 0

    def on_signal():
        nonlocal signals
        signals += 1
        if signals > 1:
            log.warning("second signal: stopping now")
            sys.exit(1)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        await node.start()
    except NodeStartError as exc:
        log.error("cannot start: %s", exc)
        await node.stop(graceful=False)
        return 1
    broker = None
    if not config.is_controller:
        broker = node.broker
    elif config.is_broker:
        broker = await start_broker(node)
        if broker is None:
            await node.stop(graceful=False)
            return 1
    elif node.state_machine is not None:      # a controller-only node
        watch_controller_ssl_stores(node)
        from kafkawire.tools.metric_reporters import watch_metric_reporters    # lazy: CLI start-up
        committed = getattr(node.state_machine, "committed", None)    # None: test-raft-server's load generator
        if committed is not None:
            watch_metric_reporters(node, None, lambda: CommittedConfigs(committed), committed.listeners)
    servers = node.servers + ([] if broker is None else broker.servers)
    print(f"node {config.node_id} started on {', '.join(f'{s.host}:{s.port}' for s in servers)}",
          file=sys.stderr, flush=True)
    waits = [asyncio.ensure_future(node.driver.failed.wait()), asyncio.ensure_future(stop.wait())]
    if broker is not None:
        waits.append(broker.task)
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for wait in waits[:2]:
        wait.cancel()
    crashed = node.driver.failure is not None or broker_failed(broker)
    if config.is_controller and node.metric_reporters_reload is not None:
        await node.metric_reporters_reload.close()     # no endpoint opened after the node closed its own
    if broker is not None and config.is_controller:      # a broker-only node stops its broker itself
        await broker.stop(graceful=not crashed)
    await node.stop(graceful=not crashed)
    return 1 if crashed else 0


async def start_broker(node):
    """The broker role of a combined node, joined to the node's raft and its metadata
    controller (the committed image it reads, published when it moves; the active controller it
    registers with); None, with the reason logged, when it cannot start."""
    from kafkawire.broker import Broker, BrokerStartError        # lazy: CLI start-up
    from kafkawire.broker.metrics import broker_families
    from kafkawire.controller.broker_config_keys import broker_config_keys
    from kafkawire.controller.describe_configs import describe_configs
    log = logging.getLogger(__name__)
    controller, driver = node.state_machine, node.driver
    features = dict(controller.supported_features)
    features[KRAFT_VERSION] = (driver.config.kraft_version_min, driver.config.kraft_version_max)
    static, known = dict(node.config.static_settings), broker_config_keys()
    published = broker_metadata(controller)
    try:
        broker = Broker(node.config, cluster_id=node.cluster_id, directory_id=node.meta.directory_id,
                        image=lambda: published.image, metadata_offset=lambda: published.offset,
                        send_to_controller=driver.send_to_leader, supported_features=features,
                        scram_lookup=node._scram_credential, kraft_version=driver.kraft_version,
                        authorizer=node.authorizer, max_versions=node.max_versions,
                        metadata_loaded=node._metadata_loaded,          # Kafka's loader's first publish
                        describe_configs=lambda request: describe_configs(
                            node.config.node_id, published.image, request, static=static, broker_keys=known))
        published.listeners.append(broker.on_metadata)
        broker.request_metrics = node.request_metrics    # one for all listeners, as Kafka's share the MBeans
        await broker.start()
    except BrokerStartError as exc:
        log.error("cannot start the broker: %s", exc)
        return None
    watch_controller_ssl_stores(node, published)
    from kafkawire.tools.metric_reporters import watch_metric_reporters    # lazy: CLI start-up
    watch_metric_reporters(node, broker, lambda: published.image, published.listeners)
    # on the node's endpoint, if on; the request metrics are the node's, which the broker shares
    node.extra_metric_families.append(lambda: broker_families(broker, requests=False))
    return broker


def broker_metadata(controller):
    """What a combined node's broker reads: the controller's committed image (never the records
    its active controller applied ahead of their commit), published each time it moves."""
    from kafkawire.broker.metadata_publisher import MetadataPublisher     # lazy: CLI start-up
    published = MetadataPublisher(lambda: controller.image, lambda: controller.committed_offset)
    controller.committed.listeners.append(published.committed_moved)
    return published


def watch_controller_ssl_stores(node, published=None):
    """The key and trust stores of the node's SSL or SASL_SSL controller listeners and of its
    clients towards the controllers (the raft client, the channel to the active controller),
    checked and taken after a dynamic change as a broker listener's
    (kafkawire.broker.listener_ssl_reload, check_changes), as Kafka's ControllerServer registers
    its listeners' channel builders with its DynamicBrokerConfig and NodeToControllerChannelManager
    its client's: on each move of the committed image, read through ``published`` (a combined
    node's broker's publisher, whose views the broker makes anyway) or, on a controller-only node,
    straight from the committed image's config maps (no view of the image per move: a view costs
    the controller's next writes a copy of each topic they change). None when neither has TLS:
    nothing is watched, nothing read per commit."""
    client_ssl = _controller_client_ssl(node)
    if client_ssl is None and not any(server.ssl_context is not None for server in node.servers):
        return None
    from kafkawire.broker.listener_ssl_reload import ListenerSslReload    # lazy: CLI start-up
    reload = ListenerSslReload(dict(node.config.properties), node.config.node_id, check_changes=True)
    if client_ssl is not None:
        reload.watch_controller_clients(node.config.controller_listener_names[0], client_ssl,
                                        node.driver.controller_clients)
    if published is not None:
        published.listeners.append(lambda: reload.on_metadata(published.image, node.servers))
        reload.on_metadata(published.image, node.servers)       # the stores each listener started with
    else:
        committed = CommittedConfigs(node.state_machine.committed)
        node.state_machine.committed.listeners.append(lambda: reload.on_metadata(committed, node.servers))
        reload.on_metadata(committed, node.servers)
    node.controller_ssl_reload = reload
    return reload


def _controller_client_ssl(node):
    """The SslSettings the node's clients towards the controllers started with (None: not TLS)."""
    security = node.config.raft_client_security()        # it was read at start: no ConfigError now
    return None if security is None else security.ssl


class CommittedConfigs:
    """The committed image as ListenerSslReload reads it (``configs.get`` of a broker resource),
    from the controller's committed image without making a view of it (CommittedImage.resource_configs:
    two lookups per move of the committed image, whatever the partitions)."""

    def __init__(self, committed):
        self._committed = committed
        self.configs = self

    def get(self, resource, default=None):
        value = self._committed.resource_configs(resource)
        return default if value is None else value


def broker_failed(broker) -> bool:
    """Whether the broker's lifecycle stopped on its own (a registration the controller refused)."""
    if broker is None or not broker.task.done() or broker.task.cancelled():
        return False
    exc = broker.task.exception()
    if exc is not None:
        logging.getLogger(__name__).error("the broker stopped: %s", exc)
    return True


def run(args: argparse.Namespace) -> int:
    # lazy: CLI start-up (see above)
    from kafkawire.controller.factory import controller_factory
    from kafkawire.net.config import ConfigError
    from kafkawire.net.loop import run as run_loop
    setup_logging(args.log_level)
    try:
        config = load_config(args.config, args.override)
    except ConfigError as exc:
        print(f"server-start: {args.config}: {exc}", file=sys.stderr)
        return 1
    return run_loop(serve(config, controller_factory, max_versions=args.max_api_versions))
