"""A training parallelism strategy and where its degrees sit on the chips' network (Chapter 5).

A `Strategy` names how many ways each kind of parallelism splits the work:

- `dp`: data parallel, weights replicated (gradients AllReduced once per step; `zero=1` shards
  the optimizer state over dp, `zero=2` also the gradients -- same traffic, less memory);
- `fsdp`: fully sharded data parallel (ZeRO-3): weights, gradients and optimizer state sharded,
  weights AllGathered before use and gradients ReduceScattered;
- `tp`: tensor parallel, Megatron style (attention heads and MLP width split; an activation
  AllReduce after attention and after the MLP), optionally with `sequence_parallel` (each
  AllReduce becomes an AllGather plus a ReduceScatter, and the layer's D-wide activations are
  split over tp too);
- `pp`: pipeline stages (`schedule` 'gpipe', '1f1b' or 'interleaved' with `virtual_stages`);
- `ep`: expert parallel: the routed experts of a MoE split over `ep` chips taken from the
  data-parallel axes (fsdp first, then dp), tokens moved by AllToAll;
- `cp`: context parallel (ring attention): each sequence split into `cp` chunks, keys and values
  passed round a ring.

Chips = dp x fsdp x tp x pp x cp (ep lives inside dp x fsdp).

`place(strategy, topology)` lays the degrees on the topology's axes: fastest links first, in the
order tp, cp, fsdp (with ep at its start), dp, pp, so the chattiest parallelism gets NVLink or
ICI and data parallelism spills onto InfiniBand or DCN. A degree that fills only part of an axis
gets a sub-axis (named like ``X/4`` for the first 4 chips of X, ``X/2@4`` for every 4th): a part
of a torus ring has no wraparound, so it runs at the one-way ICI figure. `placement=` overrides
the rule with whole named axes per kind.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, fields
from typing import Mapping, Sequence

from ._readable import Readable
from . import units
from .errors import MAX_CHIPS, Error, _show, choose, require_flag
from .errors import MAX_CHIPS, MAX_COUNT, MAX_TOKENS, require_count as _require_count  # noqa: F401
from .errors import instance as _instance, integer as _integer, number as _number, text as _text
from .topology import Axis, Topology

#: Fused attention kernels with published speeds (`data/attention_kernels.json`,
#: `scalebook.efficiency.attention_flops_per_s`); 'native' is a kernel written for the chip, whose
#: matmuls run at the chip's matmul rate.
ATTENTION_KERNELS = ("native", "flash-attention-2", "flash-attention-triton")

KINDS = ("tp", "cp", "fsdp", "dp", "pp")
#: What `place` returns a group for: the five degrees plus the groups derived from them.
GROUPS = ("tp", "cp", "fsdp", "dp", "pp", "ep", "grad", "expert_fsdp", "expert_grad")
SCHEDULES = ("1f1b", "gpipe", "interleaved")
#: Remat policies accepted by a strategy -> the `transformer.activation_memory` policy they mean.
#: 'selective' saves the matmul outputs and recomputes attention's QK^T and AV (Korthikanti et
#: al. 2022's selective recomputation); 'full' keeps only each layer's input.
REMAT = {"none": "none", "selective": "matmul_outputs", "full": "full"}
MATMUL_DTYPES = ("bf16", "fp8", "fp32")
POLICY_NAMES = tuple(REMAT)


def _positive_int(name: str, value: object, maximum: int = MAX_CHIPS) -> int:
    """`value` as a positive int, at most `maximum` (default: `errors.MAX_CHIPS`, 10**7)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Error(f"{name} must be a positive integer, got {_show(value)}")
    if value > maximum:
        raise Error(f"{name} is too large (at most {maximum:,}), got {_show(value)}")
    return value


