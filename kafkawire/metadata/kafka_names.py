"""The Java enum names the metadata image prints: Kafka shows ids stored in metadata records
by the names of its enums (``toString`` of the constant), so the image does the same.

Sources: server-common MetadataVersion (kafkawire.feature_versions), clients SecurityProtocol,
ConfigResource.Type, ResourceType, PatternType, AclOperation, AclPermissionType,
ScramMechanism, metadata LeaderRecoveryState and ZkMigrationState. An id a table lacks is
shown as Kafka's fallback for it (``UNKNOWN``, ``null``) or, where Kafka would throw, as
``unknown(<id>)`` so the image stays readable.
"""
from __future__ import annotations

from kafkawire import feature_versions as _feature_versions

# MetadataVersion: feature level -> the constant's toString (its "release-IVn" version), from the
# one table of Kafka 4.3.1's levels (7-31), plus the names levels 1-6 had before Kafka 4.0
# dropped them (old logs and snapshots still carry them).
_PRE_4_0_METADATA_VERSIONS = {1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2"}
METADATA_VERSIONS = {**_PRE_4_0_METADATA_VERSIONS, **{mv.level: mv.name for mv in _feature_versions.METADATA_VERSIONS}}
METADATA_VERSION_FEATURE = "metadata.version"


def metadata_version_name(level: int) -> str:
    return METADATA_VERSIONS.get(level, f"unknown(level {level})")


SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}

# ConfigResource.Type, in the enum's declaration order (resourceFromName scans in this order).
CONFIG_RESOURCE_TYPES = {8: "BROKER_LOGGER", 4: "BROKER", 2: "TOPIC", 0: "UNKNOWN", 16: "CLIENT_METRICS",
                         32: "GROUP"}


def config_resource_type(type_id: int) -> str:
    return CONFIG_RESOURCE_TYPES.get(type_id, "UNKNOWN")   # Type.forId falls back to UNKNOWN


RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                  6: "DELEGATION_TOKEN", 7: "USER"}
PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
ACL_OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
                  8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS",
                  12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
ACL_PERMISSION_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}

# ScramMechanism: type id -> mechanism name; the shell lists every known one.
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}

LEADER_RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}
ZK_MIGRATION_STATES = {-1: "UNINITIALIZED", 0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION"}


def enum_name(table: dict, value: int, fallback: str = "UNKNOWN") -> str:
    return table.get(value, fallback)
