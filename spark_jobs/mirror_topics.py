"""A link's mirror topics as its runner (`link_runner`) knows them on the destination: each one's
id and partitions (learned when it joins the mirror set, grown as its source grows), and what a
copier needs to start each of their partitions (its stored offset runs, where it ends now, and
the first translation entry of one whose source starts above offset 0, stored before any copier
gets it). All of it asks the link's clusters, so it runs in the runner's thread only. Apart from
the runner's loop, hand-outs and reports; its clients are made by factories (the engine's
shared ones by default), so tests may give fakes."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from confluent_kafka import Producer

from infra.kafka_admin import KafkaAdmin
from infra.kafka_errors import KafkaAdminError
from infra.kafka_topics import TopicInfo

from . import planning, source_watch, translation
from .copier_clients import ProducerFactory

log = logging.getLogger("spark_jobs.link_runner")  # its lines are the runner's


class DestinationAdmin(Protocol):
    """What a runner asks the destination's admin client (`infra.kafka_admin.KafkaAdmin`)."""

    def describe_topics(self, names: list[str]) -> dict[str, TopicInfo]: ...
    def readable_offsets(
        self, partitions: list[tuple[str, int]], at: str = "latest"
    ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], str]]: ...
    def partition_counts(self, names: list[str]) -> dict[str, int]: ...
    def create_partitions(self, name: str, total: int) -> None: ...


class Destination:
    """A destination cluster's clients, shared by the links into it: an admin client and a
    reader of the offset translation, each made from the cluster's settings by a factory."""

    def __init__(
        self,
        config: dict[str, str],
        admin: Callable[[dict[str, str]], DestinationAdmin] = lambda c: KafkaAdmin(c, timeout=15),
        reader: Callable[[dict[str, str]], translation.Reader] = translation.Reader,
    ):
        self.admin = admin(config)
        self.reader = reader(config)
        self.lock = threading.Lock()  # the reader serves one runner at a time

    def runs(self, topic_ids: set[str]) -> dict[tuple[str, int], translation.Runs]:
        with self.lock:
            return self.reader.runs(topic_ids)

    def close(self) -> None:
        self.reader.close()


