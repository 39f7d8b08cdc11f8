"""The web viewer in a real headless Chromium against a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from history.server.app import create_app
from history.server.run import serve_in_thread
from journal import MemoryEventStore, RunEvent
from tests.http_data import XSS, seed_conversation, turn_events

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
TOKEN = "viewer-secret"
TURNS, MARKER_AFTER, REMOVAL_AFTER, PAGE = 6, 3, 5, 8


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Debian Chromium driven by Playwright (skipped only outside CI)."""
    if not os.path.exists(CHROMIUM):
        reason = f"{CHROMIUM} is not installed (apt-get install chromium chromium-driver)"
        if os.environ.get("RUNJOURNAL_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@contextmanager
def recording_page(browser: Any, width: int = 1000, height: int = 760) -> Iterator[Any]:
    """A fresh page that records every dialog (an alert would mean injected script ran)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    tab = context.new_page()
    tab.dialogs = []
    tab.on("dialog", lambda dialog: (tab.dialogs.append(dialog.message), dialog.dismiss()))
    try:
        yield tab
    finally:
        context.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The module's Chromium."""
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def seeded() -> Iterator[tuple[MemoryEventStore, list[RunEvent]]]:
    """A store with a 6-turn conversation compacted after turn 3, with hostile markup."""
    store = MemoryEventStore()
    events = seed_conversation(
        store,
        "conv",
        turns=TURNS,
        marker_after=MARKER_AFTER,
        first_question=f"Hello {XSS} there",
        summary=f"Earlier turns were condensed {XSS} safely.",
        removal_after=REMOVAL_AFTER,
    )
    yield store, events
    store.close()


@pytest.fixture(scope="module")
def base_url(seeded: tuple[MemoryEventStore, list[RunEvent]]) -> Iterator[str]:
    """The viewer served by uvicorn from a background thread."""
    with serve_in_thread(create_app(seeded[0])) as url:
        yield url


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh recording page."""
    with recording_page(browser) as tab:
        yield tab


def _timeline_seqs(events: list[RunEvent]) -> list[int]:
    return [  # messages, removals (category message) and summaries
        e.seq for e in events if e.category == "message" or e.event_type == "middleware:summarize"
    ]


def _shown_seqs(page: Any) -> list[int]:
    return [
        int(s)
        for s in page.eval_on_selector_all(
            ".timeline > .item", "els => els.map(e => e.dataset.seq)"
        )
    ]


def after_frames(page: Any, count: int = 2) -> None:
    """Return once the page rendered ``count`` frames (its intersection observers ran)."""
    page.evaluate(
        "count => new Promise(done => {"
        " const step = left => left ? requestAnimationFrame(() => step(left - 1)) : done();"
        " step(count); })",
        count,
    )


def scroll_until(page: Any, done: Callable[[], bool], *, to_top: bool, goal: str) -> None:
    """Scroll to the top (or the bottom) as a reader does until ``done()``: first all the way
    to the other end, then back, a rendered frame apart each time, so the load control leaves
    the screen and comes back whatever the header's height (an observer reports only changes).
    """
    deadline = time.monotonic() + 30  # a loaded machine takes longer per page, not forever
    while time.monotonic() < deadline:
        if done():
            return
        for bottom in (to_top, not to_top):  # away, then to the end
            page.evaluate(
                "bottom => window.scrollTo(0, bottom ? document.scrollingElement.scrollHeight : 0)",
                bottom,
            )
            after_frames(page)
        page.wait_for_timeout(100)
    notice = page.locator(".notice.error:not([hidden])").all_inner_texts()
    shown = len(_shown_seqs(page))
    raise AssertionError(f"scrolling did not reach {goal}: {shown} items shown; notices: {notice}")


def _scroll_back_until(page: Any, count: int) -> None:
    scroll_until(
        page,
        lambda: len(_shown_seqs(page)) >= count,
        to_top=True,
        goal=f"{count} items",
    )


def test_thread_page_shows_pages_marker_and_inert_markup(
    page: Any, base_url: str, seeded: tuple[MemoryEventStore, list[RunEvent]]
) -> None:
    """Newest page first, older pages by scrolling back, the condensed card in place, text only."""
    expected = _timeline_seqs(seeded[1])
    page.goto(f"{base_url}/threads/conv?limit={PAGE}")
    page.wait_for_selector(".timeline > .item")
    first = _shown_seqs(page)
    assert first == expected[-len(first) :] and len(first) < len(expected)

    _scroll_back_until(page, len(expected))
    assert _shown_seqs(page) == expected
    assert page.locator(".load-older").is_hidden()

    marker_seq = next(e.seq for e in seeded[1] if e.event_type == "middleware:summarize")
    marker = page.locator(f'.item.marker[data-seq="{marker_seq}"]')
    assert (
        marker.locator(".condensed-title").inner_text() == f"{MARKER_AFTER * 4} messages condensed"
    )
    summary = marker.locator(".summary-text")
    assert summary.is_hidden()
    marker.locator("summary").click()
    assert summary.is_visible()
    assert summary.inner_text() == f"Earlier turns were condensed {XSS} safely."

    removal_seq = next(e.seq for e in seeded[1] if e.event_type == "message.remove")
    removal = page.locator(f'.item.marker[data-seq="{removal_seq}"]')
    assert removal.locator(".condensed-title").inner_text() == "4 messages removed"
    removal.locator("summary").click()
    removed = [f"{kind}{REMOVAL_AFTER}" for kind in "hatb"]
    assert removal.locator(".summary-text").inner_text() == "Removed: " + ", ".join(removed)

    human = page.locator(".item.human .text").first
    assert human.inner_text() == f"Hello {XSS} there"
    assert page.locator("img").count() == 0
    assert page.dialogs == []
    assert page.locator("details.tool-call[open], details.tool-result[open]").count() == 0
    assert page.locator(".item.tool").count() == TURNS

    page.locator(".item.ai details.tool-call").nth(MARKER_AFTER).locator("summary").click()
    marker.scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -120)")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "viewer.png"))
    assert (ARTIFACTS / "viewer.png").stat().st_size > 10_000


def test_thread_page_follows_new_events_live(
    page: Any, base_url: str, seeded: tuple[MemoryEventStore, list[RunEvent]]
) -> None:
    """Messages appended while the page is open appear at the bottom without a reload, as
    inert text; deleting the thread is reported."""
    store = seeded[0]
    seed_conversation(store, "live", turns=2)
    page.goto(f"{base_url}/threads/live?limit={PAGE}")
    page.wait_for_selector(".live.on")
    turn = 3
    store.append(turn_events("live", turn, question=f"Live question {XSS}", result=XSS))
    page.wait_for_function(
        "n => [...document.querySelectorAll('.item.ai .text')].some(e => e.textContent === n)",
        arg=f"Answer {turn}.",
        timeout=10_000,
    )
    seqs = _shown_seqs(page)
    assert seqs == sorted(set(seqs))
    assert page.locator(".item.human .text").last.inner_text() == f"Live question {XSS}"
    result = page.locator(".item.tool").last
    result.locator("summary").click()
    assert result.locator("pre").inner_text() == XSS
    call = page.locator(".item.ai details.tool-call").last
    assert call.locator("pre").is_hidden()
    call.locator("summary").click()
    assert '"q": 3' in call.locator("pre").inner_text()
    assert page.locator("img").count() == 0 and page.dialogs == []

    store.delete_thread("live")
    page.wait_for_selector(".live.off", timeout=10_000)
    assert page.locator(".live").inner_text() == "thread deleted"


def test_thread_list_links_to_threads(page: Any, base_url: str) -> None:
    """The front page lists the threads and opens one on click."""
    page.goto(base_url + "/")
    link = page.locator("a.thread-link", has_text="conv")
    link.click()
    page.wait_for_url("**/threads/conv")
    page.wait_for_selector(".timeline > .item")


def test_thread_ids_with_url_characters_open_and_a_malformed_address_says_so(
    page: Any, base_url: str, seeded: tuple[MemoryEventStore, list[RunEvent]]
) -> None:
    """Ids with / % ? # open from the list; a malformed %-escape is a notice, not a hang."""
    for thread_id in ("team/a%2Fb", "100% sure? #1"):
        seed_conversation(seeded[0], thread_id, turns=1)
        page.goto(base_url + "/")
        page.locator("a.thread-link", has_text=thread_id).click()
        page.wait_for_selector(".timeline > .item")
        assert page.locator("#crumb").inner_text() == thread_id
        seeded[0].delete_thread(thread_id)
    page.goto(base_url + "/threads/100%")
    page.wait_for_selector(".notice.error")
    assert "malformed" in page.locator(".notice.error").inner_text()


def test_viewer_works_when_the_app_is_mounted_under_a_path(
    browser: Any, seeded: tuple[MemoryEventStore, list[RunEvent]]
) -> None:
    """Under ``parent.mount("/journal", create_app(store))`` the list, links and timeline work."""
    from fastapi import FastAPI

    parent = FastAPI()
    parent.mount("/journal", create_app(seeded[0]))
    context = browser.new_context()
    page = context.new_page()
    try:
        with serve_in_thread(parent) as url:
            page.goto(url + "/journal/")
            page.locator("a.thread-link", has_text="conv").click()
            page.wait_for_url("**/journal/threads/conv")
            page.wait_for_selector(".timeline > .item")
            page.wait_for_selector(".live.on")
            assert page.locator("#crumb").inner_text() == "conv"
            # the views that load their own modules and routes work there too
            page.locator(".item.ai .ctx-btn").last.click()  # hand-built: no recorded call
            notice = page.locator(".drawer .notice.error")
            notice.wait_for()
            assert "no model call is recorded" in notice.inner_text()
            page.locator(".drawer .close").click()
            page.locator(".item.ai .run-btn").last.click()
            page.wait_for_selector(".wf-row.model")
            assert page.url.startswith(url + "/journal/threads/conv#run-")
    finally:
        context.close()


def test_viewer_with_token_from_fragment_or_prompt(browser: Any) -> None:
    """A token-protected server: the fragment's token, or the prompt's, unlocks the viewer."""
    store = MemoryEventStore()
    seed_conversation(store, "locked", turns=1)
    context = browser.new_context()
    page = context.new_page()
    try:
        with serve_in_thread(create_app(store, token=TOKEN)) as url:
            page.goto(url + "/threads/locked")
            page.wait_for_selector(".token-form")
            page.fill(".token-form input", TOKEN)
            page.click(".token-form button")
            page.wait_for_selector(".item.ai")
            page.wait_for_selector(".live.on")

            fresh = context.new_page()
            fresh.goto(url + f"/#token={TOKEN}")
            fresh.wait_for_selector("a.thread-link")
            assert "token" not in fresh.url
    finally:
        context.close()
        store.close()
