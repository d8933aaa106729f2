"""Headless Chromium for the report's browser tests and for tools/page_load.py and
tools/screenshots.py: find the browser, open a page from disk with every non-file request
blocked and recorded, draw its charts, and read what a person would see (overflow, line
breaks inside words, where a label sits).

Needs Chromium (Debian packages `chromium`, `chromium-driver`) and the `playwright` Python
package (no browser download: Playwright drives the system Chromium).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}
VIEWPORTS = {"desktop": DESKTOP, "phone": PHONE}


def chromium_path() -> str | None:
    """The Chromium to drive: $JITBENCH_CHROMIUM, else one on PATH, else None."""
    env = os.environ.get("JITBENCH_CHROMIUM")
    if env:
        return env
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@contextmanager
def launched(executable: str) -> Iterator[Any]:
    """A headless Chromium browser (Playwright), closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Loaded:
    """An open page and what went wrong while loading it."""

    page: Any
    errors: list[str] = field(default_factory=list)
    network: list[str] = field(default_factory=list)

    def render_all(self) -> dict[str, int]:
        """Draw every chart on display and wait until they are drawn."""
        self.page.evaluate("window.jbRenderAll ? window.jbRenderAll() : null")
        wait_until(self.page, "!window.jbCharts || (c => c.drawn === c.shown)(window.jbCharts())")
        return self.page.evaluate("window.jbCharts ? window.jbCharts() : {}")

    def charts(self) -> dict[str, dict[str, Any]]:
        """Every drawn plotly chart by element id: axis types, trace names, tick labels."""
        return {
            c["id"]: c
            for c in self.page.evaluate("""() =>
            Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => ({
              id: gd.id, x: gd.layout.xaxis.type, y: gd.layout.yaxis.type,
              yrange: gd._fullLayout.yaxis.range,
              traces: gd.data.map(t => t.name || ''),
              ticks: Array.from(gd.querySelectorAll('.xtick text')).map(t => t.textContent),
            }))""")
        }

    def overflow(self) -> list[str]:
        """Elements sticking out past the right edge of the viewport that are not inside a
        scroll container (which may scroll sideways), and the page's own scroll width."""
        return self.page.evaluate("""() => {
          const vw = document.documentElement.clientWidth, out = [];
          if (document.documentElement.scrollWidth > vw + 1)
            out.push('page scrollWidth ' + document.documentElement.scrollWidth + ' > ' + vw);
          const scrolls = el => { for (let p = el.parentElement; p; p = p.parentElement) {
              const o = getComputedStyle(p).overflowX;
              if (o === 'auto' || o === 'scroll') return true; }
            return false; };
          for (const el of document.body.querySelectorAll('*')) {
            const r = el.getBoundingClientRect();
            if (r.width === 0 || el.closest('[hidden]')) continue;
            if (r.right > vw + 1 && !scrolls(el))
              out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
                       ' right=' + Math.round(r.right));
          }
          return out.slice(0, 20);
        }""")

    def broken_words(self, selector: str) -> list[str]:
        """Text in `selector` elements that the browser broke across lines inside a word
        ('worklo|ad'): for each text node, where one character sits on a lower line than
        the one before it, one of the two must be a space or a hyphen."""
        return self.page.evaluate(
            """sel => {
          const out = [];
          for (const el of document.querySelectorAll(sel)) {
            const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
              const text = node.textContent, range = document.createRange();
              let lastTop = null;
              for (let i = 0; i < text.length; i++) {
                range.setStart(node, i); range.setEnd(node, i + 1);
                const rects = range.getClientRects();
                if (!rects.length) continue;
                const top = Math.round(rects[0].top);
                if (lastTop !== null && top > lastTop + 2) {
                  const a = text[i - 1], b = text[i];
                  if (!/[\\s\\-–\\/,;:]/.test(a) && !/\\s/.test(b))
                    out.push(text.slice(0, i) + '|' + text.slice(i));
                }
                lastTop = top;
              }
            }
          }
          return out;
        }""",
            selector,
        )


def wait_until(page: Any, expression: str, *, timeout_s: float = 30.0) -> Any:
    """Poll `expression` in the page until it is truthy; return its value.

    Not `page.wait_for_function`: Playwright compiles that predicate with `new Function`,
    which the pages' content-security policy (rightly) refuses; `evaluate` goes through
    the DevTools protocol, which the policy does not govern.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"still false after {timeout_s} s: {expression}")
        page.wait_for_timeout(20)


def open_page(browser: Any, path: Path, *, viewport: dict[str, int] = DESKTOP) -> Loaded:
    """Open `path` from disk at `viewport`, recording page errors, console errors and
    warnings, and blocking (and recording) every request that is not for a local file."""
    page = browser.new_page(viewport=viewport)
    loaded = Loaded(page)
    page.on("pageerror", lambda e: loaded.errors.append(f"pageerror: {e}"))
    page.on(
        "console",
        lambda m: (
            loaded.errors.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning")
            else None
        ),
    )

    def route(r: Any) -> None:
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            loaded.network.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.resolve().as_uri())
    page.wait_for_load_state("load")
    return loaded
