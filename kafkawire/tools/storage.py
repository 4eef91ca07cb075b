"""`kafkawire storage`: Kafka's kafka-storage tool (StorageTool and Formatter of Kafka 4.3.1).

    kafkawire storage random-uuid
    kafkawire storage format --cluster-id ID --config server.properties [--standalone |
        --initial-controllers ID@HOST:PORT:DIRID,... | --no-initial-controllers]
        [--release-version V] [--feature NAME=LEVEL ...] [--ignore-formatted]
    kafkawire storage info --config server.properties
    kafkawire storage version-mapping [--release-version V]
    kafkawire storage feature-dependencies --feature NAME=LEVEL [--feature ...]

The release versions and feature levels are kafkawire.feature_versions' (Kafka 4.3.1's); the
default release version is 4.3-IV0. ``format`` prints ``Bootstrap metadata: ...`` as Kafka's
Formatter does, then writes what it writes, in every directory of log.dirs plus
metadata.log.dir (sorted):

* ``meta.properties``: version 1, node.id, cluster.id, and a directory.id (random, except in
  the metadata directory of a voter named by --initial-controllers/--standalone, which gets
  the directory id given there);
* ``bootstrap.checkpoint`` (BootstrapDirectory.writeBinaryFile / BatchFileWriter): a
  SnapshotHeader control batch (lastContainedLogTimestamp 0), one batch of FeatureLevelRecords
  (metadata.version first, then each other feature whose effective level is above 0, by name:
  the --feature levels, else the release version's defaults; kraft.version never:
  BootstrapMetadata.fromVersions), a SnapshotFooter batch; every batch with partition leader
  epoch 0. kraft.version is 1 for a dynamic quorum (no controller.quorum.voters), else 0; a
  --feature kraft.version that disagrees is refused, as are unknown features, levels that are
  not production and unmet dependencies (Formatter.calculateEffectiveFeatureLevels);
* with --standalone or --initial-controllers, in the metadata directory,
  ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``
  (Formatter.writeDynamicQuorumSnapshot): one control batch with SnapshotHeader
  (lastContainedLogTimestamp now), KRaftVersionRecord (kraft.version 1) and VotersRecord (each
  voter's id, directory id, endpoint on the first controller listener, supported kraft.version
  0..1, in Java HashMap order as VoterSet keeps them), then the SnapshotFooter batch.

A directory that already has meta.properties stops the format with Kafka's message unless
--ignore-formatted; one formatted for another cluster or node stops it in any case.
``version-mapping`` and ``feature-dependencies`` are tools/version_mapping.py's; the release
version, feature levels and bootstrap records are tools/bootstrap_metadata.py's.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import uuid
from dataclasses import dataclass

from kafkawire import feature_versions as fv
from kafkawire.storage.state_files import random_uuid  # noqa: F401 - also this module's, for its callers
from kafkawire.tools.bootstrap_metadata import (LATEST_PRODUCTION, SCRAM_METADATA_VERSION_LEVEL,  # noqa: F401 (re-exported)
                                      StorageError, bootstrap_metadata_text, bootstrap_records,
                                      default_feature_levels, effective_feature_levels, metadata_version,
                                      release_version_level, remove_stale_part, write_bootstrap_checkpoint)
from kafkawire.controller.java_order import copied_capacity, grown_capacity, int_hashmap_order, string_hashmap_order
from kafkawire.records.control import ControlRecordType
from kafkawire.storage.snapshot import BOOTSTRAP_SNAPSHOT_ID, SnapshotWriter, snapshot_file_name
from kafkawire.storage.state_files import (MetaProperties, StateFileError, read_meta_properties, uuid_from_kafka,
                                           uuid_to_kafka, write_meta_properties)

COMMAND = "storage"
log = logging.getLogger(__name__)
HELP = "format KRaft log directories and print uuids, as Kafka's kafka-storage tool does"

CLUSTER_METADATA_DIR = "__cluster_metadata-0"
META_PROPERTIES = "meta.properties"


# --- uuids: random_uuid lives in kafkawire.storage.state_files (the node uses it too) -------------

# --- dynamic voters ---------------------------------------------------------------------------

@dataclass(frozen=True)
class DynamicVoter:
    node_id: int
    host: str
    port: int
    directory_id: uuid.UUID


def parse_dynamic_voter(text: str) -> DynamicVoter:
    """DynamicVoter.parse: ``id@host:port:directoryId`` (host may be [ipv6])."""
    text = text.strip()
    at = text.find("@")
    if at < 0:
        raise StorageError("No @ found in dynamic voter string.")
    if at == 0:
        raise StorageError("Invalid @ at beginning of dynamic voter string.")
    try:
        node_id = int(text[:at])
    except ValueError:
        raise StorageError("Failed to parse node id in dynamic voter string.") from None
    if node_id < 0:
        raise StorageError(f"Invalid negative node id {node_id} in dynamic voter string.")
    rest = text[at + 1:]
    if not rest:
        raise StorageError("No hostname found after node id.")
    if rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            raise StorageError("Hostname began with left bracket, but no right bracket was found.")
        host, rest = rest[1:end], rest[end + 1:]
    else:
        colon = rest.find(":")
        if colon < 0:
            raise StorageError("No colon following hostname could be found.")
        host, rest = rest[:colon], rest[colon:]
    if not rest.startswith(":"):
        raise StorageError("Port section must start with a colon.")
    rest = rest[1:]
    colon = rest.find(":")
    if colon < 0:
        raise StorageError("No colon following port could be found.")
    try:
        port = int(rest[:colon])
    except ValueError:
        raise StorageError("Failed to parse port in dynamic voter string.") from None
    if not 0 <= port <= 65535:
        raise StorageError(f"Invalid port {port} in dynamic voter string.")
    try:
        directory_id = uuid_from_kafka(rest[colon + 1:])
    except ValueError as exc:
        raise StorageError(f"Failed to parse directory ID in dynamic voter string: {exc}") from None
    return DynamicVoter(node_id, host, port, directory_id)


def parse_dynamic_voters(text: str) -> dict[int, DynamicVoter]:
    """DynamicVoters.parse: comma-separated voters, each node id once; by node id."""
    voters: dict[int, DynamicVoter] = {}
    for part in text.strip().split(","):
        if not part:
            continue
        voter = parse_dynamic_voter(part)
        if voter.node_id in voters:
            raise StorageError(f"Node id {voter.node_id} was specified more than once.")
        voters[voter.node_id] = voter
    if not voters:
        raise StorageError("No voters given.")
    return dict(sorted(voters.items()))


def java_hashmap_order(keys_in_insertion_order: list[int]) -> list[int]:
    """The iteration order of ``new HashMap<>(m)`` where ``m`` is a ``new HashMap<>()`` filled in the
    given order (DynamicVoters.toVoterSet, then VoterSet.fromMap), as Java 17 sizes the copy."""
    first = int_hashmap_order(keys_in_insertion_order)
    return int_hashmap_order(first, copied_capacity(len(first), jdk=17))


def voters_record(voters: dict[int, DynamicVoter], listener_name: str):
    """VoterSet.toVotersRecord(0) of DynamicVoters.toVoterSet(listener_name)."""
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.messages.voters_record import Endpoint, KRaftVersionFeature, Voter, VotersRecord
    return VotersRecord(version=0, voters=[
        Voter(voter_id=v.node_id, voter_directory_id=v.directory_id,
              endpoints=[Endpoint(name=listener_name.upper(), host=v.host, port=v.port)],
              k_raft_version_feature=KRaftVersionFeature(min_supported_version=0, max_supported_version=1))
        for v in (voters[k] for k in java_hashmap_order(list(voters)))])


def write_dynamic_quorum_snapshot(metadata_dir, voters: dict[int, DynamicVoter], listener_name: str, *,
                                  time_ms=None) -> str:
    """The bootstrap snapshot 00000000000000000000-0000000000.checkpoint with kraft.version 1 and the voters."""
    import time
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.messages.k_raft_version_record import KRaftVersionRecord
    directory = os.path.join(metadata_dir, CLUSTER_METADATA_DIR)
    os.makedirs(directory, exist_ok=True)
    remove_stale_part(os.path.join(directory, snapshot_file_name(BOOTSTRAP_SNAPSHOT_ID)))
    clock = time_ms or (lambda: int(time.time() * 1000))
    control = [(ControlRecordType.KRAFT_VERSION, KRaftVersionRecord(version=0, k_raft_version=1).encode(0)),
               (ControlRecordType.KRAFT_VOTERS, voters_record(voters, listener_name).encode(0))]
    writer = SnapshotWriter(directory, BOOTSTRAP_SNAPSHOT_ID, last_contained_log_timestamp=clock(),
                            control_records=control, time_ms=clock)
    return writer.freeze()


# --- format -----------------------------------------------------------------------------------

_DESCRIPTIONS = {
    "log": "data directory",
    "static": "metadata directory",
    "dynamic": "dynamic metadata directory",
    "voter": "dynamic metadata voter directory",
}


def _load_meta(directory):
    """(MetaProperties | None, error | None) of a directory (MetaPropertiesEnsemble.Loader)."""
    path = os.path.join(directory, META_PROPERTIES)
    if not os.path.exists(path):
        return None, None
    try:
        return read_meta_properties(path), None
    except (StateFileError, OSError, UnicodeDecodeError) as exc:
        return None, exc


def _initial_voters(config, mode: str | None, initial_controllers: str | None) -> dict[int, DynamicVoter] | None:
    """StorageTool.runFormatCommand's quorum checks: the dynamic voters to format with, or None."""
    static_voters = bool(config.controller_quorum_voters)
    if static_voters and mode in ("standalone", "initial-controllers"):
        raise StorageError("You cannot specify controller.quorum.voters and format the node with "
                           "--initial-controllers or --standalone. If you want to use dynamic quorum, please "
                           "remove controller.quorum.voters and specify controller.quorum.bootstrap.servers instead.")
    voters = None
    if mode == "initial-controllers":
        voters = parse_dynamic_voters(initial_controllers)
    elif mode == "standalone":
        if not config.is_controller:
            raise StorageError("You can only use --standalone on a controller.")
        if not config.controller_endpoints:
            raise StorageError("No controller listeners found.")
        endpoint = config.controller_endpoints[0]
        voters = {config.node_id: DynamicVoter(config.node_id, endpoint.host or "localhost", endpoint.port,
                                               random_uuid())}
    if mode is None and config.is_controller and not static_voters:
        raise StorageError("Because controller.quorum.voters is not set on this controller, you must specify one "
                           "of the following: --standalone, --initial-controllers, or --no-initial-controllers.")
    return voters


