"""How chips are connected: TPU tori, multislice DCN, GPU NVLink domains and fat-tree clusters.

Chapter 2 of the book draws these networks; chapter 3 prices collectives on them
(`scalebook.collectives`). A `Topology` is a tuple of named mesh axes, each carried by one kind
of link with its own bandwidth:

- ``ici``: a TPU torus axis. With a wraparound a chip can send both ways round a ring, so the
  axis carries `Chip.ici_bidi_bytes_per_s` (the book's `W_ici`); without one it carries about the
  one-way figure, half of it. Only published slice shapes exist (tpu_slices.json, from the Cloud
  TPU documentation): v5e/v6e offer 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16 and 16x16 and wrap around
  only along axes of 16 chips; v4p/v5p/7x offer 3D shapes whose sides are all at most 4 or all
  multiples of 4, and wrap around on every axis only when the slice is made of whole 4x4x4 cubes
  (every side a multiple of 4), where the optical switches close every ring.
- ``dcn``: between TPU slices; each chip gets its share of its host's NIC
  (`Chip.dcn_bytes_per_s`).
- ``nvlink``: GPUs of one NVLink domain (8, or 72 on GB200 NVL72) behind NVSwitches: a switched
  network, each GPU egressing `Chip.ici_one_way_bytes_per_s` (450 GB/s on H100) in each direction.
- ``infiniband``: between nodes of a GPU cluster, a full-bisection fat tree; each GPU gets
  node egress / GPUs per node (400 GB/s / 8 = 50 GB/s on H100), at every level of the tree
  (leaf, spine) as in the DGX H100 SuperPod (Austin et al. 2025, part 12).

Every axis also carries its network's latency per step of a collective (`Axis.latency_seconds`)
and the fraction of its link rate a collective reaches (`Axis.bandwidth_efficiency`), both cited
in tpu_slices.json: 1 us per ICI hop (Austin et al. 2025, part 3); 3.4 us per NVLink ring step and
14 us per InfiniBand ring step from NCCL's own performance model, which also gives NVLink's usable
bandwidth (20.6 of 25 GB/s per link on H100: 0.824); DCN borrows the InfiniBand step latency (no
figure is published for it). NCCL runs one ring per NIC (rail-optimised): when every GPU of a
node is in a cross-node group, each gets node egress / GPUs per node; a group with one GPU per
node while the other GPUs idle could reach more through their NICs (NCCL's PXN routes over
NVLink to another rail), which this model does not count.

Axes are named X, Y, Z in the order of a slice's dimensions; the DCN axis of a multislice is D.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from ._readable import Readable
from . import units
from ._data import load
from .errors import Error, _show, require_flag, require_non_negative, require_positive
from .errors import MAX_CHIPS, MAX_COUNT, MAX_TOKENS, require_count as _require_count  # noqa: F401
from .hardware import Chip, chip as _chip

LINKS = ("ici", "dcn", "nvlink", "infiniband")
#: Physical network of each link kind; axes on the same network share its bandwidth.
NETWORK = {"ici": "ici", "nvlink": "nvlink", "dcn": "dcn", "infiniband": "dcn"}
_TORUS_NAMES = ("X", "Y", "Z")


def hop_latency_seconds() -> float:
    """Latency of one hop between neighbouring chips: 1 us (Austin et al. 2025, part 3)."""
    return float(load("hardware_specs")["tpu_other_mentions"]["generic"]["ici_hop_latency_s"])


def link_latency_seconds(link: str) -> float:
    """Latency of one step of a collective on a link kind (tpu_slices.json, ``links``)."""
    if not isinstance(link, str) or link not in LINKS:
        raise Error(f"unknown link {link!r}; valid: {', '.join(LINKS)}")
    return float(load("tpu_slices")["links"][link]["latency_seconds_per_step"])


PROTOCOLS = ("LL", "LL128", "Simple")


def link_protocols(link: str) -> dict[str, tuple[float, float]]:
    """NCCL protocol -> (its step latency / the Simple one, its share of the bandwidth) on a link.

    NCCL sends each collective with one protocol, the fastest for its size: LL (0.6 us per NVLink
    ring step, half the bandwidth) for small messages, LL128 (1.9 us, 0.92), Simple (3.4 us, all
    of it) for large ones; 2.7 / 4.0 / 14 us across InfiniBand (tpu_slices.json, from NCCL's
    tuning.cc). ICI has one protocol: {"Simple": (1, 1)}.
    """
    if not isinstance(link, str) or link not in LINKS:
        raise Error(f"unknown link {link!r}; valid: {', '.join(LINKS)}")
    rec = load("tpu_slices")["links"][link]
    table = rec.get("protocols")
    if not table:
        return {"Simple": (1.0, 1.0)}
    simple = table["Simple"]["latency_seconds_per_step"]
    return {p: (table[p]["latency_seconds_per_step"] / simple, table[p]["bandwidth_factor"]) for p in PROTOCOLS}


def link_efficiency(link: str, chip: "str | Chip | None" = None) -> float:
    """Fraction of a link's rate that collectives reach on it (tpu_slices.json, ``links``)."""
    if not isinstance(link, str) or link not in LINKS:
        raise Error(f"unknown link {link!r}; valid: {', '.join(LINKS)}")
    if chip is not None:
        _chip(chip)
    eff = load("tpu_slices")["links"][link]["bandwidth_efficiency"]
    if isinstance(eff, dict):
        name = _chip(chip).name if chip is not None else None
        if name not in eff:
            raise Error(f"no {link} efficiency for {name!r}; known: {', '.join(eff)}")
        return float(eff[name])
    return float(eff)


