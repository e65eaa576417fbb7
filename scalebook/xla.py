"""The bridge to real JAX/XLA: simulated CPU devices, compiled cost analysis, timing.

jax is imported lazily, inside each function: `import scalebook` never pays for it.
Chapters use this module to check the package's formulas against what the XLA compiler
actually builds (TOOLCHAIN.md, note 9: `cost_analysis()` counts a matmul's FLOPs about 0.7% above 2BDF,
and for a partitioned program it counts one device's share).
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ._readable import Readable
from .errors import Error, _show, choose, integer, number, require_positive, text as _text


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
    The mesh is made of the default backend's devices when there are enough of them (8 TPU
    cores in Colab), else of the simulated CPU devices, so the book's 8-device examples also
    run on a single-GPU runtime.
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
    devices = jax.devices()
    if n > len(devices):
        devices = jax.devices("cpu")
    if n > len(devices):
        raise Error(
            f"a {'x'.join(map(str, shape.values()))} mesh needs {n} devices, jax has {len(devices)}; "
            f"call scalebook.xla.use_cpu_devices({n}) first"
        )
    kind = AxisType.Explicit if explicit else AxisType.Auto
    return jax.make_mesh(tuple(shape.values()), tuple(shape.keys()), axis_types=(kind,) * len(shape),
                         devices=devices[:n])


@dataclass(frozen=True)
class CompiledCost(Readable):
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


def jax_version() -> "tuple[int, ...]":
    """The installed jax release as integers: (0, 10, 2) for '0.10.2', (0, 11, 0) for '0.11.0.dev1'.

    What XLA compiles (collective choices, fusion, buffer sizes) differs between releases; tests
    and chapters compare with it to say which release made which choice (TOOLCHAIN.md, note 4).
    """
    import jax

    parts = []
    for p in jax.__version__.split("."):
        m = re.match(r"\d+", p)
        if not m:
            break
        parts.append(int(m.group()))
        if m.end() < len(p):  # '2rc1'
            break
    return tuple(parts)


def shapes(*specs: Sequence[int], dtype: str = "float32"):
    """`jax.ShapeDtypeStruct`s for compiling without allocating: `shapes((8, 16), (16, 4))`."""
    import jax
    import jax.numpy as jnp

    return tuple(jax.ShapeDtypeStruct(tuple(s), jnp.dtype(dtype)) for s in specs)


# ------------------------------------------------------------ collectives in compiled HLO (chapter 3)

#: HLO collective ops, as `scalebook.collectives.KINDS` names them.
HLO_COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")

#: What XLA on CPU compiles instead of a collective the book (and a TPU) would use, found on 8
#: simulated CPU devices with jax 0.10.2 (TOOLCHAIN.md, note 14): a ReduceScatter becomes an AllReduce of
#: the same array V followed by a local dynamic-slice (each device keeps its block).
CPU_EQUIVALENTS = {"reduce-scatter": "all-reduce"}

def spreads_over_replicated_major_axis() -> bool:
    """Whether XLA on CPU turns a collective over the minor mesh axes only into one over all mesh
    axes of the same V when the output is fully replicated (see `expected_on_cpu`): jax 0.10.0 and
    newer do; jax 0.9 and older keep it over the minor axes (TOOLCHAIN.md, note 4)."""
    return jax_version() >= (0, 10, 0)

_HLO_BYTES = {"f32": 4, "bf16": 2, "f16": 2, "f64": 8, "s32": 4, "u32": 4, "s8": 1, "u8": 1, "pred": 1,
              "s64": 8, "u64": 8, "s16": 2, "u16": 2, "f8e4m3fn": 1, "f8e5m2": 1}
_JNP_DTYPE = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "int8": "int8"}


@dataclass(frozen=True)
class HloCollective(Readable):
    """One collective read from compiled HLO (chapter 3 compares these with `sharding.plan`).

    `axes`: the mesh axes its replica groups span, in mesh order. `array_bytes` is V in the
    convention of `scalebook.collectives` (an AllGather's output, a ReduceScatter's input, an
    AllReduce's operand, all N shards of an AllToAll or permute), computed from the HLO shapes;
    `bytes_per_device` is what each device sends by the same formulas (V(N-1)/N for AllGather).
    """

    kind: str
    axes: tuple[str, ...]
    group_size: int
    shape: str
    array_bytes: float
    bytes_per_device: float

    def __repr__(self) -> str:
        from .units import format_quantity as f

        return (f"HloCollective({self.kind} over {''.join(self.axes) or '-'} (N={self.group_size}): {self.shape}, "
                f"V={f(self.array_bytes, 'B')}, {f(self.bytes_per_device, 'B')} sent per device)")


def sent_bytes_per_device(kind: str, array_bytes: float, group_size: int) -> float:
    """Bytes each device sends in collective `kind` of a V-byte array over N devices (chapter 3).

    `kind`: one of `HLO_COLLECTIVES`; `array_bytes` >= 0; `group_size`: a whole number >= 1.
    """
    choose("collective kind", kind, HLO_COLLECTIVES)
    v, n = number("array_bytes", array_bytes), integer("group_size", group_size)
    if v < 0:
        raise Error(f"array_bytes must be a number >= 0, got {_show(array_bytes)}")
    if n <= 1:
        return 0.0
    return {"all-gather": v * (n - 1) / n, "reduce-scatter": v * (n - 1) / n, "all-reduce": 2 * v * (n - 1) / n,
            "all-to-all": v * (n - 1) / (n * n), "collective-permute": v / n}[kind]


def _shape_bytes(text: str) -> tuple[float, str]:
    """Bytes of an HLO shape such as 'f32[64,128]{1,0}' or a tuple '(f32[8], f32[8])'."""
    import re

    total, shapes = 0.0, []
    for dt, dims in re.findall(r"\b([a-z]+[0-9]*[a-z0-9]*)\[([0-9,]*)\]", text):
        if dt not in _HLO_BYTES:
            raise Error(f"unknown HLO element type {dt!r} in {text!r}")
        n = 1
        for d in filter(None, dims.split(",")):
            n *= int(d)
        if n * _HLO_BYTES[dt] > 2**80:  # far beyond any memory; also keeps the float sums finite
            raise Error(f"HLO shape {dt}[{dims}] is too large (over 2**80 bytes) in {_show(text)}")
        total += n * _HLO_BYTES[dt]
        shapes.append(f"{dt}[{dims}]")
    return total, ", ".join(shapes)


#: The most devices a program here may span (a guard: groups are listed device by device).
MAX_DEVICES = 2**20


def _mesh_shape(mesh_shape: Any) -> "dict[str, int]":
    """`mesh_shape` checked: a non-empty dict of axis name -> whole size, at most MAX_DEVICES in all."""
    from collections.abc import Mapping

    if not isinstance(mesh_shape, Mapping) or not mesh_shape:
        raise Error(f"mesh_shape must be a non-empty dict of axis name -> size, e.g. {{'X': 4, 'Y': 2}}; "
                    f"got {_show(mesh_shape)}")
    out = {}
    for name, size in mesh_shape.items():
        if not isinstance(name, str) or not name:
            raise Error(f"mesh_shape axis names must be non-empty strings, got {_show(name)}")
        out[name] = integer(f"mesh_shape[{name!r}]", size)
    total = 1
    for size in out.values():
        total *= size
    if total > MAX_DEVICES:
        raise Error(f"mesh_shape {_show(mesh_shape)} has {total} devices; at most {MAX_DEVICES} are supported")
    return out


def _groups_of(dims: "list[int]", num_devices: int, t: str):
    """arange over the devices of `dims`, checked to be the program's `num_devices`."""
    import numpy as np

    total = 1
    for d in dims:
        total *= d
    if total != num_devices:
        raise Error(f"replica groups {_show(t)} lay out {total} devices, but num_devices is {num_devices}")
    return np.arange(total).reshape(dims)


def parse_replica_groups(text: str, num_devices: int) -> list[list[int]]:
    """Device groups of an HLO `replica_groups=` value, in any of its three printed forms.

    Explicit `{{0,1},{2,3}}` (`{}`: all devices); iota `[2,4]<=[4,2]T(1,0)` (arange(N) reshaped
    to [4,2], transposed by (1,0), then read as 2 groups of 4); mesh form
    `mesh['axis_0'=4,'axis_1'=2] {'axis_0'}` (devices laid out row-major over the listed axes;
    a group is every device that differs only along the braced axes). TOOLCHAIN.md, note 14.
    `num_devices` (at most `MAX_DEVICES`) is the program's device count: the iota and mesh forms
    must lay out exactly that many, and explicit groups may name only devices below it.
    """
    import re

    t = _text("text", text).strip()
    num_devices = integer("num_devices", num_devices)
    if num_devices > MAX_DEVICES:
        raise Error(f"num_devices must be at most {MAX_DEVICES}, got {num_devices}")
    if t.startswith("mesh["):
        m = re.fullmatch(r"mesh\[(.*?)\]\s*\{(.*?)\}", t)
        if not m:
            raise Error(f"cannot read mesh-form replica groups {_show(t)}; expected e.g. mesh['a'=4,'b'=2] {{'a'}}")
        names, sizes = [], []
        for item in m.group(1).split(","):
            km = re.fullmatch(r"\s*'([^']+)'\s*=\s*(\d+)\s*", item)
            if not km:
                raise Error(f"cannot read mesh axis {_show(item)} in replica groups {_show(t)}")
            if km.group(1) in names:
                raise Error(f"mesh axis {km.group(1)!r} appears twice in replica groups {_show(t)}")
            names.append(km.group(1))
            sizes.append(int(km.group(2)))
        chosen = re.findall(r"'([^']+)'", m.group(2))
        if any(c not in names for c in chosen):
            raise Error(f"replica groups {_show(t)} name an axis that is not in their mesh (sub-axes are not supported)")
        if len(set(chosen)) != len(chosen):
            raise Error(f"replica groups {_show(t)} name an axis twice")
        ids = _groups_of(sizes, num_devices, t)
        keep = [i for i, n in enumerate(names) if n not in chosen] + [names.index(c) for c in chosen]
        g = 1
        for c in chosen:
            g *= sizes[names.index(c)]
        return ids.transpose(keep).reshape(-1, g).tolist()
    m = re.fullmatch(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", t)
    if m:
        groups, size = int(m.group(1)), int(m.group(2))
        dims = [int(x) for x in m.group(3).split(",") if x]
        ids = _groups_of(dims, num_devices, t)
        if groups * size != num_devices:
            raise Error(f"replica groups {_show(t)}: {groups} groups of {size} do not hold the {num_devices} devices")
        if m.group(4):
            perm = [int(x) for x in m.group(4).split(",") if x]
            if sorted(perm) != list(range(len(dims))):
                raise Error(f"replica groups {_show(t)}: T({m.group(4)}) is not a permutation of the "
                            f"{len(dims)} dimensions")
            ids = ids.transpose(perm)
        return ids.reshape(groups, size).tolist()
    if re.fullmatch(r"\{\s*(?:\{[\d,\s]*\}\s*,?\s*)*\}", t):
        inner = re.findall(r"\{([\d,\s]*)\}", t[1:-1])
        groups = [[int(x) for x in g.split(",") if x.strip()] for g in inner]
        if any(not g for g in groups):
            raise Error(f"replica groups {_show(t)} hold an empty group")
        bad = [d for g in groups for d in g if d >= num_devices]
        if bad:
            raise Error(f"replica groups {_show(t)} name device {bad[0]}, but num_devices is {num_devices}")
        return groups or [list(range(num_devices))]
    raise Error(f"cannot read replica groups {_show(t)}; expected {{{{0,1}},...}}, [2,4]<=[8] or mesh[...] {{...}}")


def group_axes(groups: "list[list[int]]", mesh_shape: "dict[str, int]") -> tuple[str, ...]:
    """The mesh axes a set of device groups spans (device p sits at unravel_index(p, mesh shape)).

    `groups`: a non-empty list of lists of device ids below the mesh's device count. Raises `Error`
    if the groups are not whole mesh axes (e.g. strided or partial subgroups).
    """
    import numbers

    import numpy as np

    mesh_shape = _mesh_shape(mesh_shape)
    names, sizes = list(mesh_shape), list(mesh_shape.values())
    total = int(np.prod(sizes))
    if not isinstance(groups, (list, tuple)) or not groups:
        raise Error(f"groups must be a non-empty list of device-id lists, e.g. [[0, 1], [2, 3]]; got {_show(groups)}")
    for g in groups:
        if not isinstance(g, (list, tuple)) or not g:
            raise Error(f"groups must hold non-empty lists of device ids, got {_show(g)} in {_show(groups)}")
        for d in g:
            if isinstance(d, bool) or not isinstance(d, numbers.Integral) or not 0 <= d < total:
                raise Error(f"groups must hold device ids 0..{total - 1} of the mesh {mesh_shape}, got {_show(d)}")
    found: "tuple[str, ...] | None" = None
    for g in groups:
        coords = np.array(np.unravel_index(np.array(g), sizes)).T
        axes = tuple(n for i, n in enumerate(names) if len(set(coords[:, i])) > 1)
        n = int(np.prod([mesh_shape[a] for a in axes])) if axes else 1
        if len(set(g)) != len(g) or len(g) != n or (found is not None and axes != found):
            raise Error(f"replica groups {groups} do not span whole axes of the mesh {mesh_shape}")
        found = axes
    return found or ()


def _pairs_axes(text: str, mesh_shape: "dict[str, int]") -> tuple[str, ...]:
    import re

    import numpy as np

    names, sizes = list(mesh_shape), list(mesh_shape.values())
    total = int(np.prod(sizes))
    axes = set()
    for a, b in re.findall(r"\{(\d+),(\d+)\}", text):
        if max(int(a), int(b)) >= total:
            raise Error(f"source_target_pairs {_show(text)} name device {max(int(a), int(b))}, "
                        f"but the mesh has {total} devices")
        ca, cb = np.unravel_index(int(a), sizes), np.unravel_index(int(b), sizes)
        axes |= {names[i] for i in range(len(names)) if ca[i] != cb[i]}
    return tuple(n for n in names if n in axes)


def collectives_in_hlo(hlo: str, mesh_shape: "dict[str, int]") -> tuple[HloCollective, ...]:
    """Every collective in compiled HLO text, in program order, with its mesh axes and bytes.

    `mesh_shape` is the mesh the program was compiled for, e.g. {"X": 4, "Y": 2}. Async pairs
    (`all-gather-start`/`-done`) count once. Chapter 3 uses this to check `sharding.plan`.
    """
    import math
    import re

    hlo, mesh_shape = _text("hlo", hlo), _mesh_shape(mesh_shape)
    n_dev = math.prod(mesh_shape.values())
    op = re.compile(r"=\s*(.*?)\s+(" + "|".join(HLO_COLLECTIVES) + r")(-start)?\(")
    found = []
    for line in hlo.splitlines():
        m = op.search(line)
        if not m:
            continue
        kind = m.group(2)
        out_bytes, shape = _shape_bytes(m.group(1))
        if m.group(3) and kind in ("all-gather", "collective-permute", "all-to-all"):
            # async start ops return (operand, output[, ...]) tuples: keep the output
            parts = re.findall(r"[a-z]+[0-9]*[a-z0-9]*\[[0-9,]*\]", m.group(1))
            out_bytes, shape = _shape_bytes(parts[1] if len(parts) > 1 else parts[0])
        if kind == "collective-permute":
            pm = re.search(r"source_target_pairs=(\{(?:\{\d+,\d+\},?)*\})", line)
            axes = _pairs_axes(pm.group(1) if pm else "", mesh_shape)
        else:
            gm = re.search(r"replica_groups=(mesh\[.*?\]\s*\{.*?\}|\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?|\{(?:\{[\d,\s]*\},?)*\})",
                           line)
            groups = parse_replica_groups(gm.group(1) if gm else "{}", n_dev)
            axes = group_axes(groups, mesh_shape)
        n = math.prod(mesh_shape[a] for a in axes) if axes else 1
        v = out_bytes * n if kind in ("reduce-scatter", "all-to-all", "collective-permute") else out_bytes
        found.append(HloCollective(kind=kind, axes=axes, group_size=n, shape=shape, array_bytes=v,
                                   bytes_per_device=sent_bytes_per_device(kind, v, n)))
    return tuple(found)


@dataclass(frozen=True)
class CompiledMatmul(Readable):
    """A sharded matmul compiled by XLA and the collectives it contains (chapter 3)."""

    spec: str
    mesh_shape: "dict[str, int]"
    collectives: "tuple[HloCollective, ...]"
    dynamic_slice: bool  # whether the partitioned program cuts local blocks out of a larger array
    hlo: str

    def __repr__(self) -> str:
        body = "; ".join(repr(c) for c in self.collectives) or "no collectives"
        return f"CompiledMatmul({self.spec}: {body})"


def _partition_spec(op):
    from jax.sharding import PartitionSpec

    return PartitionSpec(*[None if not ax else (ax[0] if len(ax) == 1 else tuple(ax)) for ax in op.axes])


def compile_matmul(spec: Any, *, mesh: "dict[str, int]", dims: "dict[str, int]", dtype: str = "fp32") -> CompiledMatmul:
    """Compile `spec` (e.g. 'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]') with jax.jit and NamedSharding.

    Needs enough devices (`use_cpu_devices(8)` first on CPU). Inputs are sharded as the spec says;
    the output as its `->` part says, else as XLA chooses. Use fp32 for cross-checks: CPU computes
    bf16 dots in f32, so its collectives would carry twice the bytes (TOOLCHAIN.md, note 14). The
    collectives are read from the optimized HLO by `collectives_in_hlo`.
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    from . import sharding as _sharding
    from .units import canonical_dtype

    s = _sharding.parse(spec) if isinstance(spec, str) else spec
    _sharding.validate(s, mesh, dims)
    dt = canonical_dtype(dtype)
    if dt not in _JNP_DTYPE:
        raise Error(f"cannot compile a matmul in {dtype}; valid: {', '.join(_JNP_DTYPE)}")
    m = _make_mesh(dict(mesh))
    letters = {d: chr(ord("a") + i) for i, d in enumerate(dict.fromkeys(s.lhs.dims + s.rhs.dims))}
    out_dims = s.out.dims if s.out is not None else s.free
    eq = (f"{''.join(letters[d] for d in s.lhs.dims)},{''.join(letters[d] for d in s.rhs.dims)}"
          f"->{''.join(letters[d] for d in out_dims)}")
    out_sharding = NamedSharding(m, _partition_spec(s.out)) if s.out is not None else None
    fn = jax.jit(lambda x, y: jnp.einsum(eq, x, y),
                 in_shardings=(NamedSharding(m, _partition_spec(s.lhs)), NamedSharding(m, _partition_spec(s.rhs))),
                 out_shardings=out_sharding)
    args = [jax.ShapeDtypeStruct(tuple(dims[d] for d in op.dims), jnp.dtype(_JNP_DTYPE[dt])) for op in (s.lhs, s.rhs)]
    text = fn.lower(*args).compile().as_text()
    return CompiledMatmul(spec=str(s), mesh_shape=dict(mesh), collectives=collectives_in_hlo(text, dict(mesh)),
                          dynamic_slice="dynamic-slice" in text, hlo=text)


def expected_on_cpu(plan: Any) -> "tuple[tuple[str, tuple[str, ...], float, float], ...]":
    """The collectives of a `sharding.Plan` as CPU XLA compiles them: (kind, axes, V, bytes sent).

    Two equivalent decompositions that XLA on CPU picks (TOOLCHAIN.md, note 14), applied here by name:

    - `CPU_EQUIVALENTS`: a ReduceScatter appears as an AllReduce of the same V (whose devices each
      send twice the bytes) followed by a dynamic-slice.
    - `spreads_over_replicated_major_axis()` (jax 0.10.0 and newer): when the output is fully
      replicated, a collective over minor mesh axes only (Y of an X-by-Y mesh) spans every mesh
      axis, with the same V: XLA first slices the copies that are replicated along X, so that all
      devices share the work.

    Axes are put in mesh order.
    """
    out = []
    spread = plan.spec.out is not None and not any(plan.spec.out.axes) and spreads_over_replicated_major_axis()
    major = next(iter(plan.mesh))
    for s in plan.collectives:
        kind = CPU_EQUIVALENTS.get(s.kind, s.kind)
        axes = tuple(a for a in plan.mesh if a in s.axes)
        if spread and major not in axes:
            axes = tuple(plan.mesh)
        n = 1
        for a in axes:
            n *= plan.mesh[a]
        out.append((kind, axes, s.array_bytes, sent_bytes_per_device(kind, s.array_bytes, n)))
    return tuple(out)


def signature(compiled: CompiledMatmul) -> "tuple[tuple[str, tuple[str, ...], float, float], ...]":
    """(kind, axes, V, bytes sent per device) of each collective XLA compiled, for comparing with
    `expected_on_cpu(plan)`."""
    return tuple((c.kind, c.axes, c.array_bytes, c.bytes_per_device) for c in compiled.collectives)


def xla_choice(plan: Any) -> Any:
    """Which of `plan` and its `alternatives` XLA's SPMD partitioner compiles (jax 0.10.2, CPU).

    The one with the fewest collected bytes (`Plan.cheapest`: e.g. for A[I_Y, J_X] @ B[J, K] it
    slices B and AllReduces C when C is smaller than A[I_Y, J], else it AllGathers A; ties go to
    the AllGather) -- except that when the output is fully replicated it never slices an input
    to multiply partial sums: it AllGathers the operands (the book's case 2). Chapter 3.
    """
    out = plan.spec.out
    candidates = (plan,) + tuple(plan.alternatives)
    if out is not None and not any(out.axes):
        names = (plan.spec.lhs.name, plan.spec.rhs.name)
        kept = tuple(p for p in candidates if not any(s.kind == "slice" and s.operand in names for s in p.steps))
        candidates = kept or candidates
    return min(candidates, key=lambda p: p.comm_array_bytes)


_make_mesh = mesh  # compile_matmul takes a `mesh` argument that shadows the function


# ------------------------------------------------------------------ TPU tiled layouts (pure Python)


@dataclass(frozen=True)
class TiledSize(Readable):
    """An array's bytes before and after padding to a TPU memory tile (`tiled_bytes`)."""

    shape: tuple[int, ...]
    dtype: str
    tile: tuple[int, int]
    padded_shape: tuple[int, ...]
    logical_bytes: int
    padded_bytes: int

    @property
    def overhead(self) -> float:
        """Padded over logical bytes: 1.0 when the last two dimensions fill whole tiles."""
        return self.padded_bytes / self.logical_bytes

    def __repr__(self) -> str:
        from .units import fmt_bytes

        dims = ",".join(map(str, self.shape))
        padded = ",".join(map(str, self.padded_shape))
        return (f"TiledSize({self.dtype}[{dims}] in ({self.tile[0]}, {self.tile[1]}) tiles: padded to [{padded}], "
                f"{fmt_bytes(self.padded_bytes)} for {fmt_bytes(self.logical_bytes)}, {self.overhead:.2f}x)")


#: The TPU's memory tile for 32-bit values: 8 sublanes x 128 lanes (JAX's Pallas TPU guide).
TPU_TILE_32BIT = (8, 128)


def tiled_bytes(shape: Sequence[int], dtype: str = "float32", *, tile: "Sequence[int] | None" = None) -> TiledSize:
    """Bytes an array takes on a TPU once its last two dimensions are padded to whole tiles.

    A TPU lays an array out in tiles over its last two dimensions, 8 x 128 for 32-bit values
    (JAX's Pallas TPU guide), and pads each of those two dimensions up to a multiple of the tile;
    the other dimensions are not padded. Narrower dtypes pack 4 / bytes-per-element values into
    each 32-bit word along the second-to-last dimension, as XLA's `T(8,128)(2,1)` layout does for
    bf16 (chapter 9; Austin et al. 2025, part 9), so the tile is (16, 128) for 2-byte and (32, 128)
    for 1-byte types; that extension to 1-byte types is this function's assumption. A 1-D array is
    treated as one row, [1, n]. Pass `tile=(rows, cols)` to use another tile (the original book's
    `T(2,2)` example pads f32[3,5] to [4,6]).

        padded = prod(shape[:-2]) x ceil(shape[-2] / rows) rows x ceil(shape[-1] / cols) cols x bytes

    `shape`: whole numbers >= 1; `dtype`: a dtype name (`units.dtype_bytes`); `tile`: two whole
    numbers >= 1. The layout of real TPU programs is XLA's choice (it may reorder dimensions or
    pick other tiles); this is the default case, for estimating padding waste.
    """
    import math

    from .units import dtype_bytes

    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence) or not shape:
        raise Error(f"shape must be a non-empty sequence of sizes such as (1024, 512), got {shape!r}")
    dims = tuple(integer("shape entry", d) for d in shape)
    if any(d < 1 for d in dims):
        raise Error(f"shape entries must be >= 1, got {tuple(shape)}")
    beta = dtype_bytes(dtype)
    if tile is None:
        pack = max(1, int(4 // beta)) if beta < 4 else 1
        tile = (TPU_TILE_32BIT[0] * pack, TPU_TILE_32BIT[1])
    if isinstance(tile, (str, bytes)) or not isinstance(tile, Sequence) or len(tile) != 2:
        raise Error(f"tile must be two sizes (rows, cols) such as (8, 128), got {tile!r}")
    rows, cols = (integer("tile entry", t) for t in tile)
    require_positive(tile_rows=rows, tile_cols=cols)
    two = dims if len(dims) >= 2 else (1,) + dims
    padded = two[:-2] + (math.ceil(two[-2] / rows) * rows, math.ceil(two[-1] / cols) * cols)
    logical = math.prod(dims) * beta
    return TiledSize(shape=dims, dtype=str(dtype), tile=(rows, cols), padded_shape=padded,
                     logical_bytes=int(round(logical)), padded_bytes=int(round(math.prod(padded) * beta)))
