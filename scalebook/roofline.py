"""Rooflines: how long an operation takes when bounded by compute, memory or communication.

Chapter 1 of the book derives everything here. For an op doing F FLOPs that moves M bytes
between HBM and the compute units and C bytes over a chip-to-chip link:

    T_compute = F / peak FLOPs/s        T_memory = M / HBM bytes/s      T_comm = C / link bytes/s
    lower bound = max(T_compute, T_memory, T_comm)     (perfect overlap)
    upper bound = T_compute + T_memory + T_comm        (no overlap at all)

The op is compute-bound when its arithmetic intensity F / M exceeds the chip's critical
intensity, peak FLOPs/s / HBM bytes/s (about 240 FLOP/B for a TPU v5e in bf16).
"""
from __future__ import annotations

from dataclasses import dataclass

from ._readable import Readable
from . import units
from .errors import Error, choose, require_non_negative, require_positive
from .hardware import Chip, chip as _chip

BOUNDS = ("compute", "memory", "communication")


@dataclass(frozen=True)
class Roofline(Readable):
    """Time estimate of one operation on one chip (seconds), with the bound that wins."""

    flops: float
    hbm_bytes: float
    comm_bytes: float
    compute_seconds: float
    memory_seconds: float
    comm_seconds: float
    peak_flops_per_s: float
    hbm_bytes_per_s: float
    comm_bytes_per_s: float | None

    @property
    def lower_seconds(self) -> float:
        """Time if compute, memory traffic and communication overlap perfectly: their max."""
        return max(self.compute_seconds, self.memory_seconds, self.comm_seconds)

    @property
    def upper_seconds(self) -> float:
        """Time if nothing overlaps: their sum."""
        return self.compute_seconds + self.memory_seconds + self.comm_seconds

    @property
    def bound(self) -> str:
        """'compute', 'memory' or 'communication': whichever time is largest."""
        times = (self.compute_seconds, self.memory_seconds, self.comm_seconds)
        return BOUNDS[times.index(max(times))]

    @property
    def intensity_flops_per_byte(self) -> float:
        """Arithmetic intensity against HBM: FLOPs per byte moved (inf if no bytes move)."""
        return self.flops / self.hbm_bytes if self.hbm_bytes else float("inf")

    @property
    def critical_intensity_flops_per_byte(self) -> float:
        """Peak FLOPs/s over HBM bytes/s: the intensity above which the op is compute-bound."""
        return self.peak_flops_per_s / self.hbm_bytes_per_s

    @property
    def utilization(self) -> float:
        """Fraction of peak FLOPs/s reached at the lower-bound time (1.0 when compute-bound)."""
        return self.compute_seconds / self.lower_seconds if self.lower_seconds else 0.0

    def __repr__(self) -> str:
        f = units.format_quantity
        parts = [f"compute {f(self.compute_seconds, 's')}", f"memory {f(self.memory_seconds, 's')}"]
        if self.comm_bytes:
            parts.append(f"comm {f(self.comm_seconds, 's')}")
        return (
            f"Roofline({self.bound}-bound: {', '.join(parts)}; "
            f"between {f(self.lower_seconds, 's')} and {f(self.upper_seconds, 's')}; "
            f"intensity {units.fmt_number(self.intensity_flops_per_byte)} vs critical "
            f"{units.fmt_number(self.critical_intensity_flops_per_byte)} FLOP/B)"
        )

    def _repr_html_(self) -> str:
        f = units.format_quantity
        rows = [
            ("FLOPs", f(self.flops, "FLOP")), ("HBM bytes", f(self.hbm_bytes, "B")),
            ("compute time", f(self.compute_seconds, "s")), ("memory time", f(self.memory_seconds, "s")),
        ]
        if self.comm_bytes:
            rows += [("comm bytes", f(self.comm_bytes, "B")), ("comm time", f(self.comm_seconds, "s"))]
        rows += [
            ("bound", f"<b>{self.bound}</b>"),
            ("time (overlapped .. serial)", f"{f(self.lower_seconds, 's')} .. {f(self.upper_seconds, 's')}"),
            ("intensity / critical", f"{units.fmt_number(self.intensity_flops_per_byte)} / {units.fmt_number(self.critical_intensity_flops_per_byte)} FLOP/B"),
        ]
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>" for k, v in rows)
        return f"<table>{body}</table>"


