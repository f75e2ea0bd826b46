"""An admin client freed by the garbage collector on librdkafka's own thread does not abort the
process: it is kept, and destroyed by the next Python thread that asks. (Kafka's plain one
aborts it, which cost `make test` an xdist worker at a time.) No broker: the request fails
against a closed port, and its answer runs on the client's background thread."""

import subprocess
import sys
import time

# An admin client in a reference cycle, dropped while its request is out, and the collector
# made to run at the first allocation: the one of the answer, on the background thread.
DROPPED_IN_A_CYCLE = """
import gc, sys, time
from confluent_kafka import admin
from infra import admin_client

kind = admin.AdminClient if sys.argv[1] == "plain" else admin_client.AdminClient

class Holder:
    pass

def drop():
    holder = Holder()
    holder.itself = holder
    holder.client = kind({"bootstrap.servers": "127.0.0.1:1", "log_level": 0})
    holder.answer = holder.client.describe_cluster(request_timeout=0.5)

drop()
print("dropped", flush=True)
gc.set_threshold(1, 1, 1)
time.sleep(2.5)
gc.set_threshold(700, 10, 10)
print("kept", len(admin_client._kept), flush=True)
admin_client.destroy_kept()
print("left", len(admin_client._kept), flush=True)
"""


def _run(kind: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", DROPPED_IN_A_CYCLE, kind],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_an_admin_client_freed_on_librdkafkas_thread_is_destroyed_on_ours():
    run = _run("ours")

    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n") == ["dropped", "kept 1", "left 0", ""]


def test_the_plain_admin_client_freed_there_aborts_the_process():
    """Why the one above exists: if librdkafka stops aborting, the guard can go."""
    run = _run("plain")

    assert run.returncode == -6  # SIGABRT
    assert "rd_kafka_destroy() called from librdkafka owned thread" in run.stderr


def test_a_consumer_group_request_never_times_out_inside_librdkafka():
    """librdkafka aborts the process when a group request times out inside it just as its
    coordinator is found (librdkafka#4605; 10 threads with short timeouts on a loaded broker
    aborted within a second): a caller's timeout is not handed to it, the caller gives up on
    the future instead. Here a closed port: a timeout of 1 ms, handed over, ends it at once."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    from infra.admin_client import AdminClient

    client = AdminClient({"bootstrap.servers": "127.0.0.1:1", "log_level": 0})
    asked = [
        *client.describe_consumer_groups(["g"], request_timeout=0.001).values(),
        *client.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions("g")], request_timeout=0.001
        ).values(),
        *client.delete_consumer_groups(["g"], request_timeout=0.001).values(),
    ]
    time.sleep(1)

    assert not any(future.done() for future in asked)
    client.__exit__(None, None, None)  # its requests end with it, on this thread
