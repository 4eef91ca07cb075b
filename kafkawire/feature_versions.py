"""Kafka 4.3.1's release versions and feature levels, in one place (server-common's
MetadataVersion, Feature, KRaftVersion, TransactionVersion, GroupVersion,
EligibleLeaderReplicasVersion, ShareVersion, StreamsVersion).

Everything that names a metadata.version or a feature level reads it from here: the storage
tool (format, version-mapping, feature-dependencies), the features tool, the controller's
supported feature ranges and its record versions, and the metadata image's names.

* ``METADATA_VERSIONS``: every MetadataVersion Kafka 4.3.1 knows, from MINIMUM_VERSION
  (3.3-IV3, level 7) to its latest testing version (4.4-IV0, level 31). 4.3-IV0 (level 30) is
  LATEST_PRODUCTION; later levels are "unstable": refused unless unstable versions are allowed.
* ``FEATURES``: Feature.PRODUCTION_FEATURES in the enum's order, each with its versions: the
  level, the metadata.version from which it is the default (bootstrapMetadataVersion) and the
  feature levels it depends on. Kafka's test-only features (test.feature.version, unit.test.*)
  are not production features, so no tool prints them and no node supports them.
"""
from __future__ import annotations

from dataclasses import dataclass

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
ELR_VERSION = "eligible.leader.replicas.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"


@dataclass(frozen=True)
class MetadataVersion:
    level: int
    release: str                 # "4.3"
    sub_version: str             # "IV0"
    did_metadata_change: bool    # the records changed at this level (a downgrade across it loses data)

    @property
    def name(self) -> str:
        """MetadataVersion.version() / toString(): "4.3-IV0"."""
        return f"{self.release}-{self.sub_version}"

    def __str__(self) -> str:
        return self.name


METADATA_VERSIONS: tuple[MetadataVersion, ...] = tuple(MetadataVersion(*row) for row in (
    (7, "3.3", "IV3", True),     # InControlledShutdown in broker registrations (KIP-841)
    (8, "3.4", "IV0", True),     # ZK migration (KIP-866)
    (9, "3.5", "IV0", False),
    (10, "3.5", "IV1", False),
    (11, "3.5", "IV2", True),    # SCRAM
    (12, "3.6", "IV0", False),
    (13, "3.6", "IV1", True),    # metadata transactions (KIP-868)
    (14, "3.6", "IV2", True),    # delegation tokens
    (15, "3.7", "IV0", True),    # controller registration (KIP-919)
    (16, "3.7", "IV1", False),
    (17, "3.7", "IV2", True),    # JBOD directory assignment (KIP-858)
    (18, "3.7", "IV3", False),
    (19, "3.7", "IV4", False),
    (20, "3.8", "IV0", False),
    (21, "3.9", "IV0", False),
    (22, "4.0", "IV0", False),
    (23, "4.0", "IV1", True),    # ELR records (KIP-966)
    (24, "4.0", "IV2", False),
    (25, "4.0", "IV3", False),
    (26, "4.1", "IV0", False),
    (27, "4.1", "IV1", False),
    (28, "4.2", "IV0", False),
    (29, "4.2", "IV1", False),
    (30, "4.3", "IV0", True),    # cordoned log dirs: RegisterBrokerRecord v4, BrokerRegistrationChangeRecord v3
    (31, "4.4", "IV0", False),
))
MINIMUM_LEVEL = 7
LATEST_PRODUCTION_LEVEL = 30
LATEST_TESTING_LEVEL = METADATA_VERSIONS[-1].level
_BY_LEVEL = {mv.level: mv for mv in METADATA_VERSIONS}


def metadata_version(level: int) -> MetadataVersion:
    """MetadataVersion.fromFeatureLevel; ValueError with Kafka's message for a level it does not know."""
    try:
        return _BY_LEVEL[level]
    except KeyError:
        raise ValueError(f"No MetadataVersion with feature level {level}. Valid feature levels are from "
                         f"{MINIMUM_LEVEL} to {LATEST_TESTING_LEVEL}.") from None


def is_production(level: int) -> bool:
    return level <= LATEST_PRODUCTION_LEVEL


def metadata_versions_text(first: int = MINIMUM_LEVEL, last: int = LATEST_PRODUCTION_LEVEL) -> str:
    """MetadataVersion.metadataVersionsToString(first, last)."""
    return ", ".join(mv.name for mv in METADATA_VERSIONS if first <= mv.level <= last)