def _dtype_or(value, name: str, default: str) -> str:
    """`value` (a dtype name, checked and named `name` in errors), or `default` when it is None."""
    return default if value is None else units.canonical_dtype(value, name)


def arithmetic_intensity(flops: float, bytes_: float) -> float:
    """FLOPs per byte: `flops / bytes_`."""
    require_non_negative(flops=flops)
    require_positive(bytes_=bytes_)
    return flops / bytes_


def critical_intensity(chip: "str | Chip", dtype: str = "bf16", link: str = "hbm") -> float:
    """Peak FLOPs/s over a bandwidth: FLOPs an op must do per byte to be compute-bound.

    `link` is 'hbm' (memory roofline), 'ici' (the one-axis collective bandwidth: TPU bidi ICI,
    GPU NVLink egress), 'ici_one_way' (one direction of one link), 'dcn' or 'pcie'.
    """
    c = _chip(chip)
    return c.peak_flops_per_s(c.compute_dtype(dtype)) / link_bytes_per_s(c, link)


def link_bytes_per_s(chip: "str | Chip", link: str) -> float:
    """Bandwidth of one of a chip's links: 'hbm', 'ici', 'ici_one_way', 'dcn' or 'pcie'.

    'ici' is the `W` of one-axis collectives (TPU: both directions of a link; GPU: NVLink
    egress); 'ici_one_way' is what one chip can send to one neighbour (see `hardware`).
    """
    c = _chip(chip)
    choose("link", link, ("hbm", "ici", "ici_one_way", "dcn", "pcie"))
    links = {
        "hbm": c.hbm_bytes_per_s,
        "ici": c.collective_bytes_per_s,
        "ici_one_way": c.ici_one_way_bytes_per_s,
        "dcn": c.dcn_bytes_per_s,
        "pcie": c.pcie_bytes_per_s,
    }
    if links[link] is None:
        have = ", ".join(k for k, v in links.items() if v is not None)
        raise Error(f"{c.name} has no {link} bandwidth in the spec table; valid: {have}")
    return links[link]


def op(
    chip: "str | Chip",
    *,
    flops: float,
    hbm_bytes: float,
    comm_bytes: float = 0.0,
    dtype: str = "bf16",
    comm_link: str = "ici",
    peak_flops_per_s: float | None = None,
) -> Roofline:
    """Roofline of a generic op: `flops` FLOPs, `hbm_bytes` to and from HBM, `comm_bytes` sent.

    Compute runs at the chip's matrix-unit peak in `dtype`, or at `peak_flops_per_s` when given:
    an op that runs on the vector units (a dot product, an axpy, an elementwise add) is capped by
    their peak, not the matrix unit's (Chapter 1, "Hopelessly memory-bound operations").
    Communication runs at the bandwidth of `comm_link`.
    """
    c = _chip(chip)
    require_non_negative(flops=flops, hbm_bytes=hbm_bytes, comm_bytes=comm_bytes)
    units.canonical_dtype(dtype, "dtype")
    if not isinstance(comm_link, str):
        raise Error(f"comm_link must be a link name such as 'ici', got {type(comm_link).__name__}")
    if flops == 0 and hbm_bytes == 0 and comm_bytes == 0:
        raise Error("an op must do some work: flops, hbm_bytes or comm_bytes must be > 0")
    if peak_flops_per_s is not None:
        require_positive(peak_flops_per_s=peak_flops_per_s)
        peak = float(peak_flops_per_s)
    else:
        peak = c.peak_flops_per_s(c.compute_dtype(dtype))
    comm_bw = link_bytes_per_s(c, comm_link) if comm_bytes else None
    return Roofline(
        flops=float(flops),
        hbm_bytes=float(hbm_bytes),
        comm_bytes=float(comm_bytes),
        compute_seconds=flops / peak,
        memory_seconds=hbm_bytes / c.hbm_bytes_per_s,
        comm_seconds=comm_bytes / comm_bw if comm_bytes else 0.0,
        peak_flops_per_s=peak,
        hbm_bytes_per_s=c.hbm_bytes_per_s,
        comm_bytes_per_s=comm_bw,
    )


