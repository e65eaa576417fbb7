#!/usr/bin/env python3
"""`make bench`: how close the model is to published runs, how fast the package imports, each notebook
executes, and the book builds.

Prints the validation reports (training: `scalebook.published.training_report`; serving:
`scalebook.serving_results.validation_report` where that function exists), then a timing table. Speed goals (import < 100 ms; each chapter < 60 s on a 2-core machine) are
checked here, against measurements, not in timed tests.

Optional, not run here: `benchmarks/calculon_side_by_side.py --calculon PATH` sets Calculon (SC'23) beside
scalebook on the published GPU runs Calculon can express; it needs Calculon's source exported by hand and
skips with a message without it (measured table: benchmarks/calculon.md).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from run_notebook import execute  # noqa: E402

GOALS = {"import": 0.100, "chapter": 60.0, "plan": 1.0}


def import_seconds(repeats: int = 7) -> float:
    """Median wall time of `import scalebook` in a fresh interpreter, minus the interpreter's start."""
    def timed(code: str) -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - t0

    base = sorted(timed("pass") for _ in range(repeats))[repeats // 2]
    full = sorted(timed("import scalebook") for _ in range(repeats))[repeats // 2]
    return max(full - base, 0.0)


def plan_seconds(chip: str, repeats: int = 3) -> float:
    """Best of `repeats` wall times of planner.plan for LLaMA 3 405B on 16,384 chips (issue goal: < 1 s)."""
    from scalebook import models, planner

    model = models.preset("llama3-405b")
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        planner.plan(model, chip=chip, chips=16384, batch_tokens=16 * 2 ** 20, seq_len=8192)
        best = min(best, time.perf_counter() - t0)
    return best


def book_build_seconds(clean: bool) -> float:
    if clean:
        shutil.rmtree(ROOT / "_build", ignore_errors=True)
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "-W", "-n", "--keep-going"]
    if clean:
        cmd.append("--all")
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def validation_reports() -> list[str]:
    """The training validation report, and the serving one where `serving_results` provides it."""
    from scalebook import published, serving_results

    out = [repr(published.training_report(worst=8))]
    serving = getattr(serving_results, "validation_report", None)
    if callable(serving):
        out.append(repr(serving()))
    else:
        out.append("Serving validation: scalebook.serving_results.validation_report() is not available yet")
    return out


def main() -> int:
    for text in validation_reports():
        print(text, end="\n\n")
    rows = [("import scalebook", import_seconds(), GOALS["import"])]
    for chip in ("h100", "tpu-v5p"):
        rows.append((f"plan llama3-405b on 16384 {chip}", plan_seconds(chip), GOALS["plan"]))
    for md in sorted((ROOT / "chapters").glob("*.md")) + sorted((ROOT / "exercises").glob("*.md")):
        goal = GOALS["chapter"] if md.parent.name == "chapters" else None
        rows.append((f"execute {md.relative_to(ROOT)}", execute(md), goal))
    rows.append(("book build, clean", book_build_seconds(clean=True), None))
    rows.append(("book build again, nothing changed (Sphinx skips unchanged pages)", book_build_seconds(clean=False), None))
    width = max(len(r[0]) for r in rows)
    print(f"{'what'.ljust(width)}  {'seconds':>9}  goal")
    failed = False
    for name, seconds, goal in rows:
        verdict = "" if goal is None else (f"< {goal:g} s  " + ("ok" if seconds < goal else "MISSED"))
        failed |= goal is not None and seconds >= goal
        print(f"{name.ljust(width)}  {seconds:9.3f}  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
