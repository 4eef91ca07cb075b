"""`kafkawire metadata-quorum`: Kafka's kafka-metadata-quorum (MetadataQuorumCommand, Kafka 4.x).

    kafkawire metadata-quorum --bootstrap-controller H:P[,H:P] describe --status
    kafkawire metadata-quorum --bootstrap-server H:P describe --replication [--human-readable]
    kafkawire metadata-quorum --bootstrap-controller H:P --command-config controller.properties add-controller [--dry-run]
    kafkawire metadata-quorum --bootstrap-controller H:P remove-controller --controller-id N \\
        --controller-directory-id UUID [--dry-run]

The output is Kafka's, character for character:

* ``describe --status``: DescribeCluster (the cluster id), then DescribeQuorum (API 55, the
  highest version both sides have; v2 carries directory ids and the voters' endpoints), printed
  as ``ClusterId:``, ``LeaderId:``, ... ``CurrentObservers:`` with the labels padded to 24
  characters. MaxFollowerLag is the leader's log end offset minus the lowest voter's (the first
  one, if several), MaxFollowerLagTimeMs the difference of their LastCaughtUpTimestamps (0 when
  the leader is the lowest, -1 when either is unknown). Voters and observers print as
  ``{"id": 1, "directoryId": "...", "endpoints": ["CONTROLLER://host:9093"]}``, the directory id
  left out when it is the zero uuid and the endpoints when the response names none.
* ``describe --replication``: the table of ToolsUtils.prettyPrintTable (each cell padded to its
  column's width and followed by a tab), columns NodeId, DirectoryId, LogEndOffset, Lag,
  LastFetchTimestamp, LastCaughtUpTimestamp, Status; the leader first, then the other voters,
  then the observers. A timestamp the leader does not know (-1) prints as -1; with
  ``--human-readable`` the others print as ``<now - timestamp> ms ago`` (and a timestamp in the
  future, or not after 1970, is Kafka's "possible drift in system clock" error).
* ``add-controller``: reads the controller's own configuration (``--command-config``): node.id,
  the directory.id in meta.properties of metadata.log.dir (else the first of log.dirs), and the
  endpoint of each controller.listener.names entry from advertised.listeners over listeners (a
  host left empty is ``localhost``); sends AddRaftVoter (80) and prints ``Added controller 3
  with directory id ... and endpoints: CONTROLLER://host:9093``.
* ``remove-controller``: RemoveRaftVoter (81); prints ``Removed  KRaft controller 1 with
  directory id ...`` (Kafka's text has the two spaces).

Refusals and Kafka errors go to stderr on one line with exit status 1: Kafka's messages for bad
input (``Only one of --status or --replication should be specified with describe
sub-command``, ``node.id not found in configuration file. ...``), and for an error code the
Java exception as Kafka's tool prints it (``org.apache.kafka.common.errors.DuplicateVoterException:
The voter is already part of the set of voters.``). Where Kafka's tool would also print a
stack trace, this one does not. ``--timeout MS`` (kafkawire's) bounds the whole command;
otherwise ``default.api.timeout.ms`` (60 s) of ``--command-config`` does, as in Kafka.

Every step is also a function (``describe_status``, ``describe_replication``, ``add_controller``,
``remove_controller``, and their ``*_async`` forms) returning what is printed.
"""
from __future__ import annotations

import argparse
import base64
import sys
import time
import uuid
from dataclasses import dataclass, field

from kafkawire.protocol.error_codes import Errors
from kafkawire.tools.admin_client import (Admin, KafkaApiError, ToolError, add_connection_arguments, admin_config,
                                connection_options, load_properties, not_controller_check, run_sync,
                                show_warnings)
from kafkawire.storage.state_files import StateFileError, read_meta_properties, uuid_to_kafka