def _default_efficiency(link: str, one_way_bytes_per_s: float) -> float:
    """A link's efficiency when no chip is named: NVLink's by the GPU whose egress matches."""
    eff = load("tpu_slices")["links"][link]["bandwidth_efficiency"] if link in LINKS else 1.0
    if not isinstance(eff, dict):
        return float(eff)
    for name, value in eff.items():
        if _chip(name).ici_one_way_bytes_per_s == one_way_bytes_per_s:
            return float(value)
    return 1.0


def _axis(c: Chip, name: str, size: int, link: str, wraparound: bool, bytes_per_s: float,
          one_way_bytes_per_s: float) -> "Axis":
    return Axis(name=name, size=size, link=link, wraparound=wraparound, bytes_per_s=bytes_per_s,
                one_way_bytes_per_s=one_way_bytes_per_s, latency_seconds=link_latency_seconds(link),
                bandwidth_efficiency=link_efficiency(link, c))


@dataclass(frozen=True)
class Axis(Readable):
    """One named mesh axis of a topology and the link that carries it.

    `bytes_per_s` is the `W` of chapter 3's collective formulas along this axis, per chip: the
    bidirectional ICI figure on a torus axis with a wraparound, the one-way figure without
    one; a GPU's NVLink egress; a chip's share of the InfiniBand/DCN egress.
    `one_way_bytes_per_s` is what one chip sends to one neighbour in one direction.
    """

    name: str
    size: int
    link: str
    wraparound: bool
    bytes_per_s: float
    one_way_bytes_per_s: float
    #: Time of one step of a collective on this network (one ICI hop; one NCCL ring step with the
    #: Simple protocol of large messages, `link_protocols` scales it for LL and LL128); left out,
    #: the link's figure (`link_latency_seconds`).
    latency_seconds: "float | None" = None
    #: Fraction of `bytes_per_s` a collective actually moves (NCCL's usable NVLink rate, 1.0
    #: elsewhere); left out, the link's figure, an NVLink generation known by its GPU egress.
    bandwidth_efficiency: "float | None" = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise Error(f"name must be an axis name such as 'X', got {_show(self.name)}")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or not 1 <= self.size <= MAX_CHIPS:
            raise Error(f"size must be a whole number of chips from 1 to {MAX_CHIPS:,}, got {_show(self.size)}")
        if not isinstance(self.link, str) or self.link not in NETWORK:
            raise Error(f"unknown link {_show(self.link)}; valid: {', '.join(NETWORK)}")
        require_flag("wraparound", self.wraparound)
        require_positive(bytes_per_s=self.bytes_per_s, one_way_bytes_per_s=self.one_way_bytes_per_s)
        if self.latency_seconds is not None:
            require_non_negative(latency_seconds=self.latency_seconds)
        if self.bandwidth_efficiency is not None:
            require_positive(bandwidth_efficiency=self.bandwidth_efficiency)
            if self.bandwidth_efficiency > 1:
                raise Error(f"bandwidth_efficiency is a fraction, at most 1; got {self.bandwidth_efficiency:g}")
        # axes cut from others (strategy placements, deployments) keep their network's figures
        if self.latency_seconds is None:
            object.__setattr__(self, "latency_seconds", link_latency_seconds(self.link))
        if self.bandwidth_efficiency is None:
            object.__setattr__(self, "bandwidth_efficiency", _default_efficiency(self.link, self.one_way_bytes_per_s))

    @property
    def network(self) -> str:
        """'ici', 'nvlink' or 'dcn' (InfiniBand counts as the data-center network)."""
        return NETWORK[self.link]

    def __repr__(self) -> str:
        wrap = ", wraparound" if self.wraparound else ""
        return f"Axis({self.name}={self.size}, {self.link}{wrap}, {units.format_quantity(self.bytes_per_s, 'B/s')})"


