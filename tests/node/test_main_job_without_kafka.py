"""`kafkawire main --with-kafka-brokers N` without Java or without Kafka's jars: one clear
error naming what is missing and how to get it, and nothing started (no Java needed here); and
the plain job's broker step without kafka-python."""
import os
import subprocess
import sys


def _run(tmp_path, env, *extra):
    data = tmp_path / "demo"
    result = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "main", "--with-kafka-brokers", "2",
                             "--data-dir", str(data), *extra], capture_output=True, text=True, timeout=60, env=env)
    return result, data


def _env(path: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "KAFKAWIRE_KAFKA_DIST")}
    env["PATH"] = path
    return env


def test_without_java_the_job_says_so_and_starts_nothing(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    result, data = _run(tmp_path, _env(str(empty)))
    assert result.returncode == 1
    assert "no Java runtime" in result.stderr and "JAVA_HOME" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not data.exists() or not any(data.iterdir())


def test_without_the_kafka_jars_the_job_names_where_it_looked_and_how_to_get_them(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    java = bin_dir / "java"                     # a java that is never run: the jars are checked first
    java.write_text("#!/bin/sh\nexit 99\n")
    java.chmod(0o755)
    nowhere = tmp_path / "no-kafka-here"
    nowhere.mkdir()
    result, data = _run(tmp_path, _env(str(bin_dir)), "--kafka-dist", str(nowhere))
    assert result.returncode == 1
    assert f"no Kafka jars (kafka_2.13-*.jar) in {nowhere}" in result.stderr, result.stderr
    assert "python -m tests.interop.kafka_dist" in result.stderr
    assert "Traceback" not in result.stderr
    assert not data.exists() or not any(data.iterdir())


def test_a_negative_broker_count_is_refused(tmp_path):
    data = tmp_path / "demo"
    result = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "main", "--with-kafka-brokers", "-1",
                             "--data-dir", str(data)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "--with-kafka-brokers must be at least 1" in result.stderr


def test_brokers_and_kafka_brokers_together_are_refused(tmp_path):
    data = tmp_path / "demo"
    result = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "main", "--brokers", "3",
                             "--with-kafka-brokers", "1", "--data-dir", str(data)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1 and "give one of them" in result.stderr and "Traceback" not in result.stderr
    assert not data.exists()


def test_without_kafka_python_the_broker_step_says_how_to_get_it_and_starts_nothing(tmp_path, monkeypatch, capsys):
    """kafka-python is an extra (`kafka-brokers`); `pip install kafkawire` alone runs the job without the step."""
    monkeypatch.setitem(sys.modules, "kafka", None)          # import kafka raises ImportError
    from kafkawire.tools.main_broker import run_broker_step, start_combined_nodes
    node = start_combined_nodes(str(tmp_path / "combined"))
    run_broker_step(node, lambda text: print(f"=== {text}"), None)
    assert node is None and not (tmp_path / "combined").exists()
    assert "skipped: it uses kafka-python, which is not installed (pip install 'kafkawire[kafka-brokers]')" in \
        capsys.readouterr().out


def test_without_pyspark_and_pyarrow_the_read_step_says_how_to_get_them(tmp_path, monkeypatch, capsys):
    """The read step's reader builds Arrow batches: with neither PySpark nor pyarrow (`pip install
    'kafkawire[kafka-brokers]'` alone) it is skipped, naming the extra, and reads nothing."""
    import importlib.util
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name in ("pyspark", "pyarrow") else real_find_spec(name, *args))
    from kafkawire.tools.main_read import SparkStart, run_read_step
    spark = SparkStart(".")
    run_read_step(str(tmp_path / "nowhere"), "demo-payments", [b"paid-1"], lambda text: print(f"=== {text}"), spark)
    assert spark.why_not == "pyspark is not installed (pip install 'kafkawire[spark]')"
    assert "skipped: the data source's reader builds Arrow batches, and pyarrow is not installed " \
        "(pip install 'kafkawire[spark]')" in capsys.readouterr().out


def test_when_sparks_read_fails_the_read_step_says_so_and_reads_with_the_task_reader(tmp_path, capsys):
    """A session whose read fails (its JVM gone, a worker that cannot start) does not fail the
    job: the step names the failure and reads with the data source's task reader."""
    import pytest
    pytest.importorskip("pyarrow", reason="the task reader builds Arrow batches: pip install -e '.[dev]'")
    from kafkawire.tools.main_read import TASK_READER, SparkStart, run_read_step
    from tests.spark.logdata import write_partition
    write_partition(tmp_path / "demo-payments-0", [[(None, b"paid-1"), (None, b"paid-2")]])
    write_partition(tmp_path / "demo-orders-0", [[(b"order-0", b"1 items")]])       # not subscribed

    class BrokenSession:
        @property
        def conf(self):
            raise RuntimeError("the JVM is gone")
    run_read_step(str(tmp_path), "demo-payments", [b"paid-1", b"paid-2"], lambda text: print(f"=== {text}"),
                  SparkStart(".", session=BrokenSession()))
    out = capsys.readouterr().out
    assert "not with Spark: Spark's read failed (RuntimeError: the JVM is gone)\n" in out, out
    assert f"read with {TASK_READER}: paid-1, paid-2\nread with {TASK_READER}: the same records as the " \
        f"read_committed consumer\n" in out, out
    with pytest.raises(RuntimeError, match=r"read \[b'paid-1', b'paid-2'\] from .*, the read_committed consumer \[b'paid-1'\]"):
        run_read_step(str(tmp_path), "demo-payments", [b"paid-1"], print, SparkStart(".", session=BrokenSession()))
