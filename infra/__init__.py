"""Adapters to the outside world that know nothing of links, mirrors or Django: the Kafka admin
client, process handling, the secret file. Every other package may import this one; it imports
none of them (see docs/architecture.md)."""
