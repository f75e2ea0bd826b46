"""One producer process for the raw limit with the copier's own client library (librdkafka, via
confluent-kafka): writes N records of a size to a topic as fast as it can, then prints its
records/s from its first send to its last acknowledgement as one JSON line.

    python -m bench.rdproduce BOOTSTRAP TOPIC RECORDS RECORD_SIZE
"""

from __future__ import annotations

import json
import sys
import time

from confluent_kafka import Producer

# As perf.PRODUCER_PROPS for the Java perf tool (whose producer is idempotent by default).
SETTINGS = {
    "linger.ms": 5,
    "batch.size": 1048576,
    "acks": "all",
    "enable.idempotence": True,
    "queue.buffering.max.kbytes": 1048576,
}


def send(producer: Producer, topic: str, value: bytes) -> None:
    """Hand one record to the producer, waiting for room when its queue is full."""
    while True:
        try:
            producer.produce(topic, value)
            return
        except BufferError:  # the local queue is full: let it drain
            producer.poll(0.01)


def produce(bootstrap: str, topic: str, records: int, record_size: int) -> float:
    """Records per second, first send to last acknowledgement."""
    producer = Producer({"bootstrap.servers": bootstrap, **SETTINGS})
    value = b"x" * record_size
    began = time.monotonic()
    for _ in range(records):
        send(producer, topic, value)
    if producer.flush(120) != 0:
        raise RuntimeError(f"Could not write every record to {topic}")
    return records / (time.monotonic() - began)


def main(argv: list[str]) -> int:
    bootstrap, topic, records, record_size = argv
    rate = produce(bootstrap, topic, int(records), int(record_size))
    print(json.dumps({"records_per_sec": rate}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