@dataclass(frozen=True, kw_only=True)
class Strategy(Readable):
    """How a training step is split over chips; see the module docstring for each degree.

    `microbatch`: sequences per microbatch on each data-parallel replica (None: the whole
    replica batch at once without pipelining, 1 with it); the replica's batch is run as
    batch / microbatch microbatches, accumulating gradients (or filling the pipeline).
    Dtypes: `param_dtype` (the weights the matmuls read), `grad_dtype`, `optimizer_dtype` (each
    Adam moment), `master_dtype` (fp32 master weights, None for none), `activation_dtype`
    (saved activations and the bytes TP/PP/EP/CP move), `matmul_dtype` ('fp8' uses the chip's
    fp8 peak where it has one). `flash_attention`: attention saves no T x T matrix.
    `tp_overlap`: TP collectives overlap the matmuls they feed (XLA's collective matmul, Megatron's
    TP communication overlap), at a compute slowdown while they run, where the TP group stays on
    ICI or NVLink (`scalebook.step`); default off: on the critical path.
    `backward_prefetch`: in the backward pass FSDP issues the next layer's gather before this
    layer's gradient computation, hiding it there (PyTorch FSDP's BACKWARD_PRE; the default);
    False issues it after (BACKWARD_POST, Composer's default), so every layer waits for its gather
    (`scalebook.step.fsdp_backward_exposed`).
    `dropout`: the model trains with dropout on the attention probabilities and the residual
    stream (Megatron-LM's default of 0.1): the 1-byte masks are saved where the layer's activations
    are (Korthikanti et al. 2022), and unfused attention pays a dropout pass over its scores each
    way (`scalebook.step.SCORE_PASSES`). Default off.
    `attention_kernel`: which fused attention kernel runs where `flash_attention` is on, one of
    `scalebook.efficiency.ATTENTION_KERNELS`: 'native' (default; a kernel written for the chip, at
    the matmul rate), 'flash-attention-2' or 'flash-attention-triton' at their published speeds
    (`scalebook.efficiency.attention_flops_per_s`).
    `reshard_after_forward`: FSDP frees each layer's gathered weights after its forward pass and
    gathers them again for the backward pass (PyTorch FSDP's `reshard_after_forward`, its default);
    False keeps them from forward to backward: one gather per layer and microbatch instead of two,
    the stage's gathered weights held whole meanwhile (as Llama 3 trained, Dubey et al. 2024,
    sec. 3.3.2).
    """

    dp: int = 1
    fsdp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    cp: int = 1
    sequence_parallel: bool = False
    schedule: str = "1f1b"
    virtual_stages: int = 1
    microbatch: int | None = None
    remat: str = "none"
    zero: int = 0
    param_dtype: str = "bf16"
    grad_dtype: str = "bf16"
    optimizer_dtype: str = "fp32"
    master_dtype: str | None = "fp32"
    activation_dtype: str = "bf16"
    matmul_dtype: str = "bf16"
    flash_attention: bool = True
    tp_overlap: bool = False
    reshard_after_forward: bool = True
    backward_prefetch: bool = True
    dropout: bool = False
    attention_kernel: str = "native"
    placement: Mapping[str, tuple[str, ...]] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("dp", "fsdp", "tp", "pp", "ep", "cp", "virtual_stages"):
            _positive_int(name, getattr(self, name))
        if self.microbatch is not None:
            _positive_int("microbatch", self.microbatch)
        for name in ("sequence_parallel", "flash_attention", "tp_overlap", "reshard_after_forward", "backward_prefetch",
                     "dropout"):
            require_flag(name, getattr(self, name))
        if isinstance(self.zero, bool) or not isinstance(self.zero, int):
            raise Error(f"zero must be 0, 1 or 2 (the ZeRO stage of the dp part), got {_show(self.zero)}")
        if self.dp * self.fsdp * self.tp * self.pp * self.cp > MAX_CHIPS:
            raise Error(f"dp x fsdp x tp x pp x cp is too large (at most {MAX_CHIPS:,} chips), got "
                        f"{self.dp * self.fsdp * self.tp * self.pp * self.cp:,}")
        choose("pipeline schedule", self.schedule, SCHEDULES)
        choose("attention kernel", self.attention_kernel, ATTENTION_KERNELS)
        choose("remat policy", self.remat, tuple(REMAT))
        if self.zero not in (0, 1, 2) or isinstance(self.zero, bool):
            raise Error(f"zero must be 0, 1 or 2 (the ZeRO stage of the dp part; fsdp is stage 3), got {self.zero!r}")
        if self.virtual_stages > 1 and self.schedule != "interleaved":
            object.__setattr__(self, "schedule", "interleaved")
        for name in ("param_dtype", "grad_dtype", "optimizer_dtype", "activation_dtype"):
            object.__setattr__(self, name, units.canonical_dtype(getattr(self, name), name))
        if self.master_dtype is not None:
            object.__setattr__(self, "master_dtype", units.canonical_dtype(self.master_dtype, "master_dtype"))
        choose("matmul dtype", units.canonical_dtype(self.matmul_dtype, "matmul_dtype"), MATMUL_DTYPES)
        object.__setattr__(self, "matmul_dtype", units.canonical_dtype(self.matmul_dtype))
        data = self.dp * self.fsdp
        if data % self.ep:
            raise Error(f"ep={self.ep} must divide dp x fsdp = {data}: experts are split over data-parallel chips")
        if self.ep > 1 and self.fsdp % self.ep and self.ep % self.fsdp:
            raise Error(f"ep={self.ep} and fsdp={self.fsdp}: one must divide the other (ep sits inside fsdp, "
                        "or fsdp inside ep)")
        if self.placement is not None:
            object.__setattr__(self, "placement", _check_placement(self, self.placement))

    @property
    def chips(self) -> int:
        """dp x fsdp x tp x pp x cp."""
        return self.dp * self.fsdp * self.tp * self.pp * self.cp

    @property
    def data(self) -> int:
        """Ways the batch is split: dp x fsdp."""
        return self.dp * self.fsdp

    def degrees(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in ("dp", "fsdp", "tp", "pp", "ep", "cp")}

    def replace(self, **changes) -> "Strategy":
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        kw.update(changes)
        return Strategy(**kw)

    def label(self) -> str:
        """Short name such as 'FSDP16 x TP8 x PP4 (mb 1, remat full)'."""
        parts = [f"{k.upper()}{v}" for k, v in self.degrees().items() if v > 1]
        extra = [f"mb {self.microbatch}"] if self.microbatch else []
        if self.remat != "none":
            extra.append(f"remat {self.remat}")
        if self.sequence_parallel and self.tp > 1:
            extra.append("SP")
        if self.tp_overlap and self.tp > 1:
            extra.append("TP overlap")
        if not self.reshard_after_forward and self.fsdp > 1:
            extra.append("no reshard")
        if not self.backward_prefetch and self.fsdp > 1 and self.reshard_after_forward:
            extra.append("gather after grads")
        if self.pp > 1:
            extra.append(self.schedule + (f" v{self.virtual_stages}" if self.virtual_stages > 1 else ""))
        if self.dropout:
            extra.append("dropout")
        if self.attention_kernel != "native" and self.flash_attention:
            extra.append(self.attention_kernel)
        if self.matmul_dtype != "bf16":
            extra.append(self.matmul_dtype)
        body = " x ".join(parts) or "1 chip"
        return f"{body} ({', '.join(extra)})" if extra else body

    def __repr__(self) -> str:
        return f"Strategy({self.label()})"


