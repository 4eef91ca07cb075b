"""A class-data-sharing archive of the classes a Kafka 4.3.1 node loads, made once per jar cache.

The suite starts a hundred or so Kafka JVMs (controllers, brokers, tools in JVMs of their own);
each spent about 2.3 s of CPU and 5-7 s of wall time (at load 10 on the 2-core CI machine) from
its start to "Kafka Server started", most of it parsing and verifying the same ~6,000 classes
from the same jars. JDK 17's dynamic AppCDS archive (-XX:ArchiveClassesAtExit, written when a JVM
exits normally) holds those classes already parsed; a JVM started with -XX:SharedArchiveFile maps
it and starts in about 1.2 s of CPU and 2-3 s of wall time. The JVM runs the same Kafka code
from the same jars: the archive is a cache of class metadata, which the JVM checks against the
jars (their paths, sizes and times) and the JDK build before it uses any of it, and ignores
(-Xshare:auto) when they differ. No archive (no Java, a failed dump) only means slower starts.

    python -m tests.interop.kafka_dist          # brings the jars, then makes the archive

The archive is dumped by a combined node (broker and controller) that starts and is stopped with
SIGTERM (the dump happens at the JVM's exit), so it holds both roles' classes.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from kafkawire.storage.state_files import uuid_to_kafka
from tests.interop import kafka_dist
from tests.interop.kafka_procs import KAFKA_SERVER, KafkaNode, KafkaProcessError, free_port

START_TIMEOUT_S = 120
DUMP_TIMEOUT_S = 60


def usable(archive: Path) -> bool:
    """The JVM maps the archive for this classpath and JDK (-Xshare:on fails otherwise)."""
    command = ["java", f"-XX:SharedArchiveFile={archive}", "-Xshare:on", *kafka_dist.JVM_FLAGS,
               "-cp", kafka_dist.classpath(), "-version"]
    try:
        return subprocess.run(command, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def ensure_archive() -> Path | None:
    """The archive, made if it is missing or the JVM would not use it; None (saying why on
    stderr) if it cannot be made: the tests then start their JVMs without it."""
    archive = kafka_dist.server_archive()
    if archive.exists() and usable(archive):
        return archive
    # one process dumps it (a Kafka node's start and stop); the others (pytest-xdist's workers)
    # wait for that one and use its archive rather than start a node of their own each
    with open(archive.with_name(f".{archive.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.exists() and usable(archive):
            return archive
        return _dump_usable(archive)


def _dump_usable(archive: Path) -> Path | None:
    archive.unlink(missing_ok=True)
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial")
    try:
        _dump(partial)
        if not usable(partial):
            raise KafkaProcessError("the JVM does not use the archive it wrote")
        os.replace(partial, archive)        # whole or absent for a JVM starting meanwhile
        return archive
    except (KafkaProcessError, OSError, subprocess.SubprocessError) as exc:
        print(f"kafka_cds: no class-data-sharing archive, Kafka JVMs start without one: {exc}", file=sys.stderr)
        return None
    finally:
        partial.unlink(missing_ok=True)


def _dump(partial: Path) -> None:
    directory = Path(tempfile.mkdtemp(prefix="kafkawire-cds-"))
    node = KafkaNode(directory / "node", 1, "broker,controller", controller_port=free_port(),
                     broker_port=free_port())
    try:
        node.format(uuid_to_kafka(uuid.uuid4()), "--standalone")
        command = kafka_dist.java_command(KAFKA_SERVER, str(node.config_path), heap=node.heap,
                                          log4j=kafka_dist.LOG4J_SERVER, archive=False)
        command.insert(1, f"-XX:ArchiveClassesAtExit={partial}")
        with open(node.log_path, "a") as log:
            node.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        node.wait_ready(START_TIMEOUT_S)
        node.process.send_signal(signal.SIGTERM)
        try:
            node.process.wait(timeout=DUMP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise KafkaProcessError(f"the node did not exit within {DUMP_TIMEOUT_S} s of SIGTERM") from None
        if not partial.exists():
            raise KafkaProcessError(f"the node exited ({node.process.returncode}) without writing the archive; "
                                    f"log tail:\n{node.log_tail()}")
    finally:
        node.kill()
        shutil.rmtree(directory, ignore_errors=True)
