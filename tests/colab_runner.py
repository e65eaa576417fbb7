"""Run generated notebooks as a Colab reader would; print one JSON line per notebook.

    <venv>/bin/python colab_runner.py WORKDIR NOTEBOOK.ipynb [...]

Run by tests/test_install.py with the interpreter of a fresh virtual environment that holds only
what Colab ships (Jupyter, numpy, matplotlib, jax), never scalebook itself: the notebook's install
cell has to install it (from the wheel named by SCALEBOOK_SOURCE). Each notebook is copied into
WORKDIR (outside the repository) and executed there in a fresh kernel. The environment the test
sets up makes `google.colab` importable and imported at kernel start (an IPython startup file), so
the install cell takes its Colab branch. Standard library, nbclient and nbformat only.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import nbclient
import nbformat


def outputs_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif "data" in out:
            parts.append(str(out["data"].get("text/plain", "<" + ",".join(out["data"]) + ">")))
        elif out.get("output_type") == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
    return "".join(parts)


def run(workdir: Path, path: Path) -> dict:
    target = workdir / f"{path.parent.name}-{path.name}"  # chapters/ and exercises/ share stems
    shutil.copyfile(path, target)
    nb = nbformat.read(target, as_version=4)
    log = target.with_suffix(".glue.jsonl")
    log.unlink(missing_ok=True)
    os.environ["SCALEBOOK_GLUE_LOG"] = str(log)
    t0 = time.perf_counter()
    error = None
    try:
        nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                resources={"metadata": {"path": str(workdir)}}).execute()
    except Exception as e:  # the test reports which notebook failed and why
        error = f"{type(e).__name__}: {str(e)[-2000:]}"
    seconds = time.perf_counter() - t0
    # `%%capture` shows a hidden cell's exception but lets the run go on: count it as a failure.
    raised = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    if error is None and raised:
        error = f"{raised[0].get('ename')}: {raised[0].get('evalue')}"
    glued = []
    if log.exists():
        glued = sorted({json.loads(line)["name"] for line in log.read_text().splitlines()})
    hidden = [{"index": i, "install": "google.colab" in c.source, "output": outputs_text(c)}
              for i, c in enumerate(nb.cells)
              if c.cell_type == "code" and "remove-cell" in c.metadata.get("tags", [])]
    return {"notebook": path.name, "dir": path.parent.name, "seconds": round(seconds, 1), "error": error,
            "glued": glued, "hidden": hidden}


def main(argv: list[str]) -> int:
    workdir = Path(argv[0])
    for p in argv[1:]:
        print(json.dumps(run(workdir, Path(p))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