class MirrorTopics:
    """One link's mirror topics on its destination. `trouble` is the runner's: what went wrong
    here is noted in it, by step, until that step succeeds."""

    def __init__(
        self,
        name: str,
        config: dict[str, str],
        destination: Destination,
        watch: source_watch.Watcher,
        trouble: dict[str, str],
        producer: ProducerFactory = Producer,
    ):
        self.name, self.config = name, config
        self.destination, self.watch, self.trouble = destination, watch, trouble
        self.producer = producer  # for the first entries (`runs_for`)
        self.partitions: dict[str, int] = {}  # mirror -> partitions
        self.topic_ids: dict[str, str] = {}  # mirror -> its id on the destination
        self.electing = False  # partitions wait for their new leader: plan again soon

    def forget(self, gone: set[str]) -> None:
        """Mirrors that left the set."""
        for mirror in gone:
            self.partitions.pop(mirror, None)
            self.topic_ids.pop(mirror, None)
            self.trouble.pop(f"mirror {mirror}", None)

    def learn(self, mirrors: dict[str, str]) -> None:
        """Note the id and partitions of each mirror topic new to the set, from the
        destination, in one request; one it does not show is tried again at the next plan."""
        new = [m for m in mirrors if m not in self.topic_ids]
        if not new:
            return
        try:
            found = self.destination.admin.describe_topics(new)
        except KafkaAdminError as exc:  # copied once it is back
            found, why = {}, str(exc)
        else:
            why = "not on the destination (yet)"
        for mirror in new:
            info = found.get(mirror)
            if info is None:
                self.trouble[f"mirror {mirror}"] = f"mirror topic {mirror}: {why}"
                continue
            self.trouble.pop(f"mirror {mirror}", None)
            # A new mirror has its source's partitions, so its copy starts without waiting
            # for the source; partitions the source gains are added by `grow`.
            self.topic_ids[mirror] = info.topic_id
            self.partitions[mirror] = max(self.partitions.get(mirror, 0), info.partitions)

    def grow(self, mirrors: dict[str, str]) -> None:
        """Give each mirror topic the partitions its source has gained, before copying them."""
        # The source down: grown when it is back.
        grown = planning.grown(mirrors, self.watch.counts, self.partitions)
        if not grown:
            return
        try:
            mirrored = self.destination.admin.partition_counts(list(grown))
        except KafkaAdminError as exc:  # grown at a later loop
            self.trouble["growth"] = f"cannot read the mirror topics' partitions: {exc}"
            return
        problems = []
        for mirror, wanted in grown.items():
            if wanted > mirrored[mirror]:
                try:
                    self.destination.admin.create_partitions(mirror, wanted)
                except KafkaAdminError as exc:
                    problems.append(f"cannot grow mirror topic {mirror} to {wanted}: {exc}")
                    continue
                log.info(
                    "Link %s: grew mirror topic %s from %d to %d partitions, as its source",
                    self.name,
                    mirror,
                    mirrored[mirror],
                    wanted,
                )
            self.partitions[mirror] = max(wanted, mirrored[mirror])
        if problems:
            self.trouble["growth"] = "; ".join(problems)
        else:
            self.trouble.pop("growth", None)

    def entries_for(
        self, idents: list[planning.Ident], mirrors: dict[str, str]
    ) -> tuple[dict[planning.Ident, planning.Entry], bool]:
        """What a copier needs to start copying each mirror partition (its source topic and
        stored offset runs); False when they cannot be read yet (then none starts, and the
        next loop tries again)."""
        began = time.monotonic()
        try:
            runs, waiting = self.runs_for(idents, mirrors)
        except (KafkaAdminError, translation.StoreFailed, RuntimeError) as exc:
            # The source or the destination down, say.
            self.trouble["start"] = f"cannot start {len(idents)} partition(s) yet: {exc}"
            log.warning("Link %s: %s", self.name, self.trouble["start"])
            return {}, False
        self.electing = bool(waiting)
        if waiting:
            # New partitions whose leader is not elected yet: the others start now, these at
            # the next loop.
            (mirror, partition), why = min(waiting.items())
            self.trouble["start"] = (
                f"{len(waiting)} partition(s) cannot start yet ({mirror}[{partition}]: {why})"
            )
        else:
            self.trouble.pop("start", None)
        idents = [i for i in idents if (i[0], i[2]) not in waiting]
        if idents:
            log.info(
                "Link %s: handing out %d partition(s) of %d topic(s) (prepared in %.2f s)",
                self.name,
                len(idents),
                len({m for m, _, _ in idents}),
                time.monotonic() - began,
            )
        return {
            (mirror, topic_id, p): {
                "mirror": mirror,
                "source": mirrors[mirror],
                "topic_id": topic_id,
                "partition": p,
                "runs": [[e.source, e.destination] for e in runs[mirror, topic_id, p].entries],
            }
            for mirror, topic_id, p in idents
        }, not waiting

    def runs_for(
        self, idents: list[planning.Ident], mirrors: dict[str, str]
    ) -> tuple[dict[planning.Ident, translation.Runs], dict[tuple[str, int], str]]:
        """The stored offset runs of partitions about to start, and why each (mirror,
        partition) whose mirror partition has no leader yet cannot start now. A partition with
        nothing copied yet whose source starts above offset 0 gets its first entry now, so its
        lag and translation are right before its first record."""
        stored = self.destination.runs({i[1] for i in idents})
        ends, waiting = self.destination.admin.readable_offsets([(m, p) for m, _, p in idents])
        idents = [i for i in idents if (i[0], i[2]) in ends]
        runs, pins = {}, []
        fresh = [i for i in idents if ends[i[0], i[2]] == 0 and not stored.get((i[1], i[2]))]
        if fresh and (problem := self.watch.problem()):  # asking would hold the loop
            raise KafkaAdminError(f"the source cluster does not answer: {problem}")
        starts = self.watch.admin.offsets([(mirrors[m], p) for m, _, p in fresh], "earliest")
        for mirror, topic_id, p in idents:
            found = stored.get((topic_id, p), translation.Runs())
            start = starts.get((mirrors[mirror], p), 0)
            if start > 0:
                found.add(translation.Entry(start, 0))
                pins.append((topic_id, p, translation.Entry(start, 0)))
            runs[mirror, topic_id, p] = found
        translation.store(self.config, pins, self.producer)
        return runs, waiting