def _directories_to_format(config, cluster_id: str, ignore_formatted: bool, out) -> tuple[list, list, dict]:
    """MetaPropertiesEnsemble.Loader + verify and the Formatter's checks: the directories still
    to format, those formatted already and the directory ids in use (id -> directory)."""
    formatted, empty, errors, seen_ids = {}, [], [], {}
    for directory in config.all_log_dirs:
        meta, error = _load_meta(directory)
        if error is not None:
            errors.append(directory)
            log.error("Error while reading meta.properties file %s: %s", os.path.join(directory, META_PROPERTIES),
                      error)        # the Loader logs it; the Formatter reports the directory below
        elif meta is None:
            empty.append(directory)
        else:
            formatted[directory] = meta
    for directory, meta in formatted.items():     # MetaPropertiesEnsemble.verify
        path = os.path.join(directory, META_PROPERTIES)
        if meta.cluster_id != cluster_id:
            raise StorageError(f"Invalid cluster.id in: {path}. Expected {cluster_id}, but read {meta.cluster_id}")
        if meta.node_id != config.node_id:
            raise StorageError(f"Stored node id {meta.node_id} doesn't match previous node id {config.node_id} in "
                               f"{path}. If you moved your data, make sure your configured node id matches. If you "
                               f"intend to create a new node, you should remove all data in your data directories.")
        if meta.directory_id is not None:
            if meta.directory_id in seen_ids:
                raise StorageError(f"Duplicate directory ID {meta.directory_id} found. It was the directory ID of "
                                   f"{seen_ids[meta.directory_id]}, and also of {directory}")
            seen_ids[meta.directory_id] = directory
    if formatted and not ignore_formatted:
        first = sorted(formatted)[0]
        raise StorageError(f"Log directory {first} is already formatted. Use --ignore-formatted to ignore this "
                           f"directory and format the others.")
    for directory in string_hashmap_order(sorted(errors)):      # the Copier's HashSet of them
        print(f"I/O error trying to read log directory {directory}. Ignoring...", file=out)
    if errors and not empty and not formatted:
        raise StorageError("No available log directories to format.")
    return empty, list(formatted), seen_ids


