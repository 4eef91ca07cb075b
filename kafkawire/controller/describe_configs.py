"""DescribeConfigs (32) on a controller, as Kafka 4.3.1's ControllerApis answers it through
ConfigHelper: a read of this node's committed metadata image, no raft write.

TOPIC: every topic config of LogConfig (in the order of the HashMap AbstractConfig.nonInternalValues
builds, after any set internal config), its value resolved as in effective_configs, its source the
first of its synonyms: the topic's own config (TOPIC_CONFIG), then the first broker synonym's
names (ServerTopicConfigSynonyms, DynamicBrokerConfig.brokerConfigSynonyms) in this node's dynamic
config, the cluster default, its static config and KafkaConfig's defaults, the list cut before the
first entry named as the first broker synonym (ConfigHelper.configSynonyms's dropWhile: a value
set only under log.retention.hours gives no synonym, so DEFAULT_CONFIG). An unknown topic is
UNKNOWN_TOPIC_OR_PARTITION with no message.

BROKER "" (the cluster default): the dynamic default configs; BROKER <this node's id>: see docs/differences.md
("Kafka brokers on kafkawire controllers") for what this node lists; another id,
BROKER_LOGGER <this node's id>: the process's loggers and their levels (kafkawire.net.runtime_loggers).
CLIENT_METRICS: the subscription's three configs, its own values or the defaults.

GROUP (ConfigHelper's createGroupConfigEntry): every GroupConfig name, in nonInternalValues' HashMap
order, its value the group's own (GROUP_CONFIG), else the broker's value for the ones
extractGroupConfigMap carries, else GroupConfig's default; the synonyms the group's own value then
its broker setting's layers as for a topic config (DEFAULT_CONFIG under the group config's name for
the three without a broker setting). An empty name is INVALID_REQUEST.
"""
from __future__ import annotations

from kafkawire.messages.describe_configs_response import (DescribeConfigsResourceResult, DescribeConfigsResponse,
                                                          DescribeConfigsResult, DescribeConfigsSynonym)
from kafkawire.metadata.client_metrics_configs import CLIENT_METRICS_KEYS
from kafkawire.metadata.group_configs import BROKER_SYNONYMS, FROM_BROKER_VALUES, GROUP_CONFIG_KEYS
from kafkawire.metadata.image import BROKER_RESOURCE, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE
from kafkawire.metadata.topic_config_synonyms import dynamic_broker_configs
from kafkawire.net import runtime_loggers
from kafkawire.protocol.error_codes import Errors

from .configs import BROKER_LIST_CONFIGS
from .effective_configs import INTERNAL_CONFIGS, SYNONYMS, _resolve
from .errors import ApiError
from .java_order import string_hashmap_order
from .topic_configs import TOPIC_CONFIG_KEYS
from .topics import validate_topic_name

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, DYNAMIC_BROKER_LOGGER_CONFIG, CLIENT_METRICS_CONFIG, GROUP_CONFIG = 4, 5, 6, 7, 8
UNKNOWN_TYPE = 0
CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7,
                "CLASS": 8, "PASSWORD": 9}
# DynamicBrokerConfig.brokerConfigSynonyms: the groups whose members stand for one another.
_BROKER_SYNONYM_GROUPS = (("log.roll.ms", "log.roll.hours"), ("log.roll.jitter.ms", "log.roll.jitter.hours"),
                          ("log.retention.ms", "log.retention.minutes", "log.retention.hours"))
_FLUSH_GROUP = ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")
# KafkaConfig's defaults of the broker synonyms whose default is not the topic config's: none for
# the first of a group, these for the others.
_NO_BROKER_DEFAULT = frozenset({"log.roll.ms", "log.roll.jitter.ms", "log.flush.interval.ms", "log.retention.ms",
                                "log.retention.minutes"})
_OTHER_BROKER_DEFAULTS = {"log.roll.hours": "168", "log.roll.jitter.hours": "0", "log.retention.hours": "168",
                          "log.flush.scheduler.interval.ms": str((1 << 63) - 1)}


def broker_synonyms(name: str) -> list[str]:
    if name == _FLUSH_GROUP[0]:
        return list(_FLUSH_GROUP)
    for group in _BROKER_SYNONYM_GROUPS:
        if name in group:
            return list(group)
    return [name]


def _static_defaults(topic_config: str, first: str) -> dict[str, str | None]:
    """KafkaConfig.defaultValues of the broker synonyms of ``first``."""
    defaults = {name: _OTHER_BROKER_DEFAULTS.get(name) for name in broker_synonyms(first)}
    if first not in _NO_BROKER_DEFAULT:
        defaults[first] = TOPIC_CONFIG_KEYS[topic_config].default
    return defaults


