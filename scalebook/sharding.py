"""Sharded matmuls: the notation `A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]` and the collectives it needs.

Chapter 3 of the book derives the rules. Grammar of a spec (spaces are free):

    spec     := operand '@' operand [ '->' operand ]
    operand  := NAME '[' dim { ',' dim } ']'            NAME: a letter, then letters/digits
    dim      := NAME [ '_' axes ]
    axes     := LETTERS            each letter is one mesh axis: I_XY = I split over X, then Y
              | '{' NAME { ',' NAME } '}'              multi-letter mesh axes: I_{data,model}

A dimension named in both operands is contracted; the others are free and form the output. When
`->` is left out the output takes the natural sharding (each free dimension as sharded in its
operand, partial sums AllReduced). Batch dimensions (in A, B and C) are not supported.

The four cases (per contracting dimension J, and per mesh axis of the free dimensions):

1. J sharded in neither operand: multiply the local blocks, no communication.
2. J sharded in one operand only: AllGather that operand along J first. (Equivalent alternative:
   slice the other operand along J locally, then reduce the partial sums as in case 3.)
3. J sharded the same way in both: multiply the local blocks into partial sums, then AllReduce
   them, or ReduceScatter when the output is to be sharded along that axis.
4. a mesh axis shards a free dimension of both operands: invalid as it stands (the output would
   be sharded twice along one axis); AllGather one side along that axis (the smaller one).

`plan` returns the book's plan and, in `Plan.alternatives`, the other valid decompositions.
XLA's partitioner compares the sizes of the arrays the collectives produce or reduce (summed V,
`Plan.cheapest`), not the bytes each device sends (`Plan.fewest_sent`): an AllReduce sends about
2V and an AllGather about V, so for J/2 < K < J it reduces C where gathering A would send less.
On CPU it also gathers A when the output is replicated, even where reducing would be cheaper
(`xla.xla_choice`; TOOLCHAIN.md, note 14, chapter 3).
"""
from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ._readable import Readable
from . import collectives, roofline, units
from .errors import Error, _show
from .hardware import Chip, chip as _chip
from .topology import Topology, for_mesh

_NAME = r"[A-Za-z][A-Za-z0-9]*"
_DIM = re.compile(rf"^({_NAME})(?:_(?:([A-Za-z]+)|\{{\s*({_NAME}(?:\s*,\s*{_NAME})*)\s*\}}))?$")
_OPERAND = re.compile(rf"^({_NAME})\s*\[(.*)\]$", re.S)
_DIM_HELP = "write a dimension name, optionally '_' and mesh axes: I, I_X, I_XY or I_{data,model}"


@dataclass(frozen=True)
class Operand:
    """One array of a spec: its name, dimension names and the mesh axes sharding each dimension."""

    name: str
    dims: tuple[str, ...]
    axes: tuple[tuple[str, ...], ...]

    def sharding(self) -> dict[str, tuple[str, ...]]:
        return dict(zip(self.dims, self.axes))

    def __str__(self) -> str:
        return format_operand(self.name, self.dims, self.sharding())


@dataclass(frozen=True)
class MatmulSpec:
    """A parsed spec; `out` is None when the spec has no `->` part."""

    lhs: Operand
    rhs: Operand
    out: "Operand | None"

    @property
    def contracting(self) -> tuple[str, ...]:
        return tuple(d for d in self.lhs.dims if d in self.rhs.dims)

    @property
    def free(self) -> tuple[str, ...]:
        """Free (output) dimensions in natural order: the lhs's, then the rhs's."""
        c = set(self.contracting)
        return tuple(d for d in self.lhs.dims if d not in c) + tuple(d for d in self.rhs.dims if d not in c)

    def __str__(self) -> str:
        s = f"{self.lhs} @ {self.rhs}"
        return s + (f" -> {self.out}" if self.out is not None else "")


def _axis_names(name: str, axes: object) -> tuple[str, ...]:
    """`axes` checked: a tuple or list of mesh axis names (a letter, then letters/digits)."""
    if not isinstance(axes, (tuple, list)):
        raise Error(f"{name} must be a tuple of mesh axis names, e.g. ('X', 'Y'), got {_show(axes)} "
                    f"({type(axes).__name__})")
    for a in axes:
        if not isinstance(a, str) or not re.fullmatch(_NAME, a):
            raise Error(f"{name} must hold mesh axis names (a letter, then letters or digits), got {_show(a)} "
                        f"in {_show(axes)}")
    return tuple(axes)


