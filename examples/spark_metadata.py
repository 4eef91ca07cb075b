"""What a KRaft data directory's metadata log holds, and the quorum's leader changes, with Spark.

    .venv/bin/kafkawire main --data-dir demo          # leaves a quorum's data in demo/
    .venv/bin/python examples/spark_metadata.py demo/node-1

Needs the spark extra (`pip install -e '.[spark]'`, included in `.[dev]`) and Java 17.
"""
import os
import sys

os.environ["PYSPARK_PYTHON"] = sys.executable          # Spark's Python workers must import kafkawire
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def report(spark, data_dir: str):
    """(record counts by type, leader changes) as two DataFrames."""
    from pyspark.sql import functions as F
    from kafkawire.spark import load, register
    register(spark)
    meta = (load(spark, data_dir,
                 decode="metadata",                    # recordType, recordVersion, record (JSON)
                 includeControl="true")                # LEADER_CHANGE and other control records
            .where("topic = '__cluster_metadata'"))
    counts = meta.groupBy("recordType").count().orderBy(F.desc("count"), "recordType")
    leaders = (meta.where("controlType = 'LEADER_CHANGE'")
               .select("offset", "timestamp", "leaderEpoch",
                       F.get_json_object("record", "$.leaderId").cast("int").alias("leaderId"))
               .orderBy("offset"))
    return counts, leaders


def main(data_dir: str) -> int:
    if not os.path.isdir(data_dir):
        print(f"spark_metadata: {data_dir}: no such directory (give a KRaft data directory, "
              f"e.g. demo/node-1 after `kafkawire main --data-dir demo`)", file=sys.stderr)
        return 1
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    counts, leaders = report(spark, data_dir)
    counts.show(truncate=False)
    leaders.show(truncate=False)
    spark.stop()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(1)
    sys.exit(main(sys.argv[1]))
