"""The README's first command: a three-voter KRaft quorum on 127.0.0.1, shown working.

    kafkawire main [--data-dir DIR] [--foreground] [--brokers 3]
    kafkawire main --with-kafka-brokers N [--kafka-dist DIR]    (real Kafka brokers: kafka_brokers.py)

1. formats three controllers with `kafkawire storage format --initial-controllers ...` in a
   fresh data directory (a new temporary one unless --data-dir names an empty or absent one);
2. starts them (`kafkawire server-start`), each a separate process;
3. lets the metadata controller append records (the bootstrap features, the controllers'
   registrations, NoOpRecords), registers a broker (BrokerRegistration, BrokerHeartbeat) and
   creates a topic (CreateTopics);
4. prints `kafkawire metadata-quorum describe --status` and `--replication`;
5. stops the leader (SIGTERM: it resigns), shows the new leader with `describe --status`;
6. dumps the new leader's log with `kafkawire dump-log --cluster-metadata-decoder`;
7. runs a one-node combined node (broker and controller; with --brokers 3, three of them: a
   three-voter quorum of brokers, topics of replication factor 3) that kafka-python produces to
   (acks=all) and consumes from in a group, and that runs a committed and an aborted transaction
   (main_broker.py; skipped, saying so, without kafka-python);
8. reads the transactions' topic from the stopped broker's log directory as Spark does
   (read_committed) and checks it holds what the read_committed consumer read: with Spark where
   pyspark and Java are, else with the Spark data source's own task reader in this process,
   saying which and why (main_read.py; no Java needed; --no-spark: the task reader in any case).

Every step prints the command a user would type. --foreground restarts the stopped node and
keeps the quorum running until Ctrl-C, for a user to point kcat or a Kafka client at it.
"""
from __future__ import annotations

import argparse
import os
import signal
import shlex
import subprocess
import sys
import tempfile
import time
from kafkawire import _native
from kafkawire.storage.state_files import uuid_to_kafka
from kafkawire.tools.storage import LATEST_PRODUCTION, metadata_version

COMMAND = "main"
HELP = ("the main job: start a local three-voter KRaft quorum, append records, describe it, fail over, dump the log; "
        "then a combined broker and controller that kafka-python produces to and consumes from, "
        "and what it wrote read as Spark reads it")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="where the nodes keep their data (default: a new temporary directory); "
                                           "must be empty or absent")
    parser.add_argument("--foreground", action="store_true",
                        help="keep the quorum running until Ctrl-C after the demonstration")
    parser.add_argument("--voters", type=int, default=3, help="how many voters (default 3)")
    parser.add_argument("--brokers", type=int, default=1, choices=(1, 3),
                        help="the broker step's combined kafkawire nodes (broker and controller in one process): "
                             "1 (default), or 3: a three-voter quorum whose voters are each a broker, topics "
                             "created with replication factor 3, produced to with acks=all (Python only)")
    parser.add_argument("--no-spark", action="store_true",
                        help="read the broker's log directory with the Spark data source's task reader in this "
                             "process even where PySpark and Java could run Spark (no JVM to start)")
    parser.add_argument("--with-kafka-brokers", type=int, default=0, metavar="N",
                        help="instead: start N real Apache Kafka 4.3.1 brokers on the kafkawire controllers, create "
                             "a topic through them, produce and consume with kafka-python, stop everything (needs "
                             "Java and Kafka's jars; downloads nothing)")
    parser.add_argument("--kafka-dist", metavar="DIR",
                        help="with --with-kafka-brokers: the Kafka distribution (its libs/ folder of jars); "
                             "default $KAFKAWIRE_KAFKA_DIST or the repository's .kafka-dist/")


def _say(text: str) -> None:
    print(f"\n=== {text}", flush=True)


def _show(args: list[str], check: bool = True) -> str:
    """Run a kafkawire command as a user would, echoing it and its output."""
    print("$ kafkawire " + " ".join(shlex.quote(a) for a in args), flush=True)
    result = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", *args], capture_output=True, text=True, timeout=120,
                            cwd=_repo_root(), env=_child_env())
    out = result.stdout.rstrip()
    if out:
        print(out, flush=True)
    if result.stderr.strip():
        print(result.stderr.rstrip(), file=sys.stderr, flush=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"kafkawire {' '.join(args)} exited with {result.returncode}")
    return out


def _child_env() -> dict[str, str]:
    """The commands' environment: where this process already runs the pure path (and has said
    why), the children are told to, so the job's output says it once, not once per command."""
    env = dict(os.environ)
    if _native.records is None:
        env["KAFKAWIRE_PURE"] = "1"
    return env


def _repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _append_records(quorum, leader_id: int):
    """A broker registers with the active controller and is unfenced, then a topic is created:
    the records a Kafka controller writes for the same requests (RegisterBrokerRecord,
    UnfenceBrokerRecord, TopicRecord, PartitionRecord)."""
    import asyncio
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.raft.node.demo_client import create_topic, register_broker

    async def go():
        address = quorum.address(leader_id)
        epoch = await register_broker(address, quorum.cluster_id, broker_id=100,
                                      metadata_version=metadata_version(LATEST_PRODUCTION)[1])
        topic = await create_topic(address, "demo-events", partitions=3)
        return epoch, topic
    return asyncio.run(go())


