"""AlterConfigs (33) and IncrementalAlterConfigs (44) on the broker listener, as Kafka's
KafkaApis runs them through ConfigAdminManager: the broker first checks each resource
("preprocessing"), answers the ones that fail itself, forwards the rest to the active controller
(kafkawire.broker.forwarding) and puts the two answers together in the request's order.

The broker's checks, with Kafka's messages (INVALID_REQUEST for each):
- a resource named twice: both "Each resource must appear at most once.";
- a config key twice in one resource: "Error due to duplicate config keys";
- a null value (IncrementalAlterConfigs: except for DELETE): "Null value not supported for : <keys>";
- a BROKER resource named neither "" nor this broker's id: "Node id must be an integer, but it
  is: <name>" / "Unexpected broker id, expected <id>, but received <name>"; an operation type
  Kafka does not know on it: "Unknown operations type <n>";
- a BROKER resource's configs after the change that Kafka's broker would not take as dynamic
  broker configs (kafkawire.metadata.dynamic_broker_configs: a static key, an SSL key without a
  listener prefix, a value of the wrong type or out of range, a per-broker key at the cluster
  default; an APPEND or SUBTRACT on a key that is not a list is INVALID_CONFIG), then the
  broker's KafkaConfig rebuilt with them and its reconfigurable components' checks
  (kafkawire.metadata.dynamic_reconfiguration: a thread pool resized beyond double or half,
  listeners that drop an advertised one, ...: Kafka's "Invalid dynamic configuration");
- a resource type other than TOPIC, BROKER, CLIENT_METRICS and GROUP (and BROKER_LOGGER for
  IncrementalAlterConfigs): "Unknown resource type <n>".
BROKER_LOGGER (log levels, KIP-412) is applied here to this node's loggers, as Kafka's broker does
(kafkawire.net.runtime_loggers), and answered without the controller. A resource the
controller's answer leaves out is UNKNOWN_SERVER_ERROR.
"""
from __future__ import annotations

import logging

from kafkawire.messages.alter_configs_request import AlterConfigsRequest
from kafkawire.messages.alter_configs_response import AlterConfigsResourceResponse as LegacyResult
from kafkawire.messages.alter_configs_response import AlterConfigsResponse
from kafkawire.messages.incremental_alter_configs_request import IncrementalAlterConfigsRequest
from kafkawire.messages.incremental_alter_configs_response import (AlterConfigsResourceResponse,
                                                                    IncrementalAlterConfigsResponse)
from kafkawire.metadata import dynamic_broker_configs, dynamic_reconfiguration
from kafkawire.net import runtime_loggers, ssl_rotation
from kafkawire.protocol.error_codes import Errors

__all__ = ["ConfigApis", "preprocess"]

log = logging.getLogger(__name__)

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_CHECKED_HERE_ONLY = frozenset({TOPIC, CLIENT_METRICS, GROUP})


class _Refused(Exception):
    def __init__(self, message: str, error: Errors = Errors.INVALID_REQUEST):
        super().__init__(message)
        self.error = error


def preprocess(resources, node_id: int, *, incremental: bool, validate_only: bool = False,
               may_alter_loggers=lambda: True, stored_configs=lambda name: {},
               static_settings: dict[str, str] | None = None) -> dict[int, tuple[int, str | None]]:
    """id(resource) -> (error code, message) for the resources answered here
    (ConfigAdminManager.preprocess): the refused ones, and the BROKER_LOGGER changes, which this
    node applies to its own loggers (unless ``validate_only``) and answers itself.
    ``stored_configs(name)``: the BROKER resource's configs in the metadata image;
    ``static_settings``: the node's server.properties (None: the reconfiguration step is skipped)."""
    refused: dict[int, tuple[int, str]] = {}
    seen: dict[tuple[int, str], object] = {}
    for resource in resources:
        earlier = seen.setdefault((resource.resource_type, resource.resource_name), resource)
        if earlier is not resource:
            for r in (earlier, resource):
                refused[id(r)] = (int(Errors.INVALID_REQUEST), "Each resource must appear at most once.")
    for resource in resources:
        if id(resource) in refused:
            continue
        try:
            _check(resource, node_id, incremental)
            if resource.resource_type == BROKER:
                _check_broker_change(resource, incremental, stored_configs, node_id, static_settings)
            if incremental and resource.resource_type == BROKER_LOGGER:
                refused[id(resource)] = _change_loggers(resource, node_id, validate_only, may_alter_loggers)
        except _Refused as exc:
            log.info("refusing the config change of resource type %d %r: %s", resource.resource_type,
                     resource.resource_name, exc)
            refused[id(resource)] = (int(exc.error), str(exc))
    return refused


def _change_loggers(resource, node_id: int, validate_only: bool, may_alter_loggers) -> tuple[int, str | None]:
    """RuntimeLoggerManager.applyChangesForResource (kafkawire.net.runtime_loggers)."""
    return runtime_loggers.change_for_resource(resource, node_id, authorized=may_alter_loggers(),
                                               validate_only=validate_only)


