"""The book's figure style: readable on the page, safe for colour-blind readers, described in words.

Every public function of `scalebook.plots` passes through `figure_function` (applied in
`scalebook/plots/__init__.py`, so a new plot module gets it by being imported there):

- it draws under `STYLE` (font sizes, Okabe and Ito's colour-blind-safe palette (2008) as the
  colour cycle, 100 dpi);
- the finished figure gets `fit_fonts`: on the site a figure wider than the text column
  (`COLUMN_PX`) is shrunk to fit it, so every text is enlarged until it reads at least
  `MIN_PT` points at the width it is shown;
- matplotlib's default "tab:" colours are swapped for their Okabe-Ito counterparts (`recolour`);
- the figure gets a description (`describe`, `description`): the drawing function's summary plus
  what the axes show (titles, axis labels, legend entries). In a Jupyter kernel the PNG of the
  figure carries it as its `Description` text chunk, which the book's Sphinx extension
  (`book/_ext/scalebook_site.py`) turns into the image's alt text.

`text_overlaps(fig)` lists pairs of texts that collide; `text_problems(fig)` adds the texts that
cross an axes' frame. The tests use them on every figure function, and on
the site every figure a page shows is checked as it is shown: when the environment variable
`SCALEBOOK_FIGURE_LOG` names a file (tools/build_book.py sets it while it executes the pages), each
figure's problems are appended to it as one JSON line, and the build fails on any.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

#: Okabe-Ito: distinguishable under the common colour-vision deficiencies (yellow last: low contrast).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
#: matplotlib's tab10 colours and the Okabe-Ito colour that takes each one's place.
_TAB_TO_SAFE = {
    "#1f77b4": "#0072B2", "#ff7f0e": "#E69F00", "#2ca02c": "#009E73", "#d62728": "#D55E00",
    "#9467bd": "#CC79A7", "#8c564b": "#994F00", "#e377c2": "#CC79A7", "#7f7f7f": "#7F7F7F",
    "#bcbd22": "#F0E442", "#17becf": "#56B4E9",
}
#: Smallest font, in points at the width the figure is shown (9 pt = 12 CSS px).
MIN_PT = 9.0
#: Width in CSS pixels of a cell's output area on the site (sphinx-book-theme, 1280-px-wide
#: window); a wider figure is scaled down to it. tools/browser_check.py measures it.
COLUMN_PX = 688
DPI = 100

STYLE: dict[str, Any] = {
    "figure.dpi": DPI,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 9.5,
    "ytick.labelsize": 9.5,
    "legend.fontsize": 9.5,
    "legend.title_fontsize": 9.5,
    "figure.titlesize": 11,
    "image.cmap": "viridis",
}


def _style() -> dict[str, Any]:
    from cycler import cycler

    return {**STYLE, "axes.prop_cycle": cycler(color=list(PALETTE))}


# ------------------------------------------------------------------ description (alt text)
def describe(fig, text: str) -> None:
    """Add `text` to the description of `fig` (a figure drawn in several calls collects each)."""
    parts = fig.__dict__.setdefault("_scalebook_summaries", [])
    if text and text not in parts:
        parts.append(text)


def _axes_summary(ax) -> str:
    bits = []
    title = ax.get_title() or ax.get_title("left")
    if title:
        bits.append(title.strip())
    name = getattr(ax, "name", "rectilinear")
    if ax.axison and name != "3d":
        xl, yl = ax.get_xlabel(), ax.get_ylabel()
        if xl:
            bits.append(f"horizontal axis: {xl}")
        if yl:
            bits.append(f"vertical axis: {yl}")
    legend = ax.get_legend()
    if legend is not None:
        names = [t.get_text() for t in legend.get_texts() if t.get_text()]
        if names:
            bits.append("shown: " + ", ".join(names))
    return "; ".join(bits)


def description(fig) -> str:
    """Words for a reader who cannot see `fig`: what was drawn, then each panel's title and axes."""
    parts = list(fig.__dict__.get("_scalebook_summaries", []))
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_text():
        parts.append(sup.get_text().replace("\n", " "))
    panels = [s for s in (_axes_summary(ax) for ax in fig.axes) if s]
    if len(panels) == 1:
        parts.append(panels[0] + ".")
    else:
        parts += [f"Panel {i}: {s}." for i, s in enumerate(panels, 1)]
    text = " ".join(p if p.endswith(".") else p + "." for p in parts)
    return " ".join(text.replace("$", "").split())


