"""Isthmus's command-line tools, with Confluent's names, flags and output formats:
kafka-cluster-links, kafka-mirrors, kafka-replica-status and kafka-configs --cluster-link."""
