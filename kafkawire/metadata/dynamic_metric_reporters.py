"""``metric.reporters`` as Kafka 4.3.1's DynamicMetricsReporters takes a dynamic change of it: each
class named must load (Utils.loadClass, as a MetricsReporter); kafkawire has no Java classpath,
so the classes that load are the reporters kafkawire runs (and Kafka's default JmxReporter,
accepted and reporting nothing). A class that does not load is Kafka's refusal, which names the
changed configs and the component, not the class: DynamicBrokerConfig.processReconfigurable
turns the ClassNotFoundException into "Validation of dynamic config update of Set(...) failed
with class class kafka.server.DynamicMetricsReporters" (kafkawire.metadata.dynamic_reconfiguration
wraps it as "Invalid dynamic configuration"). The node that takes the change applies it with
the same check (kafkawire.tools.metric_reporters): a list naming a class it does not have is
logged and the reporters stay as they are, as a reconfiguration that fails its validation.
"""
from __future__ import annotations

from .java_text import java_string_hash

__all__ = ["JMX_REPORTER", "PROMETHEUS_REPORTER", "CLIENT_TELEMETRY_EXPORTER", "METRIC_REPORTERS", "unknown",
           "refusal"]

# MetricConfigs.METRIC_REPORTER_CLASSES_DEFAULT. Without a JVM there is no JMX to report to: the
# name is accepted (it is Kafka's default) and reports nothing.
JMX_REPORTER = "org.apache.kafka.common.metrics.JmxReporter"
PROMETHEUS_REPORTER = "kafkawire.metrics.PrometheusReporter"
# A reporter that takes client telemetry (KIP-714), as a Kafka reporter implementing
# ClientTelemetryExporterProvider: with it the broker serves GetTelemetrySubscriptions and
# PushTelemetry (kafkawire.broker.telemetry_apis).
CLIENT_TELEMETRY_EXPORTER = "kafkawire.metrics.ClientTelemetryExporter"
METRIC_REPORTERS = (PROMETHEUS_REPORTER, CLIENT_TELEMETRY_EXPORTER, JMX_REPORTER)


def unknown(reporters) -> list[str]:
    """The names in ``reporters`` that are not a class kafkawire has."""
    return [name for name in reporters if name not in METRIC_REPORTERS]


def refusal(reporters, changed_names) -> str | None:
    """DynamicMetricsReporters.validateReconfiguration of the new ``reporters`` (the parsed list),
    as processReconfigurable words its failure (``changed_names``: the configs the change
    updates); None when every class loads."""
    if not unknown(reporters):
        return None
    return (f"Validation of dynamic config update of Set({', '.join(_hash_map_order(changed_names))}) failed "
            "with class class kafka.server.DynamicMetricsReporters")


def _hash_map_order(names) -> list[str]:
    """How the keys of a Scala 2.13 mutable.HashMap iterate (DynamicBrokerConfig.updatedConfigs'
    change map): by bucket (the improved hash masked by the table size: 16, doubled while the
    keys reach three quarters of it), within a bucket by signed improved hash."""
    def improved(name: str) -> int:
        h = java_string_hash(name)
        h ^= h >> 16
        return h - (1 << 32) if h >= 1 << 31 else h
    size = 16
    while len(names) + 1 >= size * 3 // 4:
        size *= 2
    return sorted(names, key=lambda n: (improved(n) & (size - 1), improved(n)))