COMMAND = "metadata-quorum"
HELP = "describe the KRaft metadata quorum, add and remove controllers, as kafka-metadata-quorum does"

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
ZERO_UUID = uuid.UUID(int=0)
REPLICATION_HEADERS = ("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                       "LastCaughtUpTimestamp", "Status")
_STATUS_LABELS = ("ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag", "MaxFollowerLagTimeMs",
                  "CurrentVoters", "CurrentObservers")


# --- what DescribeQuorum says (Kafka's QuorumInfo) ---------------------------------------------------

@dataclass(frozen=True)
class VoterEndpoint:
    """RaftVoterEndpoint: a listener name (upper case), host and port."""
    listener: str
    host: str
    port: int

    def __str__(self):
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


@dataclass(frozen=True)
class ReplicaInfo:
    """QuorumInfo.ReplicaState; a timestamp of -1 (unknown) is None."""
    replica_id: int
    directory_id: uuid.UUID
    log_end_offset: int
    last_fetch_timestamp: int | None
    last_caught_up_timestamp: int | None


@dataclass(frozen=True)
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaInfo, ...]
    observers: tuple[ReplicaInfo, ...]
    nodes: dict = field(default_factory=dict)      # node id -> tuple[VoterEndpoint, ...]

    def leader(self) -> ReplicaInfo:
        """The leader among the voters; Kafka's tool fails with "No value present" without one."""
        for voter in self.voters:
            if voter.replica_id == self.leader_id:
                return voter
        raise ToolError(f"No value present: the leader {self.leader_id} is not one of the current voters "
                        f"({', '.join(str(v.replica_id) for v in self.voters) or 'none'})")


def _replica(state) -> ReplicaInfo:
    return ReplicaInfo(state.replica_id, state.replica_directory_id or ZERO_UUID, state.log_end_offset,
                       None if state.last_fetch_timestamp == -1 else state.last_fetch_timestamp,
                       None if state.last_caught_up_timestamp == -1 else state.last_caught_up_timestamp)


def quorum_info_from_response(response) -> QuorumInfo:
    """KafkaAdminClient.describeMetadataQuorum's handleResponse and createQuorumResult."""
    partitions = [p for t in response.topics for p in t.partitions]
    not_controller_check(response.error_code, *(p.error_code for p in partitions))
    if response.error_code != Errors.NONE:
        raise KafkaApiError(response.error_code, response.error_message)
    if len(response.topics) != 1:
        raise KafkaApiError(Errors.UNKNOWN_SERVER_ERROR,
                            f"DescribeMetadataQuorum received {len(response.topics)} topics when 1 was expected")
    topic = response.topics[0]
    if topic.topic_name != METADATA_TOPIC:
        raise KafkaApiError(Errors.UNKNOWN_SERVER_ERROR, f"DescribeMetadataQuorum received a topic with name "
                                                         f"{topic.topic_name} when {METADATA_TOPIC} was expected")
    if len(topic.partitions) != 1:
        raise KafkaApiError(Errors.UNKNOWN_SERVER_ERROR,
                            f"DescribeMetadataQuorum received a topic {topic.topic_name} with "
                            f"{len(topic.partitions)} partitions when 1 was expected")
    partition = topic.partitions[0]
    if partition.partition_index != METADATA_PARTITION:
        raise KafkaApiError(Errors.UNKNOWN_SERVER_ERROR,
                            f"DescribeMetadataQuorum received a single partition with index "
                            f"{partition.partition_index} when {METADATA_PARTITION} was expected")
    if partition.error_code != Errors.NONE:
        raise KafkaApiError(partition.error_code, partition.error_message)
    nodes = {n.node_id: tuple(VoterEndpoint(lst.name, lst.host, lst.port) for lst in n.listeners)
             for n in response.nodes}
    return QuorumInfo(partition.leader_id, partition.leader_epoch, partition.high_watermark,
                      tuple(_replica(v) for v in partition.current_voters),
                      tuple(_replica(o) for o in partition.observers), nodes)


def describe_quorum_request():
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.messages.describe_quorum_request import DescribeQuorumRequest, PartitionData, TopicData
    return DescribeQuorumRequest(topics=[TopicData(topic_name=METADATA_TOPIC,
                                                   partitions=[PartitionData(partition_index=METADATA_PARTITION)])])


async def describe_metadata_quorum(admin: Admin) -> QuorumInfo:
    return await admin.call("describeMetadataQuorum", lambda _: describe_quorum_request(), quorum_info_from_response)


# --- describe --status ----------------------------------------------------------------------------

def _replica_json(replica: ReplicaInfo, nodes: dict) -> str:
    """MetadataQuorumCommand's Node.toString."""
    text = f'{{"id": {replica.replica_id}'
    if replica.directory_id != ZERO_UUID:
        text += f', "directoryId": "{_kafka_uuid(replica.directory_id)}"'
    endpoints = nodes.get(replica.replica_id, ())
    if endpoints:
        text += ', "endpoints": [' + ", ".join(f'"{e}"' for e in endpoints) + "]"
    return text + "}"