def matmul_flops(batch: float, d_model: float, d_ff: float) -> float:
    """FLOPs of `[B, D] x [D, F]`: one multiply and one add per (b, d, f) triple, 2BDF."""
    require_positive(batch=batch, d_model=d_model, d_ff=d_ff)
    return 2.0 * batch * d_model * d_ff


def matmul_bytes(
    batch: float, d_model: float, d_ff: float, *, dtype: str = "bf16",
    weight_dtype: str | None = None, out_dtype: str | None = None,
) -> float:
    """HBM bytes of `[B, D] x [D, F] -> [B, F]`: read both inputs once, write the output once.

    Activations and output in `dtype` (output defaults to `dtype`), weights in `weight_dtype`
    (defaults to `dtype`): B*D*a + D*F*w + B*F*o.
    """
    require_positive(batch=batch, d_model=d_model, d_ff=d_ff)
    a = units.dtype_bytes(dtype, "dtype")
    w = units.dtype_bytes(_dtype_or(weight_dtype, "weight_dtype", dtype))
    o = units.dtype_bytes(_dtype_or(out_dtype, "out_dtype", dtype))
    return batch * d_model * a + d_model * d_ff * w + batch * d_ff * o


def matmul_compute_dtype(chip: "str | Chip", dtype: str = "bf16", weight_dtype: str | None = None) -> str:
    """The dtype the MXU/tensor cores run `[B,D](dtype) x [D,F](weight_dtype)` in.

    Both operands must meet in one dtype: the wider of the two, so int8 or int4 weights next to
    bf16 activations compute in bf16 (the weights are upcast), while int8 x int8 uses the int8 peak.
    Two different dtypes of the same width (int8 x fp8, int4 x fp4) have no common narrow path and
    meet in bf16.
    """
    c = _chip(chip)
    a, w = units.canonical_dtype(dtype, "dtype"), units.canonical_dtype(_dtype_or(weight_dtype, "weight_dtype", dtype))
    if a == w:
        return c.compute_dtype(a)
    if units.dtype_bytes(a) == units.dtype_bytes(w):
        return c.compute_dtype("bf16")
    return c.compute_dtype(a if units.dtype_bytes(a) > units.dtype_bytes(w) else w)


def matmul(
    chip: "str | Chip",
    *,
    batch: float,
    d_model: float,
    d_ff: float,
    dtype: str = "bf16",
    weight_dtype: str | None = None,
    out_dtype: str | None = None,
) -> Roofline:
    """Roofline of `[batch, d_model] x [d_model, d_ff]` on one chip (see `matmul_flops`/`matmul_bytes`).

    For bf16 and batch much smaller than d_model and d_ff the intensity is about `batch`, so the
    matmul is compute-bound once batch exceeds the critical intensity (chapter 1).
    """
    c = _chip(chip)
    return op(
        c,
        flops=matmul_flops(batch, d_model, d_ff),
        hbm_bytes=matmul_bytes(batch, d_model, d_ff, dtype=dtype, weight_dtype=weight_dtype, out_dtype=out_dtype),
        dtype=matmul_compute_dtype(c, dtype, weight_dtype),
    )


