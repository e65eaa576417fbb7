#!/usr/bin/env python3
"""Open every page of the built site in a real browser (headless Chromium) and check what a reader sees.

    python tools/browser_check.py                    # checks _build/html
    python tools/browser_check.py --screenshots docs # also writes the README's screenshots
                                                     # (chapter and problem page, 1280 and 390 px)

Needs Debian's `chromium` and the `playwright` Python package (it drives the system browser; no
browser download): `sh tools/install_browser.sh PYTHON` installs both. The site is served from a
local HTTP server on 127.0.0.1; every request the pages make to any other address is blocked and
reported. For every page:

- it loads with no console error, no failed request and no request leaving the site;
- math renders: MathJax output (`mjx-container`) is present where the page has math, and no raw
  `\\(` or `\\[` delimiters remain in the visible text;
- every image has alt text that is not a file name, and no figure is shrunk so far that its
  smallest font reads below 9 pt (the check `scalebook.plots` makes, measured in the browser: no
  image is scaled down by more than the text column the style assumes);
- no cell output wider than its cell is cut off (it scrolls inside the cell);
- at both widths, 1280 px and 390 px (a phone): the page is no wider than the window, and no
  element of the text runs past the edge of the text column unless a box that scrolls sideways
  (a table, a printed output, a code block) holds it;
- every internal link resolves to an existing file (and its #anchor to an element of that page);
- every Colab button links to a notebook that exists in the repository beside the page's source.

On the problem pages every solution is collapsed until clicked, and open after the click.

Every interactive figure (`scalebook.interactive`, issue 22) is drawn from the site's own Vega
scripts, carries its description as an ARIA label, and is operated with the keyboard: every
control walked through all its values, and after each key the readout shown must equal the
package's (`InteractiveFigure.readout`) for the setting the chart's parameters then hold, and
change when the setting does (`check_interactive`). A figure that zooms (chapter 9's timeline)
is zoomed with the mouse wheel and reset with a double click (`check_zoom`).
"""
from __future__ import annotations

import argparse
import functools
import http.server
import re
import socketserver
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 900}
#: A phone (the width of an iPhone 12 to 15 in CSS pixels); pages are checked at both widths.
PHONE = {"width": 390, "height": 844}


def toc_pages() -> list[str]:
    """Every `file:` entry of _toc.yml, the pages each `glob:` entry matches, and the root, as
    paths without suffix."""
    text = (ROOT / "_toc.yml").read_text()
    root = re.search(r"^root:\s*(\S+)", text, re.M).group(1)
    pages = [root]
    for kind, value in re.findall(r"\b(file|glob):\s*(\S+)", text):
        if kind == "file":
            pages.append(value)
        else:  # a glob entry (the API reference's module pages): the sources it matches
            pages += sorted(str(p.relative_to(ROOT).with_suffix("")) for p in ROOT.glob(value + ".md"))
    return pages


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # noqa: D401 - silence the per-request log
        pass