def from_version_string(text: str, unstable_allowed: bool = False) -> MetadataVersion:
    """MetadataVersion.fromVersionString: "4.3-IV0"; "4.3" (and "4.3.x") is the release's latest
    production IV; only the first two dot-separated parts count. ValueError with Kafka's message."""
    parts = text.split(".")
    key = text if len(parts) <= 2 else ".".join(parts[:2])
    known = {mv.name: mv for mv in METADATA_VERSIONS}
    known.update({mv.release: mv for mv in METADATA_VERSIONS if is_production(mv.level)})
    found = known.get(key)
    if found is None or (not unstable_allowed and not is_production(found.level)):
        last = LATEST_TESTING_LEVEL if unstable_allowed else LATEST_PRODUCTION_LEVEL
        raise ValueError(f"Unknown metadata.version '{text}'. Supported metadata.version are: "
                         f"{metadata_versions_text(MINIMUM_LEVEL, last)}")
    return found


@dataclass(frozen=True)
class FeatureVersion:
    level: int
    bootstrap_level: int                          # the metadata.version from which this is the default
    dependencies: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Feature:
    name: str
    versions: tuple[FeatureVersion, ...]
    latest_production: int

    @property
    def minimum_production(self) -> int:
        return self.versions[0].level

    @property
    def latest_testing(self) -> int:
        return self.versions[-1].level

    def version(self, level: int, unstable_allowed: bool = True) -> FeatureVersion:
        """Feature.fromFeatureLevel; ValueError with Kafka's message."""
        for v in self.versions:
            if v.level == level and (unstable_allowed or level <= self.latest_production):
                return v
        raise ValueError(f"No feature:{self.name} with feature level {level}")

    def default_level(self, mv_level: int) -> int:
        """Feature.defaultLevel(metadataVersion): the last version whose bootstrap metadata.version
        is at or below ``mv_level`` (versions are in order)."""
        level = self.versions[0].level
        for v in self.versions:
            if v.bootstrap_level > mv_level:
                break
            level = v.level
        return level


FEATURES: tuple[Feature, ...] = (
    Feature(KRAFT_VERSION, (FeatureVersion(0, MINIMUM_LEVEL), FeatureVersion(1, 21)), 1),
    Feature(TRANSACTION_VERSION, (FeatureVersion(0, MINIMUM_LEVEL), FeatureVersion(1, 24), FeatureVersion(2, 24)), 2),
    Feature(GROUP_VERSION, (FeatureVersion(0, MINIMUM_LEVEL), FeatureVersion(1, 22)), 1),
    Feature(ELR_VERSION, (FeatureVersion(0, MINIMUM_LEVEL), FeatureVersion(1, 26, ((METADATA_VERSION, 23),))), 1),
    Feature(SHARE_VERSION, (FeatureVersion(0, MINIMUM_LEVEL), FeatureVersion(1, 28)), 1),
    Feature(STREAMS_VERSION, (FeatureVersion(0, MINIMUM_LEVEL), FeatureVersion(1, 29)), 1),
)
FEATURES_BY_NAME = {f.name: f for f in FEATURES}


def feature(name: str) -> Feature:
    """Feature.featureFromName for the production features; KeyError for another name."""
    return FEATURES_BY_NAME[name]


def default_levels(mv_level: int) -> dict[str, int]:
    """Each production feature's default level for a metadata.version, in Feature's order."""
    return {f.name: f.default_level(mv_level) for f in FEATURES}


def validate_version(name: str, level: int, levels: dict[str, int]) -> None:
    """Feature.validateVersion: ValueError when a dependency of ``name``=``level`` is not met in ``levels``."""
    mv = levels.get(METADATA_VERSION)
    if level >= 1 and (mv is None or mv < MINIMUM_LEVEL):
        raise ValueError(f"{name} could not be set to {level} because it depends on metadata.version="
                         f"{MINIMUM_LEVEL} ({metadata_version(MINIMUM_LEVEL)})")
    for dependency, needed in feature(name).version(level).dependencies:
        have = levels.get(dependency)
        if have is None or have < needed:
            raise ValueError(f"{name} could not be set to {level} because it depends on {dependency} level {needed}")


def supported_feature_ranges(unstable_allowed: bool = False) -> dict[str, tuple[int, int]]:
    """QuorumFeatures.defaultSupportedFeatureMap: what a Kafka 4.3.1 controller supports,
    metadata.version first, then every production feature whose latest level is above 0."""
    ranges = {METADATA_VERSION: (MINIMUM_LEVEL, LATEST_TESTING_LEVEL if unstable_allowed else LATEST_PRODUCTION_LEVEL)}
    for f in FEATURES:
        high = f.latest_testing if unstable_allowed else f.latest_production
        if high > 0:
            ranges[f.name] = (f.minimum_production, high)
    return ranges
