"""Time of AllGather, ReduceScatter, AllReduce, AllToAll and a neighbour permute on a topology.

Chapter 3 of the book derives these formulas (after Austin et al. 2025, part 3 for TPUs and
part 12 for GPUs). Conventions:

- `bytes_` is V, the bytes of the array *whole along the collective's axes*: the output of an
  AllGather, the input of a ReduceScatter, the (full-size) input and output of an AllReduce, and
  all N shards of an AllToAll or permute together. For `A[I_X, J] -> A[I, J]`, V = bytes(A).
  Arrays also sharded along other axes count as held by one device: AllGather_X of A[I_X, J_Y]
  has V = bytes(A) / |Y|.
- Time is the additive alpha-beta form T = T_latency + T_bandwidth: T_latency = the collective's
  steps on each network x that network's latency per step (`Axis.latency_seconds`: 1 us per ICI
  hop, 3.4 us per NVLink ring step, 14 us per InfiniBand or DCN step), and T_bandwidth = the
  bytes term below / (W x `Axis.bandwidth_efficiency`). NCCL's own cost model has this form
  (time = latency + bytes / bandwidth, src/graph/tuning.cc). Austin et al. 2025 use
  max(T_bandwidth, T_latency) (a collective is either bandwidth- or latency-bound), an
  approximation that drops the smaller term; it stays available as `max_convention_seconds`.
  Passing `hop_latency_seconds` prices every step at that one latency instead.
- On NVLink, InfiniBand and DCN the collective takes the fastest of NCCL's three protocols
  (`CollectiveCost.protocol`), as NCCL's tuner does: LL (0.6 us per NVLink step, 2.7 us per
  network step, half the bandwidth) wins for small arrays, LL128 (1.9 / 4.0 us, 0.92 of it) in
  between, Simple (3.4 / 14 us, all of it) for large ones. `Axis.latency_seconds` is the Simple
  figure; the others scale it. ICI has one protocol.

TPU torus (ICI) axes, W_a = bidirectional ICI per link where axis a wraps around, one-way
(half) where it does not; over k axes W = sum of their W_a, so k equal axes are k times faster.
N is the product of the group's axis sizes; the exact (N-1)/N factor is kept (the chapter's
prose drops it as a large-N approximation, V / W):

    AllGather = ReduceScatter = V (N-1) / (N W)   (every chip takes in the (N-1)/N it lacks
                                                    through its links on the group's axes)
    AllReduce = 2 V (N-1) / (N W)
    AllToAll  = the bisection bound max_a V floor(N_a/2) ceil(N_a/2) / (N_a N W_a)
                (= V / (4 W) on one ring of even size, V N_a / (4 N W_a) per axis over several)
    permute   = (V / N) / one-way link bandwidth (every chip sends its shard to a neighbour)
    hops: N_a // 2 per axis with a wraparound, N_a - 1 without (x2 for AllReduce), 1 us each.
    Every W here is the link rate x `Axis.bandwidth_efficiency` (1.0 on ICI: none is published).

GPU NVLink (switched, N GPUs in the group, W = GPU egress one way x NCCL's usable share, 0.82 on
H100):

    AllGather = ReduceScatter = V (N-1) / (N W);  AllReduce = 2x that;  AllToAll = V (N-1) / (N^2 W)

InfiniBand / DCN axes (M nodes or slices in the group): the same switched formulas with N = M, and
W = per-chip NIC share x the number of chips of the group inside one node or slice, which share
the NICs (for an AllGather over a whole H100 cluster: V (M-1) / (M x 400 GB/s)). Steps: N - 1
per AllGather or ReduceScatter, 2 (N - 1) per AllReduce, 1 per AllToAll or permute, on each
switched network, at its latency per step (3.4 us NVLink, 14 us InfiniBand or DCN). When a group
spans several networks (ICI/NVLink and DCN) the stages pipeline: T_bandwidth is the slowest
network's time, and the latencies of every stage add.

GPU groups across nodes: NCCL runs AllGather and ReduceScatter as one flat ring over all N ranks
(its only algorithm for them when several GPUs of a node are in the group; NVLS and PAT aside),
N - 1 steps of which M - 1 cross between nodes and N - M stay on NVLink (NCCL 2.30.7,
src/graph/tuning.cc: nsteps = nRanks - 1, nInterSteps = nNodes - 1, latency = base +
(nsteps - nInterSteps) x intraLat + nInterSteps x interLat). So over G GPUs per node in M nodes
the latency is M (G - 1) NVLink steps + (M - 1) network steps, not the (G - 1) + (M - 1) of a
hierarchical collective: at 1,536 A100s (192 nodes of 8) 1,344 x 3.4 us + 191 x 14 us = 7.2 ms
per collective. AllReduce keeps the hierarchical count (NCCL also has a tree for it, whose
latency grows with log2 of the nodes; the model does not price the tree). A collective over axes of total size 1
costs 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ._readable import Readable
from . import units
from .errors import MAX_CHIPS, Error, _show, require_non_negative, require_positive
from .errors import MAX_CHIPS, MAX_COUNT, MAX_TOKENS, require_count as _require_count  # noqa: F401
from .errors import require_flag as _require_flag
from .topology import LINKS, PROTOCOLS, Axis, Topology, _coords, hops as _hops, link_protocols

_PROTO = {link: link_protocols(link) for link in LINKS}  # link -> protocol -> (latency ratio, bandwidth share)

KINDS = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")

_ALIASES = {
    "allgather": "all-gather", "ag": "all-gather", "gather": "all-gather",
    "reducescatter": "reduce-scatter", "rs": "reduce-scatter",
    "allreduce": "all-reduce", "ar": "all-reduce", "psum": "all-reduce",
    "alltoall": "all-to-all", "a2a": "all-to-all",
    "collectivepermute": "collective-permute", "permute": "collective-permute", "ppermute": "collective-permute",
}
_LABEL = {"all-gather": "AllGather", "reduce-scatter": "ReduceScatter", "all-reduce": "AllReduce",
          "all-to-all": "AllToAll", "collective-permute": "Permute"}


def canonical_kind(kind: str) -> str:
    """'AllGather', 'all_gather', 'AG', 'ppermute'... -> the HLO name ('all-gather', 'collective-permute')."""
    if not isinstance(kind, str):
        raise Error(f"collective kind must be a string; valid: {', '.join(KINDS)}")
    key = kind.strip().lower().replace("-", "").replace("_", "").replace(" ", "")
    for k in KINDS:
        if key == k.replace("-", ""):
            return k
    if key in _ALIASES:
        return _ALIASES[key]
    raise Error(f"unknown collective {kind!r}; valid: {', '.join(KINDS)} (or AllGather, ReduceScatter, "
                "AllReduce, AllToAll, ppermute)")


def label(kind: str) -> str:
    """The book's CamelCase name of a collective: 'all-gather' -> 'AllGather'."""
    return _LABEL[canonical_kind(kind)]


