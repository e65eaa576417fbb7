"""Install test: a fresh venv installs the built wheel and runs chapter 1 from outside the repo."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What a Colab runtime already has, beside the package itself.
RUNTIME = ["nbclient", "nbformat", "ipykernel", "matplotlib", "jax"]


@pytest.mark.slow
def test_wheel_installs_in_a_fresh_venv_and_runs_chapter_1_like_colab(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
                   check=True, capture_output=True)
    wheel = next(dist.glob("scalebook-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel), *RUNTIME], check=True)
    work = tmp_path / "reader"
    work.mkdir()
    notebook = work / "01-rooflines.ipynb"
    notebook.write_text((ROOT / "chapters" / "01-rooflines.ipynb").read_text())
    script = textwrap.dedent(f"""
        import nbclient, nbformat, scalebook
        assert {str(ROOT)!r} not in scalebook.__file__, scalebook.__file__
        nb = nbformat.read({str(notebook)!r}, as_version=4)
        nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={{"metadata": {{"path": {str(work)!r}}}}}).execute()
        print("ok", scalebook.__file__)
    """)
    proc = subprocess.run([str(py), "-c", script], cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "site-packages" in proc.stdout