def _kafka_write_order(formatted, empty) -> list[str]:
    """The order MetaPropertiesEnsemble.Copier.writeLogDirChanges formats directories in: its
    logDirProps HashMap (a copy of the formatted ones, then the empty ones put in name order),
    whose new entries go through a second HashMap, newOrChanged, that it iterates."""
    formatted = sorted(formatted)
    initial = copied_capacity(len(formatted)) if formatted else 16
    copier = string_hashmap_order(formatted + sorted(empty), grown_capacity(len(formatted) + len(empty), initial))
    return string_hashmap_order([d for d in copier if d in set(empty)])


def format_storage(config, cluster_id: str, *, mode: str | None, initial_controllers: str | None = None,
                   release_version: str | None = None, features: dict[str, int] | None = None,
                   ignore_formatted: bool = False, out=None, time_ms=None, add_scram: list[str] | None = None) -> None:
    """Kafka's StorageTool.runFormatCommand + Formatter.run. ``mode`` is "standalone",
    "initial-controllers", "no-initial-controllers" or None; ``features``: the --feature levels."""
    out = out or sys.stdout
    if release_version is not None:
        metadata_version(release_version)        # StorageTool refuses an unknown one before anything else
    voters = _initial_voters(config, mode, initial_controllers)
    if not cluster_id:
        raise StorageError("You must specify the cluster id.")
    requested = dict(features or {})
    mv_level = release_version_level(release_version, requested)
    levels = effective_feature_levels(mv_level, requested, dynamic_quorum=not config.controller_quorum_voters)
    records = bootstrap_records(mv_level, levels)
    if add_scram:
        # Formatter.calculateBootstrapMetadata: after the feature levels, from 3.5-IV2 on.
        from kafkawire.tools.scram_args import ScramArgumentError, parse_scram_arguments
        if mv_level < SCRAM_METADATA_VERSION_LEVEL:
            raise StorageError("SCRAM is only supported in metadata.version 3.5-IV2 or later.")
        try:
            records = records + parse_scram_arguments(add_scram)
        except ScramArgumentError as exc:
            raise StorageError(str(exc)) from None
    empty, formatted, seen_ids = _directories_to_format(config, cluster_id, ignore_formatted, out)
    if not empty:
        print("All of the log directories are already formatted.", file=out)
        return
    print(f"Bootstrap metadata: {bootstrap_metadata_text(records, mv_level)}", file=out)
    for directory in _kafka_write_order(formatted, empty):
        if directory != config.metadata_log_dir:
            kind = "log"
        elif voters is None:
            kind = "static"
        else:
            kind = "voter" if config.node_id in voters else "dynamic"
        if kind == "voter":
            directory_id = voters[config.node_id].directory_id
        else:
            directory_id = random_uuid()
            while directory_id in seen_ids:
                directory_id = random_uuid()
        seen_ids[directory_id] = directory
        print(f"Formatting {_DESCRIPTIONS[kind]} {directory} with metadata.version "
              f"{fv.metadata_version(mv_level).name}.", file=out)
        try:
            os.makedirs(directory, exist_ok=True)
            write_bootstrap_checkpoint(directory, mv_level, time_ms=time_ms, records=records)
            if kind in ("voter", "dynamic"):
                write_dynamic_quorum_snapshot(directory, voters, config.controller_listener_names[0], time_ms=time_ms)
            write_meta_properties(os.path.join(directory, META_PROPERTIES),
                                  MetaProperties(1, cluster_id, config.node_id, directory_id))
        except OSError as exc:
            raise StorageError(f"Error while writing meta.properties file {directory}: {exc}") from None