def _summary_of(fn: Callable) -> str:
    doc = (fn.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(doc.replace("`", "").split())


# ------------------------------------------------------------------ fonts and colours
def _texts(fig):
    """The texts a reader sees: visible, not empty, not the ticks of an axes drawn without axis."""
    from matplotlib.text import Text

    hidden = set()
    for ax in fig.axes:
        if not ax.axison:
            hidden |= {id(t) for axis in (ax.xaxis, ax.yaxis) for t in axis.findobj(Text)}
            continue
        if getattr(ax, "name", "") == "3d":
            continue
        # matplotlib keeps tick labels outside the view limits but does not draw them
        for axis, k in ((ax.xaxis, 0), (ax.yaxis, 1)):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                loc = tick.get_loc()
                if loc is None or not (lo - 1e-9 * abs(lo) <= loc <= hi + 1e-9 * abs(hi)):
                    hidden |= {id(tick.label1), id(tick.label2)}
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
            and t.figure is not None and id(t) not in hidden]



def rendered_scale(fig) -> float:
    """Points on the page per point of `fig`: its pixels per inch as shown, over `DPI`.

    The site shows the PNG (tight box) at its pixel size, or shrunk to `COLUMN_PX` if wider.
    """
    renderer = fig.canvas.get_renderer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        width_in = fig.get_tightbbox(renderer).width + 0.2  # bbox_inches="tight" pads 0.1 in a side
    return min(fig.dpi, COLUMN_PX / width_in) / DPI


def smallest_rendered_pt(fig) -> float:
    """The smallest font of `fig` in points at the width the site shows it."""
    scale = rendered_scale(fig)
    return min((t.get_fontsize() * scale for t in _texts(fig)), default=float("inf"))


