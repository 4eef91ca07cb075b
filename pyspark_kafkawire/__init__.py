"""Lets Spark find format ``kafkawire`` by name: Spark 4 registers the ``DefaultSource`` of
every importable top-level ``pyspark_*`` module when a session first uses a Python data
source. The source itself is kafkawire.spark."""
from kafkawire.spark.source import KafkaWireDataSource as DefaultSource

__all__ = ["DefaultSource"]
