"""The console's pages fit their window: a link with the longest name allowed does not stretch
a page, and on a phone's width (390 px) wide tables scroll inside themselves."""

import pytest

from replication import audit
from replication.mirrors import create_mirror

pytestmark = pytest.mark.e2e


def _overflow(page) -> int:
    """How far the page is wider than its window, in pixels."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def _widest(page) -> list:
    """The elements that reach furthest right, to say what stretched the page."""
    return page.evaluate(
        """[...document.querySelectorAll('body *')]
            .map(e => [Math.round(e.getBoundingClientRect().right), e.tagName, e.className, e.id])
            .sort((a, b) => b[0] - a[0]).slice(0, 5)"""
    )


def test_long_names_and_narrow_windows_do_not_stretch_the_pages(
    login, live_server, make_link, make_topic, topic_name
):
    from devstack import kafka

    make_topic(kafka.SOURCE, topic_name)
    link = make_link({"cluster.link.paused": "true"}, name="l" * 200)
    mirror = create_mirror(audit.Actor.system("tests"), link, topic_name)
    page = login("viewer")
    pages = [
        "/",
        "/links/",
        f"/links/destination/{link.name}/",
        "/mirrors/",
        f"/mirrors/destination/{mirror.mirror_topic}/",
        "/clusters/",
        "/scenarios/",
        "/audit/",
    ]
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        for path in pages:
            page.goto(f"{live_server.url}{path}")
            assert _overflow(page) <= 0, (
                f"{path} at {width} px is {_overflow(page)} px too wide: {_widest(page)}"
            )
