"""Measure your own device: how many FLOPs/s its matmuls reach and how many bytes/s it streams.

Chapter 1 of the book ("Measure it") runs `run()` on the reader's device, whatever it is: the
CPU of a laptop or of Colab, a Colab GPU, a TPU. Each matmul `[B, D] x [D, F]` is timed with
`scalebook.xla.time_call` and turned into FLOPs/s (2BDF / seconds); each stream `x + 1` over a
large array, which reads and writes every byte once, is turned into bytes/s (2 x size / seconds).
On a CPU those arrays are several times the last-level cache (`cpu_stream_sizes`), so the
bandwidth measured is the DRAM's, not the cache's.
When the device is a chip of `scalebook.hardware` (matched from jax's `device_kind`, e.g.
'TPU v5 lite' -> tpu-v5e, 'NVIDIA H100 80GB HBM3' -> h100) the spec peaks sit beside the
measurements; a CPU or an unknown GPU has no spec, and the result says so.

jax is imported inside the functions, never at `import scalebook.measure`. Progress is shown
only where someone can watch it (a terminal, or a live notebook), never on stderr, so that the
book's build (which turns stray stderr into errors) stays quiet.
"""
from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from ._readable import Readable
from . import units
from .errors import Error, require_positive
from .errors import text as _text
from .hardware import chip as _chip

__all__ = [
    "MatmulResult", "CopyResult", "Measurement", "run", "matmul", "copy", "chip_for_device",
    "default_plan", "last_level_cache_bytes", "cpu_stream_sizes",
]

#: Assumed last-level cache when the OS does not report one: larger than most server CPUs' L3
#: per socket, so that streams sized from it still leave the cache.
FALLBACK_LLC_BYTES = 64 * 2**20

_SYS_CACHE = "/sys/devices/system/cpu/cpu0/cache"


def _parse_cache_size(text: str) -> int:
    """'32768K' -> 33554432, '1M' -> 1048576, '512' -> 512 (sysfs cache sizes)."""
    t = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(t[-1:], 1)
    return int(t[:-1] if scale != 1 else t) * scale

# jax device_kind -> chip name. Checked in order; the first pattern that matches wins.
_KIND_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"tpu\s*v5\s*(lite|e)\b", "tpu-v5e"),
    (r"tpu\s*v5p?\b", "tpu-v5p"),
    (r"tpu\s*v4", "tpu-v4p"),
    (r"tpu\s*v6\s*(lite|e)?\b|trillium", "tpu-v6e"),
    (r"tpu\s*(v7|7x)|ironwood", "tpu-7x"),
    (r"\bgb200\b", "gb200"),
    (r"\bb200\b", "b200"),
    (r"\bh200\b", "h200"),
    (r"\bh100\b", "h100"),
    (r"\ba100\b", "a100"),
)


def chip_for_device(kind: str) -> str | None:
    """The `scalebook.hardware` chip name for a jax `device_kind`, or None if it has no spec.

    >>> chip_for_device("TPU v5 lite"), chip_for_device("NVIDIA H100 80GB HBM3"), chip_for_device("cpu")
    ('tpu-v5e', 'h100', None)
    """
    k = _text("kind", kind).strip().lower()
    for pattern, name in _KIND_PATTERNS:
        if re.search(pattern, k):
            return name
    return None


def _short_dtype(dtype: str) -> str:
    return units.canonical_dtype(dtype)


@dataclass(frozen=True)
class MatmulResult(Readable):
    """One timed matmul `[batch, d_model] x [d_model, d_ff]`, inputs and output in `dtype`."""

    batch: int
    d_model: int
    d_ff: int
    dtype: str
    seconds: float
    #: Spec peak of the matched chip in this dtype (None: CPU, unknown chip, or no such peak).
    spec_flops_per_s: float | None = None

    @property
    def flops(self) -> float:
        """2BDF: one multiply and one add per (b, d, f)."""
        return 2.0 * self.batch * self.d_model * self.d_ff

    @property
    def bytes_(self) -> float:
        """Bytes that must cross HBM at least once: both inputs read, the output written."""
        b = units.dtype_bytes(self.dtype)
        return b * (self.batch * self.d_model + self.d_model * self.d_ff + self.batch * self.d_ff)

    @property
    def intensity_flops_per_byte(self) -> float:
        return self.flops / self.bytes_

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.seconds

    @property
    def fraction_of_spec(self) -> float | None:
        return self.flops_per_s / self.spec_flops_per_s if self.spec_flops_per_s else None

    def __repr__(self) -> str:
        f = units.format_quantity
        spec = f" ({self.fraction_of_spec:.0%} of spec)" if self.spec_flops_per_s else ""
        return (f"MatmulResult([{self.batch}, {self.d_model}] x [{self.d_model}, {self.d_ff}] {self.dtype}: "
                f"{f(self.seconds, 's')}, {f(self.flops_per_s, 'FLOP/s')}{spec})")