def broker_default(name: str) -> str | None:
    """KafkaConfig's default of a broker synonym of a topic config (None for the others)."""
    for topic_config, synonyms in SYNONYMS.items():
        if name in (synonym for synonym, _ in synonyms):
            return _static_defaults(topic_config, synonyms[0][0]).get(name)
    return None


def _config_synonyms(name: str, layers) -> list[DescribeConfigsSynonym]:
    """ConfigHelper.configSynonyms: ``layers`` is [(configs, source)], highest priority first."""
    found = [DescribeConfigsSynonym(name=synonym, value=configs[synonym], source=source)
             for configs, source in layers for synonym in broker_synonyms(name) if configs.get(synonym) is not None]
    while found and found[0].name != name:
        found.pop(0)
    return found


def _java_string(value: str, kind: str) -> str:
    """ConfigDef.convertToString of the parsed value (a value that does not parse, which only a
    record written around the config checks can hold, is sent as stored)."""
    try:
        return _converted(value, kind)
    except ValueError:
        return value


def _converted(value: str, kind: str) -> str:
    match kind:
        case "LIST":
            return ",".join(part.strip() for part in value.split(",") if part.strip())
        case "BOOLEAN":
            return value.strip().lower()
        case "INT" | "LONG":
            return str(int(value.strip()))
        case "DOUBLE":
            return repr(float(value.strip()))
    return value


def _deduplicated(listed: str) -> str:
    """A ValidList's value as AbstractConfig holds it: ConfigDef.parseValue dropped its duplicates."""
    return ",".join(dict.fromkeys(listed.split(","))) if listed else listed


def _topic_entry(name: str, topic: dict, node: dict, cluster: dict, include_synonyms: bool, static: dict):
    key = TOPIC_CONFIG_KEYS[name]
    value, _ = _resolve(name, topic, node, cluster, static)
    value = None if value is None else _java_string(value, key.type)
    if value is not None and key.type == "LIST" and key.one_of:
        value = _deduplicated(value)
    synonyms = []
    if name in SYNONYMS:
        first = SYNONYMS[name][0][0]
        synonyms = _config_synonyms(first, [(node, DYNAMIC_BROKER_CONFIG), (cluster, DYNAMIC_DEFAULT_BROKER_CONFIG),
                                            (static, STATIC_BROKER_CONFIG),
                                            (_static_defaults(name, first), DEFAULT_CONFIG)])
    if name in topic:
        synonyms.insert(0, DescribeConfigsSynonym(name=name, value=value, source=TOPIC_CONFIG))
    return DescribeConfigsResourceResult(
        name=name, value=value, read_only=False, config_source=synonyms[0].source if synonyms else DEFAULT_CONFIG,
        is_sensitive=False, synonyms=synonyms if include_synonyms else [], config_type=CONFIG_TYPES[key.type],
        documentation=None)


# AbstractConfig.nonInternalValues' HashMap order of the public topic configs: the same for every
# topic, so worked out once (String.hashCode of each name is not free).
_PUBLIC_TOPIC_CONFIGS = string_hashmap_order(name for name in TOPIC_CONFIG_KEYS if name not in INTERNAL_CONFIGS)


def _requested(resource):
    """Whether a config name is asked for: all when the request names no keys, else those named
    (a set, so a long key list is read once, not once per config)."""
    if not resource.configuration_keys:
        return lambda name: True
    return set(resource.configuration_keys).__contains__


def _topic_result(image, resource, node: dict, cluster: dict, include_synonyms: bool,
                  static: dict) -> DescribeConfigsResult:
    validate_topic_name(resource.resource_name)
    if resource.resource_name not in image.topics_by_name:
        return DescribeConfigsResult(error_code=int(Errors.UNKNOWN_TOPIC_OR_PARTITION))
    topic = image.configs.get((TOPIC_RESOURCE, resource.resource_name), {})
    internal = [name for name in sorted(INTERNAL_CONFIGS) if name in topic]
    requested = _requested(resource)
    return DescribeConfigsResult(configs=[
        _topic_entry(name, topic, node, cluster, include_synonyms, static) for name in internal + _PUBLIC_TOPIC_CONFIGS
        if requested(name)])



# The same HashMap order for every group (GroupConfig's names; none is internal).
_GROUP_CONFIGS = string_hashmap_order(GROUP_CONFIG_KEYS)


def _group_result(image, resource, node: dict, cluster: dict, include_synonyms: bool,
                  static: dict) -> DescribeConfigsResult:
    if not resource.resource_name:
        raise ApiError(Errors.INVALID_REQUEST, "Group name must not be empty")
    group = image.configs.get((GROUP_RESOURCE, resource.resource_name), {})
    requested = _requested(resource)
    return DescribeConfigsResult(configs=[_group_entry(name, group, node, cluster, include_synonyms, static)
                                          for name in _GROUP_CONFIGS if requested(name)])


