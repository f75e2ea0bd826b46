"""ISTHMUS_SPARK_CONF: extra Spark settings for the mirror engine, parsed by the settings and
passed by the launcher as `--conf` after its own. (A standalone cluster running a link with
them is tests/integration/test_spark_standalone.py.)"""

import zipfile
from pathlib import Path

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
        "work_dir": str(tmp_path),
        "source": {"bootstrap.servers": "s:9092", "sasl.password": "secret-1"},
    }
    argv, env = launch.submit_command(
        spec,
        master="yarn",
        python="/venv/bin/python",
        conf={"spark.pyspark.python": "./env/bin/python", "spark.cores.max": "2"},
    )
    assert _confs(argv) == [
        "spark.pyspark.python=/venv/bin/python",
        "spark.pyspark.driver.python=/venv/bin/python",
        f"spark.driver.extraJavaOptions={launch.DRIVER_JAVA_OPTIONS}",
        "spark.authenticate=true",
        "spark.network.crypto.enabled=true",
        "spark.pyspark.python=./env/bin/python",  # spark-submit keeps the last value
        "spark.cores.max=2",
    ]
    assert argv[-1].endswith("spark_jobs/engine.py")
    assert argv[argv.index("--master") + 1] == "yarn"
    assert not any("secret-1" in arg for arg in argv)  # the spec travels in the environment
    # The code executors get: the stream's packages, zipped by the launcher.
    with zipfile.ZipFile(argv[argv.index("--py-files") + 1]) as shipped:
        names = set(shipped.namelist())
    assert {"spark_jobs/copier.py", "infra/kafka_admin.py", "infra/__init__.py"} <= names


def _confs(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == "--conf"]


@pytest.mark.parametrize("master", ["local[*]", "local", "local[4]"])
def test_a_local_driver_listens_on_loopback_only_and_authenticates(tmp_path, master):
    argv, _ = launch.submit_command({"link_name": "l1", "work_dir": str(tmp_path)}, master=master)
    confs = _confs(argv)
    assert "spark.driver.bindAddress=127.0.0.1" in confs
    assert "spark.driver.host=127.0.0.1" in confs
    assert "spark.authenticate=true" in confs  # Spark makes the secret itself in local mode
    assert "--properties-file" not in argv


@pytest.mark.parametrize("master", ["yarn", "k8s://https://kube:6443"])
def test_on_yarn_and_kubernetes_spark_makes_the_secret_and_the_driver_is_reachable(
    tmp_path, master
):
    argv, _ = launch.submit_command({"link_name": "l1", "work_dir": str(tmp_path)}, master=master)
    confs = _confs(argv)
    assert {"spark.authenticate=true", "spark.network.crypto.enabled=true"} <= set(confs)
    assert not any(c.startswith("spark.driver.bindAddress") for c in confs)
    assert "--properties-file" not in argv


@pytest.mark.parametrize("master", ["spark://h:7077", "local-cluster[2,1,1024]"])
def test_a_standalone_master_without_the_shared_secret_is_refused_saying_what_to_set(
    tmp_path, master
):
    with pytest.raises(launch.LaunchRefused, match="set ISTHMUS_SPARK_AUTH_SECRET"):
        launch.submit_command({"link_name": "l1", "work_dir": str(tmp_path)}, master=master)


def test_the_shared_secret_reaches_spark_submit_in_an_owner_only_file_not_the_command_line(
    tmp_path,
):
    secret = "s3cr\\et=with:odd chars"
    argv, env = launch.submit_command(
        {"link_name": "l1", "work_dir": str(tmp_path)},
        master="spark://h:7077",
        auth_secret=secret,
    )
    assert not any(secret in arg for arg in argv)
    assert not any(secret in value for value in env.values())
    assert "spark.authenticate=true" in _confs(argv)
    assert "--load-spark-defaults" in argv  # the operator's spark-defaults.conf still counts
    secret_file = Path(argv[argv.index("--properties-file") + 1])
    assert secret_file.parent == tmp_path
    assert secret_file.stat().st_mode & 0o777 == 0o600
    properties = secret_file.read_text()
    assert properties == "spark.authenticate.secret=s3cr\\\\et=with:odd chars\n"
    # A later start rewrites it, with the new secret, still owner-only.
    secret_file.chmod(0o644)
    launch.submit_command(
        {"link_name": "l1", "work_dir": str(tmp_path)},
        master="spark://h:7077",
        auth_secret="other",
    )
    assert secret_file.read_text() == "spark.authenticate.secret=other\n"
    assert secret_file.stat().st_mode & 0o777 == 0o600


def test_a_secret_that_spans_lines_is_refused(tmp_path):
    with pytest.raises(launch.LaunchRefused, match="spans lines"):
        launch.submit_command(
            {"link_name": "l1", "work_dir": str(tmp_path)},
            master="spark://h:7077",
            auth_secret="a\nspark.other=1",
        )
