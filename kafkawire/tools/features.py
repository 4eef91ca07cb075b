"""`kafkawire features`: Kafka's kafka-features (FeatureCommand, Kafka 4.x).

    kafkawire features --bootstrap-controller H:P describe [--node-id N]
    kafkawire features --bootstrap-server H:P upgrade --feature kraft.version=1 [--dry-run]
    kafkawire features --bootstrap-controller H:P upgrade --release-version 3.9-IV0
    kafkawire features --bootstrap-controller H:P downgrade --feature kraft.version=0 [--unsafe] [--dry-run]
    kafkawire features --bootstrap-controller H:P disable --feature group.version [--unsafe] [--dry-run]
    kafkawire features version-mapping [--release-version V]
    kafkawire features feature-dependencies --feature NAME=LEVEL [--feature ...]

* ``describe`` sends ApiVersions (the Admin's describeFeatures) and prints, for each supported
  feature by name, Kafka 4.3's columns: ``Feature: `` and the name padded to 40, then two spaces
  and ``SupportedMinVersion: 0``, ``SupportedMaxVersion: 1``, ``FinalizedVersionLevel: 1`` with
  each level padded to 15, then ``Epoch: 5`` (metadata.version levels as their names,
  ``3.9-IV0``, or ``UNKNOWN 99``; a feature not finalized at level 0; Epoch ``-`` when the node
  names none).
* ``upgrade``, ``downgrade`` and ``disable`` send UpdateFeatures (57) with Kafka's upgrade types
  (1 upgrade, 2 safe downgrade, 3 unsafe downgrade with ``--unsafe``; ``--dry-run`` is
  ValidateOnly), the updates in the order of the Java HashMap the tool builds, and print one line
  per feature by name: ``kraft.version was upgraded to 1.`` / ``... can be upgraded to 1.`` or
  ``Could not upgrade kraft.version to 1. <the error's message>``, then
  ``1 out of 1 operation(s) failed.`` on stderr with exit status 1 if any failed.
  ``--release-version V`` (and the deprecated ``--metadata V``) set metadata.version to V's level
  and, with --release-version, every production feature to its default for V (features at
  level 0 are left out of an upgrade), from kafkawire.feature_versions (Kafka 4.3.1's
  MetadataVersion and features; versions that are not production yet, 4.4-IV0, are allowed).
* ``version-mapping`` and ``feature-dependencies`` answer from the same table without asking a
  server (tools/version_mapping.py), so they need no --bootstrap flag.

Bad input gets Kafka's messages (``Can't parse feature=level string x: equals sign not found.``,
``Unknown metadata.version '9.9'. Supported metadata.version are: 3.3-IV3, ...``); connection
failures and timeouts one line on stderr and exit status 1. ``--timeout MS`` is kafkawire's.
"""
from __future__ import annotations

from kafkawire.controller.java_order import string_hash as java_string_hash  # noqa: F401 (String.hashCode)
from kafkawire.controller.java_order import string_hashmap_order as java_hashmap_order

import argparse
import sys
from dataclasses import dataclass

from kafkawire import feature_versions as fv
from kafkawire.protocol.error_codes import Errors
from kafkawire.tools.admin_client import (Admin, KafkaApiError, ToolError, add_connection_arguments, admin_config,
                                connection_options, run_sync, show_warnings)
from kafkawire.messages.api_versions_request import ApiVersionsRequest

COMMAND = "features"
HELP = "describe and change the cluster's feature levels, as kafka-features does"

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3     # FeatureUpdate.UpgradeType codes


# --- describe ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FeatureDescription:
    name: str
    supported_min: int
    supported_max: int
    finalized_level: int        # 0 when not finalized, as the tool shows it
    epoch: int | None           # finalized features epoch; None when the node gives none (-1)

    def __str__(self):
        # Kafka 4.3's columns: the name left-justified in 40, each level in 15, two spaces between.
        level = lambda v: level_to_string(self.name, v).ljust(15)      # noqa: E731
        return (f"Feature: {self.name:<40}  SupportedMinVersion: {level(self.supported_min)}  "
                f"SupportedMaxVersion: {level(self.supported_max)}  FinalizedVersionLevel: "
                f"{level(self.finalized_level)}  Epoch: {'-' if self.epoch is None else self.epoch}")


def level_to_string(feature: str, level: int) -> str:
    """FeatureCommand.levelToString: metadata.version levels by name."""
    if feature == METADATA_VERSION:
        try:
            return fv.metadata_version(level).name
        except ValueError:
            return f"UNKNOWN {level}"
    return str(level)