def _group_entry(name: str, group: dict, node: dict, cluster: dict, include_synonyms: bool, static: dict):
    key = GROUP_CONFIG_KEYS[name]
    broker = BROKER_SYNONYMS.get(name)
    if name in group:
        value = _java_string(group[name], key.type)
    elif name in FROM_BROKER_VALUES:
        value = _java_string(static.get(broker, key.default), key.type)
    else:
        value = key.default
    if broker is None:
        synonyms = [DescribeConfigsSynonym(name=name, value=key.default, source=DEFAULT_CONFIG)]
    else:
        synonyms = _config_synonyms(broker, [(node, DYNAMIC_BROKER_CONFIG), (cluster, DYNAMIC_DEFAULT_BROKER_CONFIG),
                                             (static, STATIC_BROKER_CONFIG), ({broker: key.default}, DEFAULT_CONFIG)])
    if name in group:
        synonyms.insert(0, DescribeConfigsSynonym(name=name, value=value, source=GROUP_CONFIG))
    return DescribeConfigsResourceResult(
        name=name, value=value, read_only=False, config_source=synonyms[0].source, is_sensitive=False,
        synonyms=synonyms if include_synonyms else [], config_type=CONFIG_TYPES[key.type], documentation=None)


_SUBSCRIPTION_CONFIGS = string_hashmap_order(CLIENT_METRICS_KEYS)


def _subscription_result(image, resource, include_synonyms: bool) -> DescribeConfigsResult:
    """ConfigHelper's CLIENT_METRICS: the subscription's three configs, its own value
    (CLIENT_METRICS_CONFIG) or the default, in nonInternalValues' HashMap order."""
    if not resource.resource_name:
        raise ApiError(Errors.INVALID_REQUEST, "Client metrics subscription name must not be empty")
    own = image.configs.get((CLIENT_METRICS_RESOURCE, resource.resource_name), {})
    requested = _requested(resource)
    results = []
    for name in _SUBSCRIPTION_CONFIGS:
        if not requested(name):
            continue
        key = CLIENT_METRICS_KEYS[name]
        value = _deduplicated(_java_string(own[name], key.type)) if name in own else key.default
        synonyms = [DescribeConfigsSynonym(name=name, value=value, source=CLIENT_METRICS_CONFIG)] if name in own else []
        results.append(DescribeConfigsResourceResult(
            name=name, value=value, read_only=False, config_source=CLIENT_METRICS_CONFIG if name in own
            else DEFAULT_CONFIG, is_sensitive=False, synonyms=synonyms if include_synonyms else [],
            config_type=CONFIG_TYPES[key.type], documentation=None))
    return DescribeConfigsResult(configs=results)

def _loggers_result(node_id: int, resource) -> DescribeConfigsResult:
    """ConfigHelper's BROKER_LOGGER: this node's loggers and levels (kafkawire.net.runtime_loggers),
    in the order of the HashMap LoggingController.loggers builds."""
    if not resource.resource_name:
        raise ApiError(Errors.INVALID_REQUEST, "Broker id must not be empty")
    _broker_id(resource.resource_name, f"Unexpected broker id, expected {node_id} but received "
                                       f"{resource.resource_name}", node_id)
    levels = runtime_loggers.loggers()
    requested = _requested(resource)
    return DescribeConfigsResult(configs=[DescribeConfigsResourceResult(
        name=name, value=levels[name], read_only=False, config_source=DYNAMIC_BROKER_LOGGER_CONFIG,
        is_sensitive=False, synonyms=[], config_type=UNKNOWN_TYPE, documentation=None)
        for name in string_hashmap_order(levels) if requested(name)])


def broker_config_type(name: str) -> int:
    """KafkaConfig.configType, known here only for the broker synonyms of topic configs and the
    list configs; UNKNOWN (0) for the rest."""
    for topic_config, synonyms in SYNONYMS.items():
        for position, (synonym, _) in enumerate(synonyms):
            if synonym == name:
                if name.endswith((".hours", ".minutes")):
                    return CONFIG_TYPES["INT"]
                return CONFIG_TYPES["LONG" if position else TOPIC_CONFIG_KEYS[topic_config].type]
    return CONFIG_TYPES["LIST"] if name in BROKER_LIST_CONFIGS else UNKNOWN_TYPE


# KafkaConfig's PASSWORD configs (listener-prefixed or not): their values never leave the node.
_PASSWORD_CONFIGS = ("password", "sasl.jaas.config", "ssl.keystore.key", "ssl.keystore.certificate.chain",
                     "ssl.truststore.certificates", "delegation.token.secret.key")


def is_sensitive(name: str) -> bool:
    return name.endswith(_PASSWORD_CONFIGS)