def critical_batch(chip: "str | Chip", dtype: str = "bf16", weight_dtype: str | None = None) -> float:
    """Smallest batch B at which `[B,D] x [D,F]` is compute-bound, in the limit D, F >> B.

    Intensity tends to 2B / w (w = bytes per weight), so B* = critical intensity * w / 2:
    bf16 weights give B* = critical intensity; int8 weights in a bf16 matmul half of it.
    """
    c = _chip(chip)
    compute = matmul_compute_dtype(c, dtype, weight_dtype)
    w = units.dtype_bytes(_dtype_or(weight_dtype, "weight_dtype", dtype))
    return c.peak_flops_per_s(compute) / c.hbm_bytes_per_s * w / 2.0


def split_matmul(
    chip: "str | Chip", *, batch: float, d_model: float, d_ff: float, dtype: str = "bf16",
) -> Roofline:
    """Roofline of one chip's share of `[B, D] x [D, F]` split over 2 chips along D (chapter 1).

    Each chip multiplies its halves, 2B(D/2)F FLOPs, then sends its partial sum `[B, F]` to the
    other over one link, both directions busy at once: B F bytes at the one-way link bandwidth.
    Compute over communication is D/2 FLOPs per byte sent, so the split stays compute-bound
    while D > 2 x peak / one-way link bandwidth, whatever B and F are.
    """
    c = _chip(chip)
    require_positive(batch=batch, d_model=d_model, d_ff=d_ff)
    half = d_model / 2
    return op(
        c,
        flops=matmul_flops(batch, half, d_ff),
        hbm_bytes=matmul_bytes(batch, half, d_ff, dtype=dtype),
        comm_bytes=batch * d_ff * units.dtype_bytes(dtype, "dtype"),
        dtype=dtype,
        comm_link="ici_one_way",
    )


def split_matmul_critical_d_model(chip: "str | Chip", dtype: str = "bf16") -> float:
    """Smallest D at which `split_matmul` is compute-bound: D* = b x peak / one-way link bandwidth.

    Compute B D F / peak equals the send B F b / W when D = b peak / W, b = bytes per element
    (2 peak / W in bf16), independent of B and F (chapter 1, "Network rooflines").
    """
    c = _chip(chip)
    return units.dtype_bytes(dtype, "dtype") * c.peak_flops_per_s(c.compute_dtype(dtype)) / c.ici_one_way_bytes_per_s


def tokens_per_expert(batch: float, routed_experts: int, experts_per_token: int) -> float:
    """Tokens one routed expert sees when `batch` tokens each pick `experts_per_token` of
    `routed_experts` experts, spread evenly: B k / E (Chapter 4, "The batch an MoE layer needs")."""
    require_positive(batch=batch, routed_experts=routed_experts, experts_per_token=experts_per_token)
    if experts_per_token > routed_experts:
        raise Error(f"experts_per_token={experts_per_token} exceeds routed_experts={routed_experts}; "
                    "a token picks at most every expert once")
    return batch * experts_per_token / routed_experts


def moe_critical_batch(
    chip: "str | Chip", *, routed_experts: int, experts_per_token: int, dtype: str = "bf16",
    weight_dtype: str | None = None,
) -> float:
    """Tokens per chip at which each routed expert's matmuls are compute-bound (Chapter 4).

    Each expert multiplies only the tokens routed to it, B k / E of them under even routing, and
    its weights are read once for them; so every expert needs `critical_batch` tokens and the
    batch must be B* = critical_batch(chip) x E / k. Shared experts see all B tokens and cross
    over E / k times sooner. Uneven routing raises the batch the coldest expert needs.
    """
    require_positive(routed_experts=routed_experts, experts_per_token=experts_per_token)
    if experts_per_token > routed_experts:
        raise Error(f"experts_per_token={experts_per_token} exceeds routed_experts={routed_experts}; "
                    "a token picks at most every expert once")
    return critical_batch(chip, dtype, weight_dtype) * routed_experts / experts_per_token