@dataclass(frozen=True)
class Topology(Readable):
    """Chips joined along named axes; see the module docstring for what each link means."""

    chip: Chip
    kind: str  # 'torus', 'multislice', 'nvlink', 'cluster'
    axes: tuple[Axis, ...]
    hop_latency_seconds: float

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    @property
    def axis_sizes(self) -> dict[str, int]:
        """Mesh axis name -> number of chips along it, e.g. {'X': 8, 'Y': 16}."""
        return {a.name: a.size for a in self.axes}

    @property
    def wraparound(self) -> dict[str, bool]:
        """Mesh axis name -> whether the ring along it closes (only ICI axes can)."""
        return {a.name: a.wraparound for a in self.axes}

    @property
    def shape(self) -> str:
        """Axis sizes joined by 'x', e.g. '8x16'."""
        return "x".join(str(a.size) for a in self.axes)

    @property
    def num_chips(self) -> int:
        return math.prod(a.size for a in self.axes)

    @property
    def num_hosts(self) -> int:
        """Hosts (CPU machines) driving the chips: ceil(chips / chips per host)."""
        return math.ceil(self.num_chips / self.chip.chips_per_host)

    def axis(self, name: str) -> Axis:
        """The axis called `name`; raises `Error` naming the valid ones."""
        for a in self.axes:
            if a.name == name:
                return a
        raise Error(f"no mesh axis {name!r} in this {self.shape} {self.kind}; valid: {', '.join(self.names)}")

    def __repr__(self) -> str:
        f = units.format_quantity
        parts = []
        for a in self.axes:
            wrap = " wrap" if a.wraparound else ""
            parts.append(f"{a.name}={a.size} {a.link}{wrap} {f(a.bytes_per_s, 'B/s')}")
        return (f"Topology({self.chip.name} {self.kind} {self.shape}: {self.num_chips} chips, "
                f"{self.num_hosts} hosts; {'; '.join(parts)})")

    def _repr_html_(self) -> str:
        f = units.format_quantity
        head = ("<tr><th>axis</th><th>size</th><th>link</th><th>wraparound</th><th>W per chip</th>"
                "<th>usable share</th><th>latency per step</th></tr>")
        rows = "".join(
            f"<tr><td>{a.name}</td><td>{a.size}</td><td>{a.link}</td><td>{'yes' if a.wraparound else 'no'}</td>"
            f"<td>{f(a.bytes_per_s, 'B/s')}</td><td>{a.bandwidth_efficiency:.0%}</td>"
            f"<td>{f(a.latency_seconds, 's')}</td></tr>" for a in self.axes)
        cap = f"{self.chip.display_name} {self.kind} {self.shape}: {self.num_chips} chips, {self.num_hosts} hosts"
        return f"<table><caption>{cap}</caption>{head}{rows}</table>"