def _broker_entry(name: str, value: str | None, layers, include_synonyms: bool, known=None):
    """``known``: the key's (default, type, read-only) when the caller knows it (a broker's own keys)."""
    sensitive = is_sensitive(name)
    synonyms = _config_synonyms(name, layers)
    if sensitive:
        for synonym in synonyms:
            synonym.value = None
    config_type = known[1] if known is not None else broker_config_type(name)
    return DescribeConfigsResourceResult(
        name=name, value=None if sensitive else value, read_only=known is not None and known[2],
        is_sensitive=sensitive, config_source=synonyms[0].source if synonyms else DEFAULT_CONFIG,
        synonyms=synonyms if include_synonyms else [],
        config_type=CONFIG_TYPES["PASSWORD"] if sensitive else config_type, documentation=None)


def _broker_result(node_id: int, image, resource, include_synonyms: bool, static: dict,
                   broker_keys: dict | None) -> DescribeConfigsResult:
    name = resource.resource_name
    cluster = dynamic_broker_configs(image, "")
    requested = _requested(resource)
    if not name:
        layers = [(cluster, DYNAMIC_DEFAULT_BROKER_CONFIG)]
        return DescribeConfigsResult(configs=[
            _broker_entry(key, cluster[key], layers, include_synonyms) for key in sorted(cluster) if requested(key)])
    _broker_id(name, f"Unexpected broker id, expected {node_id} or empty string, but received {name}", node_id)
    node = dynamic_broker_configs(image, name)
    keys = broker_keys or {}
    names = set(cluster) | set(node) | (set(static) | set(keys) if broker_keys is not None else set())
    defaults = {synonym: broker_default(synonym) for key in names for synonym in broker_synonyms(key)}
    defaults.update((key, known[0]) for key, known in keys.items() if known[0] is not None)
    layers = [(node, DYNAMIC_BROKER_CONFIG), (cluster, DYNAMIC_DEFAULT_BROKER_CONFIG), (static, STATIC_BROKER_CONFIG),
              (defaults, DEFAULT_CONFIG)]
    current = {**defaults, **static, **cluster, **node} if broker_keys is not None else {**cluster, **node}
    return DescribeConfigsResult(configs=[
        _broker_entry(key, current.get(key), layers, include_synonyms, keys.get(key))
        for key in sorted(names) if requested(key)])


def _broker_id(name: str, mismatch: str, node_id: int) -> None:
    try:
        broker_id = int(name)
    except ValueError:
        raise ApiError(Errors.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
    if broker_id != node_id:
        raise ApiError(Errors.INVALID_REQUEST, mismatch)


def _one(node_id: int, image, resource, include_synonyms: bool, static: dict, broker_keys) -> DescribeConfigsResult:
    match resource.resource_type:
        case 2:     # TOPIC
            result = _topic_result(image, resource, dynamic_broker_configs(image, str(node_id)),
                                   dynamic_broker_configs(image, ""), include_synonyms, static)
        case 4:     # BROKER
            result = _broker_result(node_id, image, resource, include_synonyms, static, broker_keys)
        case 32:    # GROUP
            result = _group_result(image, resource, dynamic_broker_configs(image, str(node_id)),
                                   dynamic_broker_configs(image, ""), include_synonyms, static)
        case 8:     # BROKER_LOGGER
            result = _loggers_result(node_id, resource)
        case 16:    # CLIENT_METRICS
            result = _subscription_result(image, resource, include_synonyms)
    result.resource_type, result.resource_name = resource.resource_type, resource.resource_name
    return result


def describe_configs(node_id: int, image, request, *, static: dict | None = None,
                     broker_keys: dict | None = None) -> DescribeConfigsResponse:
    """The answer of node ``node_id`` from ``image``. A broker passes ``static`` (its
    server.properties settings: STATIC_BROKER_CONFIG values and synonyms) and ``broker_keys``
    (kafkawire.controller.broker_config_keys: its own id then lists every key it knows, with its
    default, type and read-only flag, as Kafka's broker lists its KafkaConfig)."""
    if any(r.resource_type not in (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP) for r in request.resources):
        # ConfigHelper's authorization step throws before any resource is described: the whole
        # request fails, with the error's default message (DescribeConfigsRequest.getErrorResponse)
        failed = Errors.INVALID_REQUEST
        return DescribeConfigsResponse(results=[DescribeConfigsResult(
            error_code=int(failed), error_message=failed.message, resource_type=r.resource_type,
            resource_name=r.resource_name) for r in request.resources])
    results = []
    for resource in request.resources:
        try:
            results.append(_one(node_id, image, resource, bool(request.include_synonyms), static or {}, broker_keys))
        except ApiError as exc:
            results.append(DescribeConfigsResult(error_code=exc.code, error_message=exc.message,
                                                 resource_type=resource.resource_type,
                                                 resource_name=resource.resource_name))
    return DescribeConfigsResponse(results=results)