@dataclass(frozen=True)
class CopyResult(Readable):
    """One timed stream `x + 1` over an array of `size_bytes`: reads and writes each byte once."""

    size_bytes: int
    dtype: str
    seconds: float
    #: Spec HBM bandwidth of the matched chip (None: CPU or unknown chip).
    spec_bytes_per_s: float | None = None

    @property
    def bytes_moved(self) -> float:
        """Read once and written once: twice the array."""
        return 2.0 * self.size_bytes

    @property
    def flops(self) -> float:
        """One add per element."""
        return self.size_bytes / units.dtype_bytes(self.dtype)

    @property
    def intensity_flops_per_byte(self) -> float:
        return self.flops / self.bytes_moved

    @property
    def bytes_per_s(self) -> float:
        return self.bytes_moved / self.seconds

    @property
    def fraction_of_spec(self) -> float | None:
        return self.bytes_per_s / self.spec_bytes_per_s if self.spec_bytes_per_s else None

    def __repr__(self) -> str:
        f = units.format_quantity
        spec = f" ({self.fraction_of_spec:.0%} of spec)" if self.spec_bytes_per_s else ""
        return (f"CopyResult({f(self.size_bytes, 'B')} {self.dtype}: {f(self.seconds, 's')}, "
                f"{f(self.bytes_per_s, 'B/s')}{spec})")