def _parse_shape(shape: "str | Sequence[int]", what: str) -> tuple[int, ...]:
    if isinstance(shape, str):
        tokens = shape.strip().lower().split("x")
        dims = []
        for tok in tokens:
            tok = tok.strip()
            if not (tok.isascii() and tok.isdigit()) or not 1 <= int(tok) <= MAX_CHIPS:
                raise Error(f"bad size {tok!r} in {what} {shape!r}; write positive integers joined by 'x', e.g. '8x16'")
            dims.append(int(tok))
        return tuple(dims)
    try:
        dims = tuple(shape)
    except TypeError:
        raise Error(f"{what} must be a string like '8x16' or a tuple of sizes, got {shape!r}") from None
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= MAX_CHIPS:
            raise Error(f"bad size {_show(d)} in {what} {_show(shape)}; sizes are positive integers")
    if not dims:
        raise Error(f"{what} needs at least one size, e.g. '8x16'")
    return dims


def _names(names: "Sequence[str] | None", n: int, default: Sequence[str]) -> tuple[str, ...]:
    if names is None:
        return tuple(default[:n])
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
        raise Error(f"names must be a list of axis names such as ['X', 'Y'], got {names!r}")
    names = tuple(names)
    if len(names) != n or len(set(names)) != n or not all(isinstance(x, str) and x.isidentifier() for x in names):
        raise Error(f"need {n} distinct axis names (identifiers) for a {n}-axis topology, got {names!r}")
    return names


def _tpu_chip(chip: "str | Chip") -> Chip:
    c = _chip(chip)
    if not c.is_tpu:
        raise Error(f"{c.name} is a GPU: use topology.gpu_node or topology.gpu_cluster; slices are for TPUs "
                    f"(tpu-v4p, tpu-v5e, tpu-v5p, tpu-v6e, tpu-7x)")
    return c


def _table(c: Chip) -> dict:
    t = load("tpu_slices")["slices"].get(c.name)
    if t is None:  # pragma: no cover - every TPU in the spec table has a row
        raise Error(f"no published slice shapes for {c.name}")
    return t


def _key(dims: Sequence[int], n: int) -> tuple[int, ...]:
    """Sides sorted, padded with 1s to `n` dimensions: the shape regardless of axis order."""
    return tuple(sorted(tuple(dims) + (1,) * (n - len(dims))))


@functools.lru_cache(maxsize=None)
def _published(name: str) -> tuple[tuple[int, ...], ...]:
    """Every published slice shape of TPU `name`, sides sorted ascending."""
    c = _chip(name)
    t = _table(c)
    if t["rule"] == "list":
        return tuple(_key(_parse_shape(x, "slice shape"), c.torus_dims) for x in t["shapes"])
    # 'cube' (v4p, v5p, 7x): the listed shapes under one cube, then every shape of whole 4x4x4
    # cubes (all sides multiples of 4) within the pod's sides and the largest slice
    out = [_key(_parse_shape(x, "slice shape"), 3) for x in t["small_shapes"]]
    pod = sorted(_parse_shape(c.pod_topology, "pod"))
    for a in range(4, pod[0] + 1, 4):
        for b in range(a, pod[1] + 1, 4):
            for z in range(b, pod[2] + 1, 4):
                if a * b * z <= t["max_chips"] and (a, b, z) not in out:
                    out.append((a, b, z))
    return tuple(out)


def published_shapes(chip: "str | Chip") -> list[str]:
    """The published slice shapes of a TPU, smallest first (tpu_slices.json, from the Cloud TPU docs)."""
    c = _tpu_chip(chip)
    return ["x".join(map(str, s)) for s in sorted(_published(c.name), key=lambda s: (math.prod(s), s))]


def slice_sizes(chip: "str | Chip") -> list[int]:
    """Chip counts of the published slices of a TPU, ascending."""
    c = _tpu_chip(chip)
    return sorted({math.prod(s) for s in _published(c.name)})


def _near(c: Chip, n: int) -> str:
    shapes = sorted(_published(c.name), key=lambda s: (math.prod(s), s))
    same = [s for s in shapes if math.prod(s) == n]
    if not same:
        below = [s for s in shapes if math.prod(s) < n][-2:]
        above = [s for s in shapes if math.prod(s) > n][:2]
        same = below + above
    return ", ".join("x".join(map(str, s)) for s in same)