def features_from_api_versions(response) -> list[FeatureDescription]:
    """describeFeatures' FeatureMetadata, as handleDescribe walks it: supported features by name."""
    if response.error_code != Errors.NONE:
        raise KafkaApiError(response.error_code)
    finalized = {f.name: f.max_version_level for f in response.finalized_features}
    supported = {f.name: (f.min_version, f.max_version) for f in response.supported_features}
    epoch = response.finalized_features_epoch if response.finalized_features_epoch >= 0 else None
    return [FeatureDescription(name, low, high, finalized.get(name, 0), epoch)
            for name, (low, high) in sorted(supported.items())]


async def describe_features_async(bootstrap: str, *, node_id: int | None = None,
                                  **options) -> list[FeatureDescription]:
    """``node_id``: ask that node (a controller or a broker, by the bootstrap kind), as
    ``describe --node-id`` does; else the active controller or the bootstrap broker."""
    config = admin_config(bootstrap, **options)         # Kafka's Admin is created before the check
    if node_id is not None and node_id < 0:
        raise ToolError(f"Invalid node id {node_id}: must be non-negative.")
    async with Admin(config) as admin:
        request = ApiVersionsRequest(client_software_name="kafkawire", client_software_version="0.1.0")
        return await admin.call("describeFeatures", lambda _: request, features_from_api_versions, node_id=node_id)


def describe_features(bootstrap: str, **options) -> list[FeatureDescription]:
    return run_sync(describe_features_async(bootstrap, **options))


# --- upgrade, downgrade, disable: what to send --------------------------------------------------------

def metadata_version_level(text: str) -> int:
    """MetadataVersion.fromVersionString(text, true).featureLevel(): FeatureCommand allows the
    versions that are not production yet; its refusal is fromVersionString's message."""
    try:
        return fv.from_version_string(text, unstable_allowed=True).level
    except ValueError as exc:
        raise ToolError(str(exc)) from None


def default_levels(mv_level: int) -> dict[str, int]:
    """Feature.defaultLevel(releaseVersion) of every production feature, in Feature.PRODUCTION_FEATURES' order."""
    return fv.default_levels(mv_level)


def parse_name_and_level(text: str) -> tuple[str, int]:
    """FeatureCommand.parseNameAndLevel: ``name=level``, trimmed, the level a Java short."""
    equals = text.find("=")
    if equals < 0:
        raise ToolError(f"Can't parse feature=level string {text}: equals sign not found.")
    name, level = text[:equals].strip(), text[equals + 1:].strip()
    if not _is_java_short(level):
        raise ToolError(f"Can't parse feature=level string {text}: unable to parse {level} as a short.")
    return name, int(level)


def _is_java_short(text: str) -> bool:
    digits = text[1:] if text[:1] in "+-" else text
    return bool(digits) and digits.isascii() and digits.isdigit() and -2**15 <= int(text) < 2**15


def feature_update(level: int, upgrade_type: int) -> tuple[int, int]:
    """new FeatureUpdate(level, upgradeType)'s checks."""
    if level == 0 and upgrade_type == UPGRADE:
        raise ToolError(f"The upgradeType flag should be set to SAFE_DOWNGRADE or UNSAFE_DOWNGRADE when the provided "
                        f"maxVersionLevel:{level} is < 1.")
    if level < 0:
        raise ToolError("Cannot specify a negative version level.")
    return level, upgrade_type


def planned_updates(upgrade_type: int, *, features=None, release_version=None, metadata=None,
                    disable: bool = False) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """handleUpgradeOrDowngrade / handleDisable: {feature: (level, upgrade type)} in insertion
    order, and the notices printed before the request (the deprecated --metadata's)."""
    updates: dict[str, tuple[int, int]] = {}
    notices: list[str] = []
    if disable:
        for name in features or ():
            if name in updates:
                raise ToolError(f"Feature {name} was specified more than once.")
            updates[name] = feature_update(0, upgrade_type)
        return updates, notices
    if release_version is not None and (metadata is not None or features is not None):
        raise ToolError("Can not specify `release-version` with other feature flags.")
    if release_version is not None:
        mv_level = metadata_version_level(release_version)
        updates[METADATA_VERSION] = feature_update(mv_level, upgrade_type)
        for name, level in default_levels(mv_level).items():
            if upgrade_type != UPGRADE or level > 0:      # an upgrade to 0 is not sent
                updates[name] = feature_update(level, upgrade_type)
        return updates, notices
    if metadata is not None:
        notices.append(" `metadata` flag is deprecated and may be removed in a future release.")
    try:
        if metadata is not None:
            updates[METADATA_VERSION] = feature_update(metadata_version_level(metadata), upgrade_type)
        for text in features or ():
            name, level = parse_name_and_level(text)
            update = feature_update(level, upgrade_type)
            if name in updates:
                raise ToolError(f"Feature {name} was specified more than once.")
            updates[name] = update
    except ToolError as exc:
        exc.printed_before = notices        # Kafka's tool has printed the notice by then
        raise
    return updates, notices