def _interrupt(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def run(args: argparse.Namespace) -> int:
    # lazy: `kafkawire` imports every command's module to build its parser (tools/cli.py)
    from kafkawire.raft.node.local_quorum import LocalQuorum, QuorumError
    from kafkawire.tools.main_broker import run_broker_step, start_combined_nodes
    from kafkawire.tools.main_read import SparkStart

    if args.data_dir:
        base = os.path.abspath(args.data_dir)
        if os.path.exists(base) and os.listdir(base):
            print(f"kafkawire main: {base} is not empty; give an empty or absent --data-dir", file=sys.stderr)
            return 1
    else:
        base = tempfile.mkdtemp(prefix="kafkawire-main-")
    if args.voters < 1:
        print("kafkawire main: --voters must be at least 1", file=sys.stderr)
        return 1
    if args.with_kafka_brokers < 0:
        print("kafkawire main: --with-kafka-brokers must be at least 1", file=sys.stderr)
        return 1
    if args.with_kafka_brokers and args.brokers != 1:
        print("kafkawire main: --brokers sets kafkawire's combined nodes; --with-kafka-brokers runs Kafka's "
              "brokers instead: give one of them", file=sys.stderr)
        return 1
    if args.with_kafka_brokers:
        from kafkawire.tools.kafka_brokers import run_with_brokers
        return run_with_brokers(base, args.voters, args.with_kafka_brokers, args.kafka_dist)
    quorum = LocalQuorum(base, voters=args.voters)
    # SIGTERM and SIGHUP end the job as Ctrl-C does: the nodes are stopped on the way out.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    combined = spark = None
    try:
        _say(f"formatting {args.voters} controllers in {base}")
        quorum.format()
        for i in quorum.node_ids:
            print(f"node {i}: {quorum.config_path(i)} -> {quorum.data_dir(i)}")

        _say("starting them: kafkawire server-start <config> (one process each; logs in node-N.log)")
        quorum.start_all()
        combined = start_combined_nodes(os.path.join(base, "combined"), args.brokers)   # the last step uses it
        spark = SparkStart(_repo_root(), wanted=not args.no_spark)
        view = quorum.wait_for_leader(60)
        print(f"leader: node {view.leader_id} in epoch {view.leader_epoch}")
        bootstrap = quorum.bootstrap_servers()

        _say("appending records: the active controller writes the bootstrap features and registers the "
             "controllers; a broker registers and is unfenced; CreateTopics creates demo-events")
        epoch, topic = _append_records(quorum, view.leader_id)
        print(f"broker 100 registered with broker epoch {epoch} and unfenced; topic demo-events created "
              f"with id {uuid_to_kafka(topic.topic_id)}, 3 partitions")
        time.sleep(1.0)     # a NoOpRecord or two, and the followers' fetches

        _say("the quorum")
        _show(["metadata-quorum", "--bootstrap-controller", bootstrap, "describe", "--status"])
        _show(["metadata-quorum", "--bootstrap-controller", bootstrap, "describe", "--replication"])

        old = view.leader_id
        _say(f"stopping the leader, node {old} (SIGTERM: it resigns and tells the others)")
        print(f"node {old} exited with {quorum.stop(old)}")
        view = quorum.wait_for_leader(60, exclude=(old,), min_epoch=view.leader_epoch + 1)
        others = ",".join(f"127.0.0.1:{quorum.ports[i]}" for i in quorum.node_ids if i != old)
        _show(["metadata-quorum", "--bootstrap-controller", others, "describe", "--status"])

        _say(f"the metadata log of the new leader, node {view.leader_id}")
        partition = quorum.metadata_partition_dir(view.leader_id)
        segments = sorted(f for f in os.listdir(partition) if f.endswith(".log"))
        _show(["dump-log", "--cluster-metadata-decoder", "--files", ",".join(os.path.join(partition, f)
                                                                            for f in segments)])

        run_broker_step(combined, _say, spark)
        combined = None

        if args.foreground:
            quorum.start(old)
            _say(f"running in the foreground: bootstrap {bootstrap}; Ctrl-C stops every node")
            print(f"try: kcat -b 127.0.0.1:{quorum.ports[1]} -L\n"
                  f"     kcat -b 127.0.0.1:{quorum.ports[1]} -C -t __cluster_metadata -e\n"
                  f"     kafkawire metadata-quorum --bootstrap-controller {bootstrap} describe --replication",
                  flush=True)
            try:
                while quorum.running():
                    time.sleep(1)
            except KeyboardInterrupt:
                pass
        _say("stopping every node")
        quorum.stop_all()
        print(f"done; the data stays in {base}")
        return 0
    except KeyboardInterrupt:
        _say("interrupted: stopping every node")
        quorum.stop_all()
        print(f"the data stays in {base}")
        return 130
    except (QuorumError, RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"kafkawire main: {exc}", file=sys.stderr)
        for i in quorum.node_ids:
            tail = quorum.log_tail(i, 15)
            if tail:
                print(f"--- node-{i}.log (last lines)\n{tail}", file=sys.stderr)
        return 1
    finally:
        for i in quorum.node_ids:
            quorum.kill(i)
        if combined is not None:
            combined.kill()
        if spark is not None:
            spark.stop()