def status_fields(cluster_id: str, info: QuorumInfo) -> dict[str, str]:
    """handleDescribeStatus: each label (without the colon) and its value, in Kafka's order."""
    leader = info.leader()
    lowest = min(range(len(info.voters)), key=lambda i: info.voters[i].log_end_offset)   # the first lowest
    max_lag_follower = info.voters[lowest]
    if max_lag_follower is leader:
        lag_time_ms = 0
    elif leader.last_caught_up_timestamp is not None and max_lag_follower.last_caught_up_timestamp is not None:
        lag_time_ms = leader.last_caught_up_timestamp - max_lag_follower.last_caught_up_timestamp
    else:
        lag_time_ms = -1
    values = (cluster_id, info.leader_id, info.leader_epoch, info.high_watermark,
              leader.log_end_offset - max_lag_follower.log_end_offset, lag_time_ms,
              "[" + ", ".join(_replica_json(v, info.nodes) for v in info.voters) + "]",
              "[" + ", ".join(_replica_json(o, info.nodes) for o in info.observers) + "]")
    return {label: str(value) for label, value in zip(_STATUS_LABELS, values)}


def format_status(fields: dict[str, str]) -> str:
    return "\n".join(f"{label + ':':<24}{value}" for label, value in fields.items())


# --- describe --replication -----------------------------------------------------------------------

def relative_time_ms(timestamp_ms: int, desc: str, now_ms: int) -> int:
    """MetadataQuorumCommand.relativeTimeMs: only a timestamp after 1970 and not after now."""
    if not 0 < timestamp_ms <= now_ms:
        raise ToolError(f"Error while computing relative time, possible drift in system clock.\n"
                        f"Current timestamp is {now_ms}, {desc} timestamp is {timestamp_ms}")
    return now_ms - timestamp_ms


def replication_rows(info: QuorumInfo, *, human_readable: bool = False, now_ms: int | None = None) -> list[list[str]]:
    """handleDescribeReplication's rows (REPLICATION_HEADERS are the columns)."""
    leader = info.leader()
    now = int(time.time() * 1000) if now_ms is None else now_ms

    def timestamp(value, desc):
        if value is None:
            return "-1"
        return f"{relative_time_ms(value, desc, now)} ms ago" if human_readable else str(value)

    def rows(replicas, status):
        return [[str(r.replica_id), _kafka_uuid(r.directory_id), str(r.log_end_offset),
                 str(leader.log_end_offset - r.log_end_offset), timestamp(r.last_fetch_timestamp, "last fetch"),
                 timestamp(r.last_caught_up_timestamp, "last caught up"), status] for r in replicas]
    return (rows([leader], "Leader") + rows([v for v in info.voters if v.replica_id != info.leader_id], "Follower")
            + rows(info.observers, "Observer"))


def pretty_table(headers, rows) -> str:
    """ToolsUtils.prettyPrintTable: every cell padded to its column's width, then a tab."""
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(headers)]
    return "\n".join("".join(cell.ljust(width) + "\t" for cell, width in zip(row, widths))
                     for row in [list(headers)] + rows)


# --- add-controller: the controller's own configuration ------------------------------------------

@dataclass(frozen=True)
class ControllerRegistration:
    node_id: int
    directory_id: uuid.UUID
    endpoints: tuple[VoterEndpoint, ...]


class _EveryListenerPlaintext(dict):
    """The tool parses listeners with every listener name mapped to PLAINTEXT (``__ -> PLAINTEXT``)."""

    def get(self, key, default=None):
        return "PLAINTEXT"


def controller_id(props: dict) -> int:
    """MetadataQuorumCommand.getControllerId."""
    if "node.id" not in props:
        raise ToolError("node.id not found in configuration file. Is this a valid controller configuration file?")
    node_id = _java_parse_int(props["node.id"])
    if node_id < 0:
        raise ToolError("node.id was negative in configuration file. Is this a valid controller configuration file?")
    if "controller" not in props.get("process.roles", ""):
        raise ToolError("process.roles did not contain 'controller' in configuration file. Is this a valid "
                        "controller configuration file?")
    return node_id


def metadata_directory(props: dict) -> str:
    """MetadataQuorumCommand.getMetadataDirectory: metadata.log.dir, else the first of log.dirs."""
    if "metadata.log.dir" in props:
        return props["metadata.log.dir"]
    if "log.dirs" in props:
        return props["log.dirs"].strip().split(",")[0]
    raise ToolError("Neither metadata.log.dir nor log.dirs were found. Is this a valid controller configuration file?")


