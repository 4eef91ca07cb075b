"""What a metadata.version level allows, and the record versions written at each level.

Kafka's MetadataVersion (server-common) decides which records and record versions the
controller and the snapshot writer use; these are its predicates, by feature level
(7 = 3.3-IV3, ... 30 = 4.3-IV0). The supported feature ranges are those of Kafka 4.3.1's
controller (QuorumFeatures.defaultSupportedFeatureMap, production features only), from the
one table in kafkawire.feature_versions.
"""
from __future__ import annotations

from kafkawire.feature_versions import (ELR_VERSION, KRAFT_VERSION, LATEST_PRODUCTION_LEVEL,  # noqa: F401
                                        METADATA_VERSION, MINIMUM_LEVEL, supported_feature_ranges)

# Feature name -> (min, max) supported level, as Kafka 4.3.1 registers them.
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = supported_feature_ranges()


def migration_supported(level: int) -> bool:
    return level >= 8            # IBP_3_4_IV0


def transactions_supported(level: int) -> bool:
    return level >= 13           # IBP_3_6_IV1: KIP-868 metadata transactions


def controller_registration_supported(level: int) -> bool:
    return level >= 15           # IBP_3_7_IV0: KIP-919


def directory_assignment_supported(level: int) -> bool:
    return level >= 17           # IBP_3_7_IV2: KIP-858


def elr_supported(level: int) -> bool:
    return level >= 23           # IBP_4_0_IV1: KIP-966


def cordoned_log_dirs_supported(level: int) -> bool:
    return level >= 30           # IBP_4_3_IV0


def register_broker_record_version(level: int) -> int:
    if cordoned_log_dirs_supported(level):
        return 4
    if directory_assignment_supported(level):
        return 3
    if migration_supported(level):
        return 2
    return 1


def partition_record_version(level: int) -> int:
    """Also the PartitionChangeRecord version (partitionChangeRecordVersion is the same rule)."""
    if elr_supported(level):
        return 2
    if directory_assignment_supported(level):
        return 1
    return 0


def elr_enabled(metadata_level: int | None, finalized: dict[str, int]) -> bool:
    """FeatureControlManager.isElrFeatureEnabled: the MV allows ELR and the feature is on."""
    return metadata_level is not None and elr_supported(metadata_level) and finalized.get(ELR_VERSION, 0) >= 1
