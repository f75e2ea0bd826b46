"""Every page of the console fits its window at a desktop's width (1280 px) and a phone's
(390 px): nothing stretches a page, no ordinary word is broken mid-word (names may break), and
on a phone a table wider than the screen scrolls inside itself with its first column pinned and
a shadow at its edge that says more is there. And no page does what its Content-Security-Policy
refuses (an inline script or handler), which Chromium reports on the console."""

import pytest
from django.conf import settings
from playwright.sync_api import expect

from replication.governance import audit
from replication.topics.mirrors import create_mirror
from tests.url_routes import console_routes, url

pytestmark = pytest.mark.e2e

WIDTHS = (1280, 390)
# Not pages: signing out and on (they go elsewhere), the health check and the downloads.
NOT_PAGES = {
    "logout",
    "sign-on",
    "sign-on-done",
    "healthz",
    "audit-export",
    "link-filters-export",
    "mirror-quarantine-json",
    "mirror-quarantine-csv",
}

OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"
# What reaches furthest right, leaving out what scrolls inside a box of its own.
WIDEST = """[...document.querySelectorAll('body *')]
    .filter(e => ![...document.querySelectorAll('body *')].some(box => box !== e
      && box.contains(e) && ['auto', 'scroll', 'hidden'].includes(getComputedStyle(box).overflowX)))
    .map(e => [Math.round(e.getBoundingClientRect().right), e.tagName, e.className, e.id])
    .sort((a, b) => b[0] - a[0]).slice(0, 5)"""
# Words (letters only, 4 to 30 of them) laid out on more than one line, outside names.
BROKEN_WORDS = """() => {
  const broken = [];
  const names = 'a, code, pre, h1, h2, svg, .target, script, style, textarea, select, option';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, parent = node.parentElement;
    if (!parent || parent.closest(names)) continue;
    for (const m of node.data.matchAll(/(?<![A-Za-z])[A-Za-z]{4,30}(?![A-Za-z])/g)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const lines = new Set([...range.getClientRects()].filter(r => r.width > 0)
        .map(r => Math.round(r.top)));
      if (lines.size > 1) broken.push(`${m[0]} in ${parent.tagName} ${parent.className}`);
    }
  }
  return broken.slice(0, 10);
}"""
# Tables wider than their box that do not pin their first column or show the cue.
UNCUED_TABLES = """() => [...document.querySelectorAll('.table')]
  .filter(t => t.scrollWidth > t.clientWidth + 1)
  .filter(t => {
    const first = t.querySelector('td:first-child, th:first-child');
    return !first || getComputedStyle(first).position !== 'sticky'
      || !getComputedStyle(t).backgroundImage.includes('radial-gradient');
  })
  .map(t => t.id || t.className)"""


def _problems(page, where: str, width: int) -> list[str]:
    found = []
    if (over := page.evaluate(OVERFLOW)) > 0:
        found.append(f"{where}: {over} px too wide: {page.evaluate(WIDEST)}")
    if broken := page.evaluate(BROKEN_WORDS):
        found.append(f"{where}: words broken mid-word: {broken}")
    if width < 760 and (uncued := page.evaluate(UNCUED_TABLES)):
        found.append(f"{where}: tables scroll with no pinned column or cue: {uncued}")
    return found


def test_every_page_fits_a_desktop_and_a_phone_without_broken_words_or_refused_scripts(
    login, live_server, world, make_link, make_topic, topic_name
):
    from devstack import kafka

    # The longest link name allowed, beside the world's objects.
    long_topic = make_topic(kafka.SOURCE, f"{topic_name}-long")
    create_mirror(
        audit.Actor.system("tests"),
        make_link({"cluster.link.paused": "true"}, name="l" * 200),
        long_topic,
    )
    page = login("admin")
    refused = []
    page.on(
        "console",
        lambda m: refused.append(f"{page.url}: {m.text}") if "Content Security" in m.text else None,
    )
    paths = sorted(
        {
            url(route, world.values(route))
            for route in console_routes()
            if route.name not in NOT_PAGES
        }
    )
    problems = []
    for path in paths:
        # Each page is loaded once and laid out at each width: a page sets nothing by its
        # width at load but what fold.js folds, and those are loaded again (a walk 35 % shorter).
        page.set_viewport_size({"width": WIDTHS[0], "height": 900})
        page.goto(f"{live_server.url}{path}")
        if not page.locator("link[rel=stylesheet]").count():
            continue  # a fragment for HTMX to place in a page, not a page
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            if width != WIDTHS[0] and page.locator("details[data-fold-narrow]").count():
                page.reload()
            problems += _problems(page, f"{path} at {width} px", width)
    assert not problems, f"{len(problems)} of {len(paths) * len(WIDTHS)} pages:\n" + "\n".join(
        problems
    )
    assert not refused, "The Content-Security-Policy refused:\n" + "\n".join(refused)


def test_the_sign_in_page_fits_too(page, live_server):
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"{live_server.url}/login/")
        assert not _problems(page, f"/login/ at {width} px", width)


def test_on_a_phone_tables_show_state_and_lag_first_and_the_audit_filters_fold(
    login, live_server, world
):
    """The partition table's lag was off-screen at a phone's width; the audit filters filled
    a phone's screen and, on a desktop, a long action ran over its neighbour. And the API
    reference draws the API in a browser."""
    page = login("admin")
    page.set_viewport_size({"width": 390, "height": 800})
    mirror = world.mirror
    page.goto(f"{live_server.url}/mirrors/{mirror.destination.name}/{mirror.mirror_topic}/")
    for column in ("State", "Lag"):
        box = page.locator("#partitions thead th", has_text=column).first.bounding_box()
        assert box and box["x"] + box["width"] <= 390, f"{column} is off-screen: {box}"
    page.goto(f"{live_server.url}/audit/")
    assert not page.locator("#audit-filters").evaluate("d => d.open")
    page.locator("#audit-filters summary").click()
    assert page.locator("#id_action").is_visible()

    page.set_viewport_size({"width": 1280, "height": 800})
    # The API reference: Swagger UI, from the console's own files, draws the API's document.
    page.goto(f"{live_server.url}/api/")
    # Drawing the whole document takes Swagger UI seconds of CPU: more than Playwright's 5 s
    # default on 2 cores loaded by the suite (it drew it within a second of missing it).
    drawn = 30_000
    expect(page.locator("#swagger-ui .info .title")).to_contain_text("Isthmus API", timeout=drawn)
    expect(page.locator("#swagger-ui .opblock").first).to_be_visible(timeout=drawn)
    shots = settings.VAR_DIR / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "api-reference.png"))  # the docs show it
    page.goto(f"{live_server.url}/audit/")
    assert page.locator("#audit-filters").evaluate("d => d.open")
    fields = page.locator("#audit-filters input:not([type=checkbox]), #audit-filters select")
    boxes = [field.bounding_box() for field in fields.all()]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = (
                a["x"] + a["width"] <= b["x"] + 1
                or b["x"] + b["width"] <= a["x"] + 1
                or a["y"] + a["height"] <= b["y"] + 1
                or b["y"] + b["height"] <= a["y"] + 1
            )
            assert apart, f"filters overlap: {a} {b}"
