"""The bridge to real JAX/XLA: simulated CPU devices, compiled cost analysis, timing.

jax is imported lazily, inside each function: `import scalebook` never pays for it.
Chapters use this module to check the package's formulas against what the XLA compiler
actually builds (PITFALLS: `cost_analysis()` counts a matmul's FLOPs about 0.7% above 2BDF,
and for a partitioned program it counts one device's share).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .errors import Error, require_positive


def use_cpu_devices(n: int = 8) -> None:
    """Ask XLA for `n` simulated CPU devices. Must run before jax's first computation.

    Sets `XLA_FLAGS` (for a jax not yet imported) and `jax_num_cpu_devices` (for one that is).
    Raises `Error` if jax already started with a different number of devices.
    """
    require_positive(n=n)
    flag = f"--xla_force_host_platform_device_count={int(n)}"
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " " + flag).strip()
    import jax

    try:
        jax.config.update("jax_num_cpu_devices", int(n))
    except RuntimeError:
        pass  # backend already initialised; checked below
    have = len(jax.devices("cpu"))
    if have < n:
        raise Error(
            f"jax already started with {have} CPU devices; call use_cpu_devices({n}) "
            "before the first JAX computation (restart the kernel)"
        )


def mesh(shape: "dict[str, int]", *, explicit: bool = False):
    """A `jax.sharding.Mesh` with named axes, e.g. `mesh({"X": 4, "Y": 2})`.

    Axes are Auto (the compiler chooses shardings of intermediates) unless `explicit`.
    """
    import jax
    from jax.sharding import AxisType

    if not shape:
        raise Error("a mesh needs at least one axis, e.g. {'X': 8}")
    for name, size in shape.items():
        require_positive(**{f"mesh axis {name}": size})
    n = 1
    for size in shape.values():
        n *= size
    if n > len(jax.devices()):
        raise Error(
            f"a {'x'.join(map(str, shape.values()))} mesh needs {n} devices, jax has {len(jax.devices())}; "
            f"call scalebook.xla.use_cpu_devices({n}) first"
        )
    kind = AxisType.Explicit if explicit else AxisType.Auto
    return jax.make_mesh(tuple(shape.values()), tuple(shape.keys()), axis_types=(kind,) * len(shape))


@dataclass(frozen=True)
class CompiledCost:
    """What XLA's cost model says about one compiled program (per device when partitioned)."""

    flops: float
    bytes_accessed: float
    transcendentals: float

    def __repr__(self) -> str:
        from .units import format_quantity as f

        return f"CompiledCost({f(self.flops, 'FLOP')}, {f(self.bytes_accessed, 'B')} accessed)"


def compile(fn: Callable, *args: Any, **jit_kwargs: Any):
    """`jax.jit(fn, **jit_kwargs).lower(*args).compile()`; args may be `jax.ShapeDtypeStruct`s."""
    import jax

    return jax.jit(fn, **jit_kwargs).lower(*args).compile()


def cost(fn_or_compiled: Any, *args: Any, **jit_kwargs: Any) -> CompiledCost:
    """FLOPs and bytes that XLA's `cost_analysis()` reports for `fn(*args)` (or a compiled program)."""
    compiled = fn_or_compiled if hasattr(fn_or_compiled, "cost_analysis") else compile(fn_or_compiled, *args, **jit_kwargs)
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):  # older jax returned one dict per program
        ca = ca[0]
    return CompiledCost(
        flops=float(ca.get("flops", 0.0)),
        bytes_accessed=float(ca.get("bytes accessed", 0.0)),
        transcendentals=float(ca.get("transcendentals", 0.0)),
    )


def hlo_text(fn_or_compiled: Any, *args: Any, **jit_kwargs: Any) -> str:
    """The optimized HLO text XLA compiled for `fn(*args)` (after SPMD partitioning)."""
    compiled = fn_or_compiled if hasattr(fn_or_compiled, "as_text") else compile(fn_or_compiled, *args, **jit_kwargs)
    return compiled.as_text()


def time_call(fn: Callable, *args: Any, repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of `fn(*args)` in seconds, blocking until results are ready."""
    import jax

    require_positive(repeats=repeats)
    for _ in range(warmup):
        jax.block_until_ready(fn(*args))
    times: list[float] = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def device_kind() -> str:
    """A short description of jax's default device, e.g. 'cpu' or 'NVIDIA H100 80GB HBM3'."""
    import jax

    d = jax.devices()[0]
    return getattr(d, "device_kind", d.platform)


def shapes(*specs: Sequence[int], dtype: str = "float32"):
    """`jax.ShapeDtypeStruct`s for compiling without allocating: `shapes((8, 16), (16, 4))`."""
    import jax
    import jax.numpy as jnp

    return tuple(jax.ShapeDtypeStruct(tuple(s), jnp.dtype(dtype)) for s in specs)