@dataclass(frozen=True)
class CollectiveCost(Readable):
    """Cost of one collective; see the module docstring for the formulas and what V means."""

    kind: str
    axes: tuple[str, ...]
    group_size: int
    array_bytes: float  # V
    #: Bytes each device sends of its own data: V(N-1)/N for AllGather/ReduceScatter, twice
    #: that for AllReduce, V(N-1)/N^2 for AllToAll, V/N for a permute.
    bytes_per_device: float
    #: Bytes through the busiest connection in one direction (an ICI link, a GPU's NVLink egress,
    #: a chip's NIC share): `bandwidth_seconds` x that connection's one-way bandwidth.
    bytes_per_link: float
    hops: int
    bandwidth_seconds: float
    latency_seconds: float
    #: NCCL protocol that gives the least time on NVLink/InfiniBand/DCN ('LL', 'LL128', 'Simple');
    #: 'Simple' on ICI alone or when `hop_latency_seconds` is given.
    protocol: str = "Simple"

    @property
    def seconds(self) -> float:
        """latency_seconds + bandwidth_seconds: the additive alpha-beta time (module docstring)."""
        return self.latency_seconds + self.bandwidth_seconds

    @property
    def max_convention_seconds(self) -> float:
        """max(bandwidth_seconds, latency_seconds): Austin et al. 2025's approximation."""
        return max(self.bandwidth_seconds, self.latency_seconds)

    @property
    def regime(self) -> str:
        """'bandwidth' or 'latency': which term sets the time ('none' for a free collective)."""
        if self.seconds == 0:
            return "none"
        return "bandwidth" if self.bandwidth_seconds >= self.latency_seconds else "latency"

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"CollectiveCost({label(self.kind)} over {''.join(self.axes) or '-'} (N={self.group_size}): "
                f"V={f(self.array_bytes, 'B')}, {f(self.bytes_per_device, 'B')} sent per device, "
                f"{f(self.seconds, 's')} ({self.regime}; bandwidth {f(self.bandwidth_seconds, 's')} "
                f"+ latency {f(self.latency_seconds, 's')} of {self.hops} steps))")

    def _repr_html_(self) -> str:
        f = units.format_quantity
        rows = [("collective", label(self.kind)), ("axes", ", ".join(self.axes) or "-"), ("N", self.group_size),
                ("V (array)", f(self.array_bytes, "B")), ("sent per device", f(self.bytes_per_device, "B")),
                ("per link", f(self.bytes_per_link, "B")), ("bandwidth time", f(self.bandwidth_seconds, "s")),
                ("latency time", f"{f(self.latency_seconds, 's')} ({self.hops} steps)"),
                ("time (latency + bandwidth)", f"<b>{f(self.seconds, 's')}</b> ({self.regime}-bound)"),
                ("max of the two (Austin et al.)", f(self.max_convention_seconds, "s"))]
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>" for k, v in rows)
        return f"<table>{body}</table>"


