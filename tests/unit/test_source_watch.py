"""The engine's watch of a source cluster, shared by the links that read it: one round reads
every link's topics in two requests, and each link sees (and is woken for) only its own."""

from __future__ import annotations

import contextlib
import threading
import time
from types import SimpleNamespace

from infra.kafka_errors import KafkaAdminError, Unreachable
from spark_jobs import source_watch


class Source:
    """What a source's admin answers: topics and high watermarks, and the requests it got."""

    def __init__(self, topics: dict[str, int]):
        self.topics = topics
        self.marks: dict[tuple[str, int], int] = {}
        self.requests: list[tuple[str, list]] = []
        self.down = False

    def describe_topics(self, names):
        names = list(names)
        self.requests.append(("describe", names))
        if self.down:
            raise Unreachable("the source does not answer")
        if "refused" in names:
            raise KafkaAdminError("the source refuses topic 'refused'")
        return {n: SimpleNamespace(partitions=self.topics[n]) for n in names if n in self.topics}

    def offsets(self, partitions):
        partitions = list(partitions)
        self.requests.append(("offsets", partitions))
        return {tp: self.marks.get(tp, 0) for tp in partitions}


def until(check, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.01)


@contextlib.contextmanager
def watching(admin: Source):
    watch = source_watch.SourceWatch(admin)
    try:
        yield watch
    finally:
        watch.stop()


def test_links_on_one_source_share_each_round_and_see_only_their_own_topics():
    admin = Source({"a": 2, "b": 1})
    with watching(admin) as watch:
        woken_a, woken_b = threading.Event(), threading.Event()
        first, second = watch.join(woken_a), watch.join(woken_b)
        first.watch(["a"], [("a", 0), ("a", 1)])
        second.watch(["b"], [("b", 0)])
        until(lambda: first.counts and second.counts)
        assert first.counts == {"a": 2} and second.counts == {"b": 1}
        assert set(second.high_watermarks) == {("b", 0)}
        assert woken_a.is_set() and woken_b.is_set()

        admin.requests.clear()
        first.changed.clear()
        second.changed.clear()
        admin.marks[("b", 0)] = 7
        watch.ask()
        until(lambda: second.changed.is_set())
        assert second.high_watermarks == {("b", 0): 7}
        assert not first.changed.is_set()  # nothing of its own changed
        # One round: one request of each kind for both links' topics.
        assert admin.requests[:2] == [
            ("describe", ["a", "b"]),
            ("offsets", [("a", 0), ("a", 1), ("b", 0)]),
        ]


def test_a_link_that_left_is_not_read_and_an_empty_watch_asks_nothing():
    admin = Source({"a": 1, "b": 1})
    with watching(admin) as watch:
        first, second = watch.join(threading.Event()), watch.join(threading.Event())
        first.watch(["a"], [("a", 0)])
        second.watch(["b"], [("b", 0)])
        until(lambda: first.counts and second.counts)
        second.leave()
        admin.requests.clear()
        watch.ask()
        until(lambda: admin.requests)
        assert admin.requests[0] == ("describe", ["a"])
        first.leave()
        time.sleep(0.1)  # a round in progress ends
        admin.requests.clear()
        watch.ask()
        time.sleep(0.2)
        assert admin.requests == []


def test_a_source_that_fails_its_reads_is_the_problem_of_every_link_on_it():
    admin = Source({"a": 1, "b": 1})
    admin.down = True
    with watching(admin) as watch:
        first, second = watch.join(threading.Event()), watch.join(threading.Event())
        first.watch(["a"], [("a", 0)])
        second.watch(["b"], [("b", 0)])
        until(lambda: first.problem() and second.problem())
        assert first.problem().endswith(": the source does not answer")
        assert first.problem() == second.problem()
        assert first.counts == {}
        # Asked once a round for both links, not once more for each (each read of a source
        # that does not answer waits its whole timeout).
        asked = [names for kind, names in admin.requests if kind == "describe"]
        assert asked and all(names == ["a", "b"] for names in asked)


def test_one_links_part_that_cannot_be_read_is_that_links_problem_alone():
    admin = Source({"a": 1, "refused": 1})
    with watching(admin) as watch:
        good, bad = watch.join(threading.Event()), watch.join(threading.Event())
        good.watch(["a"], [("a", 0)])
        bad.watch(["refused"], [("refused", 0)])
        until(lambda: good.counts and bad.problem())
        assert good.problem() == "" and good.counts == {"a": 1}
        assert bad.problem().endswith(": the source refuses topic 'refused'")  # its own read's
