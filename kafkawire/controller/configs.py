"""IncrementalAlterConfigs and AlterConfigs on the active controller, for topics and brokers:
ControllerApis' request handling (unknown resource types, duplicate resources) and
ConfigurationControlManager's records and checks, with Kafka's errors and messages.

Each resource gets one result; its changes are ConfigRecords (value null: the key is deleted),
all of one request in one atomic batch, followed by a ClearElrRecord for every
min.insync.replicas change while ELR is enabled. A broker's config gets a record even when the
value does not change (KAFKA-14136: it makes brokers reload it); a topic's only when it does.
AlterConfigs (the legacy API) replaces a resource's whole config: keys it does not name are
deleted.

Checked, in Kafka's order: the ELR min.insync.replicas rules, the value size (at most 32767
characters), the resource name (a topic's as Topic.validate; a broker's a non-negative base-10
id or "" for the cluster default), a topic's config names and values (topic_configs), and that
the resource exists (the topic, or a registered broker or controller). A request that would
write more than MAX_RECORDS_PER_USER_OP records, ClearElrRecords included (bounded.py), is
refused whole, as Kafka's.

Differences from Kafka, deliberate for now: results come in request order (Kafka's come in the
order of a HashMap keyed by ConfigResource, whose hash depends on the JVM's identity hash of an
enum, so no fixed order); APPEND and SUBTRACT on a broker config are allowed for the broker
configs known to be lists below (Kafka asks KafkaConfig's whole ConfigDef); no AlterConfigPolicy.
IncrementalAlterConfigs' BROKER_LOGGER resources never reach here (the node changes its own loggers,
kafkawire.controller.admin_apis); the legacy AlterConfigs refuses them with INVALID_REQUEST, as
ControllerApis' authorizeAlterResource does. GROUP and CLIENT_METRICS
resources are validated as Kafka's are (kafkawire.metadata.group_configs,
kafkawire.metadata.client_metrics_configs).
"""
from __future__ import annotations

import re
from collections import Counter
from functools import partial

from kafkawire.messages.alter_configs_response import AlterConfigsResourceResponse as LegacyResult
from kafkawire.messages.alter_configs_response import AlterConfigsResponse
from kafkawire.messages.incremental_alter_configs_response import (AlterConfigsResourceResponse,
                                                                    IncrementalAlterConfigsResponse)
from kafkawire.metadata.client_metrics_configs import CLIENT_METRICS_KEYS, SubscriptionError, validate_subscription
from kafkawire.metadata.group_configs import GroupBounds, GroupNameError, validate_group_configs
from kafkawire.metadata.dynamic_broker_config_table import LIST_DEFAULTS
from kafkawire.metadata.java_text import java_split
from kafkawire.protocol.error_codes import Errors

from .bounded import BoundedList
from .errors import ApiError
from .frames import frame
from .java_order import string_hashmap_order
from .state import ControllerState
from .topic_configs import ConfigValueError, default_value, is_list, validate_topic_configs
from .topics import validate_topic_name
from .versions import cordoned_log_dirs_supported, elr_enabled