def _axes(topology: Topology, axes: "str | Sequence[str]", name: str = "axes") -> tuple[Axis, ...]:
    if not isinstance(topology, Topology):
        raise Error(f"topology must be a scalebook.topology.Topology (e.g. topology.slice('tpu-v5e', '16x16')), "
                    f"got {type(topology).__name__}")
    if not isinstance(axes, (str, list, tuple)) or not all(isinstance(a, str) for a in axes):
        raise Error(f"{name} must be an axis name or a list of names, got {_show(axes)}; valid: {', '.join(topology.names)}")
    names = (axes,) if isinstance(axes, str) else tuple(axes)
    if not names:
        raise Error(f"name at least one mesh axis; valid: {', '.join(topology.names)}")
    if len(set(names)) != len(names):
        raise Error(f"mesh axes {names!r} repeat a name; valid: {', '.join(topology.names)}")
    return tuple(topology.axis(n) for n in names)


def _switched(kind: str, v: float, n: int, w: float) -> float:
    """Time on a switched network (NVLink, InfiniBand, DCN): every member reaches every other at W."""
    if n <= 1:
        return 0.0
    if kind in ("all-gather", "reduce-scatter"):
        return v * (n - 1) / (n * w)
    if kind == "all-reduce":
        return 2 * v * (n - 1) / (n * w)
    if kind == "all-to-all":
        return v * (n - 1) / (n * n * w)
    return v / (n * w)  # permute