def update_features_request(updates: dict[str, tuple[int, int]], *, dry_run: bool, timeout_ms: int):
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.messages.update_features_request import FeatureUpdateKey, UpdateFeaturesRequest
    return UpdateFeaturesRequest(
        timeout_ms=timeout_ms, validate_only=dry_run,
        feature_updates=[FeatureUpdateKey(feature=name, max_version_level=updates[name][0],
                                          upgrade_type=updates[name][1])
                         for name in java_hashmap_order(list(updates))])


def feature_results(updates, response) -> dict[str, KafkaApiError | None]:
    """updateFeatures' handleResponse: each feature's error, or None."""
    error = Errors.for_code(response.error_code)
    if error == Errors.NOT_CONTROLLER:
        raise KafkaApiError(error, retriable=True)
    if error != Errors.NONE:
        failure = KafkaApiError(response.error_code, response.error_message, retriable=False)
        return {name: failure for name in updates}
    if not response.results:                   # v2 and later: a top-level NONE is every feature done
        return {name: None for name in updates}
    results: dict[str, KafkaApiError | None] = {}
    for result in response.results:
        if result.feature in updates:
            results[result.feature] = (None if result.error_code == Errors.NONE else
                                       KafkaApiError(result.error_code, result.error_message, retriable=False))
    for name in updates:
        results.setdefault(name, KafkaApiError(Errors.UNKNOWN_SERVER_ERROR,
                                               f"The controller response did not contain a result for feature {name}"))
    return results


def result_lines(op: str, updates, results, dry_run: bool) -> tuple[list[str], int]:
    """FeatureCommand.update's report, by feature name, and the number of failures."""
    lines, failures = [], 0
    for name in sorted(results):
        level = updates[name][0]
        error = results[name]
        if error is not None:
            suffix = f"disable {name}" if op == "disable" else f"{op} {name} to {level}"
            lines.append(f"{'Can not ' if dry_run else 'Could not '}{suffix}. {error.message}")
            failures += 1
        else:
            what = "disabled." if op == "disable" else f"{op}d to {level}."
            lines.append(f"{name}{' can be ' if dry_run else ' was '}{what}")
    return lines, failures


@dataclass(frozen=True)
class UpdateOutcome:
    lines: list[str]            # printed on stdout, notices first
    failures: int
    total: int

    @property
    def failure_text(self) -> str | None:
        return f"{self.failures} out of {self.total} operation(s) failed." if self.failures else None


async def update_features_async(bootstrap: str, op: str, *, features=None, release_version=None, metadata=None,
                                unsafe: bool = False, dry_run: bool = False, **options) -> UpdateOutcome:
    """``op`` is "upgrade", "downgrade" or "disable"; the other arguments are the tool's flags."""
    upgrade_type = UPGRADE if op == "upgrade" else UNSAFE_DOWNGRADE if unsafe else SAFE_DOWNGRADE
    updates, notices = planned_updates(upgrade_type, features=features, release_version=release_version,
                                       metadata=metadata, disable=op == "disable")
    if not updates:
        raise ToolError(f"You must specify at least one feature to {op}")
    if any(not name.strip() for name in updates):
        raise ToolError("Provided feature can not be empty.")
    async with Admin(admin_config(bootstrap, **options)) as admin:
        try:
            results = await admin.call(
                "updateFeatures", lambda timeout: update_features_request(updates, dry_run=dry_run, timeout_ms=timeout),
                lambda response: feature_results(updates, response))
        except KafkaApiError as exc:        # the call failed as a whole: every feature's future fails
            results = {name: exc for name in updates}
    lines, failures = result_lines(op, updates, results, dry_run)
    return UpdateOutcome(notices + lines, failures, len(updates))