def _wraps(c: Chip, dims: tuple[int, ...]) -> tuple[bool, ...]:
    t = _table(c)
    if t["rule"] == "list":  # v5e, v6e: only the 16-long axes of a 16x16 pod or an 8x16 slice
        return tuple(d == t["wrap_axis_length"] for d in dims)
    full_cubes = all(d % 4 == 0 for d in _key(dims, 3))  # v4p, v5p, 7x: whole 4x4x4 cubes
    return tuple(full_cubes and d > 1 for d in dims)


def _ici_axes(c: Chip, dims: tuple[int, ...], axis_names: tuple[str, ...], wraps: tuple[bool, ...]):
    return tuple(
        _axis(c, n, d, "ici", w, c.ici_bidi_bytes_per_s if w else c.ici_one_way_bytes_per_s,
              c.ici_one_way_bytes_per_s)
        for n, d, w in zip(axis_names, dims, wraps))


def slice(chip: "str | Chip", shape: "str | Sequence[int]", *, names: "Sequence[str] | None" = None) -> Topology:
    """A published TPU slice such as `slice("tpu-v5e", "8x16")` or `slice("tpu-v5p", "4x4x8")`.

    Axes are named X, Y, Z in order (or `names`); any order of a published shape's sides is the
    same slice, and sides of 1 may be left out ("2x2" on a v5p is its 2x2x1 host). An axis wraps around
    only where the hardware has the links (module docstring). Raises `Error` for a bad size or a
    shape Google does not offer, listing the published shapes nearest it.
    """
    c = _tpu_chip(chip)
    dims = _parse_shape(shape, "slice shape")
    if len(dims) > c.torus_dims:
        raise Error(f"{c.name} is a {c.torus_dims}D torus; slice {shape!r} has {len(dims)} dimensions; "
                    f"published shapes of that size: {_near(c, math.prod(dims))}")
    if _key(dims, c.torus_dims) not in _published(c.name):
        raise Error(f"{c.name} has no {'x'.join(map(str, dims))} slice (Cloud TPU documentation); published "
                    f"shapes near {math.prod(dims)} chips: {_near(c, math.prod(dims))}")
    axis_names = _names(names, len(dims), _TORUS_NAMES)
    return Topology(chip=c, kind="torus", axes=_ici_axes(c, dims, axis_names, _wraps(c, dims)),
                    hop_latency_seconds=hop_latency_seconds())


def _logical_slice(c: Chip, dims: tuple[int, ...], names: tuple[str, ...]) -> Topology:
    """A logical mesh of `dims` on TPU chips that is not a published slice shape (`for_mesh`).

    Used for simulated meshes (chapters 9-10 run {"X": 8} on CPU devices): each axis is priced as
    a line of ICI links without a wraparound, the conservative case; the chips must fit a pod.
    """
    if len(dims) > c.torus_dims or math.prod(dims) > max(slice_sizes(c)):
        raise Error(f"mesh {'x'.join(map(str, dims))} does not fit one {c.name} slice; published shapes: "
                    f"{_near(c, math.prod(dims))}")
    return Topology(chip=c, kind="torus", axes=_ici_axes(c, dims, names, (False,) * len(dims)),
                    hop_latency_seconds=hop_latency_seconds())


def multislice(chip: "str | Chip", shape: "str | Sequence[int]", *, slices: int,
               names: "Sequence[str] | None" = None) -> Topology:
    """`slices` TPU slices of `shape` joined by the data-center network along an outer axis D.

    Each chip reaches the other slices at its share of its host's NIC, `Chip.dcn_bytes_per_s`
    (6.25 GB/s on v5p: 25 GB/s per host of 4 chips).
    """
    slices = _require_count("slices", slices, maximum=MAX_CHIPS)
    inner = slice(chip, shape)
    axis_names = _names(names, len(inner.axes) + 1, _TORUS_NAMES[:len(inner.axes)] + ("D",))
    c = inner.chip
    if not c.dcn_bytes_per_s:
        raise Error(f"{c.name} has no DCN bandwidth in the spec table")
    axes = tuple(_axis(c, n, a.size, a.link, a.wraparound, a.bytes_per_s, a.one_way_bytes_per_s)
                 for n, a in zip(axis_names, inner.axes))
    dcn = _axis(c, axis_names[-1], slices, "dcn", False, c.dcn_bytes_per_s, c.dcn_bytes_per_s)
    return Topology(chip=c, kind="multislice", axes=axes + (dcn,), hop_latency_seconds=hop_latency_seconds())


