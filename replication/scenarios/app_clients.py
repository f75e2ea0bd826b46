"""An application for the `client-switchover` scenario: a producer and a consumer group, each a
process of its own (so a guided run's steps, run one at a time, find them running), connected
to a gateway, never restarted nor reconfigured. Each writes what it was told as JSON lines: the
producer every record acknowledged, the consumer every record read, with the time.

    python -m replication.scenarios.app_clients produce BOOTSTRAP TOPIC RATE OUT
    python -m replication.scenarios.app_clients consume BOOTSTRAP TOPIC GROUP OUT
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import time
from pathlib import Path
from typing import TextIO

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer

from infra.consuming import Consumed, take

# Back within a second of the gateway listening again; records held through a pause of two
# minutes (a cutover's, at most).
RECONNECT = {"reconnect.backoff.max.ms": 1000, "topic.metadata.refresh.interval.ms": 5000}
# The consumer's session: the least brokers take by default, so the member the switch cut off
# on the old cluster leaves its group there soon.
SESSION_MS = 6000

stopping = False


def _stop(signum: int, frame: object) -> None:
    global stopping
    stopping = True


def _write(out: TextIO, message: Message | Consumed) -> None:
    value = (message.value() or b"").decode(errors="replace")
    line = {"at": time.time(), "partition": message.partition(), "offset": message.offset()}
    out.write(json.dumps({**line, "value": value}) + "\n")
    out.flush()


def produce(bootstrap: str, topic: str, rate: float, out: TextIO) -> None:
    """Write "0", "1", ... at `rate` a second until stopped, then deliver what is held."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, **RECONNECT})

    def delivered(err: KafkaError | None, message: Message) -> None:
        if err is None:
            _write(out, message)
        else:
            out.write(json.dumps({"at": time.time(), "error": err.str()}) + "\n")
            out.flush()

    sent = 0
    began = time.monotonic()
    while not stopping:
        try:
            producer.produce(topic, str(sent).encode(), on_delivery=delivered)
            sent += 1
        except BufferError:
            pass
        time.sleep(max(0.0, began + sent / rate - time.monotonic()))  # `rate` a second
        producer.poll(0)
    producer.flush(120)


def consume(bootstrap: str, topic: str, group: str, out: TextIO) -> None:
    """Read the topic as `group` until stopped, committing after each batch."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": SESSION_MS,
            **RECONNECT,
        }
    )
    consumer.subscribe([topic])
    while not stopping:
        batch = [m for m in take(consumer, 500, 0.2) if m.error() is None]
        for message in batch:
            _write(out, message)
        if batch:  # a commit refused while the group moves is made after the next batch
            with contextlib.suppress(KafkaException):
                consumer.commit(asynchronous=False)
    consumer.close()


def read(path: Path) -> list[dict]:
    """What a client wrote so far (its last line may be half written: left out)."""
    found = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    return found


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _stop)
    kind, rest = argv[0], argv[1:]
    with open(rest[-1], "a") as out:
        if kind == "produce":
            produce(rest[0], rest[1], float(rest[2]), out)
        else:
            consume(rest[0], rest[1], rest[2], out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
