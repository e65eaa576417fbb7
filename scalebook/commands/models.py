"""`scalebook models`: the preset table (total and active parameters, source) (Chapter 4)."""
from __future__ import annotations

from .. import models, transformer
from ..cli import add_json_flag, emit, table


def register(sub) -> None:
    p = sub.add_parser("models", help="published model presets: parameters and sources")
    add_json_flag(p)
    p.set_defaults(run=run)


def _row(m: models.Transformer) -> dict:
    p = transformer.params(m)
    return {"name": m.name, "attention": m.attention, "total_params": p.total_params,
            "active_params": p.active_params, "published_params": m.published_params, "source": m.source}


def run(args) -> int:
    rows = [_row(models.preset(n)) for n in models.preset_names()]
    f = transformer.format_count
    emit(args, rows, lambda: table([
        {"name": r["name"], "attention": r["attention"], "total": f(r["total_params"]),
         "active": f(r["active_params"]), "published": f(r["published_params"]) if r["published_params"] else "",
         "source": r["source"]} for r in rows]))
    return 0
