"""Browser windows that the tests of a file take in turn.

A new browser context and its first page cost Chromium several times what
loading a page does (bench/RESULTS.md), and what a test needs of a new
browser is a window without cookies: our pages keep nothing else in the
browser (no web storage). So a window a test closes, or leaves open, is
kept: its page on about:blank and its cookies cleared, it is the next one
opened with the same options. A test that listens to its page's events
closes the page itself when done, and that window is not kept, so that no
listener outlives its test.
"""

from collections.abc import Iterator
from typing import Any

from playwright.sync_api import Browser, Page, ViewportSize
from playwright.sync_api import Error as PlaywrightError

PHONE: ViewportSize = {"width": 390, "height": 844}
LAPTOP: ViewportSize = {"width": 1280, "height": 860}
# A phone's window: its width and density, and its meta viewport obeyed.
ON_PHONE: dict[str, Any] = {"viewport": PHONE, "device_scale_factor": 2, "is_mobile": True}


class Windows:
    def __init__(self, browser: Browser) -> None:
        self._browser = browser
        self._kept: list[tuple[dict[str, Any], Page]] = []
        self._open: list[tuple[dict[str, Any], Page]] = []

    def open(self, **options: Any) -> Page:
        """A window of a browser of its own, made with `options` (those of
        Browser.new_context): no cookies, nothing loaded."""
        kept = [page for made_with, page in self._kept if made_with == options]
        if kept:
            page = kept[0]
            self._kept.remove((options, page))
        else:
            page = self._browser.new_context(**options).new_page()
        self._open.append((options, page))
        return page

    def close(self, page: Page) -> None:
        """The window closed, and its browser with it: its cookies are gone."""
        options = next(made for made, open_page in self._open if open_page is page)
        self._open.remove((options, page))
        if page.is_closed():
            page.context.close()
            return
        try:
            page.goto("about:blank")
            page.context.clear_cookies()
            if "viewport" in options:  # as made, whatever the test set
                page.set_viewport_size(options["viewport"])
        except PlaywrightError:  # a window that cannot be emptied (its page crashed)
            page.context.close()
            return
        self._kept.append((options, page))

    def at_each_width(self, **options: Any) -> Iterator[tuple[str, Page]]:
        """A window at a laptop's width, then one at a phone's, each made with
        `options` too and closed after its turn: the suffix of its
        screenshots' names ("" or "-phone") and its page."""
        for suffix, width in (("", {"viewport": LAPTOP}), ("-phone", ON_PHONE)):
            page = self.open(**width, **options)
            yield suffix, page
            self.close(page)

    def close_all(self) -> None:
        for _, page in list(self._open):
            self.close(page)
