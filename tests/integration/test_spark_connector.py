"""The pinned PySpark and the Kafka connector jars fetched by Maven read the real source cluster."""

import glob
import time

import pytest
from confluent_kafka import Producer

from devstack import kafka
from tests.conftest import ROOT

pytestmark = pytest.mark.integration

# Record times within the brokers' 7-day retention: older ones may be deleted before Spark
# reads them, whenever the broker's retention check happens to run.
RECENT = int(time.time() * 1000) - 60_000


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    jars = ",".join(sorted(glob.glob(str(ROOT / ".cache/jars/spark/*.jar"))))
    session = (
        SparkSession.builder.master("local[1]")
        .appName("isthmus-connector-check")
        .config("spark.jars", jars)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    yield session
    session.stop()


def test_spark_reads_records_with_offsets_headers_and_timestamps(spark, make_topic, topic_name):
    make_topic(kafka.SOURCE, topic_name, partitions=2)
    producer = Producer({"bootstrap.servers": kafka.SOURCE.bootstrap})
    for i in range(4):
        producer.produce(
            topic_name,
            key=f"k{i}".encode(),
            value=f"v{i}".encode(),
            partition=i % 2,
            headers=[("h", bytes([i]))],
            timestamp=RECENT + i,
        )
    assert producer.flush(30) == 0

    rows = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka.SOURCE.bootstrap)
        .option("subscribe", topic_name)
        .option("includeHeaders", "true")
        .load()
        .orderBy("partition", "offset")
        .collect()
    )
    assert [(r.partition, r.offset, r.key, r.value) for r in rows] == [
        (0, 0, b"k0", b"v0"),
        (0, 1, b"k2", b"v2"),
        (1, 0, b"k1", b"v1"),
        (1, 1, b"k3", b"v3"),
    ]
    assert [list(r.headers) for r in rows][0][0].value == bytes([0])
    assert [int(r.timestamp.timestamp() * 1000) for r in rows] == [
        RECENT,
        RECENT + 2,
        RECENT + 1,
        RECENT + 3,
    ]