def _cut_pairs(size: int) -> int:
    """Chips on each side of the cut that halves a ring of `size`, multiplied: floor(N/2) ceil(N/2)."""
    return (size // 2) * ((size + 1) // 2)


def _ici(kind: str, v: float, axes: tuple[Axis, ...]) -> tuple[float, float, int, float]:
    """(seconds, effective one-way bandwidth of the busiest link, hops, latency per hop) on torus axes."""
    axes = tuple(a for a in axes if a.size > 1)
    if not axes:
        return 0.0, 1.0, 0, 0.0
    n = math.prod(a.size for a in axes)
    hops = sum(a.size // 2 if a.wraparound else a.size - 1 for a in axes)
    eff = min(a.bandwidth_efficiency for a in axes)
    lat = max(a.latency_seconds for a in axes)
    w = sum(a.bytes_per_s for a in axes) * eff
    one_way = min(a.one_way_bytes_per_s for a in axes) * eff
    if kind in ("all-gather", "reduce-scatter"):
        return v * (n - 1) / (n * w), one_way, hops, lat
    if kind == "all-reduce":
        return 2 * v * (n - 1) / (n * w), one_way, 2 * hops, lat
    if kind == "all-to-all":
        return max(v * _cut_pairs(a.size) / (a.size * n * a.bytes_per_s * eff) for a in axes), one_way, hops, lat
    wrap = len(axes) == 1 and axes[0].wraparound
    return v / (n * one_way), one_way, 1 if wrap else hops, lat


def cost(kind: str, topology: Topology, *, axes: "str | Sequence[str]", bytes_: float,
         hop_latency_seconds: "float | None" = None) -> CollectiveCost:
    """Cost of collective `kind` of an array of `bytes_` (V) over mesh `axes` of `topology`.

    Formulas and conventions: module docstring (chapter 3). Raises `Error` for an unknown kind
    or axis, a repeated axis, or a negative size.
    """
    kind = canonical_kind(kind)
    group = _axes(topology, axes)
    require_non_negative(bytes_=bytes_)
    if hop_latency_seconds is not None:
        require_non_negative(hop_latency_seconds=hop_latency_seconds)
    n = math.prod(a.size for a in group)
    v = float(bytes_)
    names = tuple(a.name for a in group)
    if n == 1 or v == 0:
        return CollectiveCost(kind, names, n, v, 0.0, 0.0, 0, 0.0, 0.0)
    if kind in ("all-gather", "reduce-scatter"):
        per_device = v * (n - 1) / n
    elif kind == "all-reduce":
        per_device = 2 * v * (n - 1) / n
    elif kind == "all-to-all":
        per_device = v * (n - 1) / (n * n)
    else:
        per_device = v / n
    # One stage per physical network; inner networks (ICI, NVLink) hand each outer one V / (group
    # inside a node or slice) per chip -- equivalently W_outer x chips of the group per node.
    inner = [a for a in group if a.network in ("ici", "nvlink")]
    outer = [a for a in group if a.network == "dcn"]
    # (seconds, one-way bandwidth, steps, latency/step, link kind of the stage)
    stages: list[tuple[float, float, int, float, str]] = []
    ici = [a for a in inner if a.network == "ici"]
    if ici:
        stages.append(_ici(kind, v, tuple(ici)) + ("ici",))
    for switched in ([a for a in inner if a.network == "nvlink"], outer):
        if not switched:
            continue
        m = math.prod(a.size for a in switched)
        w = min(a.bytes_per_s for a in switched) * min(a.bandwidth_efficiency for a in switched)
        share = math.prod(a.size for a in inner) if switched is outer else 1
        steps = {"all-gather": m - 1, "reduce-scatter": m - 1, "all-reduce": 2 * (m - 1)}.get(kind, 1)
        if kind in ("all-gather", "reduce-scatter") and switched is not outer and outer:
            # NCCL's flat ring over all ranks: each of the nodes' NVLink segments takes m - 1 steps
            steps *= math.prod(a.size for a in outer)
        stages.append((_switched(kind, v / share, m, w), w, steps if m > 1 else 0,
                       max(a.latency_seconds for a in switched), switched[0].link))
    slowest = max(stages, key=lambda s: s[0])
    steps = sum(s[2] for s in stages)
    # NCCL picks the protocol with the least time; ICI (and a given hop latency) has one
    best = None
    protocols = _protocols(stages) if hop_latency_seconds is None else ("Simple",)
    for p in protocols:
        bw, lat = 0.0, 0.0
        for t, _, st, alpha, link in stages:
            ratio, factor = _PROTO[link].get(p, (1.0, 1.0)) if hop_latency_seconds is None else (1.0, 1.0)
            bw = max(bw, t / factor)
            lat += st * (alpha * ratio if hop_latency_seconds is None else hop_latency_seconds)
        if best is None or bw + lat < best[0] + best[1]:
            best = (bw, lat, p)
    return CollectiveCost(kind=kind, axes=names, group_size=n, array_bytes=v, bytes_per_device=per_device,
                          bytes_per_link=slowest[0] * slowest[1], hops=steps,
                          bandwidth_seconds=best[0], latency_seconds=best[1], protocol=best[2])


def _protocols(stages) -> tuple[str, ...]:
    """The protocols to try: NCCL's three when a stage crosses NVLink, InfiniBand or DCN."""
    return PROTOCOLS if any(s[4] != "ici" for s in stages) else ("Simple",)


def all_gather(topology: Topology, *, axes: "str | Sequence[str]", bytes_: float, **kw) -> CollectiveCost:
    """AllGather of a V-byte array (its gathered size) over `axes`: about V / W on a TPU axis."""
    return cost("all-gather", topology, axes=axes, bytes_=bytes_, **kw)


def reduce_scatter(topology: Topology, *, axes: "str | Sequence[str]", bytes_: float, **kw) -> CollectiveCost:
    """ReduceScatter of a V-byte array (its size before scattering): the same time as an AllGather."""
    return cost("reduce-scatter", topology, axes=axes, bytes_=bytes_, **kw)


def all_reduce(topology: Topology, *, axes: "str | Sequence[str]", bytes_: float, **kw) -> CollectiveCost:
    """AllReduce of a V-byte array: a ReduceScatter then an AllGather, 2 V / W on a TPU axis."""
    return cost("all-reduce", topology, axes=axes, bytes_=bytes_, **kw)


def all_to_all(topology: Topology, *, axes: "str | Sequence[str]", bytes_: float, **kw) -> CollectiveCost:
    """AllToAll of a V-byte array (all shards together): V / (4 W) on a bidirectional TPU ring."""
    return cost("all-to-all", topology, axes=axes, bytes_=bytes_, **kw)


def permute(topology: Topology, *, axes: "str | Sequence[str]", bytes_: float, **kw) -> CollectiveCost:
    """Each device sends its V/N shard to its neighbour along `axes` (jax.lax.ppermute)."""
    return cost("collective-permute", topology, axes=axes, bytes_=bytes_, **kw)


# ------------------------------------------------------------------ more questions of chapter 3


@dataclass(frozen=True)
class Transfer:
    """One message from one chip to another over a single route (`point_to_point`)."""

    hops: int
    array_bytes: float
    link_bytes_per_s: float
    bandwidth_seconds: float
    latency_seconds: float

    @property
    def seconds(self) -> float:
        """latency_seconds + bandwidth_seconds (the additive form of the module docstring)."""
        return self.latency_seconds + self.bandwidth_seconds

    @property
    def max_convention_seconds(self) -> float:
        """max(bandwidth_seconds, latency_seconds): Austin et al. 2025's approximation."""
        return max(self.bandwidth_seconds, self.latency_seconds)


def point_to_point(topology: Topology, src, dst, *, bytes_: float,
                   hop_latency_seconds: "float | None" = None) -> Transfer:
    """Time to send `bytes_` from chip `src` to chip `dst` (coordinates per axis) over one route.

    Chapter 3: the message crosses `topology.hops(src, dst)` links, pipelined, so
    T = hops x hop latency + bytes / W_link, W_link the slowest one-way link on the route times its
    efficiency (the sender uses one link in one direction; splitting it over several routes is not
    modelled). Each hop costs its axis's `latency_seconds` unless `hop_latency_seconds` is given.
    """
    h = _hops(topology, src, dst)
    require_non_negative(bytes_=bytes_)
    if hop_latency_seconds is not None:
        require_non_negative(hop_latency_seconds=hop_latency_seconds)
    a_, b_ = _coords(topology, src, "src"), _coords(topology, dst, "dst")
    used = [a for a, x, y in zip(topology.axes, a_, b_) if x != y]
    w = min((a.one_way_bytes_per_s * a.bandwidth_efficiency for a in used), default=math.inf)
    bw = float(bytes_) / w if used else 0.0
    latency = 0.0
    for a, x, y in zip(topology.axes, a_, b_):
        d = abs(x - y)
        n_hops = (min(d, a.size - d) if a.wraparound else d) if a.network == "ici" else int(d > 0)
        latency += n_hops * (a.latency_seconds if hop_latency_seconds is None else hop_latency_seconds)
    return Transfer(hops=h, array_bytes=float(bytes_), link_bytes_per_s=w if used else 0.0,
                    bandwidth_seconds=bw, latency_seconds=latency)


@dataclass(frozen=True)
class GatherToOne:
    """Collecting every shard of a V-byte array onto one chip (`gather_to_one`)."""

    group_size: int
    array_bytes: float
    received_bytes: float
    ingress_bytes_per_s: float
    hops: int
    bandwidth_seconds: float
    latency_seconds: float

    @property
    def seconds(self) -> float:
        """latency_seconds + bandwidth_seconds (the additive form of the module docstring)."""
        return self.latency_seconds + self.bandwidth_seconds

    @property
    def max_convention_seconds(self) -> float:
        """max(bandwidth_seconds, latency_seconds): Austin et al. 2025's approximation."""
        return max(self.bandwidth_seconds, self.latency_seconds)


def gather_to_one(topology: Topology, *, axes: "str | Sequence[str]", bytes_: float,
                  hop_latency_seconds: "float | None" = None) -> GatherToOne:
    """Gather a V-byte array sharded over `axes` onto one chip (jax.device_get of a sharded array, on chip).

    Chapter 3: the receiving chip must take in V (N-1)/N through its own links, so
    T = hops x latency + V (N-1) / (N x ingress), ingress counted at the links' efficiency. On a torus axis the best receiver sits mid-ring with a neighbour
    on each side (one neighbour on an axis of 2): ingress = sum over axes of neighbours x one-way
    bandwidth, and the farthest shard is N_a // 2 hops away per axis. On a switched network
    (NVLink, InfiniBand, DCN) ingress is the chip's link W. The result: no faster than an
    AllGather, which delivers V to every chip in the same time.
    """
    group = _axes(topology, axes)
    require_non_negative(bytes_=bytes_)
    if hop_latency_seconds is not None:
        require_non_negative(hop_latency_seconds=hop_latency_seconds)
    group = tuple(a for a in group if a.size > 1)
    n = math.prod(a.size for a in group)
    v = float(bytes_)
    if n == 1 or v == 0:
        return GatherToOne(n, v, 0.0, 0.0, 0, 0.0, 0.0)
    networks = {a.network for a in group}
    if len(networks) > 1:
        raise Error(f"gather_to_one prices axes of one network; {', '.join(a.name for a in group)} span "
                    f"{', '.join(sorted(networks))}")
    if networks == {"ici"}:
        ingress = sum((1 if a.size == 2 else 2) * a.one_way_bytes_per_s * a.bandwidth_efficiency for a in group)
        hop_count = sum(a.size // 2 for a in group)
    else:
        ingress = min(a.bytes_per_s * a.bandwidth_efficiency for a in group)
        hop_count = 1
    latency = max(a.latency_seconds for a in group) if hop_latency_seconds is None else hop_latency_seconds
    received = v * (n - 1) / n
    return GatherToOne(group_size=n, array_bytes=v, received_bytes=received, ingress_bytes_per_s=ingress,
                       hops=hop_count, bandwidth_seconds=received / ingress, latency_seconds=hop_count * latency)


@dataclass(frozen=True)
class RingTime:
    """A ring AllGather, ReduceScatter or AllReduce run one way or both ways round (`ring`)."""

    kind: str
    size: int
    bidirectional: bool
    steps: int
    bytes_per_link: float
    bandwidth_seconds: float
    latency_seconds: float

    @property
    def seconds(self) -> float:
        """latency_seconds + bandwidth_seconds (the additive form of the module docstring)."""
        return self.latency_seconds + self.bandwidth_seconds

    @property
    def max_convention_seconds(self) -> float:
        """max(bandwidth_seconds, latency_seconds): Austin et al. 2025's approximation."""
        return max(self.bandwidth_seconds, self.latency_seconds)


def ring(kind: str, *, size: int, bytes_: float, one_way_bytes_per_s: float, bidirectional: bool = True,
         hop_latency_seconds: float = 1e-6) -> RingTime:
    """A closed ring of `size` chips, each link carrying `one_way_bytes_per_s` each way.

    Chapter 3. One way round, N - 1 steps each put V/N on every link: T = V (N-1) / (N W_1).
    Both ways, each shard goes half way round in each direction (the chip opposite gets half
    from each side), N // 2 steps and V (N-1) / (2N) per link direction: T = V (N-1) / (2 N W_1),
    twice as fast. AllReduce doubles both (ReduceScatter then AllGather). A line without a
    wraparound has the one-way time, with N - 1 steps both ways (the end chip has one link).
    `seconds` adds steps x `hop_latency_seconds` to the bandwidth time (`max_convention_seconds`
    keeps the larger of the two, as Austin et al. 2025 do).
    """
    _require_flag('bidirectional', bidirectional)
    kind = canonical_kind(kind)
    if kind not in ("all-gather", "reduce-scatter", "all-reduce"):
        raise Error(f"ring prices all-gather, reduce-scatter and all-reduce, not {kind}")
    size = _require_count("size", size, maximum=MAX_CHIPS)
    if not isinstance(bidirectional, bool):
        raise Error(f"bidirectional must be True or False, got {bidirectional!r}")
    require_non_negative(bytes_=bytes_, hop_latency_seconds=hop_latency_seconds)
    require_positive(one_way_bytes_per_s=one_way_bytes_per_s)
    rounds = 2 if kind == "all-reduce" else 1
    n = size
    if n == 1:
        return RingTime(kind, n, bidirectional, 0, 0.0, 0.0, 0.0)
    per_link = rounds * float(bytes_) * (n - 1) / n / (2 if bidirectional else 1)
    steps = rounds * (n // 2 if bidirectional else n - 1)
    return RingTime(kind=kind, size=n, bidirectional=bidirectional, steps=steps, bytes_per_link=per_link,
                    bandwidth_seconds=per_link / one_way_bytes_per_s, latency_seconds=steps * hop_latency_seconds)


@dataclass(frozen=True)
class StagedCost:
    """A collective done in stages (`with_idle_axes`): the stages, their total and the plain cost."""

    stages: tuple[CollectiveCost, ...]
    plain: CollectiveCost

    @property
    def seconds(self) -> float:
        """Stages run one after the other: the sum of their times."""
        return sum(s.seconds for s in self.stages)

    @property
    def speedup(self) -> float:
        """plain.seconds / seconds."""
        return self.plain.seconds / self.seconds if self.seconds else 1.0


def with_idle_axes(kind: str, topology: Topology, *, axes: "str | Sequence[str]", idle: "str | Sequence[str]",
                   bytes_: float) -> StagedCost:
    """A collective over `axes` of an array replicated along mesh axes `idle`, using their links too.

    Chapter 3. The copies along `idle` are identical, so each can keep a different 1/N_idle of
    the array first (a free local slice):

    - AllGather: then gather over `axes` + `idle` together: V (N'-1) / (N' (W_axes + W_idle)).
    - ReduceScatter: ReduceScatter the slice (V / N_idle) over `axes`, then AllGather the
      result (V / N_axes) over `idle` to restore the copies.
    - AllReduce: ReduceScatter the slice (V / N_idle) over `axes`, then AllGather the whole
      V over `axes` + `idle`.
    """
    kind = canonical_kind(kind)
    if kind not in ("all-gather", "reduce-scatter", "all-reduce"):
        raise Error(f"with_idle_axes prices all-gather, reduce-scatter and all-reduce, not {kind}")
    busy = _axes(topology, axes)
    spare = _axes(topology, idle, "idle")
    overlap = {a.name for a in busy} & {a.name for a in spare}
    if overlap:
        raise Error(f"axes {sorted(overlap)} are both busy and idle; name each axis once")
    names = tuple(a.name for a in busy)
    idle_names = tuple(a.name for a in spare)
    n_busy = math.prod(a.size for a in busy)
    n_idle = math.prod(a.size for a in spare)
    plain = cost(kind, topology, axes=names, bytes_=bytes_)
    v = float(bytes_)
    if kind == "all-gather":
        stages = (cost("all-gather", topology, axes=names + idle_names, bytes_=v),)
    elif kind == "reduce-scatter":
        stages = (cost("reduce-scatter", topology, axes=names, bytes_=v / n_idle),
                  cost("all-gather", topology, axes=idle_names, bytes_=v / n_busy))
    else:
        stages = (cost("reduce-scatter", topology, axes=names, bytes_=v / n_idle),
                  cost("all-gather", topology, axes=names + idle_names, bytes_=v))
    return StagedCost(stages=stages, plain=plain)


def sparse_all_to_all(topology: Topology, *, axes: "str | Sequence[str]", bytes_: float,
                      destinations: int) -> CollectiveCost:
    """An AllToAll in which each chip sends its pieces to only `destinations` of the N - 1 others.

    Chapter 3. V is the array of the dense AllToAll (each piece V / N^2); with k destinations
    spread evenly over the group, every link carries k / (N - 1) of the dense traffic, so the
    bandwidth time and the bytes sent scale by k / (N - 1) (a token routed to k of N experts,
    chapter 4). Hops stay those of the dense exchange.
    """
    dense = cost("all-to-all", topology, axes=axes, bytes_=bytes_)
    n = dense.group_size
    if isinstance(destinations, bool) or not isinstance(destinations, int) or not 0 <= destinations <= max(n - 1, 0):
        raise Error(f"destinations must be an integer from 0 to N - 1 = {n - 1}, got {destinations!r}")
    if n == 1 or destinations == 0:
        return CollectiveCost("all-to-all", dense.axes, n, dense.array_bytes, 0.0, 0.0, 0, 0.0, 0.0)
    f = destinations / (n - 1)
    return CollectiveCost(kind="all-to-all", axes=dense.axes, group_size=n, array_bytes=dense.array_bytes,
                          bytes_per_device=dense.bytes_per_device * f, bytes_per_link=dense.bytes_per_link * f,
                          hops=dense.hops, bandwidth_seconds=dense.bandwidth_seconds * f,
                          latency_seconds=dense.latency_seconds)


# ------------------------------------------------------------------ exact forms beside the original's rules
# (chapter 3's ring AllToAll, a gather to a chosen chip, a message split over several routes; chapter 2b's
# forward-pass limits of tensor and expert parallelism). Their rounded counterparts are in
# `scalebook.rules_of_thumb.collectives` and `scalebook.rules_of_thumb.gpus`.


def ring_all_to_all(*, size: int, bytes_: float, one_way_bytes_per_s: float, bidirectional: bool = True,
                    hop_latency_seconds: float = 1e-6) -> RingTime:
    """AllToAll on a closed ring of `size` chips, every link carrying `one_way_bytes_per_s` each way.

    Chapter 3. Each chip sends V/N^2 to each of the N - 1 others. One way round, the message to the
    chip d places ahead crosses d links; summed over sources and distances the N links carry
    N x (V/N^2) x (1 + ... + N-1) = V (N-1)/2, so each link carries V (N-1) / (2N) and
    T = V (N-1) / (2 N W_1). Both ways round, each message takes the shorter way, min(d, N-d)
    links, and the 2N link directions share N x (V/N^2) x sum_d min(d, N-d): V/8 per direction
    for even N ((N^2-1) V / (8 N^2) for odd N), so T = V / (8 W_1) = V / (4 W) with W = 2 W_1
    the bidirectional rate, the original's rule. One way round is (N-1)/N x 4 times slower.
    Steps: N - 1 one way, N // 2 both ways, each at `hop_latency_seconds`.
    """
    _require_flag('bidirectional', bidirectional)
    size = _require_count("size", size, maximum=MAX_CHIPS)
    if not isinstance(bidirectional, bool):
        raise Error(f"bidirectional must be True or False, got {bidirectional!r}")
    require_non_negative(bytes_=bytes_, hop_latency_seconds=hop_latency_seconds)
    require_positive(one_way_bytes_per_s=one_way_bytes_per_s)
    n, v = size, float(bytes_)
    if n == 1:
        return RingTime("all-to-all", n, bidirectional, 0, 0.0, 0.0, 0.0)
    if bidirectional:
        per_link = v * sum(min(d, n - d) for d in range(1, n)) / (2 * n * n)
        steps = n // 2
    else:
        per_link = v * (n - 1) / (2 * n)
        steps = n - 1
    return RingTime(kind="all-to-all", size=n, bidirectional=bidirectional, steps=steps, bytes_per_link=per_link,
                    bandwidth_seconds=per_link / one_way_bytes_per_s, latency_seconds=steps * hop_latency_seconds)


def gather_to_chip(*, size: int, receiver: int, bytes_: float, one_way_bytes_per_s: float,
                   wraparound: bool, hop_latency_seconds: float = 1e-6) -> GatherToOne:
    """Gather a V-byte array sharded over one ICI axis of `size` chips onto chip `receiver` (0-based).

    Chapter 3. The receiver takes in V (N-1)/N through its two links on the axis. On a line
    (no wraparound) the `receiver` chips on its left can reach it only through its left link and
    the N - 1 - receiver on its right only through its right one, so
    T = max(receiver, N - 1 - receiver) x (V/N) / W_1: an end chip takes twice as long as the
    middle one. On a ring (wraparound) the shards split between both links whatever the receiver:
    T = ceil((N-1)/2) x (V/N) / W_1. Latency: the farthest shard's hops, each `hop_latency_seconds`.
    `gather_to_one` prices the best receiver on several axes.
    """
    _require_flag('wraparound', wraparound)
    size = _require_count("size", size, maximum=MAX_CHIPS)
    if isinstance(receiver, bool) or not isinstance(receiver, int) or not 0 <= receiver < size:
        raise Error(f"receiver must be a chip index from 0 to {size - 1}, got {receiver!r}")
    if not isinstance(wraparound, bool):
        raise Error(f"wraparound must be True or False, got {wraparound!r}")
    require_non_negative(bytes_=bytes_, hop_latency_seconds=hop_latency_seconds)
    require_positive(one_way_bytes_per_s=one_way_bytes_per_s)
    n, v = size, float(bytes_)
    if n == 1 or v == 0:
        return GatherToOne(n, v, 0.0, 0.0, 0, 0.0, 0.0)
    if wraparound:
        busiest = math.ceil((n - 1) / 2)
        hops = n // 2
        links = 1 if n == 2 else 2
    else:
        busiest = max(receiver, n - 1 - receiver)
        hops = busiest
        links = int(receiver > 0) + int(receiver < n - 1)
    received = v * (n - 1) / n
    return GatherToOne(group_size=n, array_bytes=v, received_bytes=received,
                       ingress_bytes_per_s=links * one_way_bytes_per_s,
                       hops=hops, bandwidth_seconds=busiest * v / n / one_way_bytes_per_s,
                       latency_seconds=hops * hop_latency_seconds)


def point_to_point_routes(topology: Topology, src, dst, *, bytes_: float, routes: int,
                          hop_latency_seconds: "float | None" = None) -> Transfer:
    """Send `bytes_` from `src` to `dst` split evenly over `routes` link-disjoint routes.

    Chapter 3. `point_to_point` uses one route, so one link of the sender: T = hops x latency +
    V / W_link. The sender has up to 2 links per torus axis of size > 2 (1 on an axis of 2 or
    at the end of a line), and so does the receiver; with k disjoint routes each carries V/k:
    T = hops' x latency + V / (k W_link), where every route beyond the direct one detours
    through a neighbouring row, so the slowest route has 2 more hops than the direct one (the
    latency term uses it). `routes` may not exceed the links of the sender or of the receiver.
    """
    routes = _require_count("routes", routes, maximum=MAX_CHIPS)
    one = point_to_point(topology, src, dst, bytes_=bytes_, hop_latency_seconds=hop_latency_seconds)
    if routes == 1 or one.hops == 0:
        return one
    if any(a.network != "ici" for a in topology.axes):
        raise Error("point_to_point_routes splits a message over torus links; a switched network gives each "
                    "chip one link to its switch (use point_to_point)")

    def links(coords) -> int:
        total = 0
        for a, x in zip(topology.axes, coords):
            if a.size == 1:
                continue
            if a.wraparound and a.size > 2:
                total += 2
            else:
                total += int(x > 0) + int(x < a.size - 1)
        return total

    a_, b_ = _coords(topology, src, "src"), _coords(topology, dst, "dst")
    most = min(links(a_), links(b_))
    if routes > most:
        raise Error(f"routes must be at most {most} (the links of the sender and of the receiver), got {routes}")
    per_hop = one.latency_seconds / one.hops
    return Transfer(hops=one.hops + 2, array_bytes=one.array_bytes, link_bytes_per_s=one.link_bytes_per_s * routes,
                    bandwidth_seconds=one.bandwidth_seconds / routes, latency_seconds=(one.hops + 2) * per_hop)


def tp_forward_max_degree(*, d_model: int, flops_per_s: float, link_bytes_per_s: float,
                          bytes_per_element: float = 2) -> float:
    """Largest tensor-parallel degree whose forward-pass AllReduces hide behind the forward matmuls.

    Chapter 2b. A standard layer (attention projections 4 D^2, MLP 8 D^2 parameters) does
    24 D^2 / tp FLOPs per token per chip in the forward pass, and Megatron-style TP AllReduces
    the D-wide activation twice (after attention and after the MLP), 2 x 2 D b bytes per token on
    a switched network in the large-N form (2V/W each). Hiding: 24 D^2 / (tp C) >= 4 D b / W, so
    tp <= 6 D W / (b C). The forward pass must hide its own collectives; averaging with the
    backward pass (twice the FLOPs, the same two AllReduces) would give 9 D W / (b C).
    The original's rule counts the MLP only: `rules_of_thumb.gpus.tp_max_degree_mlp_only`.
    """
    _positive_int("d_model", d_model)
    require_positive(flops_per_s=flops_per_s, link_bytes_per_s=link_bytes_per_s, bytes_per_element=bytes_per_element)
    return 6 * d_model * link_bytes_per_s / (bytes_per_element * flops_per_s)


def ep_forward_min_expert_width(*, flops_per_s: float, link_bytes_per_s: float, bytes_per_element: float = 2) -> float:
    """Narrowest expert (F_e) whose forward-pass compute hides its two AllToAlls (chapter 2b).

    Per token routed to k experts the forward pass dispatches and combines k D b bytes (2 k D b / W
    on a switched network, large-N form) and computes a gated expert, 3 matmuls of D x F_e:
    6 k D F_e FLOPs. Hiding: 6 k D F_e / C >= 2 k D b / W, so F_e >= (b / 3) C / W; k and D cancel.
    Averaging with the backward pass gives (2 b / 9) C / W (`training.min_expert_width`).
    """
    require_positive(flops_per_s=flops_per_s, link_bytes_per_s=link_bytes_per_s, bytes_per_element=bytes_per_element)
    return bytes_per_element / 3 * flops_per_s / link_bytes_per_s


def _positive_int(name: str, v) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise Error(f"{name} must be a positive integer, got {_show(v)}")
    if v > MAX_CHIPS:
        raise Error(f"{name} is too large (at most {MAX_CHIPS:,} chips), got {_show(v)}")
