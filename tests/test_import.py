"""`import scalebook` stays light: no jax, no matplotlib (their import is timed in make bench)."""
import subprocess
import sys


def test_import_scalebook_loads_neither_jax_nor_matplotlib():
    code = ("import sys, scalebook, scalebook.roofline, scalebook.exercises, scalebook.cli, scalebook.plots;"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'matplotlib', 'jaxlib')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
