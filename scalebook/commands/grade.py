"""`scalebook grade NOTEBOOK`: run a filled exercise notebook and print id, status, score."""
from __future__ import annotations

from ..cli import add_json_flag, emit, table
from ..grading import grade


def register(sub) -> None:
    p = sub.add_parser("grade", help="run a filled exercise notebook and score its answers")
    p.add_argument("notebook", help="path to the .ipynb (e.g. exercises/01-rooflines.ipynb)")
    add_json_flag(p)
    p.set_defaults(run=run)


def run(args) -> int:
    g = grade(args.notebook)

    def text() -> str:
        lines = [table([{"id": r["id"], "status": r["status"], "score": f"{r['score']:g}", "note": r["message"]}
                        for r in g.rows]) if g.rows else "no check() calls ran"]
        lines.append(f"score: {g.score:g} / {g.out_of}")
        if g.error:
            lines.append(f"the notebook stopped early: {g.error}")
        return "\n".join(lines)

    emit(args, {"notebook": g.notebook, "rows": list(g.rows), "score": g.score, "out_of": g.out_of,
                "error": g.error}, text)
    return 0 if g.error is None else 1