def _check_placement(s: Strategy, placement: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    if not isinstance(placement, Mapping):
        raise Error(f"placement must map a parallelism ({', '.join(KINDS)}) to a tuple of axis names")
    out: dict[str, tuple[str, ...]] = {}
    for kind, axes in placement.items():
        choose("parallelism in placement", kind, KINDS)
        axes = (axes,) if isinstance(axes, str) else tuple(axes)
        out[kind] = axes
    for kind in KINDS:
        if getattr(s, kind) > 1 and kind not in out:
            raise Error(f"placement names no axes for {kind}={getattr(s, kind)}; name them or leave placement=None")
    return out


# --- placement ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Placement(Readable):
    """The sub-axes each group of a strategy runs over, on a topology built from them.

    `topology` has one axis per sub-axis used (so `collectives.cost(kind, topology, axes=...)`
    prices any group); `groups` maps each of `GROUPS` to its axis names: the five degrees, `ep`,
    `grad` (dense gradient sync: dp and cp), `expert_fsdp` (fsdp axes outside ep) and
    `expert_grad` (expert gradient sync: data axes outside ep and expert_fsdp, and cp).
    """

    topology: Topology
    groups: Mapping[str, tuple[str, ...]]

    def size(self, group: str) -> int:
        sizes = self.topology.axis_sizes
        return math.prod(sizes[a] for a in self.groups[group])

    def networks(self, group: str) -> tuple[str, ...]:
        """Links a group crosses, fastest first: e.g. ('nvlink', 'infiniband')."""
        seen: list[str] = []
        for a in self.groups[group]:
            link = self.topology.axis(a).link
            if self.topology.axis(a).size > 1 and link not in seen:
                seen.append(link)
        return tuple(seen)

    def __repr__(self) -> str:
        parts = [f"{g}: {'x'.join(self.groups[g]) or '-'}" for g in KINDS + ("ep",) if self.size(g) > 1]
        return f"Placement({'; '.join(parts) or 'one chip'})"


@functools.lru_cache(maxsize=4096)  # a pure function of frozen values; the planner asks thousands of times
def _sub(a: Axis, size: int, stride: int) -> Axis:
    """Chips stride*i (i < size) of axis `a`: the whole axis keeps its links, a part does not wrap."""
    if size == a.size:
        return a
    name = f"{a.name}/{size}" + (f"@{stride}" if stride > 1 else "")
    bw = a.one_way_bytes_per_s if a.link == "ici" else a.bytes_per_s
    return Axis(name=name, size=size, link=a.link, wraparound=False, bytes_per_s=bw,
                one_way_bytes_per_s=a.one_way_bytes_per_s)


class _Queue:
    """Physical axes, fastest first, handed out in pieces of a requested number of chips."""

    def __init__(self, axes: Sequence[Axis]) -> None:
        self.items = [(a, a.size, 1) for a in axes]  # (axis, chips left, stride of what is left)

    def take(self, n: int, what: str) -> list[Axis]:
        got: list[Axis] = []
        while n > 1:
            if not self.items:
                raise Error(f"{what} needs more chips than the topology has left")
            a, left, stride = self.items[0]
            if left <= n:
                if n % left:
                    raise Error(f"{what} of {n} chips does not fit axis {a.name} ({left} chips left): "
                                "degrees must divide the axis sizes")
                got.append(_sub(a, left, stride) if (left, stride) != (a.size, 1) else a)
                self.items.pop(0)
                n //= left
            else:
                if left % n:
                    raise Error(f"{what} of {n} chips does not divide axis {a.name} ({left} chips left)")
                got.append(_sub(a, n, stride))
                self.items[0] = (a, left // n, stride * n)
                n = 1
        return got


def _ordered(topology: Topology) -> list[Axis]:
    """Physical axes, fastest first. A fat tree's InfiniBand axes (leaf, spine) merge into one:
    with full bisection bandwidth any group of nodes is as good as any other."""
    fast = [a for a in topology.axes if a.network != "dcn"]
    slow = [a for a in topology.axes if a.network == "dcn"]
    ib = [a for a in slow if a.link == "infiniband"]
    if len(ib) > 1:
        merged = Axis(name="".join(a.name for a in ib), size=math.prod(a.size for a in ib), link="infiniband",
                      wraparound=False, bytes_per_s=min(a.bytes_per_s for a in ib),
                      one_way_bytes_per_s=min(a.one_way_bytes_per_s for a in ib))
        slow = [merged] + [a for a in slow if a.link != "infiniband"]
    return sorted(fast, key=lambda a: -a.bytes_per_s) + slow


def _split(axes: list[Axis], n: int, what: str) -> tuple[list[Axis], list[Axis]]:
    q = _Queue(axes)
    first = q.take(n, what)
    rest = [(_sub(a, left, stride) if (left, stride) != (a.size, 1) else a) for a, left, stride in q.items
            if left > 1]
    return first, rest


def place(strategy: Strategy, topology: Topology) -> Placement:
    """Lay `strategy`'s degrees on `topology` (module docstring); `Error` if they do not fit."""
    _instance('strategy', strategy, Strategy)
    if not isinstance(topology, Topology):
        raise Error(f"topology must be a scalebook.topology.Topology, got {type(topology).__name__}")
    s = strategy
    if s.chips != topology.num_chips:
        raise Error(f"the strategy uses dp x fsdp x tp x pp x cp = {s.chips} chips; the topology has "
                    f"{topology.num_chips} ({topology.shape})")
    if s.placement is not None:
        return _placement(_derived(_explicit(s, topology), s.ep, s.fsdp), topology)
    return _placement(_group_axes((s.tp, s.cp, s.fsdp, s.dp, s.pp), s.ep, _ordered(topology)), topology)


def _group_axes(degrees: "tuple[int, ...]", ep: int, ordered: "list[Axis]") -> "dict[str, list[Axis]]":
    """The axes of every group in `GROUPS`, laid by `place`'s rule for degrees in `KINDS` order on
    `ordered` = `_ordered(topology)`.

    Trusts its inputs (the planner's search calls it for every candidate, with the axes ordered
    once, and builds a `Placement` only for the strategies it returns); raises `Error` where the
    degrees do not divide the axes, as `place` does.
    """
    q = _Queue(ordered)
    return _derived({k: q.take(d, k) for k, d in zip(KINDS, degrees)}, ep, degrees[2])


def _derived(lists: "dict[str, list[Axis]]", ep_degree: int, fsdp_degree: int) -> "dict[str, list[Axis]]":
    """The five degrees' axis lists with the groups derived from them: ep and the gradient groups."""
    data = lists["fsdp"] + lists["dp"]
    ep, rest = _split(data, ep_degree, "ep")
    if ep_degree <= fsdp_degree:
        efsdp, erest = _split(rest, fsdp_degree // ep_degree, "fsdp outside ep")
    else:
        efsdp, erest = [], rest
    lists.update(ep=ep, grad=lists["dp"] + lists["cp"], expert_fsdp=efsdp, expert_grad=erest + lists["cp"])
    return lists


def _placement(lists: "dict[str, list[Axis]]", topology: Topology) -> Placement:
    """The `Placement` of every group's axes (`_derived`), on a topology made of the axes used."""
    used: dict[str, Axis] = {}
    for axes in lists.values():
        for a in axes:
            used[a.name] = a
    # Sub-axes of ep/expert groups may re-split fsdp/dp sub-axes: keep every distinct piece.
    topo = Topology(chip=topology.chip, kind=topology.kind, axes=tuple(used.values()),
                    hop_latency_seconds=topology.hop_latency_seconds)
    return Placement(topology=topo, groups={g: tuple(a.name for a in lists[g]) for g in GROUPS})


def _explicit(s: Strategy, topology: Topology) -> dict[str, list[Axis]]:
    seen: set[str] = set()
    lists: dict[str, list[Axis]] = {}
    for kind in KINDS:
        names = s.placement.get(kind, ())
        axes = [topology.axis(n) for n in names]
        for n in names:
            if n in seen:
                raise Error(f"axis {n!r} is placed twice; each axis carries one parallelism")
            seen.add(n)
        size = math.prod(a.size for a in axes)
        if size != getattr(s, kind):
            raise Error(f"{kind}={getattr(s, kind)} but its axes {names!r} hold {size} chips")
        lists[kind] = _ordered_like(axes, topology)
    return lists


def _ordered_like(axes: list[Axis], topology: Topology) -> list[Axis]:
    order = {a.name: i for i, a in enumerate(_ordered(topology))}
    return sorted(axes, key=lambda a: order[a.name])