@dataclass(frozen=True)
class Measurement(Readable):
    """Everything `run()` measured on one device, with the spec beside it when there is one."""

    device_kind: str
    platform: str
    #: The `scalebook.hardware` chip the device was matched to, or None (CPU, unknown GPU).
    chip: str | None
    matmuls: tuple[MatmulResult, ...]
    copies: tuple[CopyResult, ...]
    #: Wall time of the whole measurement, compilation included.
    seconds: float
    spec_flops_per_s: float | None = None  # bf16 dense peak of `chip`
    spec_bytes_per_s: float | None = None  # HBM bandwidth of `chip`
    notes: tuple[str, ...] = field(default_factory=tuple)

    def best_flops_per_s(self, dtype: str | None = None) -> float:
        """Fastest matmul measured (in `dtype`, or any dtype); raises `Error` if there is none."""
        rs = [r for r in self.matmuls if dtype is None or r.dtype == _short_dtype(dtype)]
        if not rs:
            raise Error(f"no matmul was measured in {dtype}; measured: {sorted({r.dtype for r in self.matmuls})}")
        return max(r.flops_per_s for r in rs)

    @property
    def best_bytes_per_s(self) -> float:
        """Fastest stream measured (bytes/s); raises `Error` if no stream was measured."""
        if not self.copies:
            raise Error("no memory stream was measured; pass copy_sizes to run()")
        return max(r.bytes_per_s for r in self.copies)

    def critical_intensity(self, dtype: str | None = None) -> float:
        """Measured critical intensity: best matmul FLOPs/s over best stream bytes/s."""
        return self.best_flops_per_s(dtype) / self.best_bytes_per_s

    @property
    def dtypes(self) -> tuple[str, ...]:
        out: list[str] = []
        for r in self.matmuls:
            if r.dtype not in out:
                out.append(r.dtype)
        return tuple(out)

    def rows(self) -> list[dict[str, str]]:
        """One formatted row per timing, for tables."""
        f = units.format_quantity
        out = []
        for r in self.matmuls:
            out.append({
                "what": f"matmul [{r.batch},{r.d_model}]x[{r.d_model},{r.d_ff}] {r.dtype}",
                "time": f(r.seconds, "s"), "intensity": f"{units.fmt_number(r.intensity_flops_per_byte)} FLOP/B",
                "measured": f(r.flops_per_s, "FLOP/s"),
                "spec": f(r.spec_flops_per_s, "FLOP/s") if r.spec_flops_per_s else "-",
            })
        for r in self.copies:
            out.append({
                "what": f"stream x+1 over {f(r.size_bytes, 'B')} {r.dtype}",
                "time": f(r.seconds, "s"), "intensity": f"{units.fmt_number(r.intensity_flops_per_byte)} FLOP/B",
                "measured": f(r.bytes_per_s, "B/s"),
                "spec": f(r.spec_bytes_per_s, "B/s") if r.spec_bytes_per_s else "-",
            })
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data (SI floats) for JSON."""
        return {
            "device_kind": self.device_kind, "platform": self.platform, "chip": self.chip,
            "seconds": self.seconds, "spec_flops_per_s": self.spec_flops_per_s,
            "spec_bytes_per_s": self.spec_bytes_per_s, "notes": list(self.notes),
            "matmuls": [{"batch": r.batch, "d_model": r.d_model, "d_ff": r.d_ff, "dtype": r.dtype,
                         "seconds": r.seconds, "flops": r.flops, "bytes": r.bytes_,
                         "flops_per_s": r.flops_per_s, "spec_flops_per_s": r.spec_flops_per_s}
                        for r in self.matmuls],
            "copies": [{"size_bytes": r.size_bytes, "dtype": r.dtype, "seconds": r.seconds,
                        "bytes_moved": r.bytes_moved, "bytes_per_s": r.bytes_per_s,
                        "spec_bytes_per_s": r.spec_bytes_per_s} for r in self.copies],
        }

    def summary(self) -> str:
        """Two or three lines: the best FLOPs/s and bytes/s, against the spec when known."""
        f = units.format_quantity
        lines = [f"device: {self.device_kind} ({self.platform})"
                 + (f", matched to {self.chip}" if self.chip else ", no spec in scalebook.hardware")]
        for d in self.dtypes:
            best = self.best_flops_per_s(d)
            spec = next((r.spec_flops_per_s for r in self.matmuls if r.dtype == d and r.spec_flops_per_s), None)
            lines.append(f"best {d} matmul: {f(best, 'FLOP/s')}"
                         + (f" = {best / spec:.0%} of the {f(spec, 'FLOP/s')} spec" if spec else ""))
        if self.copies:
            bw = self.best_bytes_per_s
            lines.append(f"best stream: {f(bw, 'B/s')}"
                         + (f" = {bw / self.spec_bytes_per_s:.0%} of the {f(self.spec_bytes_per_s, 'B/s')} spec"
                            if self.spec_bytes_per_s else ""))
        return "\n".join(lines + list(self.notes))

    def __repr__(self) -> str:
        return f"Measurement({self.summary()})"

    def _repr_html_(self) -> str:
        rows = self.rows()
        head = "".join(f"<th>{k}</th>" for k in rows[0]) if rows else ""
        body = "".join("<tr>" + "".join(f"<td>{v}</td>" for v in r.values()) + "</tr>" for r in rows)
        lines = "<br>".join(self.summary().splitlines())
        return f"<p>{lines}</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class _Progress:
    """A tiny progress bar: redrawn in place in a terminal or a live notebook, else silent.

    It never writes to stderr. In a notebook it updates one display (so a saved or built
    notebook keeps only the last state); in a terminal it rewrites one line with '\\r'.
    `show=True` forces plain lines on stdout where neither is available.
    """

    def __init__(self, total: int, label: str, show: bool | None, stream=None):
        self.total, self.label, self.done, self.t0 = total, label, 0, time.perf_counter()
        self._handle = None
        self._stream = None
        self._plain = False
        if show is False or total <= 0:
            return
        if stream is not None:
            self._stream = stream if (show or _isatty(stream)) else None
            return
        if _in_notebook():
            try:
                from IPython.display import display

                self._handle = display(_Text(self._line()), display_id=True)
                return
            except Exception:  # pragma: no cover - IPython present but unusable
                self._handle = None
        if _isatty(sys.stdout):
            self._stream = sys.stdout
        elif show:
            self._stream, self._plain = sys.stdout, True

    def _line(self, what: str = "") -> str:
        width = 20
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "-" * (width - filled)
        secs = time.perf_counter() - self.t0
        tail = f" {what}" if what else ""
        return f"{self.label} [{bar}] {self.done}/{self.total} ({secs:.1f} s){tail}"

    def step(self, what: str = "") -> None:
        self.done += 1
        self._draw(what if self.done < self.total else "done")

    def _draw(self, what: str) -> None:
        line = self._line(what)
        if self._handle is not None:
            self._handle.update(_Text(line))
        elif self._stream is not None:
            if self._plain:
                self._stream.write(line + "\n")
            else:
                self._stream.write("\r" + line.ljust(78) + ("\n" if self.done >= self.total else ""))
            self._stream.flush()


class _Text(str):
    def __repr__(self) -> str:
        return str(self)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:
        return False


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and hasattr(ip, "kernel")


def _jax():
    import jax
    import jax.numpy as jnp

    return jax, jnp


def _jnp_dtype(dtype: str):
    _, jnp = _jax()
    names = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
    d = _short_dtype(dtype)
    if d not in names:
        raise Error(f"measure times matmuls in fp32, bf16 or fp16, not {dtype!r}")
    return jnp.dtype(names[d])


def _spec_flops(chip: str | None, dtype: str) -> float | None:
    if chip is None:
        return None
    return _chip(chip).flops_per_s.get(_short_dtype(dtype))


def matmul(batch: int, d_model: int, d_ff: int, *, dtype: str = "fp32", repeats: int = 5,
           chip: str | None = None) -> MatmulResult:
    """Time one jitted `[batch, d_model] x [d_model, d_ff]` in `dtype` on jax's default device."""
    require_positive(batch=batch, d_model=d_model, d_ff=d_ff, repeats=repeats)
    jax, _ = _jax()
    from .xla import time_call

    dt = _jnp_dtype(dtype)
    ka, kb = jax.random.split(jax.random.key(0))
    a = jax.random.normal(ka, (int(batch), int(d_model)), dtype=dt)
    b = jax.random.normal(kb, (int(d_model), int(d_ff)), dtype=dt)
    f = jax.jit(lambda x, y: x @ y)
    seconds = time_call(f, a, b, repeats=repeats, warmup=1)
    del a, b
    return MatmulResult(int(batch), int(d_model), int(d_ff), _short_dtype(dtype), seconds,
                        _spec_flops(chip, dtype))