def metadata_directory_id(directory: str) -> uuid.UUID:
    """The directory.id in the directory's meta.properties (MetaPropertiesEnsemble.Loader)."""
    import os
    try:
        meta = read_meta_properties(os.path.join(directory, "meta.properties"))
    except FileNotFoundError:
        raise ToolError(f"Unable to read meta.properties from {directory}") from None
    except (OSError, StateFileError, UnicodeDecodeError) as exc:
        raise ToolError(f"Unable to read meta.properties from {directory}: {exc}") from None
    if meta.directory_id is None:
        raise ToolError(f"No directory id found in {directory}")
    return meta.directory_id


def controller_endpoints(props: dict) -> tuple[VoterEndpoint, ...]:
    """MetadataQuorumCommand.getControllerAdvertisedListeners: each controller listener's
    endpoint, advertised.listeners over listeners, in controller.listener.names order."""
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.net.config import ConfigError, parse_listeners
    listeners = {}
    try:
        for key in ("listeners", "advertised.listeners"):
            for endpoint in parse_listeners(key, props.get(key, ""), _EveryListenerPlaintext()):
                listeners[endpoint.listener_name] = endpoint
    except ConfigError as exc:
        raise ToolError(str(exc)) from None
    if "controller.listener.names" not in props:
        raise ToolError("controller.listener.names was not found. Is this a valid controller configuration file?")
    results: dict[VoterEndpoint, None] = {}       # a LinkedHashSet
    for name in _java_split(props["controller.listener.names"], ","):
        name = name.upper()                       # ListenerName.normalised
        endpoint = listeners.get(name)
        if endpoint is None:
            raise ToolError(f"Cannot find information about controller listener name: {name}")
        results[VoterEndpoint(endpoint.listener_name, endpoint.host or "localhost", endpoint.port)] = None
    return tuple(results)


def controller_registration(props: dict) -> ControllerRegistration:
    """What add-controller sends, from the controller's configuration, in Kafka's order of checks."""
    node_id = controller_id(props)
    directory_id = metadata_directory_id(metadata_directory(props))
    return ControllerRegistration(node_id, directory_id, controller_endpoints(props))


def add_controller_request(registration: ControllerRegistration, timeout_ms: int):
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.messages.add_raft_voter_request import AddRaftVoterRequest, Listener
    return AddRaftVoterRequest(cluster_id=None, timeout_ms=timeout_ms, voter_id=registration.node_id,
                               voter_directory_id=registration.directory_id,
                               listeners=[Listener(name=e.listener, host=e.host, port=e.port)
                                          for e in registration.endpoints])


def _voter_change_result(response) -> None:
    """addRaftVoter / removeRaftVoter handleResponse: NOT_CONTROLLER retries, any other error fails."""
    not_controller_check(response.error_code)
    if response.error_code != Errors.NONE:
        raise KafkaApiError(response.error_code, response.error_message, retriable=False)


def added_text(registration: ControllerRegistration, dry_run: bool) -> str:
    endpoints = ", ".join(str(e) for e in registration.endpoints)
    return (f"{'DRY RUN of adding' if dry_run else 'Added'} controller {registration.node_id} with directory id "
            f"{_kafka_uuid(registration.directory_id)} and endpoints: {endpoints}")


def removed_text(node_id: int, directory_id: uuid.UUID, dry_run: bool) -> str:
    # Kafka's printf("%s KRaft controller ...", "Removed ") prints the two spaces.
    verb = "DRY RUN of removing " if dry_run else "Removed "
    return f"{verb} KRaft controller {node_id} with directory id {_kafka_uuid(directory_id)}"


def parse_directory_id(text: str) -> uuid.UUID:
    """--controller-directory-id as Kafka's Uuid.fromString reads it."""
    try:
        return kafka_uuid_from_string(text)
    except ValueError as exc:
        raise ToolError(f"Failed to parse --controller-directory-id: {exc}") from None


# --- the API: async, and sync for callers without an event loop --------------------------------------

async def describe_quorum_async(bootstrap: str, **options) -> QuorumInfo:
    async with Admin(admin_config(bootstrap, **options)) as admin:
        return await describe_metadata_quorum(admin)