# --- info -------------------------------------------------------------------------------------

def storage_info(config, out=None) -> int:
    """StorageTool.infoCommand: the directories, their metadata, and any problems."""
    out = out or sys.stdout
    problems, found, previous = [], [], None
    for directory in sorted(config.all_log_dirs):
        if not os.path.isdir(directory):
            problems.append(f"{directory} {'is not a directory' if os.path.exists(directory) else 'does not exist'}")
            continue
        found.append(directory)
        meta, error = _load_meta(directory)
        if error is not None:
            problems.append(f"Error loading {os.path.join(directory, META_PROPERTIES)}: {error}")
        elif meta is None:
            problems.append(f"{directory} is not formatted.")
        elif previous is None:
            previous = meta
        elif previous.cluster_id != meta.cluster_id:
            problems.append("Mismatched cluster IDs between storage directories.")
        elif previous.node_id != meta.node_id:
            problems.append("Mismatched node IDs between storage directories.")
    if previous is not None and previous.version == 0:
        problems.append("The kafka configuration file appears to be for a cluster in KRaft mode, but the "
                        "directories are formatted for legacy mode.")
    if found:
        print("Found log directory:" if len(found) == 1 else "Found log directories:", file=out)
        for d in found:
            print(f"  {d}", file=out)
        print("", file=out)
    if previous is not None:
        items = dict(sorted(previous.to_properties().items.items()))
        print("Found metadata: {" + ", ".join(f"{k}={v}" for k, v in items.items()) + "}", file=out)
        print("", file=out)
    if problems:
        print("Found problem:" if len(problems) == 1 else "Found problems:", file=out)
        for p in problems:
            print(f"  {p}", file=out)
        print("", file=out)
        return 1
    return 0