def update_features(bootstrap: str, op: str, **options) -> UpdateOutcome:
    return run_sync(update_features_async(bootstrap, op, **options))


# --- command line ------------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser, controllers_are="KRaft quorum", required=False,   # not for the look-ups
                             command_config_help="Property file containing configs to be passed to Admin Client.")
    sub = parser.add_subparsers(dest="features_command", required=True, metavar="COMMAND")
    describe = sub.add_parser("describe", help="Describes the current active feature flags.")
    describe.add_argument("--node-id", type=int, help="The node id to which the requests should be sent. If not "
                                                      "specified, the requests will be sent to an arbitrary "
                                                      "controller/broker.")
    for op in ("upgrade", "downgrade"):
        p = sub.add_parser(op, help=f"{op.capitalize()} one or more feature flags.")
        p.add_argument("--metadata", help=f"DEPRECATED -- The level to which we should {op} the metadata. "
                                          f"For example, 3.3-IV3.")
        p.add_argument("--release-version", help=f"The release version to {op} all features to. For example, "
                                                 f"3.9-IV0 will set metadata.version=21 and kraft.version=1.")
        p.add_argument("--feature", action="append", help=f"A feature {op} we should perform, in feature=level "
                                                          f"format. For example: `metadata.version=5`.")
        if op == "downgrade":
            p.add_argument("--unsafe", action="store_true",
                           help="Perform this downgrade even if it may irreversibly destroy metadata.")
        p.add_argument("--dry-run", action="store_true", help=f"Validate this {op}, but do not perform it.")
    disable = sub.add_parser("disable", help="Disable one or more feature flags. This is the same as downgrading "
                                             "the version to zero.")
    disable.add_argument("--feature", action="append", help="A feature flag to disable.")
    disable.add_argument("--unsafe", action="store_true",
                         help="Disable this feature flag even if it may irreversibly destroy metadata.")
    disable.add_argument("--dry-run", action="store_true", help="Perform a dry-run of this disable operation.")
    mapping = sub.add_parser("version-mapping", help="Look up the corresponding features for a given metadata "
                                                     "version (by default the latest stable one).")
    mapping.add_argument("--release-version",
                         help=f"The release version to use for the corresponding feature mapping. The minimum is "
                              f"{fv.metadata_version(fv.MINIMUM_LEVEL)}; the default is "
                              f"{fv.metadata_version(fv.LATEST_PRODUCTION_LEVEL)}")
    dependencies = sub.add_parser("feature-dependencies", help="Look up dependencies for a given feature version.")
    dependencies.add_argument("--feature", action="append", required=True,
                              help="The feature and version to look up dependencies for, in feature=version format. "
                                   "For example: `metadata.version=5`.")


def run_lookup(args: argparse.Namespace) -> int:
    """version-mapping and feature-dependencies: answered from the table, no server asked."""
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.tools import version_mapping
    lines = (version_mapping.version_mapping(args.release_version) if args.features_command == "version-mapping"
             else version_mapping.feature_dependencies(args.feature, version_mapping.FEATURES))
    try:
        for line in lines:
            print(line)
    except version_mapping.VersionLookupError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    if args.features_command in ("version-mapping", "feature-dependencies"):
        return run_lookup(args)
    if args.bootstrap_server is None and args.bootstrap_controller is None:
        # FeatureCommand: initializeBootstrapProperties' refusal, as an argument error
        print("Command line error: You must specify either --bootstrap-controller or --bootstrap-server.. "
              "Type --help for help.", file=sys.stderr, end="")    # Kafka's printf ends no line
        return 1
    show_warnings()             # each failed attempt while waiting, as Kafka's client logs it
    try:
        bootstrap, options = connection_options(args)
        if args.features_command == "describe":
            for feature in describe_features(bootstrap, node_id=args.node_id, **options):
                print(feature)
            return 0
        outcome = update_features(bootstrap, args.features_command, features=args.feature,
                                  release_version=getattr(args, "release_version", None),
                                  metadata=getattr(args, "metadata", None), unsafe=getattr(args, "unsafe", False),
                                  dry_run=args.dry_run, **options)
    except ToolError as exc:
        for line in getattr(exc, "printed_before", ()):
            print(line)
        print(exc, file=sys.stderr)
        return 1
    for line in outcome.lines:
        print(line)
    if outcome.failure_text:
        print(outcome.failure_text, file=sys.stderr)
        return 1
    return 0
