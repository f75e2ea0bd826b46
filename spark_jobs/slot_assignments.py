"""What a link's runner (`link_runner`) hands the engine's slots: its assignment in each slot's
hash (`control.slot_assignment_key`, by link), encoded again only when it changed, written with
a wake of the slots when one did, and taken back when the link leaves. Apart from the runner,
which decides what each slot holds (`planning`); this is only how that reaches Redis."""

from __future__ import annotations

import json
import logging

import redis

from . import control, payloads, planning

log = logging.getLogger("spark_jobs.link_runner")  # its lines are the runner's

# What a slot's assignment is planned for: (slot epoch, plan version, spec digest, incarnation).
Basis = tuple[str, int, str, int]


class Handout:
    """One link's assignments in the slots' hashes. `trouble` is its runner's: Redis not
    answering a hand-out is noted there until one is sent."""

    def __init__(self, engine_id: str, link_id: str, name: str, trouble: dict[str, str]):
        self.engine_id, self.link_id, self.name, self.trouble = engine_id, link_id, name, trouble
        self.handed_out: dict[int, str] = {}  # the assignments last published, by slot
        # Each slot's assignment as last encoded: what it was made of, and the text (`encoded`).
        self.encodings: dict[int, tuple[Basis, dict[planning.Ident, planning.Entry], str]] = {}

    def queue(
        self,
        pipe: redis.client.Pipeline,
        assigned: planning.Holdings,
        epochs: list[str],
        plan: tuple[int, str, int],
    ) -> dict[int, str]:
        """Add each started slot's partitions to `pipe`, and a wake when they changed; what
        is handed out once it is sent. `plan`: its version, the spec's digest, incarnation."""
        assignments = {
            slot: self.encoded(slot, held, (epochs[slot], *plan))
            for slot, held in enumerate(assigned)
            if epochs[slot]  # else the slot has not started yet
        }
        for slot, assignment in assignments.items():
            pipe.hset(control.slot_assignment_key(self.engine_id, slot), self.link_id, assignment)
        if assignments != self.handed_out:
            pipe.publish(control.slots_wake_channel(self.engine_id), b"")
        return assignments

    def encoded(self, slot: int, held: dict[planning.Ident, planning.Entry], basis: Basis) -> str:
        """A slot's assignment as sent, encoded again only when it changed (at 5,000
        partitions a slot, encoding both each beat was most of an idle driver's work). `held`
        is replaced, or the plan's version raised, whenever it changes."""
        last = self.encodings.get(slot)
        if last is None or last[0] != basis or last[1] is not held:
            assignment: payloads.Assignment = {
                "epoch": basis[0],
                "version": basis[1],
                "digest": basis[2],
                "incarnation": basis[3],
                "partitions": list(held.values()),
            }
            last = self.encodings[slot] = (basis, held, json.dumps(assignment))
        return last[2]

    def send(self, pipe: redis.client.Pipeline, handing: dict[int, str] | None) -> bool:
        """Send what `pipe` holds; `handing`: the assignments in it. Whether it was sent."""
        try:
            pipe.execute()
        except redis.RedisError as exc:
            log.warning("Link %s: cannot report to Redis: %s", self.name, exc)
            if handing is not None:
                self.trouble["redis"] = f"Redis does not answer: {exc}"
            return False
        if handing is not None:
            self.trouble.pop("redis", None)
            self.handed_out = handing
        return True

    def take_back(self, client: redis.Redis, slots: int) -> None:
        """The link left: its assignments out of every slot's hash, and the slots woken."""
        try:
            pipe = client.pipeline(transaction=False)
            for slot in range(slots):
                pipe.hdel(control.slot_assignment_key(self.engine_id, slot), self.link_id)
            pipe.publish(control.slots_wake_channel(self.engine_id), b"")
            pipe.execute()
        except redis.RedisError:
            log.warning(
                "Link %s: cannot take its partitions back: Redis does not answer", self.name
            )
