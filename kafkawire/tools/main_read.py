"""`kafkawire main`'s read step: the transactions' topic read from the broker's log directory as
Spark reads it (format kafkawire, read_committed), checked against what kafka-python's
read_committed consumer read from the broker.

With pyspark, pyarrow and a Java runtime, a local SparkSession reads the directory with
``kafkawire.spark.load``. Without them (the README's first command installs none, and Spark
needs Java), the job reads it with the code Spark's tasks run: the data source's planning
(``kafkawire.spark.plan.plan_batch``), its packing into input partitions (``pack_tasks``) and
its task reader (``kafkawire.spark.reader.read_task``), in this process, no SparkSession, no
Java. That needs pyarrow (the ``spark`` extra); without it the step says so and is skipped.
The step never fails for want of Java: it says which reader ran and why.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys

SPARK = "Spark"
TASK_READER = "the Spark data source's task reader, without Spark"


def _read_options(topic: str) -> dict:
    return {"subscribe": topic, "kafka.isolation.level": "read_committed"}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:           # a finder that refuses the name outright
        return False


def spark_unavailable() -> str | None:
    """Why Spark cannot run here (None when it can): pyspark, pyarrow or Java missing."""
    for module, extra in (("pyspark", "spark"), ("pyarrow", "spark")):
        if not _installed(module):
            return f"{module} is not installed (pip install 'kafkawire[{extra}]')"
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and os.path.exists(os.path.join(java_home, "bin", "java"))):
        return "no Java runtime (Spark needs Java 17 or newer: install a JDK or set JAVA_HOME)"
    return None


def read_with_task_reader(log_dir: str, topic: str) -> list[bytes]:
    """The values of ``topic``'s committed records in ``log_dir``, by partition and offset, read
    as a Spark batch read is, task by task, with no SparkSession."""
    # lazy: pyarrow is an optional dependency, and `kafkawire` imports every command's module
    from kafkawire.spark.filters import PushedFilters
    from kafkawire.spark.options import parse_options
    from kafkawire.spark.plan import pack_tasks, plan_batch
    from kafkawire.spark.reader import read_task, settings_for
    opts = parse_options({"path": log_dir, **_read_options(topic)}, streaming=False)
    pushed = PushedFilters()
    settings = settings_for(("partition", "offset", "value"), opts, pushed)
    rows = []
    for input_partition in pack_tasks(plan_batch(opts, pushed), opts.split_bytes, opts.min_partitions):
        for task in input_partition:
            for batch in read_task(task, settings):
                rows += batch.to_pylist()
    return [row["value"] for row in sorted(rows, key=lambda r: (r["partition"], r["offset"]))]


def _spark_session(repo_root: str):
    # Spark's Python workers are this interpreter, and must import kafkawire from where this runs.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (repo_root, os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]").appName("kafkawire-main")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _first_line(exc: Exception) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip() or '?').splitlines()[0][:200]}"


class SparkStart:
    """The step's SparkSession, started when the step reads (not before: on a busy machine a JVM
    starting beside the nodes slows them more than it saves), or the reason there is none.
    ``session``: one to use as is (a test's), never stopped here."""

    def __init__(self, repo_root: str, *, session=None, wanted: bool = True):
        self.repo_root = repo_root
        self._session, self._owned = session, session is None
        self.why_not = None if session is not None else \
            "--no-spark (the Spark data source's own reader, no JVM)" if not wanted else spark_unavailable()

    @property
    def started(self) -> bool:
        return self._session is not None

    def session(self):
        """The session (None, with why_not set, where Spark cannot run or did not start)."""
        if self._session is None and self.why_not is None:
            try:
                self._session = _spark_session(self.repo_root)
            except Exception as exc:      # Java too old, no free port, ...: the task reader still reads
                self.why_not = f"Spark did not start ({_first_line(exc)})"
        return self._session

    def stop(self) -> None:
        if self._owned and self._session is not None:
            self._session.stop()
            self._session = None


def read_with_spark(spark, log_dir: str, topic: str) -> list[bytes]:
    from kafkawire.spark import load, register
    register(spark)
    rows = load(spark, log_dir, **_read_options(topic)).select("partition", "offset", "value").collect()
    return [bytes(row.value) for row in sorted(rows, key=lambda r: (r.partition, r.offset))]


def run_read_step(log_dir: str, topic: str, consumed: list[bytes], say, spark: SparkStart) -> None:
    """Read ``topic`` from ``log_dir`` (a stopped broker's) with ``spark``'s session or, without
    one, the task reader; raise RuntimeError unless it read exactly ``consumed``."""
    options = ", ".join(f'{k}="{v}"' for k, v in _read_options(topic).items())
    say(f"reading {topic} from the broker's log directory as Spark does (format kafkawire, {options})")
    print(f"log directory: {log_dir}")
    if spark.why_not is None and not spark.started:
        print("starting a local SparkSession (local[1]; its JVM takes some seconds)", flush=True)
    session = spark.session()
    values, reader = None, SPARK
    if session is not None:
        try:
            values = read_with_spark(session, log_dir, topic)
        except Exception as exc:      # a worker that cannot start, ...: the task reader still reads
            spark.why_not = f"Spark's read failed ({_first_line(exc)})"
    if values is None:
        if not _installed("pyarrow"):
            print("skipped: the data source's reader builds Arrow batches, and pyarrow is not installed "
                  "(pip install 'kafkawire[spark]')")
            return
        print(f"not with Spark: {spark.why_not}")
        values, reader = read_with_task_reader(log_dir, topic), TASK_READER
    print(f"read with {reader}: {', '.join(v.decode() for v in values)}")
    if values != consumed:
        raise RuntimeError(f"{reader} read {values} from {log_dir}, the read_committed consumer {consumed}")
    print(f"read with {reader}: the same records as the read_committed consumer")