async def describe_status_async(bootstrap: str, **options) -> dict[str, str]:
    """``describe --status``: {"ClusterId": ..., "LeaderId": ..., ... "CurrentObservers": ...}."""
    async with Admin(admin_config(bootstrap, **options)) as admin:
        cluster = await admin.describe_cluster()
        return status_fields(cluster.cluster_id, await describe_metadata_quorum(admin))


async def describe_replication_async(bootstrap: str, *, human_readable: bool = False, now_ms: int | None = None,
                                     **options) -> list[list[str]]:
    """``describe --replication``: the rows under REPLICATION_HEADERS."""
    async with Admin(admin_config(bootstrap, **options)) as admin:
        info = await describe_metadata_quorum(admin)
    return replication_rows(info, human_readable=human_readable, now_ms=now_ms)


async def add_controller_async(bootstrap: str, config_path, *, dry_run: bool = False, controllers: bool = True,
                               timeout_ms: int | None = None) -> str:
    """``add-controller``; the properties file is the controller's and the admin client's
    configuration, as in Kafka. Returns the line printed."""
    properties = load_properties(config_path)
    config = admin_config(bootstrap, controllers=controllers, properties=properties, timeout_ms=timeout_ms)
    registration = controller_registration(properties)
    if not dry_run:
        async with Admin(config) as admin:
            await admin.call("addRaftVoter", lambda timeout: add_controller_request(registration, timeout),
                             _voter_change_result)
    return added_text(registration, dry_run)


async def remove_controller_async(bootstrap: str, controller_id: int, directory_id: str, *, dry_run: bool = False,
                                  controllers: bool = True, properties: dict | None = None,
                                  timeout_ms: int | None = None) -> str:
    """``remove-controller``; ``directory_id`` as given on the command line. Returns the line printed."""
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.messages.remove_raft_voter_request import RemoveRaftVoterRequest
    config = admin_config(bootstrap, controllers=controllers, properties=properties, timeout_ms=timeout_ms)
    if controller_id < 0:
        raise ToolError(f"Invalid negative --controller-id: {controller_id}")
    directory = parse_directory_id(directory_id)
    if not dry_run:
        async with Admin(config) as admin:
            await admin.call("removeRaftVoter",
                             lambda _: RemoveRaftVoterRequest(cluster_id=None, voter_id=controller_id,
                                                              voter_directory_id=directory),
                             _voter_change_result)
    return removed_text(controller_id, directory, dry_run)


def describe_quorum(bootstrap: str, **options) -> QuorumInfo:
    return run_sync(describe_quorum_async(bootstrap, **options))


def describe_status(bootstrap: str, **options) -> dict[str, str]:
    return run_sync(describe_status_async(bootstrap, **options))


def describe_replication(bootstrap: str, **options) -> list[list[str]]:
    return run_sync(describe_replication_async(bootstrap, **options))


def add_controller(bootstrap: str, config_path, **options) -> str:
    return run_sync(add_controller_async(bootstrap, config_path, **options))


def remove_controller(bootstrap: str, controller_id: int, directory_id: str, **options) -> str:
    return run_sync(remove_controller_async(bootstrap, controller_id, directory_id, **options))


# --- Java's text ------------------------------------------------------------------------------------

def _kafka_uuid(u: uuid.UUID) -> str:
    return uuid_to_kafka(u)


