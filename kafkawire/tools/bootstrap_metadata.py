"""The release version, the feature levels and the bootstrap records of `kafkawire storage
format` (Kafka 4.3.1's Formatter.calculateEffectiveReleaseVersion, calculateEffectiveFeatureLevels
and BootstrapMetadata), from the one table of kafkawire.feature_versions, and
``bootstrap.checkpoint`` as BootstrapDirectory writes it. tools/storage.py re-exports them.
"""
from __future__ import annotations

import os

from kafkawire import feature_versions as fv
from kafkawire import messages
from kafkawire.metadata import encode_metadata_record
from kafkawire.storage.snapshot import BOOTSTRAP_FILE_NAME, BOOTSTRAP_SNAPSHOT_ID, SnapshotWriter

# The release versions and feature levels are Kafka 4.3.1's, from kafkawire.feature_versions.
LATEST_PRODUCTION = fv.metadata_version(fv.LATEST_PRODUCTION_LEVEL).name


class StorageError(Exception):
    """A refusal of the storage tool; the message is what the user sees."""


# --- release versions and bootstrap records --------------------------------------------------

def metadata_version(text: str) -> tuple[str, int]:
    """MetadataVersion.fromVersionString (production versions): "4.3" means its latest IV, "4.3.1" means "4.3"."""
    try:
        mv = fv.from_version_string(text)
    except ValueError as exc:
        raise StorageError(str(exc)) from None
    return mv.name, mv.level


def release_version_level(release_version: str | None, requested: dict[str, int]) -> int:
    """Formatter.calculateEffectiveReleaseVersion: --release-version or --feature metadata.version=L
    (not both), else the latest production version."""
    if fv.METADATA_VERSION in requested:
        if release_version is not None:
            raise StorageError(f"Use --release-version instead of --feature {fv.METADATA_VERSION}=X to avoid ambiguity.")
        try:
            mv = fv.metadata_version(requested[fv.METADATA_VERSION])
        except ValueError as exc:
            raise StorageError(str(exc)) from None
        if not fv.is_production(mv.level):
            raise StorageError(f"{fv.METADATA_VERSION} {mv.name} is not yet stable.")
        return mv.level
    return metadata_version(release_version or LATEST_PRODUCTION)[1]


def _kraft_version_level(requested: int | None, dynamic_quorum: bool) -> int:
    """Formatter.effectiveKRaftFeatureLevel: 1 for a dynamic quorum, 0 for static voters; a
    requested level must agree."""
    if requested is None:
        return 1 if dynamic_quorum else 0
    if requested == 0 and dynamic_quorum:
        raise StorageError("Cannot set kraft.version to 0 if controller.quorum.voters is empty and one of the flags "
                           "--standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic "
                           "controllers support, try removing the --feature flag for kraft.version.")
    if requested != 0 and not dynamic_quorum:
        raise StorageError(f"Cannot set kraft.version to {requested} unless controller.quorum.voters is empty and one "
                           f"of the flags --standalone, --initial-controllers, or --no-initial-controllers is used. "
                           f"For dynamic controllers support, try using one of --standalone, --initial-controllers, "
                           f"or --no-initial-controllers and removing controller.quorum.voters.")
    return requested


def effective_feature_levels(mv_level: int, requested: dict[str, int], *, dynamic_quorum: bool) -> dict[str, int]:
    """Formatter.calculateEffectiveFeatureLevels: the requested levels (every name a production
    feature), metadata.version, the defaults for the rest, each level checked (it exists and
    is production, its dependencies are met), by name."""
    for name in sorted(requested):
        if name != fv.METADATA_VERSION and name not in fv.FEATURES_BY_NAME:
            raise StorageError(f"Unsupported feature: {name}. Supported features are: "
                               + ", ".join(sorted(fv.FEATURES_BY_NAME)))
    levels = dict(requested, **{fv.METADATA_VERSION: mv_level})
    for feature in fv.FEATURES:
        if feature.name == fv.KRAFT_VERSION:
            levels[feature.name] = _kraft_version_level(levels.get(feature.name), dynamic_quorum)
        elif feature.name not in levels:
            levels[feature.name] = feature.default_level(mv_level)
    for name in sorted(levels):
        if name == fv.METADATA_VERSION:
            continue
        try:
            fv.feature(name).version(levels[name], unstable_allowed=False)
            fv.validate_version(name, levels[name], levels)
        except ValueError as exc:
            raise StorageError(str(exc)) from None
    return dict(sorted(levels.items()))


def default_feature_levels(mv_level: int) -> dict[str, int]:
    """Feature.defaultLevel(releaseVersion) of every production feature but kraft.version."""
    return {name: level for name, level in fv.default_levels(mv_level).items() if name != fv.KRAFT_VERSION}


SCRAM_METADATA_VERSION_LEVEL = 11       # MetadataVersion.IBP_3_5_IV2.isScramSupported


def bootstrap_records(mv_level: int, levels: dict[str, int] | None = None) -> list:
    """BootstrapMetadata.fromVersions: FeatureLevelRecords, metadata.version first, then by name,
    level > 0, never kraft.version. ``levels`` defaults to the release version's defaults."""
    FeatureLevel = messages.by_name("FeatureLevelRecord")
    levels = default_feature_levels(mv_level) if levels is None else levels
    records = [FeatureLevel(name=fv.METADATA_VERSION, feature_level=mv_level)]
    for name, level in sorted(levels.items()):
        if name not in (fv.METADATA_VERSION, fv.KRAFT_VERSION) and level > 0:
            records.append(FeatureLevel(name=name, feature_level=level))
    return records


def bootstrap_metadata_text(records: list, mv_level: int) -> str:
    """BootstrapMetadata.toString, as the format command prints it after "Bootstrap metadata: "."""
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.tools.scram_args import scram_record_text
    items = ", ".join(f"ApiMessageAndVersion({scram_record_text(r)} at version 0)" if hasattr(r, "stored_key") else
                      f"ApiMessageAndVersion(FeatureLevelRecord(name='{r.name}', featureLevel={r.feature_level}) "
                      f"at version 0)" for r in records)
    return f"BootstrapMetadata(records=[{items}], metadataVersionLevel={mv_level}, source=format command)"


def write_bootstrap_checkpoint(directory, mv_level: int, *, time_ms=None, records=None) -> str:
    """``bootstrap.checkpoint`` as BatchFileWriter writes it (``records``: the FeatureLevelRecords,
    by default the release version's); ``time_ms`` gives the batch timestamps."""
    remove_stale_part(os.path.join(directory, BOOTSTRAP_FILE_NAME))
    writer = SnapshotWriter(directory, BOOTSTRAP_SNAPSHOT_ID, last_contained_log_timestamp=0,
                            file_name=BOOTSTRAP_FILE_NAME, time_ms=time_ms)
    with writer:
        writer.append([encode_metadata_record(r, 0) for r in (records or bootstrap_records(mv_level))])
    return writer.path


def remove_stale_part(final_path: str) -> None:
    """A temporary file left by an interrupted format is ours to replace (Kafka deletes its .tmp too)."""
    part = final_path + ".part"
    if os.path.exists(part):
        os.remove(part)
