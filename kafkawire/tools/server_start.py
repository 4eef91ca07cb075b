"""`kafkawire server-start CONFIG`: run one KRaft controller, as kafka-server-start does
with process.roles=controller.

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
from kafkawire.storage.state_files import JavaProperties

if TYPE_CHECKING:
    from kafkawire.net.config import ServerConfig
    from kafkawire.raft.contract import StateMachineFactory

COMMAND = "server-start"
HELP = "run a KRaft controller from a Kafka server.properties file (kafka-server-start)"


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
    refuse_broker_roles(text)
    return parse_server_config(text)


def refuse_broker_roles(text: str) -> None:
    """kafkawire has no broker role yet: a Kafka broker or combined-mode server.properties is
    refused in one line that says what to run instead, before any listener check can give a
    less helpful reason (and instead of running only the controller half of a combined node)."""
    from kafkawire.net.config import ConfigError              # lazy: CLI start-up (see above)
    try:
        raw = JavaProperties.parse(text).items.get("process.roles", "")
    except ValueError:
        return                               # parse_server_config reports the syntax error
    roles = [r.strip() for r in raw.split(",")]
    if "broker" in roles:
        raise ConfigError("process.roles", raw,
                          "kafkawire runs KRaft controllers only (process.roles=controller): it has no broker "
                          "role yet. Run brokers with Apache Kafka (kafka.Kafka with process.roles=broker and "
                          "controller.quorum.bootstrap.servers naming these controllers), and give this node "
                          "process.roles=controller with only its controller listeners")


def setup_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_KafkaLayout())
    logging.basicConfig(level=getattr(logging, {"WARN": "WARNING"}.get(level, level)), handlers=[handler], force=True)


async def serve(config: ServerConfig, state_machine_factory: StateMachineFactory,
                max_versions: dict[int, int] | None = None) -> int:
    """Run a node with the state machine ``state_machine_factory`` makes until a signal or a failure."""
    from kafkawire.raft.node.controller_node import ControllerNode, NodeStartError    # lazy: CLI start-up
    log = logging.getLogger(__name__)
    node = ControllerNode(config, state_machine_factory=state_machine_factory, max_versions=max_versions)
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
    print(f"node {config.node_id} started on {', '.join(f'{s.host}:{s.port}' for s in node.servers)}",
          file=sys.stderr, flush=True)
    failed = asyncio.ensure_future(node.driver.failed.wait())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait([failed, stopping], return_when=asyncio.FIRST_COMPLETED)
    failed.cancel()
    stopping.cancel()
    crashed = node.driver.failure is not None
    await node.stop(graceful=not crashed)
    return 1 if crashed else 0


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