UNKNOWN_RESOURCE, TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 0, 2, 4, 8, 16, 32
KNOWN_RESOURCE_TYPES = {TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
MIN_INSYNC_REPLICAS = "min.insync.replicas"
CORDONED_LOG_DIRS = "cordoned.log.dirs"
MAX_VALUE_CHARS = 32767
# KafkaConfig's LIST keys (the controller's KafkaConfigSchema for BROKER is KafkaConfig's ConfigDef):
# what APPEND and SUBTRACT take, with the defaults they start from.
BROKER_LIST_CONFIGS = frozenset(LIST_DEFAULTS)
_COMMA = re.compile(r"\s*,\s*")


def _config_record(resource_type: int, resource_name: str, name: str, value: str | None) -> dict:
    return dict(resource_type=resource_type, resource_name=resource_name, name=name, value=value)


def _current(state: ControllerState, resource) -> dict[str, str]:
    return dict(state.image.configs.get(resource, {}))


def _check_cordoned(state: ControllerState, record: dict, current: str | None, forwarded: bool) -> None:
    """isCordonedLogDirsDisabled, then isCordonedLogDirsInvalid: a broker's cordoned.log.dirs only
    from metadata.version 4.3-IV0, and, sent to the controller directly (not forwarded by the
    broker, which checks the paths against its log.dirs), only a subset of the current value."""
    if record["name"] != CORDONED_LOG_DIRS or record["resource_type"] != BROKER:
        return
    if not cordoned_log_dirs_supported(state.image.metadata_version or 0):
        raise ApiError(Errors.INVALID_CONFIG, f"The {CORDONED_LOG_DIRS} configuration value cannot be set because it "
                                              f"requires metadata.version >= 4.3-IV0")
    value = record["value"]
    if forwarded or value is None or not value.strip():
        return
    current_dirs = [] if current is None else _COMMA.split(current.strip())
    if not set(_COMMA.split(value.strip())) <= set(current_dirs):
        raise ApiError(Errors.INVALID_CONFIG, f"When updating {CORDONED_LOG_DIRS} via controllers,  the new value "
                                              f"must be a subset of the current configuration value.")


def _check_records(state: ControllerState, resource, altered: list[dict], deleted: list[dict],
                   newly_created: bool, group_bounds: GroupBounds, forwarded: bool = False) -> None:
    """ConfigurationControlManager.validateAlterConfig; raises ApiError."""
    resource_type, name = resource
    merged = _current(state, resource)
    existing = merged.get(CORDONED_LOG_DIRS)
    elr = elr_enabled(state.image.metadata_version, state.image.finalized_features)
    for record, is_deletion in [(r, False) for r in altered] + [(r, True) for r in deleted]:
        if elr and record["name"] == MIN_INSYNC_REPLICAS and resource_type == BROKER:
            if name:
                raise ApiError(Errors.INVALID_CONFIG,
                               f"Broker-level {MIN_INSYNC_REPLICAS} cannot be altered while ELR is enabled.")
            if record["value"] is None:
                raise ApiError(Errors.INVALID_CONFIG,
                               f"Cluster-level {MIN_INSYNC_REPLICAS} cannot be removed while ELR is enabled.")
        _check_cordoned(state, record, existing, forwarded)
        if is_deletion or record["value"] is None:
            merged.pop(record["name"], None)
        elif len(record["value"]) > MAX_VALUE_CHARS:
            raise ApiError(Errors.INVALID_CONFIG, "The configuration value cannot be added because it exceeds the "
                                                  f"maximum value size of {MAX_VALUE_CHARS} bytes.")
        else:
            merged[record["name"]] = record["value"]
    _validate_resource(resource_type, name, merged, group_bounds)
    if not newly_created:
        _check_exists(state, resource_type, name)


def _validate_resource(resource_type: int, name: str, configs: dict[str, str], group_bounds: GroupBounds) -> None:
    """ControllerConfigurationValidator.validate."""
    if resource_type == TOPIC:
        if not name:
            raise ApiError(Errors.INVALID_REQUEST, "Default topic resources are not allowed.")
        validate_topic_name(name)
        try:
            validate_topic_configs(configs)
        except ConfigValueError as exc:
            raise ApiError(Errors.INVALID_CONFIG, str(exc)) from None
    elif resource_type == BROKER:
        if name:
            if not (name.isascii() and name.lstrip("-").isdigit()):
                raise ApiError(Errors.INVALID_REQUEST, "Unable to parse broker name as a base 10 number.")
            if int(name) < 0:
                raise ApiError(Errors.INVALID_REQUEST, "Invalid negative broker ID.")
    elif resource_type in (CLIENT_METRICS, GROUP):
        try:
            if resource_type == CLIENT_METRICS:
                validate_subscription(name, configs, string_hashmap_order)
            else:
                validate_group_configs(name, configs, group_bounds)
        except (SubscriptionError, GroupNameError) as exc:          # InvalidRequestException
            raise ApiError(Errors.INVALID_REQUEST, str(exc)) from None
        except ConfigValueError as exc:                              # ConfigException and the like
            raise ApiError(Errors.INVALID_CONFIG, str(exc)) from None
    else:
        raise ApiError(Errors.INVALID_REQUEST, f"Unknown resource type {_type_name(resource_type)}")


def _check_exists(state: ControllerState, resource_type: int, name: str) -> None:
    """QuorumController.ConfigResourceExistenceChecker."""
    image = state.image
    if resource_type == TOPIC and name not in image.topics_by_name:
        raise ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    if resource_type == BROKER and name:
        node_id = int(name)
        if node_id not in image.brokers and node_id not in image.controllers:
            raise ApiError(Errors.BROKER_ID_NOT_REGISTERED, f"No node with id {node_id} found.")


def _type_name(resource_type: int) -> str:
    return {TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER", CLIENT_METRICS: "CLIENT_METRICS",
            GROUP: "GROUP"}.get(resource_type, "UNKNOWN")


def _splittable(resource_type: int, key: str) -> bool:
    """KafkaConfigSchema.isSplittable: a LIST key of the resource type's ConfigDef."""
    if resource_type == TOPIC:
        return is_list(key)
    if resource_type == CLIENT_METRICS:
        return key in CLIENT_METRICS_KEYS and CLIENT_METRICS_KEYS[key].type == "LIST"
    return resource_type == BROKER and key in BROKER_LIST_CONFIGS


def _parts(resource_type: int, key: str, value: str | None) -> list[str]:
    """KafkaConfigSchema.getDefault when unset (a topic's LogConfig default, a broker's KafkaConfig
    one), split with its empty parts dropped."""
    if value is None and resource_type == TOPIC:
        value = default_value(key)
    elif value is None and resource_type == BROKER:
        value = LIST_DEFAULTS.get(key)
    return [] if value is None else [p for p in value.split(",") if p]


def _appended(parts: list[str], values: list[str]) -> list[str]:
    """Kafka's APPEND: each value not already in the list is added at its end (a set, not a scan
    of the list per value)."""
    present = set(parts)
    out = list(parts)
    for value in values:
        if value not in present:
            present.add(value)
            out.append(value)
    return out


def _subtracted(parts: list[str], values: list[str]) -> list[str]:
    """Kafka's SUBTRACT: each value removes its first remaining occurrence from the list; counted
    per value instead of a scan of the list per value."""
    to_remove = Counter(values)
    out = []
    for part in parts:
        if to_remove[part] > 0:
            to_remove[part] -= 1
        else:
            out.append(part)
    return out


def incremental_records(state: ControllerState, resource, ops: dict[str, tuple[int, str | None]],
                        newly_created: bool = False, group_bounds: GroupBounds = GroupBounds(),
                        forwarded: bool = False) -> list[dict]:
    """ConfigurationControlManager.incrementalAlterConfigResource: the ConfigRecords' fields."""
    resource_type, name = resource
    current = _current(state, resource)
    records = []
    for key in string_hashmap_order(ops):
        operation, operand = ops[key]
        old = current.get(key)
        if operation == SET:
            new = operand
        elif operation == DELETE:
            new = None
        elif operation in (APPEND, SUBTRACT):
            if not _splittable(resource_type, key):
                verb = "APPEND" if operation == APPEND else "SUBTRACT"
                raise ApiError(Errors.INVALID_CONFIG, f"Can't {verb} to key {key} because its type is not LIST.")
            parts, values = _parts(resource_type, key, old), java_split(operand or "")
            new = ",".join(_appended(parts, values) if operation == APPEND else _subtracted(parts, values))
        else:
            raise ApiError(Errors.INVALID_REQUEST, f"Unknown config operation {operation} for key {key}")
        if new != old or resource_type == BROKER:
            records.append(_config_record(resource_type, name, key, new))
    _check_records(state, resource, records, [], newly_created, group_bounds, forwarded)
    return records


def legacy_records(state: ControllerState, resource, configs: dict[str, str | None],
                   group_bounds: GroupBounds = GroupBounds(), forwarded: bool = False) -> list[dict]:
    """ConfigurationControlManager.legacyAlterConfigResource: set what is named, delete the rest."""
    resource_type, name = resource
    if resource_type == BROKER_LOGGER:
        raise ApiError(Errors.INVALID_REQUEST, "Unexpected resource type BROKER_LOGGER.")
    current = _current(state, resource)
    altered = [_config_record(resource_type, name, key, configs[key]) for key in string_hashmap_order(configs)
               if configs[key] != current.get(key) or resource_type == BROKER]
    deleted = [_config_record(resource_type, name, key, None) for key in string_hashmap_order(current)
               if key not in configs]
    _check_records(state, resource, altered, deleted, False, group_bounds, forwarded)
    return altered + deleted


def clear_elr_records(state: ControllerState, records: list[dict]) -> list[bytes]:
    """createClearElrRecordsAsNeeded."""
    if not elr_enabled(state.image.metadata_version, state.image.finalized_features):
        return []
    out = []
    for record in records:
        if record["name"] == MIN_INSYNC_REPLICAS:
            topic = record["resource_name"] if record["resource_type"] == TOPIC else None
            out.append(frame("ClearElrRecord", topic_name=topic) if topic else frame("ClearElrRecord"))
    return out


def _sorted_requests(resources, result_cls, read_changes):
    """ControllerApis: unknown types and duplicates answered at once; the rest to the controller."""
    early, changes, duplicates = [], {}, set()
    for resource in resources:
        key = (resource.resource_type, resource.resource_name)
        if resource.resource_type not in KNOWN_RESOURCE_TYPES:
            early.append(result_cls(error_code=int(Errors.UNSUPPORTED_VERSION),
                                    error_message=f"Unknown resource type {resource.resource_type}.",
                                    resource_type=resource.resource_type, resource_name=resource.resource_name))
        elif key in duplicates:
            continue
        elif key in changes:
            del changes[key]
            duplicates.add(key)
            early.append(result_cls(error_code=int(Errors.INVALID_REQUEST), error_message="Duplicate resource.",
                                    resource_type=resource.resource_type, resource_name=resource.resource_name))
        else:
            changes[key] = read_changes(resource)
    return early, changes


def _alter(state: ControllerState, request, result_cls, read_changes, make_records):
    early, changes = _sorted_requests(request.resources, result_cls, read_changes)
    records, results = BoundedList(), []
    for resource, change in changes.items():
        try:
            fields = make_records(state, resource, change)
        except ApiError as exc:
            results.append(result_cls(error_code=exc.code, error_message=exc.message,
                                      resource_type=resource[0], resource_name=resource[1]))
            continue
        records += fields
        results.append(result_cls(error_code=0, error_message=None, resource_type=resource[0],
                                  resource_name=resource[1]))
    clear_elr = clear_elr_records(state, records)
    records.check_room(len(clear_elr))              # Kafka adds them to the same bounded list
    frames = [frame("ConfigRecord", **fields) for fields in records] + clear_elr
    return ([] if request.validate_only else frames), early + results


def incremental_alter_configs(state: ControllerState, request, group_bounds: GroupBounds = GroupBounds(),
                              forwarded: bool = False):
    """(records, IncrementalAlterConfigsResponse); ``group_bounds``: the node's group.consumer.*
    settings a GROUP resource's configs are checked against; ``forwarded``: the request came
    from a broker in an Envelope."""
    def read(resource):
        ops = {}
        for config in resource.configs:
            ops[config.name] = (config.config_operation, config.value)
        return ops
    records, results = _alter(state, request, AlterConfigsResourceResponse, read,
                              partial(incremental_records, group_bounds=group_bounds, forwarded=forwarded))
    return records, IncrementalAlterConfigsResponse(responses=results)


def alter_configs(state: ControllerState, request, group_bounds: GroupBounds = GroupBounds(), forwarded: bool = False):
    """(records, AlterConfigsResponse): the legacy API."""
    def read(resource):
        return {config.name: config.value for config in resource.configs}
    records, results = _alter(state, request, LegacyResult, read, partial(legacy_records, group_bounds=group_bounds,
                                                                                 forwarded=forwarded))
    return records, AlterConfigsResponse(responses=results)