# --- the command ------------------------------------------------------------------------------

def parse_feature_flags(texts: list[str] | None) -> dict[str, int]:
    """StorageTool.featureNamesAndLevels: ``name=level`` each, trimmed, the level a Java short;
    a name given twice keeps its last level."""
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.tools.version_mapping import FEATURES as FEATURE_COMMAND_WORDING, VersionLookupError, parse_name_and_level
    levels: dict[str, int] = {}
    for text in texts or ():
        try:
            # format's --feature is parsed as FeatureCommand parses it (feature-dependencies' is not)
            name, level = parse_name_and_level(text, FEATURE_COMMAND_WORDING)
        except VersionLookupError as exc:
            raise StorageError(str(exc)) from None
        levels[name] = level
    return levels


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="storage_command", required=True,
                                metavar="{info,format,version-mapping,feature-dependencies,random-uuid}")
    info = sub.add_parser("info", help="Get information about the Kafka log directories on this node.")
    info.add_argument("--config", "-c", required=True, help="The Kafka configuration file to use.")
    fmt = sub.add_parser("format", help="Format the Kafka log directories on this node.")
    fmt.add_argument("--config", "-c", required=True, help="The Kafka configuration file to use.")
    fmt.add_argument("--cluster-id", "-t", required=True, help="The cluster ID to use.")
    fmt.add_argument("--ignore-formatted", "-g", action="store_true",
                     help="Format the directories that are not formatted yet and leave the others.")
    fmt.add_argument("--release-version", "-r",
                     help=f"The release version to use for the initial feature settings. The minimum is "
                          f"{fv.metadata_version(fv.MINIMUM_LEVEL)}; the default is {LATEST_PRODUCTION}.")
    fmt.add_argument("--feature", "-f", action="append", metavar="FEATURE=LEVEL",
                     help="The setting to use for a specific feature, in feature=level format. For example: "
                          "`kraft.version=1`.")
    fmt.add_argument("--add-scram", "-S", action="append", metavar="SCRAM_CREDENTIAL",
                     help="A SCRAM_CREDENTIAL to add to the __cluster_metadata log e.g. "
                          "'SCRAM-SHA-256=[name=alice,password=alice-secret]' "
                          "'SCRAM-SHA-512=[name=alice,iterations=8192,salt=\"N3E=\",saltedpassword=\"YCE=\"]'")
    quorum = fmt.add_mutually_exclusive_group()
    quorum.add_argument("--standalone", "-s", action="store_true",
                        help="Initialize a controller as a single-node dynamic quorum.")
    quorum.add_argument("--no-initial-controllers", "-N", action="store_true",
                        help="Initialize a server without specifying a dynamic quorum.")
    quorum.add_argument("--initial-controllers", "-I", metavar="ID@HOST:PORT:DIRID,...",
                        help="Initialize a server with the specified dynamic quorum (the same value on every node).")
    mapping = sub.add_parser("version-mapping", help="Look up the corresponding features for a given metadata "
                                                     "version (by default the latest stable one).")
    mapping.add_argument("--release-version", "-r",
                         help=f"The release version to use for the corresponding feature mapping. The minimum is "
                              f"{fv.metadata_version(fv.MINIMUM_LEVEL)}; the default is {LATEST_PRODUCTION}.")
    dependencies = sub.add_parser("feature-dependencies", help="Look up dependencies for a given feature version.")
    dependencies.add_argument("--feature", "-f", action="append", required=True, metavar="FEATURE=VERSION",
                              help="The features and their versions to look up dependencies for, in "
                                   "feature=version format. For example: `metadata.version=5`.")
    sub.add_parser("random-uuid", help="Print a random UUID.")


