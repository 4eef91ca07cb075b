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
    spark.read.format("kafkawire").option("liveLog", "true").load("/data/kafka-logs")  # a running broker's
    spark.read.format("kafkawire").option("fs.s3a.endpoint.region", "eu-west-1").load("s3a://bucket/kafka-logs")

Paths may be local, ``file://`` or remote (S3, GCS, Azure, HDFS) through pyarrow's
filesystems, reached with Hadoop-named ``fs.*`` options: ``files.py``, ``remote_options.py``.

Columns: ``columns.py``; options: ``options.py``; pushed-down filters: ``filters.py``;
read_committed: ``transactions.py``; a running broker's directory (``liveLog``, read to
the high watermark in ``replication-offset-checkpoint``): ``watermarks.py``, ``plan.py``. Spark's Python workers must be able to import
kafkawire (set PYSPARK_PYTHON to this environment's python).

A query that needs a few columns names them in a schema, and only those are built and
handed to Spark (Spark tells a Python data source of no other column pruning; a
``.select`` after ``load`` still makes every column cross into the JVM first):

    spark.read.format("kafkawire").schema("value binary, timestamp timestamp").load(path)

Where kafkawire's C extension is built (``kafkawire._native.status()``), each task decodes
records straight into Arrow buffers; without it, or with ``KAFKAWIRE_PURE=1`` in the
workers' environment, it reads them as Record objects (the same rows; the reading takes
four to six times the CPU, see benchmarks/spark_read.py).
"""
from __future__ import annotations

__all__ = ["register", "load", "FORMAT", "KafkaWireDataSource"]

FORMAT = "kafkawire"
_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark, *, filter_pushdown: bool = True) -> None:
    """Register the ``kafkawire`` format with a SparkSession.

    ``filter_pushdown`` also turns on Spark's switch for Python data source filter
    pushdown (off by default in Spark), so filters on partition, offset and timestamp are
    served from the indexes instead of by reading everything.

    The session's ``spark.hadoop.*`` settings that say how to reach a remote filesystem
    (``spark.hadoop.fs.s3a.endpoint``, ``spark.hadoop.dfs.*``, ...: remote_options.py) are
    copied now and carried with the format to every read as defaults under the read's own
    options; a setting changed later is seen once ``register`` is called again.
    """
    from .remote_options import session_hadoop_options
    from .source import KafkaWireDataSource       # lazy: it needs pyspark, an optional dependency
    source = KafkaWireDataSource
    captured = session_hadoop_options(spark.conf.getAll)
    if captured:
        source = type("KafkaWireSessionDataSource", (KafkaWireDataSource,),
                      {"session_options": captured, "__module__": __name__,
                       "__doc__": KafkaWireDataSource.__doc__})
    spark.dataSource.register(source)
    if filter_pushdown:
        spark.conf.set(_PUSHDOWN_CONF, "true")


def load(spark, path: str, **options):
    """``spark.read.format("kafkawire").options(**options).load(path)``, after checking in the
    driver that ``path`` exists (a local path, or a remote URI reached with the ``fs.*``
    options over the session's ``spark.hadoop.*`` settings): a wrong path is then one FileNotFoundError naming it, not a
    failure inside Spark's Python worker surfacing as a Py4J stack trace."""
    from .files import Files
    from .remote_options import remote_settings, session_hadoop_options, with_session_defaults
    session = session_hadoop_options(spark.conf.getAll) if spark is not None else {}
    if Files(remote_settings(with_session_defaults(options, session))).kind(path) is None:
        raise FileNotFoundError(f"kafkawire: no such file or directory: {path}")
    reader = spark.read.format(FORMAT)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(path)


def __getattr__(name):
    if name == "KafkaWireDataSource":   # importing it needs pyspark; register() users only pay then
        from .source import KafkaWireDataSource
        return KafkaWireDataSource
    raise AttributeError(name)
