"""ISTHMUS_SPARK_CONF: extra Spark settings for link applications, parsed by the settings and
passed by the launcher as `--conf` after its own. (A standalone cluster running a link with
them is tests/integration/test_spark_standalone.py.)"""

import zipfile

import pytest
from django.core.exceptions import ImproperlyConfigured

from console.settings import spark_conf
from spark_jobs import launch


def test_spark_conf_is_key_value_pairs_separated_by_commas():
    assert spark_conf("") == {}
    assert spark_conf(
        " spark.cores.max=4 , spark.kubernetes.container.image=reg/isthmus:1.0,,"
        "spark.executor.extraJavaOptions=-Dx=y"
    ) == {
        "spark.cores.max": "4",
        "spark.kubernetes.container.image": "reg/isthmus:1.0",
        "spark.executor.extraJavaOptions": "-Dx=y",
    }


@pytest.mark.parametrize("text", ["spark.cores.max", "=4", "spark.cores.max=4,oops"])
def test_an_item_without_a_key_and_value_is_refused(text):
    with pytest.raises(ImproperlyConfigured, match="is not key=value"):
        spark_conf(text)


def test_the_launcher_passes_them_after_its_own_so_they_win(tmp_path):
    spec = {
        "link_name": "l1",
        "checkpoint_dir": str(tmp_path),
        "source": {"bootstrap.servers": "s:9092", "sasl.password": "secret-1"},
    }
    argv, env = launch.submit_command(
        spec,
        master="spark://h:7077",
        python="/venv/bin/python",
        conf={"spark.pyspark.python": "./env/bin/python", "spark.cores.max": "2"},
    )
    confs = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--conf"]
    assert confs == [
        "spark.pyspark.python=/venv/bin/python",
        "spark.pyspark.driver.python=/venv/bin/python",
        "spark.driver.extraJavaOptions=-Xms32m -XX:+UseSerialGC",
        "spark.pyspark.python=./env/bin/python",  # spark-submit keeps the last value
        "spark.cores.max=2",
    ]
    assert argv[-1].endswith("spark_jobs/link_stream.py")
    assert argv[argv.index("--master") + 1] == "spark://h:7077"
    assert not any("secret-1" in arg for arg in argv)  # the spec travels in the environment
    # The code executors get: the stream's packages, zipped by the launcher.
    with zipfile.ZipFile(argv[argv.index("--py-files") + 1]) as shipped:
        names = set(shipped.namelist())
    assert {"spark_jobs/copier.py", "infra/kafka_admin.py", "infra/__init__.py"} <= names
    assert launch.submit_command(spec, master="local[*]")[0].count("--conf") == 3
