"""Benchmarks of Isthmus's mirror engine against Apache Kafka's MirrorMaker 2 and the raw
client limit: catch-up throughput and CPU per GiB, many partitions, latency at several rates, an
idle link's CPU, time to a new mirror's first record, and memory. Run with `make bench` (or
`python -m bench.run --help`).
"""
