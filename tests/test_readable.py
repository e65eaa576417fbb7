"""What a reader sees of a result object: `str()`, f-strings and the notebook's plain-text display
give the summary without the `ClassName(...)` wrapper; `repr()` keeps it for developers."""
import importlib
import inspect
import pkgutil
from pathlib import Path

from IPython.lib.pretty import pretty

import scalebook
from scalebook import roofline
from scalebook._readable import Readable, reader_text


def test_the_class_wrapper_is_dropped():
    assert reader_text("Roofline(compute-bound: compute 1 ms)", "Roofline") == "compute-bound: compute 1 ms"


def test_brackets_inside_the_summary_stay():
    text = "HloCollective(all-reduce over X (N=4): f32[256,128], V=128 kB)"
    assert reader_text(text, "HloCollective") == "all-reduce over X (N=4): f32[256,128], V=128 kB"


def test_lines_after_the_wrapper_stay():
    text = "ServingPlan(llama on h100: 2 of 9 meet it)\n  1. TP8 on 8 chips"
    assert reader_text(text, "ServingPlan") == "llama on h100: 2 of 9 meet it\n  1. TP8 on 8 chips"


def test_text_without_the_wrapper_or_unbalanced_is_unchanged():
    assert reader_text("Other(x)", "Roofline") == "Other(x)"
    assert reader_text("Roofline(open", "Roofline") == "Roofline(open"


def _op():
    # 1e12 FLOPs and 1e9 bytes on a TPU v5e (197 TFLOP/s bf16, 819 GB/s): 5.08 ms vs 1.22 ms
    return roofline.op("tpu-v5e", flops=1e12, hbm_bytes=1e9)


def test_str_and_format_read_without_the_class_name_and_repr_keeps_it():
    r = _op()
    assert repr(r).startswith("Roofline(compute-bound")
    assert str(r).startswith("compute-bound") and f"{r}" == str(r) and "Roofline" not in str(r)


def test_the_notebook_display_reads_without_the_class_name_also_inside_a_tuple():
    r = _op()
    assert pretty(r) == str(r)
    assert pretty((r, 2)).split() == f"({r}, 2)".split()  # the printer may break the line


PACKAGE = str(Path(scalebook.__file__).parent)


def test_every_result_class_with_its_own_repr_is_readable():
    """Guard for new classes: a `ClassName(...)` repr reaches the page only through `Readable`.

    Classes that draw themselves in a notebook (`_ipython_display_`, `_repr_mimebundle_`: the
    interactive figures) never show their repr there and are left to their own display."""
    missing = []
    for info in pkgutil.walk_packages(scalebook.__path__, "scalebook."):
        if ".exercises" in info.name or info.name.endswith((".grading", "_bank")):
            continue
        try:
            mod = importlib.import_module(info.name)
        except ImportError:  # optional dependencies (jax) absent
            continue
        for name, cls in inspect.getmembers(mod, inspect.isclass):
            own = cls.__dict__.get("__repr__")
            written = own is not None and hasattr(own, "__code__") and own.__code__.co_filename.startswith(PACKAGE)
            draws_itself = any(hasattr(cls, m) for m in ("_ipython_display_", "_repr_mimebundle_"))
            if (cls.__module__ == info.name and written and not issubclass(cls, str) and not draws_itself
                    and not name.startswith("_") and not issubclass(cls, Readable)):
                missing.append(f"{info.name}.{name}")
    assert missing == []


def test_a_shard_layout_reads_as_its_blocks_and_copies():
    # W[D_XZ, F] on X=4, Y=2, Z=2: D=8192 is cut 4 x 2 = 8 ways (1,024 rows), Y holds copies (2 each);
    # bf16: 8192 x 28672 x 2 B = 470 MB, a block 58.7 MB, all 16 devices 16 x 58.7 MB = 940 MB.
    from scalebook import sharding
    lay = sharding.layout("W[D_XZ, F]", mesh={"X": 4, "Y": 2, "Z": 2}, dims={"D": 8192, "F": 28672}, dtype="bf16")
    assert str(lay) == ("W[D_XZ, F]: 8,192 x 28,672 (470 MB), block 1,024 x 28,672 (58.7 MB) per device; "
                        "8 blocks, each on 2 of 16 devices, 940 MB in all")
