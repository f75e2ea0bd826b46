"""Throughput, latency and memory benchmarks of the Isthmus link stream against Apache Kafka's
MirrorMaker 2 and the raw client limit. Run with `make bench` (or `python -m bench.run --help`).
"""