def kafka_uuid_from_string(text: str) -> uuid.UUID:
    """Kafka's Uuid.fromString, with its messages (and java.util.Base64's URL decoder's)."""
    if len(text) > 24:
        raise ValueError(f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID")
    raw = _java_base64_url_decode(text)
    if len(raw) != 16:
        raise ValueError(f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the expected "
                         f"16 bytes of a base64-encoded UUID")
    return uuid.UUID(bytes=raw)


_URL_ALPHABET = {c: i for i, c in enumerate(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")}


def _java_base64_url_decode(text: str) -> bytes:
    """java.util.Base64.getUrlDecoder().decode(String), with its messages: padding optional but
    right if present, nothing after it."""
    src = text.encode("latin-1", errors="replace")      # String.getBytes(ISO_8859_1): '?' for the rest
    if len(src) == 1:
        raise ValueError("Input byte[] should at least have 2 bytes for base64 bytes")
    out, bits, shift_to, sp = bytearray(), 0, 18, 0
    while sp < len(src):
        b = src[sp]
        sp += 1
        if b == ord("="):
            # "=" may end a unit of two characters ("==") or three ("="), nothing else.
            if shift_to == 6:
                if sp == len(src) or src[sp] != ord("="):
                    raise ValueError("Input byte array has wrong 4-byte ending unit")
                sp += 1
            elif shift_to == 18:
                raise ValueError("Input byte array has wrong 4-byte ending unit")
            break
        value = _URL_ALPHABET.get(b)
        if value is None:
            signed = b - 256 if b >= 128 else b              # Integer.toString(byte, 16)
            raise ValueError(f"Illegal base64 character {'-' if signed < 0 else ''}{abs(signed):x}")
        bits |= value << shift_to
        shift_to -= 6
        if shift_to < 0:
            out += bytes(((bits >> 16) & 0xFF, (bits >> 8) & 0xFF, bits & 0xFF))
            bits, shift_to = 0, 18
    if shift_to == 6:
        out.append((bits >> 16) & 0xFF)
    elif shift_to == 0:
        out += bytes(((bits >> 16) & 0xFF, (bits >> 8) & 0xFF))
    elif shift_to == 12:
        raise ValueError("Last unit does not have enough valid bits")
    if sp < len(src):
        raise ValueError(f"Input byte array has incorrect ending byte at {sp}")
    return bytes(out)


def _java_parse_int(text: str) -> int:
    """Integer.parseInt: an optional sign and ASCII digits, within a Java int."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not digits.isascii() or not digits.isdigit() or not -2**31 <= int(text) < 2**31:
        raise ToolError(f'For input string: "{text}"')
    return int(text)


def _java_split(text: str, sep: str) -> list[str]:
    """String.split with a literal separator: trailing empty strings are dropped."""
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


# --- command line ------------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser, controllers_are="Kafka controllers",
                             command_config_help="Property file containing configs to be passed to Admin Client. For "
                                                 "add-controller, the file is used to specify the controller "
                                                 "properties as well.")
    sub = parser.add_subparsers(dest="quorum_command", required=True, metavar="COMMAND")
    describe = sub.add_parser("describe", help="Describe the metadata quorum info")
    describe.add_argument("--status", action="store_true",
                          help="A short summary of the quorum status and the other provides detailed information "
                               "about the status of replication.")
    describe.add_argument("--replication", action="store_true", help="Detailed information about the status of "
                                                                     "replication")
    describe.add_argument("--human-readable", action="store_true", help="Human-readable output")
    add = sub.add_parser("add-controller", help="Add a controller to the KRaft controller cluster")
    add.add_argument("--dry-run", action="store_true", help="True if we should print what would be done, but not do it.")
    remove = sub.add_parser("remove-controller", help="Remove a controller from the KRaft controller cluster")
    remove.add_argument("--controller-id", "-i", type=int, required=True, help="The id of the controller to remove.")
    remove.add_argument("--controller-directory-id", "-d", required=True,
                        help="The directory ID of the controller to remove.")
    remove.add_argument("--dry-run", action="store_true", help="True if we should print what would be done, but not do it.")


def run(args: argparse.Namespace) -> int:
    show_warnings()             # each failed attempt while waiting, as Kafka's client logs it
    try:
        print(_execute(args))
        return 0
    except ToolError as exc:
        print(exc, file=sys.stderr)
        return 1


def _execute(args) -> str:
    bootstrap, options = connection_options(args, with_properties=False)
    if args.quorum_command == "add-controller":
        if args.command_config is None:
            raise ToolError("You must supply the configuration file of the controller you are adding when using "
                            "add-controller.")
        return add_controller(bootstrap, args.command_config, dry_run=args.dry_run, **options)
    options["properties"] = load_properties(args.command_config) if args.command_config else None
    if args.quorum_command == "remove-controller":
        return remove_controller(bootstrap, args.controller_id, args.controller_directory_id, dry_run=args.dry_run,
                                 **options)
    if args.status and args.replication:
        raise ToolError("Only one of --status or --replication should be specified with describe sub-command")
    if args.replication:
        rows = describe_replication(bootstrap, human_readable=args.human_readable, **options)
        return pretty_table(REPLICATION_HEADERS, rows)
    if args.status:
        if args.human_readable:
            raise ToolError("The option --human-readable is only supported along with --replication")
        return format_status(describe_status(bootstrap, **options))
    raise ToolError("One of --status or --replication must be specified with describe sub-command")