def format_axes(axes: tuple[str, ...]) -> str:
    """('X', 'Y') -> '_XY'; ('data', 'model') -> '_{data,model}'; () -> ''."""
    axes = _axis_names("axes", axes)
    if not axes:
        return ""
    if all(len(a) == 1 for a in axes):
        return "_" + "".join(axes)
    return "_{" + ",".join(axes) + "}"


def format_operand(name: str, dims: tuple[str, ...], sharding: Mapping[str, tuple[str, ...]]) -> str:
    """'A', ('I', 'J'), {'I': ('X',)} -> 'A[I_X, J]'.

    `name` and each of `dims` are names (a letter, then letters/digits); `sharding` maps a
    dimension to its tuple of mesh axes (dimensions left out are not sharded).
    """
    if not isinstance(name, str) or not re.fullmatch(_NAME, name):
        raise Error(f"name must be an array name (a letter, then letters or digits), got {_show(name)}")
    if not isinstance(dims, (tuple, list)) or not all(isinstance(d, str) and re.fullmatch(_NAME, d) for d in dims):
        raise Error(f"dims must be a tuple of dimension names (a letter, then letters or digits), e.g. ('I', 'J'), "
                    f"got {_show(dims)}")
    if not isinstance(sharding, Mapping):
        raise Error(f"sharding must be a dict of dimension -> mesh axes, e.g. {{'I': ('X',)}}, got {_show(sharding)}")
    for d in dims:
        _axis_names(f"sharding[{d!r}]", sharding.get(d, ()))
    return f"{name}[{', '.join(d + format_axes(tuple(sharding.get(d, ()))) for d in dims)}]"