def _print_lookup(lines) -> int:
    """Print a version-mapping / feature-dependencies answer line by line; a refusal ends it."""
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.tools.version_mapping import VersionLookupError
    try:
        for line in lines:
            print(line)
    except VersionLookupError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.net.config import ConfigError, load_server_config
    from kafkawire.tools import version_mapping
    if args.storage_command == "random-uuid":
        print(uuid_to_kafka(random_uuid()))
        return 0
    if args.storage_command == "version-mapping":
        return _print_lookup(version_mapping.version_mapping(args.release_version))
    if args.storage_command == "feature-dependencies":
        return _print_lookup(version_mapping.feature_dependencies(args.feature, version_mapping.STORAGE))
    try:
        config = load_server_config(args.config)
        if args.storage_command == "info":
            return storage_info(config)
        mode = ("standalone" if args.standalone else "no-initial-controllers" if args.no_initial_controllers
                else "initial-controllers" if args.initial_controllers is not None else None)
        if args.release_version is not None:
            metadata_version(args.release_version)     # refused before --feature is read, as StorageTool does
        format_storage(config, args.cluster_id, mode=mode, initial_controllers=args.initial_controllers,
                       release_version=args.release_version, features=parse_feature_flags(args.feature),
                       ignore_formatted=args.ignore_formatted, add_scram=args.add_scram)
        return 0
    except (StorageError, ConfigError) as exc:
        print(exc, file=sys.stderr)
        return 1