def _check(resource, node_id: int, incremental: bool) -> None:
    names = [c.name for c in resource.configs]
    if len(set(names)) != len(names):
        raise _Refused("Error due to duplicate config keys")
    nulls = [c.name for c in resource.configs if c.value is None and not (incremental and c.config_operation == DELETE)]
    if nulls:
        raise _Refused("Null value not supported for : " + ", ".join(nulls))
    kind = resource.resource_type
    if kind == BROKER:
        if resource.resource_name:
            _check_node_id(resource.resource_name, node_id)
        unknown = [c.config_operation for c in resource.configs
                   if incremental and c.config_operation not in (SET, DELETE, APPEND, SUBTRACT)]
        if unknown:
            raise _Refused(f"Unknown operations type {unknown[0]}")
    elif kind not in _CHECKED_HERE_ONLY and not (incremental and kind == BROKER_LOGGER):
        raise _Refused(f"Unknown resource type {kind}")


def _check_broker_change(resource, incremental: bool, stored_configs, node_id: int, static_settings) -> None:
    """ConfigAdminManager.validateBrokerConfigChange: the resource's configs after the change
    checked as a dynamic broker config (kafkawire.metadata.dynamic_broker_configs), then against
    this broker's current config (kafkawire.metadata.dynamic_reconfiguration). The legacy
    AlterConfigs replaces them all, so only its own are checked, as in Kafka."""
    per_broker = bool(resource.resource_name)
    try:
        if incremental:
            ops = [(c.name, c.config_operation, c.value) for c in resource.configs]
            props = dynamic_broker_configs.props_after(stored_configs(resource.resource_name), ops, per_broker)
        else:
            props = {c.name: c.value for c in resource.configs}
        dynamic_broker_configs.validate(props, per_broker)
        if static_settings is not None:
            # the stored configs as the broker holds them (DynamicBrokerConfig.fromPersistentProps)
            default = dynamic_broker_configs.props_after(stored_configs(""), [], per_broker=False)
            broker = dynamic_broker_configs.props_after(stored_configs(str(node_id)), [], per_broker=True)
            dynamic_reconfiguration.check(props, static=static_settings, default=default, broker=broker,
                                          per_broker=per_broker, tls_handshake=ssl_rotation.handshake_refusal)
    except dynamic_broker_configs.InvalidConfiguration as exc:
        raise _Refused(str(exc), Errors.INVALID_CONFIG) from None
    except dynamic_broker_configs.ConfigValueError as exc:
        raise _Refused(str(exc)) from None


def _check_node_id(name: str, node_id: int) -> None:
    try:
        broker_id = int(name)
    except ValueError:
        raise _Refused(f"Node id must be an integer, but it is: {name}") from None
    if broker_id != node_id:
        raise _Refused(f"Unexpected broker id, expected {node_id}, but received {name}")


class ConfigApis:
    """AlterConfigs and IncrementalAlterConfigs for a broker with node id ``node_id``, forwarding
    through ``forwarder`` (a kafkawire.broker.forwarding.Forwarder)."""

    def __init__(self, node_id: int, forwarder, may_alter_loggers=lambda ctx: True, stored_configs=lambda name: {},
                 static_settings: dict[str, str] | None = None):
        """``may_alter_loggers(ctx)``: ALTER_CONFIGS on the cluster, what a BROKER_LOGGER change needs;
        ``stored_configs(name)``: the BROKER resource ``name``'s configs in the metadata image;
        ``static_settings``: the node's server.properties, every key as written (None: a change
        is not checked against the broker's current config)."""
        self.node_id = node_id
        self.stored_configs = stored_configs
        self.static_settings = static_settings
        self.forwarder = forwarder
        self.may_alter_loggers = may_alter_loggers

    async def alter_configs(self, ctx, request):
        return await self._alter(ctx, request, incremental=False)

    async def incremental_alter_configs(self, ctx, request):
        return await self._alter(ctx, request, incremental=True)

    async def _alter(self, ctx, request, *, incremental: bool):
        if incremental:
            request_cls, response_cls, result_cls = (IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
                                                     AlterConfigsResourceResponse)
        else:
            request_cls, response_cls, result_cls = AlterConfigsRequest, AlterConfigsResponse, LegacyResult
        refused = preprocess(request.resources, self.node_id, incremental=incremental,
                             validate_only=request.validate_only,
                             may_alter_loggers=lambda: self.may_alter_loggers(ctx),
                             stored_configs=self.stored_configs, static_settings=self.static_settings)
        remaining = [r for r in request.resources if id(r) not in refused]
        answered = {}
        if remaining:
            forwarded = await self.forwarder.forward(ctx, request_cls(resources=remaining,
                                                                      validate_only=request.validate_only))
            answered = {(r.resource_name, r.resource_type): (r.error_code, r.error_message)
                        for r in forwarded.responses}
        results = []
        for resource in request.resources:
            code, message = refused.get(id(resource)) or answered.get(
                (resource.resource_name, resource.resource_type), (int(Errors.UNKNOWN_SERVER_ERROR), None))
            results.append(result_cls(error_code=code, error_message=message, resource_type=resource.resource_type,
                                      resource_name=resource.resource_name))
        return response_cls(responses=results)
