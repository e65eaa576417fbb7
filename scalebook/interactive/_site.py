"""The site version of an interactive figure: HTML that draws its Vega-Lite chart with the Vega
scripts the site serves itself, over a static picture shown until the chart is drawn.

The page is a Sphinx page, whose `<html>` element names the site's root (`data-content_root`);
the figure's script loads `_static/vega/{vega,vega-lite,vega-embed}.min.js` from there once per
page (the Sphinx extension `book/_ext/scalebook_site.py` copies them from the pinned npm packages
of `tools/site/package.json`), then embeds the chart (SVG renderer, no export menu: the menu's
links leave the site). Outside the site (no `data-content_root`), with scripts off, or if a
script fails to load (logged as a console error, which the browser check fails on), the static
PNG stays. The readout (what the chosen setting gives, in words) is HTML above the chart, not
part of it: it wraps on a phone, a screen reader announces it as it changes (`aria-live`), and the
script only looks up the grid's text for the controls' positions (`InteractiveFigure.readouts`).
The chart's SVG scales down to a narrow column instead of scrolling. The chart's SVG carries the figure's description as its ARIA label; the controls are
HTML inputs (keyboard operable); a slider's own number (its position in the grid) is hidden, the
readout names the value. The element keeps the Vega view as `scalebookView` and sets
`data-ready` once drawn, for `tools/browser_check.py`.
"""
from __future__ import annotations

import html
import json

#: The scripts each page with an interactive figure loads, in order, under _static/.
SCRIPTS = ("vega/vega.min.js", "vega/vega-lite.min.js", "vega/vega-embed.min.js")

_LOADER = """(function () {
  var fig = document.currentScript.parentElement;
  var root = document.documentElement.dataset.content_root;
  if (root === undefined) return;
  window.scalebookVega = window.scalebookVega || %(scripts)s.reduce(function (ready, src) {
    return ready.then(function () {
      return new Promise(function (ok, fail) {
        var s = document.createElement("script");
        s.src = root + "_static/" + src;
        s.onload = ok;
        s.onerror = function () { fail(new Error("could not load " + s.src)); };
        document.head.appendChild(s);
      });
    });
  }, Promise.resolve());
  window.scalebookVega.then(function () {
    var spec = JSON.parse(fig.querySelector("script.sb-spec").textContent);
    return vegaEmbed(fig.querySelector(".sb-chart"), spec, {actions: false, renderer: "svg"});
  }).then(function (result) {
    var view = result.view;
    var table = JSON.parse(fig.querySelector("script.sb-readouts").textContent);
    var out = fig.querySelector(".sb-readout");
    var show = function () {
      var key = table.controls.map(function (c) {
        var v = view.signal(c.name);
        return c.kind === "range" ? v : c.values.indexOf(v);
      }).join(",");
      out.textContent = "";
      (table.texts[key] || "").split("\\n").forEach(function (line, i) {
        if (i) out.appendChild(document.createElement("br"));
        out.appendChild(document.createTextNode(line));
      });
    };
    table.controls.forEach(function (c) { view.addSignalListener(c.name, show); });
    show();
    fig.querySelector(".sb-fallback").hidden = true;
    fig.scalebookView = view;
    fig.dataset.ready = "1";
  }).catch(function (err) { console.error("scalebook interactive figure: " + err); });
})();"""

#: Resolution of the static fallback (it shows only with scripts off): lighter than the book's figures.
FALLBACK_DPI = 72

# The chart's SVG scales down to the column (a phone) rather than scrolling; the controls wrap.
_STYLE = (".sb-interactive{margin:1em 0}.sb-interactive .vega-bind{margin:.2em 1em .2em 0;display:inline-block}"
          ".sb-interactive .vega-bind-name{font-weight:600}.sb-interactive .sb-chart{overflow-x:auto}"
          ".sb-interactive .sb-chart .vega-embed{display:block}"
          ".sb-interactive .sb-chart svg{max-width:100%;height:auto}"
          ".sb-interactive .sb-readout{font-size:.9em;margin:0 0 .4em;min-height:2.6em}"
          ".sb-interactive input[type=range]+span{display:none}")


def readout_html(text: str) -> str:
    """A readout's lines as HTML (escaped, joined by <br>)."""
    return "<br>".join(html.escape(line) for line in text.split("\n"))


def readouts_json(fig) -> str:
    """The readout of every grid setting and how to find it from the controls (`InteractiveFigure.readouts`)."""
    table = {"controls": [{"name": c.name, "kind": c.kind, "values": list(c.values)} for c in fig.controls],
             "texts": fig.readouts()}
    return json.dumps(table, separators=(",", ":"), ensure_ascii=True).replace("</", "<\\/")


def spec_json(fig) -> str:
    """The figure's Vega-Lite spec (grid data inline), compact JSON safe inside a <script>."""
    spec = fig.site_chart().to_dict()
    text = json.dumps(spec, separators=(",", ":"), ensure_ascii=True)
    return text.replace("</", "<\\/")


def fallback_png(fig) -> tuple[str, str]:
    """(base64 PNG, alt text) of the static picture of the default setting, or ("", "")."""
    if fig.static is None:
        return "", ""
    import matplotlib.pyplot as plt

    from ..plots import _style

    from IPython.core.pylabtools import print_figure

    drawn = fig.static(**fig.default_setting)
    try:
        _style._log_problems(drawn)  # the build's figure check sees it like any other figure
        png = print_figure(drawn, "png", bbox_inches="tight", base64=True, dpi=FALLBACK_DPI,
                           metadata={"Description": _style.description(drawn)})
        return png, _style.description(drawn)
    finally:
        plt.close(drawn)


def figure_html(fig) -> str:
    """The HTML the site shows for `fig` (see the module docstring)."""
    png, alt = fallback_png(fig)
    img = (f'<img class="sb-fallback" src="data:image/png;base64,{png}" alt="{html.escape(alt or fig.alt)}">'
           if png else f'<p class="sb-fallback">{html.escape(fig.alt)}</p>')
    return (
        f'<figure class="sb-interactive" data-scalebook-figure="{html.escape(fig.name)}" '
        f'data-controls="{html.escape(json.dumps([c.name for c in fig.controls]))}">'
        f"<style>{_STYLE}</style>"
        f'<p class="sb-readout" aria-live="polite">{readout_html(fig.readout(**fig.default_setting))}</p>'
        f'<div class="sb-chart" role="group" aria-label="{html.escape(fig.title)} (interactive)"></div>'
        f"{img}"
        f"<figcaption>{html.escape(fig.caption)}</figcaption>"
        f'<script type="application/json" class="sb-spec">{spec_json(fig)}</script>'
        f'<script type="application/json" class="sb-readouts">{readouts_json(fig)}</script>'
        f"<script>{_LOADER % {'scripts': json.dumps(list(SCRIPTS))}}</script>"
        "</figure>"
    )


def embedded_bytes(fig) -> int:
    """Bytes the figure adds to its page (HTML, spec with its data, fallback picture)."""
    return len(figure_html(fig).encode("utf-8"))