def _split_dims(body: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [t.strip() for t in out]


def _parse_operand(text: str) -> Operand:
    text = text.strip()
    m = _OPERAND.match(text)
    if not m:
        raise Error(f"cannot read operand {text!r}; write a name and bracketed dimensions, e.g. A[I_X, J]")
    name, body = m.group(1), m.group(2)
    if not body.strip():
        raise Error(f"operand {text!r} has no dimensions; e.g. A[I_X, J]")
    dims, axes = [], []
    for tok in _split_dims(body):
        dm = _DIM.match(tok)
        if not dm:
            raise Error(f"bad dimension {tok!r} in {text!r}; {_DIM_HELP}")
        d = dm.group(1)
        ax = tuple(dm.group(2)) if dm.group(2) else tuple(a.strip() for a in (dm.group(3) or "").split(",") if a.strip())
        if d in dims:
            raise Error(f"dimension {d!r} appears twice in {text!r}")
        if len(set(ax)) != len(ax):
            raise Error(f"mesh axis repeated in {tok!r} of {text!r}; each axis may shard a dimension once")
        dims.append(d)
        axes.append(ax)
    used: dict[str, str] = {}
    for d, ax in zip(dims, axes):
        for a in ax:
            if a in used:
                raise Error(f"mesh axis {a!r} shards both {used[a]!r} and {d!r} in {text!r}; "
                            "an axis may shard one dimension of an array")
            used[a] = d
    return Operand(name, tuple(dims), tuple(axes))


def parse(spec: str) -> MatmulSpec:
    """Parse `'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]'` (grammar in the module docstring).

    Raises `Error` naming the offending token.
    """
    if not isinstance(spec, str):
        raise Error(f"a sharding spec is a string like 'A[I_X, J] @ B[J, K_Y]', got {spec!r}")
    parts = spec.split("->")
    if len(parts) > 2:
        raise Error(f"'->' appears {len(parts) - 1} times in {spec!r}; write at most one output")
    ops = parts[0].split("@")
    if len(ops) != 2:
        raise Error(f"expected two operands joined by '@' in {parts[0].strip()!r}, found {len(ops)}")
    lhs, rhs = _parse_operand(ops[0]), _parse_operand(ops[1])
    out = _parse_operand(parts[1]) if len(parts) == 2 else None
    if lhs.name == rhs.name:
        raise Error(f"both operands are called {lhs.name!r}; name them differently, e.g. A and B")
    s = MatmulSpec(lhs, rhs, out)
    if out is not None:
        for d in out.dims:
            if d in s.contracting:
                raise Error(f"output dimension {d!r} is also in both operands: batch dimensions are not supported; "
                            f"the output may hold only {', '.join(s.free) or 'no dimensions'}")
            if d not in s.free:
                raise Error(f"output dimension {d!r} is in neither operand; valid: {', '.join(s.free)}")
        missing = [d for d in s.free if d not in out.dims]
        if missing:
            raise Error(f"output {out} lacks {', '.join(repr(d) for d in missing)}: a dimension in one operand "
                        "only must appear in the output (contracted dimensions appear in both operands)")
    return s


# ------------------------------------------------------------------------ one sharded array


@dataclass(frozen=True)
class ShardLayout(Readable):
    """Where one sharded array lives (`layout`): its block on each device and how often it is copied.

    Chapter 3: a dimension cut by mesh axes of sizes n_1, n_2... is divided by their product on
    every device; mesh axes the array does not name hold copies (`replication`).
    """

    array: str
    global_shape: tuple[int, ...]
    local_shape: tuple[int, ...]
    bytes_per_element: float
    devices: int

    @property
    def shards(self) -> int:
        """Distinct blocks: the product of the sizes of the axes that cut the array."""
        return math.prod(g // loc for g, loc in zip(self.global_shape, self.local_shape))

    @property
    def replication(self) -> int:
        """Devices holding each block: devices / shards."""
        return self.devices // self.shards

    @property
    def bytes_per_device(self) -> float:
        return math.prod(self.local_shape) * self.bytes_per_element

    @property
    def array_bytes(self) -> float:
        return math.prod(self.global_shape) * self.bytes_per_element

    @property
    def total_bytes(self) -> float:
        """What all devices store together: array_bytes x replication."""
        return self.bytes_per_device * self.devices

    def __repr__(self) -> str:
        f = units.fmt_bytes
        dims = lambda shape: " x ".join(f"{n:,}" for n in shape)  # noqa: E731
        return (f"ShardLayout({self.array}: {dims(self.global_shape)} ({f(self.array_bytes)}), block "
                f"{dims(self.local_shape)} ({f(self.bytes_per_device)}) per device; {self.shards} blocks, "
                f"each on {self.replication} of {self.devices} devices, {f(self.total_bytes)} in all)")


def layout(array: str, *, mesh: Mapping[str, int], dims: Mapping[str, int], dtype: str = "bf16") -> ShardLayout:
    """The local block, bytes per device and replication of an array such as `"A[I_X, J]"` (chapter 3).

    `mesh`: axis name -> size; `dims`: dimension -> size; each axis must divide its dimension.
    Raises `Error` for bad notation, an unknown axis or dimension, or an axis that does not divide.
    """
    if not isinstance(array, str):
        raise Error(f"array must be a string like 'A[I_X, J]', got {array!r}")
    op = _parse_operand(array)
    validate(MatmulSpec(op, Operand(op.name + "_", (), ()), None), mesh, dims)
    local = tuple(dims[d] // math.prod(mesh[a] for a in ax) for d, ax in zip(op.dims, op.axes))
    return ShardLayout(array=str(op), global_shape=tuple(dims[d] for d in op.dims), local_shape=local,
                       bytes_per_element=units.dtype_bytes(dtype), devices=math.prod(mesh.values()))


def local_shape(array: str, *, mesh: Mapping[str, int], dims: Mapping[str, int]) -> tuple[int, ...]:
    """The shape of one device's block of `array` ("A[I_X, J]"): `layout(...).local_shape`."""
    return layout(array, mesh=mesh, dims=dims).local_shape


# ----------------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Step(Readable):
    """One step of a plan.

    `kind`: a collective ('all-gather', 'reduce-scatter', 'all-reduce', 'all-to-all'), 'matmul',
    or 'slice' (keeping a local block: free). `array_bytes` is V of the collective (see
    `collectives`); `bytes_per_device` is what each device sends (collectives) or moves to and from
    HBM (matmul). `before`/`after` show the operand's sharding around the step.
    """

    kind: str
    operand: str
    axes: tuple[str, ...]
    before: str
    after: str
    array_bytes: float
    bytes_per_device: float
    flops: float
    seconds: float
    detail: "collectives.CollectiveCost | roofline.Roofline | None" = field(default=None, compare=False, repr=False)

    @property
    def is_collective(self) -> bool:
        return self.kind in collectives.KINDS

    def describe(self) -> str:
        f = units.format_quantity
        if self.kind == "matmul":
            return f"matmul {self.before}: {f(self.flops, 'FLOP')}, {f(self.bytes_per_device, 'B')} HBM per device"
        if self.kind == "slice":
            return f"slice {self.before} -> {self.after} locally along {''.join(self.axes)}"
        return (f"{collectives.label(self.kind)}_{''.join(self.axes)} {self.before} -> {self.after}: "
                f"V={f(self.array_bytes, 'B')}, {f(self.bytes_per_device, 'B')} sent per device")

    def __repr__(self) -> str:
        return f"Step({self.describe()}, {units.format_quantity(self.seconds, 's')})"


@dataclass(frozen=True)
class Plan(Readable):
    """How a sharded matmul runs: its steps in order, each with its cost (chapter 3).

    `seconds` adds the steps up (no overlap); `overlapped_seconds` is max(compute, comm), the
    bound when the collectives hide behind the matmul. `alternatives` are the other valid
    decompositions, all ending in the same output sharding; `cheapest` is the one collecting the
    fewest bytes (summed V), which is usually but not always what XLA compiles (`xla.xla_choice`);
    `fewest_sent` the one whose devices send the fewest bytes.
    """

    spec: MatmulSpec
    mesh: Mapping[str, int]
    dims: Mapping[str, int]
    chip: str
    dtype: str
    cases: tuple[int, ...]
    strategy: str
    steps: tuple[Step, ...]
    alternatives: tuple["Plan", ...] = ()

    @property
    def collectives(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.is_collective)

    @property
    def comm_seconds(self) -> float:
        return sum(s.seconds for s in self.collectives)

    @property
    def compute_seconds(self) -> float:
        return sum(s.seconds for s in self.steps if s.kind == "matmul")

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    @property
    def overlapped_seconds(self) -> float:
        return max(self.comm_seconds, self.compute_seconds)

    @property
    def comm_bytes_per_device(self) -> float:
        """Bytes each device sends, summed over the collectives."""
        return sum(s.bytes_per_device for s in self.collectives)

    @property
    def comm_array_bytes(self) -> float:
        """V summed over the collectives: the bytes of the arrays they produce or reduce."""
        return sum(s.array_bytes for s in self.collectives)

    @property
    def fewest_sent(self) -> "Plan":
        """This plan or an alternative, whichever sends the fewest bytes per device
        (`comm_bytes_per_device`; the book's plan wins ties). Not XLA's criterion: see `cheapest`."""
        return min((self,) + self.alternatives, key=lambda p: p.comm_bytes_per_device)

    @property
    def cheapest(self) -> "Plan":
        """This plan or an alternative, whichever collects the fewest bytes (`comm_array_bytes`, the
        summed sizes V of the arrays gathered or reduced; the book's plan wins ties). This is what
        XLA's SPMD partitioner compares, so it may send more than `fewest_sent` (chapter 3); on CPU
        it gathers instead when the output is replicated (`xla.xla_choice`; TOOLCHAIN.md, note 14)."""
        return min((self,) + self.alternatives, key=lambda p: p.comm_array_bytes)

    def __repr__(self) -> str:
        f = units.format_quantity
        lines = [f"Plan {self.spec} on {self.chip} mesh {_mesh_str(self.mesh)}, {self.dtype} "
                 f"(case {'+'.join(map(str, self.cases))}: {self.strategy})"]
        for i, s in enumerate(self.steps, 1):
            lines.append(f"  {i}. {s.describe()}  [{f(s.seconds, 's')}]")
        lines.append(f"  total {f(self.seconds, 's')} (comm {f(self.comm_seconds, 's')}, compute "
                     f"{f(self.compute_seconds, 's')}; {f(self.overlapped_seconds, 's')} if overlapped)")
        for a in self.alternatives:
            lines.append(f"  alternative: {a.strategy}: {f(a.seconds, 's')}, "
                         f"{f(a.comm_bytes_per_device, 'B')} sent per device")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        f = units.format_quantity
        head = "<tr><th>#</th><th>step</th><th>axes</th><th>sharding</th><th>V</th><th>sent per device</th><th>time</th></tr>"
        rows = []
        for i, s in enumerate(self.steps, 1):
            name = collectives.label(s.kind) if s.is_collective else s.kind
            change = s.before if s.kind == "matmul" else f"{s.before} &rarr; {s.after}"
            sent = f(s.bytes_per_device, "B") if s.is_collective else ""
            v = f(s.array_bytes, "B") if s.is_collective else ""
            rows.append(f"<tr><td>{i}</td><td>{name}</td><td>{''.join(s.axes)}</td><td><code>{change}</code></td>"
                        f"<td>{v}</td><td>{sent}</td><td>{f(s.seconds, 's')}</td></tr>")
        cap = (f"<code>{self.spec}</code> on {self.chip} {_mesh_str(self.mesh)}, {self.dtype}: case "
               f"{'+'.join(map(str, self.cases))}, {self.strategy}; total <b>{f(self.seconds, 's')}</b>")
        alts = "".join(f"<li>{a.strategy}: {f(a.seconds, 's')}, {f(a.comm_bytes_per_device, 'B')} sent per device</li>"
                       for a in self.alternatives)
        return (f"<table><caption>{cap}</caption>{head}{''.join(rows)}</table>"
                + (f"<p>Alternatives:</p><ul>{alts}</ul>" if alts else ""))


def _mesh_str(mesh: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in mesh.items())


def _prefix(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


class _Builder:
    """Builds one plan; every decision asks `choose(options)` so that all plans can be enumerated."""

    def __init__(self, ctx: "_Context", choose: Callable[[list[str]], str]):
        self.ctx, self.choose = ctx, choose
        s = ctx.spec
        self.names = {"lhs": s.lhs.name, "rhs": s.rhs.name, "out": s.out.name if s.out else "C"}
        self.dims = {"lhs": s.lhs.dims, "rhs": s.rhs.dims, "out": s.out.dims if s.out else s.free}
        self.sh = {"lhs": s.lhs.sharding(), "rhs": s.rhs.sharding(), "out": {}}
        self.pre: list[Step] = []
        self.post: list[Step] = []
        self.strategy: list[str] = []

    def text(self, role: str) -> str:
        return format_operand(self.names[role], self.dims[role], self.sh[role])

    def local_bytes(self, role: str) -> float:
        n = 1.0
        for d in self.dims[role]:
            n *= self.ctx.dims[d] / math.prod(self.ctx.mesh[a] for a in self.sh[role].get(d, ()))
        return n * self.ctx.bytes_per_element

    def used(self, role: str) -> set[str]:
        return {a for ax in self.sh[role].values() for a in ax}

    def collective(self, kind: str, role: str, dim: str, axes: tuple[str, ...], new: tuple[str, ...], post: bool):
        before = self.text(role)
        v_role_bytes = self.local_bytes(role)
        self.sh[role][dim] = new
        after = self.text(role)
        v = max(v_role_bytes, self.local_bytes(role)) if kind != "all-reduce" else v_role_bytes
        c = collectives.cost(kind, self.ctx.topology, axes=axes, bytes_=v)
        step = Step(kind, self.names[role], axes, before, after, v, c.bytes_per_device, 0.0, c.seconds, c)
        (self.post if post else self.pre).append(step)

    def slice(self, role: str, dim: str, axes: tuple[str, ...], post: bool):
        before = self.text(role)
        self.sh[role][dim] = tuple(self.sh[role].get(dim, ())) + axes
        (self.post if post else self.pre).append(
            Step("slice", self.names[role], axes, before, self.text(role), 0.0, 0.0, 0.0, 0.0))

    def gather(self, role: str, dim: str, axes: tuple[str, ...], post: bool = False):
        cur = self.sh[role][dim]
        self.collective("all-gather", role, dim, axes, cur[:len(cur) - len(axes)], post)


@dataclass
class _Context:
    spec: MatmulSpec
    mesh: dict[str, int]
    dims: dict[str, int]
    chip: Chip
    dtype: str
    bytes_per_element: float
    topology: Topology
    out: "Operand | None" = None  # requested (or pinned natural) output


def _other(role: str) -> str:
    return "rhs" if role == "lhs" else "lhs"


def _free_dims(spec: MatmulSpec, role: str) -> list[str]:
    op = spec.lhs if role == "lhs" else spec.rhs
    return [d for d in op.dims if d not in spec.contracting]


def _gather_one_side_of_free_conflicts(b: _Builder) -> None:
    """Case 4: a mesh axis on a free dimension of both operands; gather one side (smaller first)."""
    s, ctx = b.ctx.spec, b.ctx
    free_l, free_r = _free_dims(s, "lhs"), _free_dims(s, "rhs")
    for axis in ctx.mesh:
        dl = [d for d in free_l if axis in b.sh["lhs"][d]]
        dr = [d for d in free_r if axis in b.sh["rhs"][d]]
        if not (dl and dr):
            continue
        opts = ["gather rhs", "gather lhs"]
        if b.local_bytes("lhs") < b.local_bytes("rhs"):
            opts.reverse()
        role = b.choose(opts).split()[1]
        d = (dl if role == "lhs" else dr)[0]
        cur = b.sh[role][d]
        b.strategy.append(f"gather {b.names[role]} along {d} (case 4)")
        b.gather(role, d, cur[cur.index(axis):])


def _contracting_options(b: _Builder, ra: tuple[str, ...], rr: tuple[str, ...]) -> list[str]:
    """Ways to make both operands cut a contracting dimension alike, the book's first.

    `ra`, `rr`: the axes by which the lhs and the rhs cut it beyond their common prefix."""
    opts = []
    if ra and rr:
        opts.append("gather both")
    for role, rest, other_rest in (("lhs", ra, rr), ("rhs", rr, ra)):
        other = _other(role)
        if rest and not (set(rest) & (b.used(other) - set(other_rest))):
            opts.append(f"slice {other}" if not other_rest else f"align {other}")
        if rest and not other_rest:
            opts.insert(0, f"gather {role}")
    return opts


def _align_contracting(b: _Builder, d: str) -> None:
    """Cases 2 and 3: make both operands cut contracting dimension `d` the same way."""
    s = b.ctx.spec
    a, r = b.sh["lhs"][d], b.sh["rhs"][d]
    p = _prefix(a, r)
    ra, rr = a[len(p):], r[len(p):]
    if not ra and not rr:
        return
    pick = b.choose(_contracting_options(b, ra, rr))
    b.strategy.append(f"{pick.replace('lhs', s.lhs.name).replace('rhs', s.rhs.name)} along {d}")
    if pick == "gather both":
        b.gather("lhs", d, ra)
        b.gather("rhs", d, rr)
    elif pick.startswith("gather"):
        role = pick.split()[1]
        b.gather(role, d, ra if role == "lhs" else rr)
    else:  # slice / align the other operand to this one's sharding of d
        other = pick.split()[1]
        role = _other(other)
        if other == "lhs" and ra:
            b.gather("lhs", d, ra)
        if other == "rhs" and rr:
            b.gather("rhs", d, rr)
        b.slice(other, d, ra if role == "lhs" else rr, post=False)


def _gathers_for_the_output(b: _Builder, owner: dict[str, str], want: Mapping[str, tuple[str, ...]]
                            ) -> list[tuple[str, tuple[str, ...]]]:
    """Where the output wants fewer axes on a free dimension than its operand has: gather the
    input before the matmul, or the output after it. Returns the gathers left for the output."""
    after: list[tuple[str, tuple[str, ...]]] = []
    for d in b.ctx.spec.free:
        n, r = b.sh[owner[d]][d], want[d]
        k = len(_prefix(n, r))
        if k >= len(n):
            continue
        if b.choose(["gather output", "gather input"]) == "gather input":
            b.strategy.append(f"gather {b.names[owner[d]]} along {d} for the output")
            b.gather(owner[d], d, n[k:])
        else:
            b.strategy.append(f"gather {b.names['out']} along {d}")
            after.append((d, n[k:]))
    return after


def _extra_output_axes(b: _Builder, owner: dict[str, str], want: Mapping[str, tuple[str, ...]],
                       partial: list[str], after_gathers: list[tuple[str, tuple[str, ...]]]):
    """Axes the output wants beyond its operand's: scatter partial sums along them, slice a free
    input before the matmul, or slice the output after it. Returns (scatter, post_slices)."""
    scatter: dict[str, tuple[str, ...]] = {}
    post_slices: list[tuple[str, tuple[str, ...]]] = []
    for d in b.ctx.spec.free:
        n = b.sh[owner[d]][d]
        pending = dict(after_gathers).get(d, ())
        base = n[:len(n) - len(pending)] if pending else n
        late = bool(pending)  # once an axis waits for after the matmul, the ones after it wait too
        for a in want[d][len(base):]:
            if a in partial and not late:
                scatter[d] = scatter.get(d, ()) + (a,)
            elif not late and d not in scatter and a not in b.used("lhs") | b.used("rhs"):
                b.slice(owner[d], d, (a,), post=False)
            else:
                late = True
                post_slices.append((d, (a,)))
    return scatter, post_slices


def _local_matmul(b: _Builder, owner: dict[str, str]) -> None:
    """Each device multiplies its blocks: 2 m k n FLOPs at the roofline of its chip."""
    ctx, s = b.ctx, b.ctx.spec
    b.sh["out"] = {d: b.sh[owner[d]][d] for d in s.free}

    def local(role: str, dims) -> float:
        return math.prod(ctx.dims[d] / math.prod(ctx.mesh[a] for a in b.sh[role][d]) for d in dims)

    m_, n_ = local("lhs", _free_dims(s, "lhs")), local("rhs", _free_dims(s, "rhs"))
    k_ = local("lhs", s.contracting)
    compute = "bf16" if units.canonical_dtype(ctx.dtype) == "fp32" else ctx.dtype
    r = roofline.op(ctx.chip, flops=2.0 * m_ * k_ * n_,
                    hbm_bytes=(m_ * k_ + k_ * n_ + m_ * n_) * ctx.bytes_per_element,
                    dtype=ctx.chip.compute_dtype(compute))
    b.pre.append(Step("matmul", b.names["out"], (), f"{b.text('lhs')} @ {b.text('rhs')} -> {b.text('out')}",
                      b.text("out"), 0.0, r.hbm_bytes, r.flops, r.lower_seconds, r))


def _reduce_partial_sums(b: _Builder, partial: list[str], scatter: dict[str, tuple[str, ...]]) -> None:
    """Case 3's ending: ReduceScatter partial sums onto the axes the output wants, AllReduce the rest."""
    for d, axes in scatter.items():
        before = b.text("out")
        v = b.local_bytes("out")
        b.sh["out"][d] = b.sh["out"][d] + axes
        c = collectives.cost("reduce-scatter", b.ctx.topology, axes=axes, bytes_=v)
        b.post.append(Step("reduce-scatter", b.names["out"], axes, before + " (partial)", b.text("out"), v,
                           c.bytes_per_device, 0.0, c.seconds, c))
        b.strategy.append(f"ReduceScatter {b.names['out']} onto {d}")
    rest = tuple(a for a in partial if not any(a in ax for ax in scatter.values()))
    if rest:
        v = b.local_bytes("out")
        c = collectives.cost("all-reduce", b.ctx.topology, axes=rest, bytes_=v)
        b.post.append(Step("all-reduce", b.names["out"], rest, b.text("out") + " (partial)", b.text("out"), v,
                           c.bytes_per_device, 0.0, c.seconds, c))
        b.strategy.append(f"AllReduce {b.names['out']} over {''.join(rest)}")


def _build(ctx: _Context, choose: Callable[[list[str]], str]) -> tuple[_Builder, dict[str, tuple[str, ...]], list[str]]:
    """One plan, rule by rule (chapter 3): case 4, then cases 2 and 3 per contracting dimension,
    then the output's sharding, the local matmul, and the reduction of partial sums."""
    b = _Builder(ctx, choose)
    s = ctx.spec
    _gather_one_side_of_free_conflicts(b)
    for d in s.contracting:
        _align_contracting(b, d)
    free_l = _free_dims(s, "lhs")
    owner = {d: ("lhs" if d in free_l else "rhs") for d in s.free}
    partial = [a for d in s.contracting for a in b.sh["lhs"][d]]
    want = ctx.out.sharding() if ctx.out is not None else {d: b.sh[owner[d]][d] for d in s.free}
    after_gathers = _gathers_for_the_output(b, owner, want)
    scatter, post_slices = _extra_output_axes(b, owner, want, partial, after_gathers)
    _local_matmul(b, owner)
    _reduce_partial_sums(b, partial, scatter)
    for d, axes in after_gathers:
        b.gather("out", d, axes, post=True)
    for d, axes in post_slices:
        b.slice("out", d, axes, post=True)
    if b.sh["out"] != {d: tuple(want[d]) for d in s.free}:  # pragma: no cover - a bug in the rules
        raise Error(f"internal: plan ends in {b.text('out')}, wanted {ctx.out}")
    return b, want, partial


def _enumerate(ctx: _Context) -> list[_Builder]:
    """Every plan, the book's (all first choices) first."""
    plans, stack = [], [[]]
    while stack:
        prefix = stack.pop(0)
        picks: list[int] = list(prefix)
        counts: list[int] = []

        def choose(opts: list[str]) -> str:
            i = len(counts)
            counts.append(len(opts))
            if i >= len(picks):
                picks.append(0)
            return opts[picks[i]]

        b, _, _ = _build(ctx, choose)
        plans.append(b)
        for i in range(len(prefix), len(counts)):
            for alt in range(1, counts[i]):
                stack.append(picks[:i] + [alt])
    return plans


def _cases(spec: MatmulSpec) -> tuple[int, ...]:
    cases = set()
    for d in spec.contracting:
        a, r = spec.lhs.sharding()[d], spec.rhs.sharding()[d]
        p = _prefix(a, r)
        if p:
            cases.add(3)
        if a[len(p):] or r[len(p):]:
            cases.add(2)
    fl = {a for d, ax in spec.lhs.sharding().items() if d not in spec.contracting for a in ax}
    fr = {a for d, ax in spec.rhs.sharding().items() if d not in spec.contracting for a in ax}
    if fl & fr:
        cases.add(4)
    return tuple(sorted(cases)) or (1,)


def _whole_size(what: str, size: object) -> int:
    """A positive integer size (an int or numpy integer, not a float or bool), at most 2**53."""
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
        raise Error(f"{what} must have a positive integer size, got {_show(size)} ({type(size).__name__})")
    if size > 2**53:
        raise Error(f"{what} is too large (at most 2**53), got {_show(size)}")
    return int(size)


def validate(spec: MatmulSpec, mesh: Mapping[str, int], dims: Mapping[str, int]) -> None:
    """Raise `Error` unless every dimension has a positive size, every axis is in `mesh` and divides its dimension.

    `spec`: a `MatmulSpec` or its string; `mesh`: axis name -> whole size; `dims`: dimension -> whole size.
    """
    if isinstance(spec, str):
        spec = parse(spec)
    if not isinstance(spec, MatmulSpec):
        raise Error(f"spec must be a MatmulSpec or a string like 'A[I_X, J] @ B[J, K_Y]', got {_show(spec)} "
                    f"({type(spec).__name__})")
    if not isinstance(mesh, Mapping) or not mesh:
        raise Error(f"mesh must be a dict of axis name -> size, e.g. {{'X': 4, 'Y': 2}}; got {_show(mesh)}")
    for name, size in mesh.items():
        if not isinstance(name, str):
            raise Error(f"mesh axis names must be strings, e.g. {{'X': 4}}; got {_show(name)} in {_show(mesh)}")
        _whole_size(f"mesh axis {name!r}", size)
    if not isinstance(dims, Mapping):
        raise Error(f"dims must be a dict of dimension name -> size, e.g. {{'I': 1024, 'J': 512}}; got {_show(dims)}")
    ops = [spec.lhs, spec.rhs] + ([spec.out] if spec.out is not None else [])
    for op in ops:
        for d, axes in zip(op.dims, op.axes):
            if d not in dims:
                raise Error(f"no size for dimension {d!r} of {op}; pass dims={{'{d}': ...}}")
            size = _whole_size(f"dimension {d!r}", dims[d])
            for a in axes:
                if a not in mesh:
                    raise Error(f"unknown mesh axis {a!r} in {d}{format_axes(axes)} of {op}; mesh axes: "
                                f"{', '.join(mesh)}")
            n = math.prod(mesh[a] for a in axes)
            if size % n:
                raise Error(f"mesh axes {'x'.join(axes)} ({n} devices) do not divide dimension {d} = {size} "
                            f"in {op}; use a multiple of {n}")


def plan(spec: "str | MatmulSpec", *, mesh: Mapping[str, int], dims: Mapping[str, int],
         chip: "str | Chip", dtype: str = "bf16", topology: "Topology | None" = None) -> Plan:
    """The steps and cost of a sharded matmul `spec` on a device mesh (chapter 3).

    `mesh`: axis name -> size ({"X": 4, "Y": 2}); `dims`: dimension -> size; `dtype`: of inputs and
    output (fp32 is timed at the bf16 peak); `topology`: the network carrying the mesh axes
    (default `topology.for_mesh(chip, mesh)`). Collectives are priced by `scalebook.collectives`,
    the local matmul by `roofline.op` (its overlapped time). Raises `Error` for bad notation,
    unknown axes or dimensions, or an axis that does not divide its dimension.
    """
    s = parse(spec) if isinstance(spec, str) else spec
    if not isinstance(s, MatmulSpec):
        raise Error(f"spec must be a string like 'A[I_X, J] @ B[J, K_Y]', got {spec!r}")
    validate(s, mesh, dims)
    c = _chip(chip)
    topo = for_mesh(c, mesh) if topology is None else topology
    if not isinstance(topo, Topology) or topo.axis_sizes != dict(mesh):
        raise Error(f"topology axes {getattr(topo, 'axis_sizes', topo)} do not match the mesh {dict(mesh)}")
    ctx = _Context(s, dict(mesh), dict(dims), c, units.canonical_dtype(dtype), units.dtype_bytes(dtype), topo, s.out)
    if s.out is None:  # pin the natural output of the book's plan, so that alternatives end there too
        b, want, _ = _build(ctx, lambda opts: opts[0])
        ctx.out = Operand("C", s.free, tuple(want[d] for d in s.free))
    builders = _enumerate(ctx)
    plans = []
    seen = set()
    for b in builders:
        steps = tuple(b.pre + b.post)
        key = tuple((st.kind, st.operand, st.axes, st.after) for st in steps)
        if key in seen:
            continue
        seen.add(key)
        plans.append(Plan(spec=MatmulSpec(s.lhs, s.rhs, ctx.out), mesh=dict(mesh), dims=dict(dims), chip=c.name,
                          dtype=ctx.dtype, cases=_cases(s),
                          strategy="; ".join(b.strategy) or "local matmul, no communication", steps=steps))
    first = plans[0]
    return Plan(**{**{f: getattr(first, f) for f in first.__dataclass_fields__}, "alternatives": tuple(plans[1:])})
