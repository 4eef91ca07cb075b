"""``metric.reporters`` changed at runtime, applied as Kafka 4.3.1's DynamicMetricsReporters
applies it (reconfigure: the reporters no longer named are removed, the new ones created): once
a config record of this node or of the cluster default is in the committed metadata, the node's
value (server.properties overridden by the dynamic cluster default, then this node's dynamic
configs, as DynamicBrokerConfig holds it) is compared with the reporters running, and

* ``kafkawire.metrics.PrometheusReporter`` added starts the node's Prometheus endpoint on
  ``kafkawire.metrics.prometheus.listener`` (a static setting, read at start as Kafka reads a
  reporter's own settings: the address cannot change without a restart), removed closes it;
  an endpoint that cannot bind is logged and the node runs on without it (Kafka logs a
  reconfiguration that fails);
* ``kafkawire.metrics.ClientTelemetryExporter`` added gives the broker its built-in telemetry
  exporter and lists GetTelemetrySubscriptions and PushTelemetry in ApiVersions; removed, pushes
  go to no exporter (the pair stays listed, as in Kafka: kafkawire.broker.telemetry_apis
  ``set_exporter``);
* ``org.apache.kafka.common.metrics.JmxReporter``: accepted, nothing to run.

A value naming a class kafkawire does not have (which a broker refuses when the change is made,
kafkawire.metadata.dynamic_metric_reporters, but a controller takes unchecked) is logged and the
running reporters stay, as a DynamicBrokerConfig whose validation of the reconfigurable fails.
A record is noticed as kafkawire.broker.listener_ssl_reload notices one: by the identity of the
resource's config map (replaced at each record of a broker resource), or by its content; the
work per publish is two lookups.

    reload = watch_metric_reporters(node, broker, image, listeners)   # image(): the image to read
    ...
    await reload.close()            # before the node stops: a start or stop under way finishes
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable

from kafkawire.broker.telemetry_apis import GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY
from kafkawire.metadata.dynamic_metric_reporters import CLIENT_TELEMETRY_EXPORTER, PROMETHEUS_REPORTER, unknown
from kafkawire.metadata.dynamic_reconfiguration import merged
from kafkawire.metadata.image import BROKER_RESOURCE
from kafkawire.metadata.topic_config_synonyms import dynamic_broker_configs
from kafkawire.net import background
from kafkawire.net.config_values import JMX_REPORTER
from kafkawire.net.metrics_http import EndpointStartError

__all__ = ["MetricReportersReload", "watch_metric_reporters"]

log = logging.getLogger(__name__)

_KEY = "metric.reporters"


def _names(text: str) -> tuple[str, ...]:
    """A LIST value as ConfigDef parses it: comma-separated, each trimmed, empty ones dropped."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


class MetricReportersReload:
    """The node's reporters, started and stopped as its dynamic ``metric.reporters`` changes (see
    the module docstring). ``node``: a ControllerNode or BrokerOnlyNode (its
    open_metrics_endpoint and close_metrics_endpoint); ``broker``: the node's Broker, or None."""

    def __init__(self, node, broker):
        self.node, self.broker = node, broker
        self.static = dict(node.config.properties)
        self.node_id = str(node.config.node_id)
        self.running = set(node.config.metric_reporters)
        self._configs: tuple = (None, None)     # the resources' config maps last seen (identity)
        self._contents: tuple = (None, None)    # ... and what they held
        self._applying: asyncio.Future | None = None
        self.changes = 0                        # reporter sets applied so far

    def on_metadata(self, image) -> None:
        """After a publish: compare this node's value with the reporters running, once a config
        record of the node or the cluster default arrived."""
        if image is None:
            return
        configs = tuple(image.configs.get((BROKER_RESOURCE, name)) for name in (self.node_id, ""))
        contents = tuple(None if c is None else dict(c) for c in configs)
        if all(a is b for a, b in zip(configs, self._configs)) and contents == self._contents:
            return
        self._configs, self._contents = configs, contents
        props = merged(self.static, dynamic_broker_configs(image, ""), dynamic_broker_configs(image, self.node_id))
        wanted = _names(props.get(_KEY, JMX_REPORTER))
        missing = unknown(wanted)
        if missing:
            log.error("%s=%s is not applied, the running reporters stay: no class %s in kafkawire", _KEY,
                      ",".join(wanted), ", ".join(missing))
            return
        added, removed = set(wanted) - self.running, self.running - set(wanted)
        if not added and not removed:
            return
        self.running = set(wanted)
        previous = self._applying
        self._applying = background.start(self._apply(previous, added, removed), f"Applying {_KEY}", logger=log)

    async def _apply(self, previous, added: set[str], removed: set[str]) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)        # in the order they were made
        if PROMETHEUS_REPORTER in removed:
            await self.node.close_metrics_endpoint()
        if PROMETHEUS_REPORTER in added:
            try:
                await self.node.open_metrics_endpoint()
            except EndpointStartError as exc:
                log.error("%s: the added %s does not run: %s", _KEY, PROMETHEUS_REPORTER, exc)
        if self.broker is not None and CLIENT_TELEMETRY_EXPORTER in added | removed:
            self._set_telemetry(CLIENT_TELEMETRY_EXPORTER in added)
        self.changes += 1
        log.info("%s: reporters now %s (added %s, removed %s)", _KEY, ", ".join(sorted(self.running)) or "none",
                 ", ".join(sorted(added)) or "none", ", ".join(sorted(removed)) or "none")

    def _set_telemetry(self, on: bool) -> None:
        broker = self.broker
        if broker.telemetry.set_exporter(on):       # newly listed: the handlers as the broker wraps them
            handlers = broker.handlers()
            for server in broker.servers:
                for key in (GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY):
                    server.register(key, handlers[key])

    async def close(self) -> None:
        """Let a start or stop under way finish (before the node stops: no endpoint left open)."""
        if self._applying is not None:
            await asyncio.gather(self._applying, return_exceptions=True)


def watch_metric_reporters(node, broker, image: Callable[[], object], listeners: list) -> MetricReportersReload:
    """A MetricReportersReload of ``node`` (and its ``broker``, or None) reading ``image()`` each
    time one of ``listeners`` (where it adds itself) is called; kept as
    ``node.metric_reporters_reload``."""
    reload = MetricReportersReload(node, broker)
    listeners.append(lambda: reload.on_metadata(image()))
    reload.on_metadata(image())             # what the image holds already (a restart after a change)
    node.metric_reporters_reload = reload
    return reload