def _gpu_chip(chip: "str | Chip") -> Chip:
    c = _chip(chip)
    if c.is_tpu:
        raise Error(f"{c.name} is a TPU: use topology.slice or topology.multislice; NVLink nodes are for GPUs "
                    f"(a100, h100, h200, b200, gb200)")
    return c


def _nvlink_axis(c: Chip, name: str, size: int) -> Axis:
    return _axis(c, name, size, "nvlink", False, c.ici_one_way_bytes_per_s, c.ici_one_way_bytes_per_s)


def gpu_node(chip: "str | Chip", shape: "str | Sequence[int] | None" = None, *,
             names: "Sequence[str] | None" = None) -> Topology:
    """One NVLink domain (8 GPUs; 72 on GB200 NVL72), optionally split into mesh axes ("4x2").

    NVSwitches connect every GPU to every other at its full NVLink egress, so any group of GPUs
    in the domain, along any axes, communicates at `Chip.ici_one_way_bytes_per_s`.
    """
    c = _gpu_chip(chip)
    dims = _parse_shape(shape if shape is not None else str(c.nvlink_domain), "NVLink mesh")
    if math.prod(dims) > c.nvlink_domain:
        raise Error(f"mesh {shape!r} has {math.prod(dims)} GPUs; one {c.name} NVLink domain has {c.nvlink_domain}")
    axis_names = _names(names, len(dims), _TORUS_NAMES)
    return Topology(chip=c, kind="nvlink", axes=tuple(_nvlink_axis(c, n, d) for n, d in zip(axis_names, dims)),
                    hop_latency_seconds=hop_latency_seconds())


def superpod_levels() -> list[dict]:
    """The DGX H100 SuperPod's fat-tree levels (node, leaf, spine), as the book tabulates them."""
    return list(load("hardware_specs")["gpu_networking"]["dgx_h100_superpod_1024"]["levels"])