def serve(directory: Path) -> tuple[socketserver.TCPServer, str]:
    """Serve `directory` on a free port of 127.0.0.1 in a background thread."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def _internal_target(base: str, href: str, page_url: str) -> tuple[Path, str] | None:
    """(file, anchor) an internal link points to, or None for an external or special link."""
    url = urljoin(page_url, href)
    if not url.startswith(base):
        return None
    parsed = urlparse(url)
    rel = unquote(parsed.path[len(urlparse(base).path):])
    path = HTML / rel
    if rel == "" or rel.endswith("/"):
        path = path / "index.html"
    return path, parsed.fragment


def _anchors(path: Path, cache: dict[Path, set[str]]) -> set[str]:
    if path not in cache:
        text = path.read_text(encoding="utf-8", errors="replace")
        cache[path] = set(re.findall(r'\bid="([^"]+)"', text)) | set(re.findall(r'\bname="([^"]+)"', text))
    return cache[path]


MATH_JS = """() => {
  const main = (document.querySelector('main') || document.body).cloneNode(true);
  main.querySelectorAll('pre, code, script, .cell_input').forEach(e => e.remove());
  const text = main.textContent;
  return {
    mathNodes: document.querySelectorAll('.math, span.math, div.math').length,
    rendered: document.querySelectorAll('mjx-container').length,
    raw: (text.match(/\\\\\\(|\\\\\\[/g) || []).length,
    column: Math.max(0, ...Array.from(document.querySelectorAll('main .cell_output')).map(e => e.clientWidth)),
  };
}"""

IMAGES_JS = """() => Array.from(document.querySelectorAll('main img')).map(img => ({
  src: img.getAttribute('src'), alt: img.getAttribute('alt') || '',
  natural: img.naturalWidth, shown: img.getBoundingClientRect().width, complete: img.complete,
}))"""

CLIPPED_JS = """() => Array.from(document.querySelectorAll('main .cell_output pre, main .cell_output .output'))
  .filter(el => el.scrollWidth > el.clientWidth + 1 && !['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
  .map(el => el.textContent.trim().slice(0, 60))"""

# Elements that stick out of the text column (or the window) without a box that scrolls them:
# the outermost such element is reported. Hidden elements and the contents of a scroll box are
# skipped (the box itself is checked like any other element).
OVERFLOW_JS = """() => {
  const root = document.querySelector('main article') || document.querySelector('main') || document.body;
  const limit = root.getBoundingClientRect();
  const right = Math.min(limit.right, window.innerWidth) + 1, left = Math.max(limit.left, 0) - 1;
  const scrolls = el => ['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(el).overflowX);
  const out = [];
  const walk = el => {
    for (const child of el.children) {
      const style = getComputedStyle(child);
      if (style.display === 'none' || style.visibility === 'hidden' || style.position === 'fixed') continue;
      const r = child.getBoundingClientRect();
      if (r.width > 0 && r.height > 0 && (r.right > right || r.left < left)) {
        const text = (child.textContent || child.getAttribute('alt') || child.tagName).trim().replace(/\\s+/g, ' ');
        out.push({tag: child.tagName.toLowerCase() + (child.className && typeof child.className === 'string'
                   ? '.' + child.className.trim().split(/\\s+/)[0] : ''),
                  text: text.slice(0, 60), width: Math.round(r.width), right: Math.round(r.right)});
        continue;
      }
      if (!scrolls(child)) walk(child);
    }
  };
  walk(root);
  return {elements: out, page: document.documentElement.scrollWidth, window: window.innerWidth};
}"""

LINKS_JS = """() => Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'))"""


def _idle(page, timeout_ms: int = 90000) -> None:
    """Wait until the page stops loading (fonts, MathJax's pieces); on a busy machine that can take
    a while, and a page still fetching after `timeout_ms` is checked as it stands."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_load_state("networkidle", timeout=timeout_ms)
    except PlaywrightTimeout:
        pass


def check_page(page, base: str, name: str, problems: list[str], anchors: dict, column_px: int) -> None:
    url = base + name + ".html"
    page.goto(url, wait_until="load")
    # MathJax typesets after load; wait until it says it is done (or there is no MathJax).
    page.wait_for_function("() => !window.MathJax || !MathJax.startup || !MathJax.startup.promise"
                           " || (MathJax.startup.document && MathJax.startup.document.processed !== false)",
                           timeout=30000)
    page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise"
                  " ? MathJax.startup.promise.then(() => true) : true")
    _idle(page)
    math = page.evaluate(MATH_JS)
    if math["mathNodes"] and not math["rendered"]:
        problems.append(f"{name}: {math['mathNodes']} math elements but no MathJax output")
    if math["raw"]:
        problems.append(f"{name}: {math['raw']} raw \\( or \\[ delimiters in the text (math not rendered)")
    for img in page.evaluate(IMAGES_JS):
        src = img["src"] or ""
        if not img["complete"] or img["natural"] == 0:
            problems.append(f"{name}: image {src} did not load")
            continue
        alt = img["alt"].strip()
        if not alt or alt == src or re.fullmatch(r"[\w./-]+\.(png|svg|jpe?g|gif)", alt):
            problems.append(f"{name}: image {src} has no alt text")
        if "_images/" in src and img["shown"] < min(img["natural"], column_px) - 2:
            problems.append(f"{name}: figure {src} shown {img['shown']:.0f} px wide, narrower than the "
                            f"{column_px} px column the figure style assumes (fonts below 9 pt)")
    for text in page.evaluate(CLIPPED_JS):
        problems.append(f"{name}: an output wider than its cell is clipped, not scrollable: {text!r}")
    for href in page.evaluate(LINKS_JS):
        if href.startswith(("mailto:", "javascript:")):
            continue
        if "colab.research.google.com" in href:
            m = re.search(r"/blob/[^/]+/(.+\.ipynb)$", href)
            if not m or not (ROOT / m.group(1)).exists():
                problems.append(f"{name}: Colab button {href} does not point at a notebook in the repository")
            continue
        target = _internal_target(base, href, url)
        if target is None:
            continue
        path, anchor = target
        if not path.exists():
            problems.append(f"{name}: broken link {href}")
        elif anchor and path.suffix == ".html" and anchor not in _anchors(path, anchors):
            problems.append(f"{name}: link {href}: no #{anchor} on that page")


def check_layout(page, base: str, name: str, problems: list[str], width: int, load: bool = True) -> None:
    """At the window width `width`: the page is no wider than the window, and nothing sticks out of
    the text column except inside a box that scrolls sideways."""
    if load:
        page.goto(base + name + ".html", wait_until="load", timeout=120000)
        _idle(page)
        page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise"
                      " ? MathJax.startup.promise.then(() => true) : true")
    found = page.evaluate(OVERFLOW_JS)
    if found["page"] > found["window"] + 1:
        problems.append(f"{name} at {width} px: the page is {found['page']} px wide, wider than the "
                        f"{found['window']} px window (it scrolls sideways)")
    for el in found["elements"]:
        problems.append(f"{name} at {width} px: {el['tag']} ({el['width']} px wide) runs past the text "
                        f"column with no scroll box: {el['text']!r}")


def check_solutions(page, base: str, name: str, problems: list[str]) -> None:
    """Every solution of a problem page is closed, and opens when its toggle is clicked."""
    page.goto(base + name + ".html", wait_until="load")
    _idle(page)
    sols = page.locator(".solution.dropdown")
    n = sols.count()
    if n == 0:
        problems.append(f"{name}: no collapsed solutions found")
        return
    for i in range(n):
        sol = sols.nth(i)
        body = sol.locator(":scope > section, :scope > .solution-content, :scope > div:not(.admonition-title)").first
        if body.count() and body.is_visible():
            problems.append(f"{name}: solution {i + 1} is open before it is clicked")
            continue
        button = sol.locator("button.toggle-button").first
        if button.count() == 0:
            problems.append(f"{name}: solution {i + 1} has no toggle button")
            continue
        button.scroll_into_view_if_needed()
        button.click()
        page.wait_for_timeout(150)
        if not (body.count() and body.is_visible()):
            problems.append(f"{name}: solution {i + 1} does not open when clicked")


# ------------------------------------------------------------------ interactive figures (issue 22)
INTERACTIVE_JS = """(fig) => {
  const view = fig.scalebookView;
  const texts = Array.from(fig.querySelectorAll('.sb-chart svg g.mark-text.role-mark text, .sb-readout')).map(t => t.textContent);
  const signals = {};
  for (const name of JSON.parse(fig.dataset.controls)) signals[name] = view.signal(name);
  return {texts, signals};
}"""


def _figure_state(handle) -> dict:
    return handle.evaluate(INTERACTIVE_JS)


def _package_figures() -> dict:
    """The package's interactive figures (this checkout's), by name."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from scalebook import interactive

    return interactive.figures()


def check_interactive(page, base: str, name: str, problems: list[str], load: bool = True) -> int:
    """Operate every control of every interactive figure of the page with the keyboard and check
    that the figure's readout changes and equals the package's (`InteractiveFigure.readout`) for
    the setting the chart's parameters then hold. Returns the number of settings checked."""
    if load:
        page.goto(base + name + ".html", wait_until="load")
        _idle(page)
    figures = page.locator("figure.sb-interactive")
    checked = 0
    known = _package_figures()
    for i in range(figures.count()):
        handle = figures.nth(i)
        fig_name = handle.get_attribute("data-scalebook-figure")
        where = f"{name}: interactive figure '{fig_name}'"
        fig = known.get(fig_name)
        if fig is None:
            problems.append(f"{where}: no such figure in scalebook.interactive.figures()")
            continue
        handle.scroll_into_view_if_needed()
        try:
            page.wait_for_function("(f) => f.dataset.ready === '1'", arg=handle.element_handle(), timeout=60000)
        except Exception:  # noqa: BLE001 - reported as a problem, the page's errors say why
            problems.append(f"{where}: the chart was not drawn (is _static/vega missing?)")
            continue
        if handle.locator(".sb-fallback").is_visible():
            problems.append(f"{where}: the static fallback still shows beside the drawn chart")
        labels = handle.locator(".sb-chart, .sb-chart [aria-label]").evaluate_all(
            "els => els.map(e => e.getAttribute('aria-label'))")
        if fig.alt not in labels:
            problems.append(f"{where}: the chart does not carry its description as an aria-label")

        def readout_ok(context: str) -> str | None:
            state = _figure_state(handle)
            setting = {}
            for c in fig.controls:
                v = state["signals"][c.name]
                setting[c.name] = c.values[int(v)] if c.kind == "range" else v
            want = fig.readout(**setting).replace("\n", "")
            if want not in state["texts"]:
                problems.append(f"{where}: after {context} ({setting}) it shows {state['texts']}, "
                                f"the package says {want!r}")
                return None
            return want

        shown = readout_ok("loading")
        binds = handle.locator(".vega-bind")
        if binds.count() != len(fig.controls):
            problems.append(f"{where}: {binds.count()} controls on the page, the figure has {len(fig.controls)}")
            continue
        for k, c in enumerate(fig.controls):
            control = binds.nth(k).locator("select, input").first
            control.focus()
            # Walk every value, then come back to the first setting (so the next control is walked
            # from the setting the caption describes).
            n, back = len(c.values), c.values.index(c.initial)
            keys = ["Home"] + ["ArrowRight"] * (n - 1) + ["Home"] + ["ArrowRight"] * back if c.kind == "range" else \
                ["ArrowDown"] * (n - 1) + ["ArrowUp"] * (n - 1) + ["ArrowDown"] * back
            seen = {_figure_state(handle)["signals"][c.name]}
            for key in keys:
                before = _figure_state(handle)["signals"][c.name]
                page.keyboard.press(key)
                page.wait_for_timeout(30)
                after = _figure_state(handle)["signals"][c.name]
                seen.add(after)
                now = readout_ok(f"pressing {key} on '{c.label}'")
                checked += 1
                if after != before and now is not None and now == shown:
                    problems.append(f"{where}: '{c.label}' moved from {before!r} to {after!r} but the readout stayed {now!r}")
                if now is not None:
                    shown = now
            if len(seen) != len(c.values):
                problems.append(f"{where}: the keyboard reached {len(seen)} of the {len(c.values)} values of '{c.label}'")
        checked += check_zoom(page, handle, where, problems, readout_ok)
    return checked


ZOOM_DOMAIN_JS = "(fig) => fig.scalebookView.scale('x').domain()"


def _zooms(spec: object) -> bool:
    """Whether a Vega-Lite spec (or any part of it) has a selection bound to its scales (zoom/pan)."""
    if isinstance(spec, dict):
        return spec.get("bind") == "scales" or any(_zooms(v) for v in spec.values())
    if isinstance(spec, list):
        return any(_zooms(v) for v in spec)
    return False


def check_zoom(page, handle, where: str, problems: list[str], readout_ok) -> int:
    """For a figure whose chart zooms (a Vega-Lite interval selection bound to the scales, as chapter
    9's timeline): turn the mouse wheel over the plotted marks and check that the x domain narrows
    and the readout still equals the package's, then double-click and check that the domain comes
    back. Returns the number of settings checked (0 for a figure that does not zoom)."""
    import json

    spec = json.loads(handle.locator("script.sb-spec").text_content())
    if not _zooms(spec):
        return 0
    marks = handle.locator(".sb-chart svg g.role-mark").first
    box = marks.bounding_box() if marks.count() else None
    if not box:
        problems.append(f"{where}: the chart zooms but has no marks to zoom over")
        return 0
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    before = handle.evaluate(ZOOM_DOMAIN_JS)
    page.mouse.move(x, y)
    page.mouse.wheel(0, -400)
    page.wait_for_timeout(200)
    zoomed = handle.evaluate(ZOOM_DOMAIN_JS)
    if not zoomed[1] - zoomed[0] < before[1] - before[0]:
        problems.append(f"{where}: the mouse wheel over the chart did not zoom (x domain {before} -> {zoomed})")
    readout_ok("zooming with the mouse wheel")
    page.mouse.dblclick(x, y)
    page.wait_for_timeout(200)
    reset = handle.evaluate(ZOOM_DOMAIN_JS)
    if [round(v, 6) for v in reset] != [round(v, 6) for v in before]:
        problems.append(f"{where}: a double click did not reset the zoom (x domain {reset}, was {before})")
    return 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", type=Path, default=HTML)
    ap.add_argument("--screenshots", type=Path, help="write chapter.png, problems.png, their -phone.png and interactive.png "
                    "versions (390 px) into this folder")
    ap.add_argument("--pages", nargs="*", help="only these pages (paths without suffix)")
    args = ap.parse_args(argv)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sys.exit("playwright is not installed: run `sh tools/install_browser.sh PYTHON`")
    if not Path(CHROMIUM).exists():
        sys.exit(f"no browser at {CHROMIUM}: run `sh tools/install_browser.sh PYTHON`")
    if not (args.html / "index.html").exists():
        sys.exit(f"no built site in {args.html}: run `python tools/build_book.py` first")
    style = (ROOT / "scalebook" / "plots" / "_style.py").read_text()
    COLUMN_PX = int(re.search(r"^COLUMN_PX = (\d+)", style, re.M).group(1))  # no package import needed

    pages = args.pages or toc_pages()
    server, base = serve(args.html)
    problems: list[str] = []
    anchors: dict[Path, set[str]] = {}
    interactive_settings = 0
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            context = browser.new_context(viewport=VIEWPORT, service_workers="block")
            current = {"name": ""}

            def route(r):
                if r.request.url.startswith(base) or r.request.url.startswith("data:"):
                    r.continue_()
                else:
                    problems.append(f"{current['name']}: request leaves the site: {r.request.url}")
                    r.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on("console", lambda m: m.type == "error" and problems.append(
                f"{current['name']}: console error: {m.text}"))
            page.on("pageerror", lambda e: problems.append(f"{current['name']}: script error: {e}"))
            # net::ERR_ABORTED is the browser cancelling a request because the page navigated on
            # (a font still loading when the next page opens), not a file the site lacks: a
            # missing file answers 404, which the response handler below reports.
            page.on("requestfailed", lambda r: r.url.startswith(base) and "ERR_ABORTED" not in (r.failure or "")
                    and problems.append(f"{current['name']}: request failed: {r.url} ({r.failure})"))
            page.on("response", lambda r: r.url.startswith(base) and r.status >= 400 and problems.append(
                f"{current['name']}: {r.status} for {r.url}"))
            column = None
            for name in pages:
                current["name"] = name
                if column is None:
                    page.goto(base + name + ".html", wait_until="load")
                    _idle(page)
                    column = page.evaluate(MATH_JS)["column"] or None
                    if column is not None and column < COLUMN_PX:
                        problems.append(f"cell outputs are {column} px wide, narrower than the "
                                        f"{COLUMN_PX} px scalebook.plots._style.COLUMN_PX assumes")
                check_page(page, base, name, problems, anchors, COLUMN_PX)
                check_layout(page, base, name, problems, VIEWPORT["width"], load=False)
                if name.startswith("exercises/"):
                    check_solutions(page, base, name, problems)
                interactive_settings += check_interactive(page, base, name, problems, load=False)
            # The phone pass: a second context, 390 px wide, with the same outside-request guard.
            phone = browser.new_context(viewport=PHONE, service_workers="block", is_mobile=True,
                                        has_touch=True, device_scale_factor=2)
            phone.route("**/*", route)
            small = phone.new_page()
            small.on("pageerror", lambda e: problems.append(f"{current['name']} at 390 px: script error: {e}"))
            for name in pages:
                current["name"] = name
                check_layout(small, base, name, problems, PHONE["width"])
            if args.screenshots:
                args.screenshots.mkdir(parents=True, exist_ok=True)
                shots = {"chapter": "chapters/01-rooflines", "problems": "exercises/01-rooflines"}
                for suffix, pg in (("", page), ("-phone", small)):
                    for file, name in shots.items():
                        current["name"] = name
                        pg.goto(base + name + ".html", wait_until="load")
                        _idle(pg)
                        if name.startswith("exercises/"):
                            button = pg.locator(".solution.dropdown button.toggle-button").first
                            button.scroll_into_view_if_needed()
                            button.click()
                            button.evaluate("el => el.scrollIntoView({block: 'start'})")
                        else:  # the first figure, with the prose and formulas around it
                            pg.locator("main .cell_output img").first.evaluate(
                                "el => el.scrollIntoView({block: 'center'})")
                        pg.wait_for_timeout(500)
                        pg.screenshot(path=str(args.screenshots / f"{file}{suffix}.png"))
                # The README's interactive figure: chapter 1's roofline, drawn, at 1280 px.
                page.goto(base + "chapters/01-rooflines.html", wait_until="load")
                _idle(page)
                figure = page.locator("figure.sb-interactive").first
                figure.scroll_into_view_if_needed()
                page.wait_for_function("(f) => f.dataset.ready === '1'", arg=figure.element_handle(), timeout=60000)
                page.wait_for_timeout(300)
                figure.screenshot(path=str(args.screenshots / "interactive.png"))
            browser.close()
    finally:
        server.shutdown()
    if problems:
        print("browser check failed:\n  " + "\n  ".join(dict.fromkeys(problems)))
        return 1
    print(f"browser check: {len(pages)} pages loaded in Chromium with no errors and no outside requests; "
          "math rendered, figures described, links resolve, solutions collapse and open; "
          f"nothing wider than the page at {VIEWPORT['width']} px or {PHONE['width']} px; "
          f"interactive figures show the package's values at the {interactive_settings} settings the keyboard reached")
    return 0


if __name__ == "__main__":
    sys.exit(main())