def _relayout(fig) -> None:
    if fig.get_layout_engine() is not None and type(fig.get_layout_engine()).__name__ != "PlaceHolderLayoutEngine":
        return  # constrained or tight layout engine: redone at draw time
    if any(getattr(ax, "name", "") == "3d" for ax in fig.axes):
        return
    if fig.__dict__.get("_scalebook_manual_layout"):
        return
    renderer = fig.canvas.get_renderer()
    rect = [0.0, 0.0, 1.0, 1.0]  # keep the room a figure legend above or below the axes has
    for legend in fig.legends:
        bb = legend.get_window_extent(renderer).transformed(fig.transFigure.inverted())
        if bb.y1 < 0.5:
            rect[1] = max(rect[1], bb.y1 + 0.01)
        elif bb.y0 > 0.5:
            rect[3] = min(rect[3], bb.y0 - 0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig.tight_layout(rect=rect)


def clear_legends_below(fig) -> None:
    """Move a legend drawn under its axes below that axes' x label and tick labels."""
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or getattr(ax, "name", "") != "rectilinear":
            continue
        box = ax.get_window_extent(renderer)
        lb = legend.get_window_extent(renderer)
        if lb.y1 > box.y0:
            continue  # the legend is not under the axes
        under = [t for t in [ax.xaxis.label, *ax.get_xticklabels()] if t.get_visible() and t.get_text()]
        if not under:
            continue
        bottom = min(t.get_window_extent(renderer).y0 for t in under)
        if lb.y1 > bottom - 2:
            legend.set_loc("upper center")
            legend.set_bbox_to_anchor((0.5, (bottom - 4 - box.y0) / box.height), transform=ax.transAxes)
            _relayout(fig)


def fit_fonts(fig, min_pt: float = MIN_PT) -> None:
    """Enlarge every text of `fig` that would read smaller than `min_pt` at its rendered width."""
    for _ in range(4):
        scale = rendered_scale(fig)
        small = [t for t in _texts(fig) if t.get_fontsize() * scale < min_pt - 1e-6]
        if not small:
            return
        for t in small:
            t.set_fontsize(min_pt / scale + 0.05)
        _relayout(fig)


def _safe(colour):
    from matplotlib.colors import to_hex, to_rgba

    try:
        rgba = to_rgba(colour)
    except (ValueError, TypeError):
        return None
    new = _TAB_TO_SAFE.get(to_hex(rgba))
    return None if new is None else to_rgba(new, rgba[3])


def recolour(fig) -> None:
    """Swap matplotlib's tab10 colours in `fig` for Okabe-Ito ones (lines, markers, patches, texts)."""
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.text import Text

    for a in fig.findobj():
        if isinstance(a, Line2D):
            for get, set_ in ((a.get_color, a.set_color), (a.get_markerfacecolor, a.set_markerfacecolor),
                              (a.get_markeredgecolor, a.set_markeredgecolor)):
                new = _safe(get())
                if new is not None:
                    set_(new)
        elif isinstance(a, Patch):
            for get, set_ in ((a.get_facecolor, a.set_facecolor), (a.get_edgecolor, a.set_edgecolor)):
                new = _safe(get())
                if new is not None:
                    set_(new)
        elif isinstance(a, Collection):
            for get, set_ in ((a.get_facecolors, a.set_facecolors), (a.get_edgecolors, a.set_edgecolors)):
                cols = get()
                if len(cols) and any(_safe(c) is not None for c in cols):
                    set_([_safe(c) or tuple(c) for c in cols])
        elif isinstance(a, Text):
            new = _safe(a.get_color())
            if new is not None:
                a.set_color(new)


# ------------------------------------------------------------------ overlaps
def text_overlaps(fig, tolerance_px: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of visible texts of `fig` whose boxes overlap by more than `tolerance_px` each way."""
    from matplotlib.text import Text

    renderer = fig.canvas.get_renderer()
    fig.draw_without_rendering()
    boxes = []
    for t in _texts(fig):
        if getattr(t, "axes", None) is not None and getattr(t.axes, "name", "") == "3d":
            continue
        bb = Text.get_window_extent(t, renderer)  # of an annotation, the text without its arrow
        if bb.width > 0 and bb.height > 0:
            boxes.append((t, bb))
    found = []
    for i, (t1, b1) in enumerate(boxes):
        for t2, b2 in boxes[i + 1:]:
            w = min(b1.x1, b2.x1) - max(b1.x0, b2.x0)
            h = min(b1.y1, b2.y1) - max(b1.y0, b2.y0)
            if w > tolerance_px and h > tolerance_px:
                found.append((t1.get_text(), t2.get_text()))
    return found


def _short(t) -> str:
    return " ".join(t.get_text().split())[:40]


def text_problems(fig, tolerance_px: float = 1.0) -> list[str]:
    """What a reader of `fig` would see go wrong with its texts, in words (empty when none):

    - two visible texts overlapping (`text_overlaps`): titles, suptitles, tick labels, axis
      labels, annotations, legend entries, each against every other;
    - a text placed in an axes (an annotation, `ax.text`) that crosses the axes' frame: partly
      inside it and partly outside.

    Overlaps are measured in the figure's own pixels: the page scales the whole PNG by one factor,
    so what overlaps there overlaps on the page. No text can run off the edge of the PNG: the page
    saves it with a tight box (`_png`), which grows to hold every text; the edge a label can
    cross is its axes' frame.
    """
    from matplotlib.text import Text

    out = [f"{a!r} overlaps {b!r}" for a, b in text_overlaps(fig, tolerance_px)]
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        if getattr(ax, "name", "") == "3d" or not ax.axison:
            continue
        frame = ax.get_window_extent(renderer)
        for t in ax.texts:
            if not (t.get_visible() and t.get_text().strip()):
                continue
            bb = Text.get_window_extent(t, renderer)
            if bb.width <= 0 or bb.height <= 0:
                continue
            w = min(bb.x1, frame.x1) - max(bb.x0, frame.x0)
            h = min(bb.y1, frame.y1) - max(bb.y0, frame.y0)
            overlap = w > tolerance_px and h > tolerance_px
            contained = (bb.x0 >= frame.x0 - tolerance_px and bb.x1 <= frame.x1 + tolerance_px
                         and bb.y0 >= frame.y0 - tolerance_px and bb.y1 <= frame.y1 + tolerance_px)
            if overlap and not contained:
                out.append(f"{_short(t)!r} crosses the frame of its axes")
    return out


def _log_problems(fig) -> None:
    """Append `fig`'s text problems to the file `SCALEBOOK_FIGURE_LOG` names (one JSON line)."""
    import json
    import os

    path = os.environ.get("SCALEBOOK_FIGURE_LOG")
    if not path:
        return
    try:
        problems = text_problems(fig)
        smallest = round(smallest_rendered_pt(fig), 1)
    except Exception as exc:  # the check must not break the page; report instead
        problems, smallest = [f"the text check failed: {exc}"], None
    record = {"figure": description(fig)[:160], "problems": problems, "smallest_pt": smallest}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


# ------------------------------------------------------------------ display and the decorator
def _png(fig):
    """PNG (base64) of `fig` for IPython, with its description in the `Description` chunk."""
    from IPython.core.pylabtools import print_figure

    _log_problems(fig)
    return print_figure(fig, "png", bbox_inches="tight", base64=True,
                        metadata={"Description": description(fig)})


def install_display() -> None:
    """In a Jupyter kernel, show figures as PNGs that carry their description (idempotent)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is None:
        return
    from matplotlib.figure import Figure

    ip.display_formatter.formatters["image/png"].for_type(Figure, _png)


def finish(fig, summary: str = "") -> None:
    """Apply the book's rules to a drawn figure: colours, fonts at the rendered width, description."""
    describe(fig, summary)
    recolour(fig)
    fit_fonts(fig)
    clear_legends_below(fig)
    install_display()


def figure_function(fn: Callable) -> Callable:
    """Draw `fn` under the book's style and `finish` the Figure it returns (other results pass)."""
    if getattr(fn, "_scalebook_styled", False):
        return fn

    @functools.wraps(fn)
    def draw(*args, **kwargs):
        import matplotlib
        from matplotlib.figure import Figure

        with matplotlib.rc_context(_style()):
            result = fn(*args, **kwargs)
            if isinstance(result, Figure):
                finish(result, _summary_of(fn))
        return result

    draw._scalebook_styled = True
    return draw