def copy(size_bytes: float, *, dtype: str = "fp32", repeats: int = 5, chip: str | None = None) -> CopyResult:
    """Time `x + 1` in place over an array of `size_bytes` (its buffer donated, so no allocation)."""
    require_positive(size_bytes=size_bytes, repeats=repeats)
    jax, jnp = _jax()
    from .xla import time_call

    dt = _jnp_dtype(dtype)
    n = max(1, int(size_bytes // dt.itemsize))
    step = jax.jit(lambda x: x + jnp.asarray(1, dt), donate_argnums=0)
    state = [jnp.zeros((n,), dt)]

    def once():
        state[0] = step(state[0])
        return state[0]

    seconds = time_call(once, repeats=repeats, warmup=1)
    state.clear()
    spec = _chip(chip).hbm_bytes_per_s if chip else None
    return CopyResult(int(n * dt.itemsize), _short_dtype(dtype), seconds, spec)


def last_level_cache_bytes(sys_cache: str = _SYS_CACHE) -> int:
    """Size of the CPU's last-level cache in bytes, as the OS reports it (Chapter 1, "Measure it").

    Reads Linux's sysfs (`index*/level` and `size` under `sys_cache`, the largest data or unified
    cache at the highest level), then `os.sysconf` (SC_LEVEL3/2_CACHE_SIZE where the C library
    has them); falls back to `FALLBACK_LLC_BYTES` when neither answers.
    """
    import glob
    import os

    best: tuple[int, int] | None = None
    for d in glob.glob(os.path.join(sys_cache, "index*")):
        try:
            with open(os.path.join(d, "type")) as f:
                if f.read().strip() == "Instruction":
                    continue
            with open(os.path.join(d, "level")) as f:
                level = int(f.read())
            with open(os.path.join(d, "size")) as f:
                size = _parse_cache_size(f.read())
        except (OSError, ValueError):
            continue
        if best is None or (level, size) > best:
            best = (level, size)
    if best and best[1] > 0:
        return best[1]
    for name in ("SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
        try:
            size = os.sysconf(name)
        except (ValueError, OSError):
            continue
        if size and size > 0:
            return int(size)
    return FALLBACK_LLC_BYTES


def cpu_stream_sizes(llc_bytes: float | None = None) -> tuple[float, float]:
    """Array sizes for the CPU stream: 4x and 16x the last-level cache, at least 128 MB and 512 MB.

    An array that fits in the cache measures the cache's bandwidth, not DRAM's; an in-place
    `x + 1` over several times the cache evicts its own lines before it comes back to them.
    Capped at 2 GB so that the run stays a few seconds and fits in a small machine's memory.
    """
    llc = last_level_cache_bytes() if llc_bytes is None else llc_bytes
    require_positive(llc_bytes=llc)
    return (min(max(4 * llc, 128e6), 2e9), min(max(16 * llc, 512e6), 2e9))


def default_plan(platform: str) -> dict[str, Any]:
    """The shapes `run()` times by default: small on a CPU (a few seconds), larger elsewhere.

    On a CPU the streams are sized from the last-level cache (`cpu_stream_sizes`) so that the
    measured bandwidth is the DRAM's.
    """
    if platform == "cpu":
        return {"shapes": [(1, 2048, 2048), (8, 2048, 2048), (64, 2048, 2048), (512, 2048, 2048)],
                "dtypes": ("fp32",), "copy_sizes": cpu_stream_sizes()}
    return {"shapes": [(1, 8192, 8192), (16, 8192, 8192), (128, 8192, 8192), (1024, 8192, 8192),
                       (8192, 8192, 8192)],
            "dtypes": ("bf16", "fp32"), "copy_sizes": (256e6, 1e9)}


def run(
    *,
    shapes: Sequence[tuple[int, int, int]] | None = None,
    dtypes: Sequence[str] | None = None,
    copy_sizes: Sequence[float] | None = None,
    repeats: int = 5,
    progress: bool | None = None,
    progress_stream=None,
) -> Measurement:
    """Measure matmul FLOPs/s and stream bytes/s on jax's default device.

    `shapes` are `(batch, d_model, d_ff)` triples, each timed in every dtype of `dtypes`;
    `copy_sizes` are array sizes in bytes for the `x + 1` stream. Defaults (`default_plan`) take
    a few seconds on a small CPU. `progress=None` shows a bar where someone can watch it (a
    terminal or a live notebook), `False` never, `True` always (on stdout, or on
    `progress_stream` if given).
    """
    jax, _ = _jax()
    t0 = time.perf_counter()
    dev = jax.devices()[0]
    kind = getattr(dev, "device_kind", dev.platform) or dev.platform
    platform = dev.platform
    name = chip_for_device(kind)
    plan = default_plan(platform)
    shapes = list(plan["shapes"] if shapes is None else shapes)
    dtypes = tuple(plan["dtypes"] if dtypes is None else dtypes)
    copy_sizes = tuple(plan["copy_sizes"] if copy_sizes is None else copy_sizes)
    if not shapes and not copy_sizes:
        raise Error("nothing to measure: give at least one matmul shape or one copy size")
    for s in shapes:
        if len(s) != 3:
            raise Error(f"a matmul shape is (batch, d_model, d_ff), got {s!r}")
    notes: list[str] = []
    if name is None:
        notes.append(f"{kind!r} has no spec in scalebook.hardware: measured figures only"
                     + (" (a CPU's peak depends on its cores, vector width and clock)" if platform == "cpu" else ""))
    bar = _Progress(len(shapes) * len(dtypes) + len(copy_sizes), f"measuring {kind}", progress,
                    progress_stream)
    mm: list[MatmulResult] = []
    for dtype in dtypes:
        for (b, d, f) in shapes:
            mm.append(matmul(b, d, f, dtype=dtype, repeats=repeats, chip=name))
            bar.step(f"matmul {b}x{d}x{f} {_short_dtype(dtype)}")
    cp: list[CopyResult] = []
    for size in copy_sizes:
        cp.append(copy(size, repeats=repeats, chip=name))
        bar.step(f"stream {units.format_quantity(size, 'B')}")
    spec_flops = _chip(name).peak_flops_per_s("bf16") if name else None
    spec_bytes = _chip(name).hbm_bytes_per_s if name else None
    if name and "fp32" in {_short_dtype(d) for d in dtypes}:
        notes.append(f"the spec table has no fp32 peak for {name}: fp32 matmuls are shown without one")
    return Measurement(kind, platform, name, tuple(mm), tuple(cp), time.perf_counter() - t0,
                       spec_flops, spec_bytes, tuple(notes))