def gpu_cluster(chip: "str | Chip", *, nodes: int, nodes_per_leaf: "int | None" = None) -> Topology:
    """`nodes` NVLink domains on an InfiniBand fat tree, modelled on the DGX H100 SuperPod.

    Axes: X = GPUs of one node (NVLink); Y = nodes under one leaf (scalable unit, 32 nodes by
    default, from the SuperPod); Z = leaves under the spine, when `nodes` exceeds one leaf. The
    tree has full bisection bandwidth, so each GPU gets node egress / GPUs per node at every
    level (50 GB/s on H100: 400 GB/s per node).
    """
    c = _gpu_chip(chip)
    pod = load("hardware_specs")["gpu_networking"]["dgx_h100_superpod_1024"]
    per_leaf = pod["nodes_per_su"] if nodes_per_leaf is None else nodes_per_leaf
    for label, v in (("nodes", nodes), ("nodes_per_leaf", per_leaf)):
        v = _require_count(label, v, maximum=MAX_CHIPS)
    if nodes > per_leaf and nodes % per_leaf:
        raise Error(f"{nodes} nodes do not fill whole leaves of {per_leaf}; use a multiple of {per_leaf} "
                    f"or at most {per_leaf} nodes")
    ib = c.node_egress_bytes_per_s / c.nvlink_domain
    axes = [_nvlink_axis(c, "X", c.nvlink_domain)]
    axes.append(_axis(c, "Y", min(nodes, per_leaf), "infiniband", False, ib, ib))
    if nodes > per_leaf:
        axes.append(_axis(c, "Z", nodes // per_leaf, "infiniband", False, ib, ib))
    return Topology(chip=c, kind="cluster", axes=tuple(axes), hop_latency_seconds=hop_latency_seconds())


def for_mesh(chip: "str | Chip", mesh: Mapping[str, int]) -> Topology:
    """The natural topology of a logical mesh such as {"X": 4, "Y": 2}.

    TPU: the published slice of those sizes (wraparound where the hardware has it); a mesh that is
    not a published shape (e.g. {"X": 8}, used on simulated devices) is priced as lines of ICI
    links without wraparound (`_logical_slice`). GPU: the last (fastest
    varying) axes fill an NVLink domain, the rest cross InfiniBand; an axis may not straddle a
    node boundary.
    """
    c = _chip(chip)
    if not isinstance(mesh, Mapping) or not mesh:
        raise Error(f"mesh must be a non-empty dict of axis name -> size, e.g. {{'X': 4, 'Y': 2}}; got {mesh!r}")
    names, sizes = tuple(mesh), tuple(mesh.values())
    if c.is_tpu:
        dims = _parse_shape(sizes, "mesh")
        axis_names = _names(names, len(names), names)
        if len(dims) <= c.torus_dims and _key(dims, c.torus_dims) in _published(c.name):
            return slice(c, dims, names=axis_names)
        return _logical_slice(c, dims, axis_names)
    _parse_shape(sizes, "mesh")
    _names(names, len(names), names)
    axes: list[Axis] = []
    inside = 1
    for name, size in reversed(list(mesh.items())):
        if inside * size <= c.nvlink_domain and all(a.link == "nvlink" for a in axes):
            axes.append(_nvlink_axis(c, name, size))
            inside *= size
        else:
            if all(a.link == "nvlink" for a in axes) and inside < c.nvlink_domain:
                raise Error(f"mesh axis {name!r} of size {size} straddles the {c.nvlink_domain}-GPU NVLink domain "
                            f"(the axes after it fill {inside}); make the inner axes fill a whole node")
            ib = c.node_egress_bytes_per_s / c.nvlink_domain
            axes.append(_axis(c, name, size, "infiniband", False, ib, ib))
    return Topology(chip=c, kind="nvlink" if all(a.link == "nvlink" for a in axes) else "cluster",
                    axes=tuple(reversed(axes)), hop_latency_seconds=hop_latency_seconds())


def chips_to_hold(bytes_: float, chip: "str | Chip") -> int:
    """Fewest chips whose HBM together holds `bytes_`: ceil(bytes_ / HBM per chip) (chapter 2)."""
    c = _chip(chip)
    require_positive(bytes_=bytes_)
    return max(1, math.ceil(bytes_ / c.hbm_bytes))


def _best_shape(c: Chip, n: int) -> "tuple[int, ...] | None":
    """The published shape of `n` chips with the most wraparound axes, then the most cube-like."""
    best, best_key = None, None
    for shape in _published(c.name):
        if math.prod(shape) != n:
            continue
        sides = [d for d in shape if d > 1] or [1]
        key = (-sum(_wraps(c, shape)), max(sides) / min(sides), -len(sides))
        if best_key is None or key < best_key:
            best, best_key = shape, key
    if best is None:
        return None
    return tuple(d for d in best if d > 1) or (1,) * (2 if c.torus_dims == 2 else 1)


def for_chips(chip: "str | Chip", chips: int) -> Topology:
    """The usual network for `chips` chips (Chapter 5 uses it when only a chip count is given).

    TPU: one published slice (the one with the most wraparound axes, then the most cube-like)
    when `chips` is a published slice size; otherwise the fewest equal published slices joined
    over DCN (`multislice`), e.g. 512 v5e chips are two 16x16 slices. Fewer chips than the
    smallest slice (1 or 2 of a v4p/v5p/7x host of 4) are part of one host, a line of ICI links. GPU: one NVLink domain when `chips`
    fits in it; otherwise whole domains on a fat tree (`gpu_cluster`, leaves of up to 32 nodes).
    """
    c = _chip(chip)
    chips = _require_count("chips", chips, maximum=MAX_CHIPS)
    if not c.is_tpu:
        if chips <= c.nvlink_domain:
            return gpu_node(c, str(chips))
        if chips % c.nvlink_domain:
            raise Error(f"{chips} {c.name} GPUs do not fill whole {c.nvlink_domain}-GPU NVLink domains; "
                        f"use a multiple of {c.nvlink_domain}")
        nodes = chips // c.nvlink_domain
        per_leaf = max(d for d in range(1, 33) if nodes % d == 0)
        return gpu_cluster(c, nodes=nodes, nodes_per_leaf=per_leaf if nodes > 32 else None)
    sizes = slice_sizes(c)
    if chips < sizes[0] and c.chips_per_host % chips == 0:
        # fewer chips than the smallest slice (1 or 2 chips of a v5p host): part of one host
        return _logical_slice(c, (chips,), _TORUS_NAMES[:1])
    for slices in range(1, chips + 1):
        if chips % slices or chips // slices not in sizes:
            continue
        shape = _best_shape(c, chips // slices)
        return slice(c, shape) if slices == 1 else multislice(c, shape, slices=slices)
    shown = ", ".join(map(str, sizes[:12])) + (f", ... {sizes[-1]}" if len(sizes) > 12 else "")
    raise Error(f"{chips} {c.name} chips are neither a published slice nor equal slices of one; valid counts: "
                f"{shown} chips, or a multiple of one of them (several slices over DCN)")


def _coords(topology: Topology, coords: "Sequence[int] | Mapping[str, int]", what: str) -> tuple[int, ...]:
    if isinstance(coords, Mapping):
        unknown = [k for k in coords if k not in topology.names]
        if unknown:
            raise Error(f"{what} names unknown axes {unknown}; valid: {', '.join(topology.names)}")
        coords = tuple(coords.get(n, 0) for n in topology.names)
    try:
        coords = tuple(coords)
    except TypeError:
        raise Error(f"{what} must be a tuple of coordinates, one per axis ({', '.join(topology.names)}), "
                    f"got {coords!r}") from None
    if len(coords) != len(topology.axes):
        raise Error(f"{what} {coords!r} needs {len(topology.axes)} coordinates, one per axis "
                    f"({', '.join(topology.names)})")
    for c, a in zip(coords, topology.axes):
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < a.size:
            raise Error(f"coordinate {c!r} on axis {a.name} of {what} must be an integer in 0..{a.size - 1}")
    return coords


def hops(topology: Topology, src: "Sequence[int] | Mapping[str, int]",
         dst: "Sequence[int] | Mapping[str, int]") -> int:
    """Fewest link hops from chip `src` to chip `dst` (coordinates per axis, or {axis: coordinate}).

    Chapter 3: on a torus axis of size N the distance is |a - b| without a wraparound and
    min(|a - b|, N - |a - b|) with one; axes add up (dimension-ordered routing). A switched axis
    (NVLink, InfiniBand, DCN) counts 1 hop when the coordinates differ.
    """
    if not isinstance(topology, Topology):
        raise Error(f"topology must be a scalebook.topology.Topology, got {type(topology).__name__}")
    a_, b_ = _coords(topology, src, "src"), _coords(topology, dst, "dst")
    total = 0
    for a, x, y in zip(topology.axes, a_, b_):
        d = abs(x - y)
        if a.network != "ici":
            total += int(d > 0)
        else:
            total += min(d, a.size - d) if a.wraparound else d
    return total


def bisection_bytes_per_s(topology: Topology) -> float:
    """Bandwidth across the narrowest cut that splits a TPU torus into two halves, one direction.

    Chapter 3: cutting across axis a (size N_a > 1) severs N / N_a rings, each crossing the cut
    once without a wraparound and twice with one, every link carrying the one-way ICI bandwidth
    each way; the bisection is the smallest such cut. Both directions together carry twice this.
    Raises `Error` for GPU and multislice topologies (their bisection is the switch tree's).
    """
    if not isinstance(topology, Topology):
        raise Error(f"topology must be a scalebook.topology.Topology, got {type(topology).__name__}")
    if any(a.network != "ici" for a in topology.axes):
        raise Error(f"bisection_bytes_per_s is for one TPU slice (ICI torus); this {topology.kind} has "
                    f"{', '.join(sorted({a.link for a in topology.axes}))} axes")
    n = topology.num_chips
    cuts = [(n // a.size) * (2 if a.wraparound else 1) * a.one_way_bytes_per_s for a in topology.axes if a.size > 1]
    if not cuts:
        raise Error("a single chip has no bisection; use a slice of two or more chips")
    return float(min(cuts))
