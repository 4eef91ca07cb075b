"""One local SparkSession for the whole test session (it takes seconds to start).

Spark's Python workers are this interpreter (PYSPARK_PYTHON), bound to 127.0.0.1. The
repository is put on the workers' PYTHONPATH, where an installed package would be, so
Spark's own lookup of ``pyspark_*`` modules can find format kafkawire by name; whether it
did is recorded before ``register`` is called, for test_discovered_by_name.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import unavailable

REPO = Path(__file__).resolve().parents[2]


def _spark_missing() -> str | None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        return f"pyspark/pyarrow not installed ({exc.name}); pip install -e '.[dev]'"
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and Path(java_home, "bin", "java").exists()):
        return "no Java runtime (Spark needs one; Java 17 works): install a JDK or set JAVA_HOME"
    return None


@pytest.fixture(scope="session")
def spark_session(tmp_path_factory):
    reason = _spark_missing()
    if reason:
        unavailable(reason)
    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
                                            "SPARK_LOCAL_IP", "PYTHONPATH")}
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), saved["PYTHONPATH"]) if p)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("kafkawire-tests")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.memory", "1g")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")

    # Before register(): does Spark find the format by name on its own?
    from tests.spark.logdata import DISCOVERY, write_partition
    probe = write_partition(tmp_path_factory.mktemp("discovery") / "probe-0", [[(b"k", b"v")]])
    try:
        DISCOVERY["found"] = spark.read.format("kafkawire").load(str(probe)).count() == 1
    except Exception as exc:   # recorded, and reported by the test that checks it
        DISCOVERY["found"], DISCOVERY["error"] = False, str(exc)[:800]

    from kafkawire.spark import register
    register(spark)
    try:
        yield spark
    finally:
        spark.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def spark(spark_session):
    return spark_session
