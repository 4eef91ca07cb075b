"""Read Kafka's log files with Spark: ``spark.read.format("kafkawire").load(path)``.

A PySpark Python data source (Spark 4). ``register(spark)`` makes the format known to a
session; where the package is installed normally (not editable), Spark also finds it by
name on its own, through the ``pyspark_kafkawire`` module.

    from kafkawire.spark import register
    register(spark)
    spark.read.format("kafkawire").load("/data/kafka-logs/orders-0")       # a partition
    spark.read.format("kafkawire").load("/data/kafka-logs")                # a log directory
    spark.read.format("kafkawire").option("decode", "metadata").load(".../__cluster_metadata-0")
    spark.read.format("kafkawire").load(".../00000000000000012345-0000000007.checkpoint")
    spark.readStream.format("kafkawire").load(".../__cluster_metadata-0")  # tail a live log

Columns: ``columns.py``; options: ``options.py``; pushed-down filters: ``filters.py``;
read_committed: ``transactions.py``. Spark's Python workers must be able to import
kafkawire (set PYSPARK_PYTHON to this environment's python).
"""
from __future__ import annotations

__all__ = ["register", "FORMAT", "KafkaWireDataSource"]

FORMAT = "kafkawire"
_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark, *, filter_pushdown: bool = True) -> None:
    """Register the ``kafkawire`` format with a SparkSession.

    ``filter_pushdown`` also turns on Spark's switch for Python data source filter
    pushdown (off by default in Spark), so filters on partition, offset and timestamp are
    served from the indexes instead of by reading everything.
    """
    from .source import KafkaWireDataSource
    spark.dataSource.register(KafkaWireDataSource)
    if filter_pushdown:
        spark.conf.set(_PUSHDOWN_CONF, "true")


def __getattr__(name):
    if name == "KafkaWireDataSource":   # importing it needs pyspark; register() users only pay then
        from .source import KafkaWireDataSource
        return KafkaWireDataSource
    raise AttributeError(name)
