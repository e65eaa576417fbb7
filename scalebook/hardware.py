"""Accelerator specs: TPU v4p/v5e/v5p/v6e/7x and NVIDIA A100/H100/H200/B200/GB200.

Every figure comes from `data/hardware_specs.json`, itself gathered from the spec tables of
Austin et al., *How to Scale Your Model* (2025), parts 2 and 12, and the vendors' datasheets;
each `Chip` keeps the source of its figures in `sources`. Chapter 2 of the book prints this
table; nothing else in the package types a hardware number.

How bandwidths are counted (the single most common source of factor-2 slips):

- `hbm_bytes_per_s`: HBM to compute, one chip.
- TPU `ici_one_way_bytes_per_s`: one direction of one ICI link to a neighbour.
- TPU `ici_bidi_bytes_per_s`: both directions of one link, which is what one chip can push out
  along one mesh axis of a ring with wraparound. This is the `W_ici` of the collective formulas
  (AllGather over one axis takes about V / W_ici).
- GPU `ici_one_way_bytes_per_s`: NVLink egress of one GPU in one direction (450 GB/s on H100),
  the `W` of GPU collective formulas (AllGather about V / W). GPUs have no separate bidi figure.
- `pcie_bytes_per_s`: host to HBM, one direction, per chip.
- `dcn_bytes_per_s`: per-chip share of the data-center network (TPU: host NIC / chips per host;
  GPU: InfiniBand node egress / GPUs per node).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from . import units
from ._data import load
from .errors import Error

#: Short citation of where the figures come from; keys match `book/references.bib`.
BOOK = "Austin et al. 2025, How to Scale Your Model"

_TPU_KEYS = {
    "tpu-v4p": "TPU v4p",
    "tpu-v5e": "TPU v5e",
    "tpu-v5p": "TPU v5p",
    "tpu-v6e": "TPU v6e (Trillium)",
    "tpu-7x": "TPU7x (Ironwood)",
}
_GPU_KEYS = {"a100": "A100", "h100": "H100", "h200": "H200", "b200": "B200", "gb200": "GB200 NVL72"}

_TPU_SOURCE = f"{BOOK}, Part 2 (TPUs) spec tables; Google Cloud TPU system architecture docs"
_GPU_SOURCE = f"{BOOK}, Part 12 (GPUs) spec tables; NVIDIA datasheets"

# Dtypes a matmul may be computed in when the chip has no peak of its own for that dtype.
_FALLBACK = {"int4": "int8", "fp4": "fp8", "fp8": "bf16", "int8": "bf16", "fp16": "bf16"}


@dataclass(frozen=True)
class Chip:
    """One accelerator chip (a TPU chip, or one GPU), with the figures the book uses.

    All values are SI floats (bytes, bytes/s, FLOPs/s). `flops_per_s` maps a dtype to the dense
    peak of a matmul computed in that dtype (integer ops counted as FLOPs).
    """

    name: str
    display_name: str
    vendor: str
    hbm_bytes: float
    hbm_bytes_per_s: float
    flops_per_s: Mapping[str, float]
    ici_one_way_bytes_per_s: float
    ici_bidi_bytes_per_s: float | None
    pcie_bytes_per_s: float | None
    dcn_bytes_per_s: float | None
    #: TPU: dimensions of the torus (2 or 3). GPU: 0 (a switched NVLink domain, not a torus).
    torus_dims: int
    #: TPU: largest slice, e.g. '16x16'. GPU: GPUs in one NVLink domain, e.g. '8'.
    pod_topology: str
    chips_per_host: int
    #: GPUs joined by NVLink/NVSwitch (8 for HGX nodes, 72 for GB200 NVL72); 0 for TPUs.
    nvlink_domain: int
    #: GPU: InfiniBand egress of one NVLink domain (bytes/s, one direction); None for TPUs.
    node_egress_bytes_per_s: float | None
    #: Matrix units: e.g. '4 MXUs of 128x128' (TPU) or '132 SMs' (GPU).
    matrix_units: str
    sources: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""

    @property
    def is_tpu(self) -> bool:
        return self.vendor == "Google"

    @property
    def collective_bytes_per_s(self) -> float:
        """The `W` of one-axis collective formulas: TPU bidi ICI per axis, GPU NVLink egress."""
        return self.ici_bidi_bytes_per_s if self.is_tpu else self.ici_one_way_bytes_per_s

    def peak_flops_per_s(self, dtype: str = "bf16") -> float:
        """Dense matmul peak in `dtype`; raises `Error` if the spec table has none for it."""
        dtype = units.canonical_dtype(dtype)
        if dtype not in self.flops_per_s:
            raise Error(
                f"{self.name} has no {dtype} matmul peak in the spec table; "
                f"valid: {', '.join(self.flops_per_s)}"
            )
        return self.flops_per_s[dtype]

    def compute_dtype(self, dtype: str) -> str:
        """The dtype a matmul in `dtype` actually runs in on this chip.

        A dtype the chip has no faster path for is computed in the next wider one
        (int4 -> int8 -> bf16, fp8 -> bf16), as XLA does by upcasting before the matmul.
        """
        dtype = units.canonical_dtype(dtype)
        while dtype not in self.flops_per_s:
            if dtype not in _FALLBACK:
                raise Error(
                    f"{self.name} cannot compute a matmul in {dtype}; valid: {', '.join(self.flops_per_s)}"
                )
            dtype = _FALLBACK[dtype]
        return dtype

    def __repr__(self) -> str:
        f = units.format_quantity
        return (
            f"Chip({self.name}: {f(self.peak_flops_per_s('bf16'), 'FLOP/s')} bf16, "
            f"HBM {f(self.hbm_bytes, 'B')} at {f(self.hbm_bytes_per_s, 'B/s')}, "
            f"{'ICI' if self.is_tpu else 'NVLink'} {f(self.collective_bytes_per_s, 'B/s')})"
        )

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in spec_row(self).items())
        return f"<table><tbody>{rows}</tbody></table>"


def _tpu(name: str, key: str) -> Chip:
    d = load("hardware_specs")["tpu"][key]
    cores = d.get("cores_per_chip", 1)
    mxus = d.get("mxus_per_core")
    matrix = (
        f"{cores * mxus} MXUs of {d['mxu_shape']}" if mxus
        else (f"MXUs of {d['mxu_shape']}" if "mxu_shape" in d else "MXUs (size not published)")
    )
    return Chip(
        name=name,
        display_name=key,
        vendor="Google",
        hbm_bytes=d["hbm_capacity_bytes"],
        hbm_bytes_per_s=d["hbm_bw_bytes_per_s"],
        flops_per_s=MappingProxyType({"bf16": d["peak_bf16_flops_per_s"], "int8": d["peak_int8_ops_per_s"]}),
        ici_one_way_bytes_per_s=d["ici_bw_one_way_per_link_bytes_per_s"],
        ici_bidi_bytes_per_s=d["ici_bw_bidi_per_link_bytes_per_s"],
        pcie_bytes_per_s=d.get("pcie_bw_bytes_per_s"),
        dcn_bytes_per_s=d.get("dcn_bw_per_chip_bytes_per_s"),
        torus_dims=d.get("torus_dims", 3 if d["pod_topology"].count("x") == 2 else 2),
        pod_topology=d["pod_topology"],
        chips_per_host=d["chips_per_host"],
        nvlink_domain=0,
        node_egress_bytes_per_s=None,
        matrix_units=matrix,
        sources=MappingProxyType({"all": _TPU_SOURCE}),
        notes=d.get("notes", ""),
    )


def _nvlink_egress(generation: str) -> float:
    for row in load("hardware_specs")["gpu_networking"]["nvlink_generations"]:
        if row["gpu"] == generation:
            return row["gpu_to_gpu_bytes_per_s"]
    raise KeyError(generation)


def _gpu(name: str, key: str) -> Chip:
    data = load("hardware_specs")
    gpus = data["gpu"]
    sources = {"all": _GPU_SOURCE}
    notes = gpus[key].get("notes", "")
    if key == "GB200 NVL72":
        # A GB200 superchip pairs two B200 GPUs with a Grace CPU: per-GPU figures are B200's,
        # the NVLink domain and its egress are the NVL72 rack's.
        rack = gpus[key]
        d = dict(gpus["B200"])
        d.update(node_gpus=rack["gpus_per_nvlink_domain"], nvlink_gpu_egress_bytes_per_s=rack["gpu_egress_bytes_per_s"],
                 node_egress_ib_bytes_per_s=rack["node_egress_bytes_per_s"])
        sources["compute and HBM"] = f"B200 figures ({rack['composition']})"
        notes = rack["notes"]
    else:
        d = gpus[key]
    egress = d.get("nvlink_gpu_egress_bytes_per_s") or d.get("nvlink_gpu_bw_bytes_per_s")
    if egress is None:  # H200: Hopper, the same NVLink 4 as H100
        egress = _nvlink_egress(d["generation"])
        sources["NVLink"] = f"NVLink generation of {d['generation']} GPUs ({BOOK}, Part 12)"
    node_gpus = d.get("node_gpus", 8)
    node_egress = d.get("node_egress_ib_bytes_per_s")
    if node_egress is None:  # H200 and A100 HGX nodes: 8 x 400 Gbps NICs as on H100 nodes
        node_egress = gpus["H100"]["node_egress_ib_bytes_per_s"]
        sources["InfiniBand"] = "assumed as for an 8-GPU H100 node (8 x 400 Gbps NICs)"
    flops = {"bf16": d["peak_bf16_flops_per_s"]}
    if "peak_fp8_int8_ops_per_s" in d:
        flops["int8"] = d["peak_fp8_int8_ops_per_s"]
        if d.get("generation") != "Ampere":  # fp8 tensor cores arrived with Hopper
            flops["fp8"] = d["peak_fp8_int8_ops_per_s"]
    if "peak_fp4_flops_per_s" in d:
        flops["fp4"] = d["peak_fp4_flops_per_s"]
    return Chip(
        name=name,
        display_name=key if key != "GB200 NVL72" else "GB200 (NVL72)",
        vendor="NVIDIA",
        hbm_bytes=d["hbm_capacity_bytes"],
        hbm_bytes_per_s=d["hbm_bw_bytes_per_s"],
        flops_per_s=MappingProxyType(flops),
        ici_one_way_bytes_per_s=egress,
        ici_bidi_bytes_per_s=None,
        pcie_bytes_per_s=None,
        dcn_bytes_per_s=node_egress / node_gpus,
        torus_dims=0,
        pod_topology=str(node_gpus),
        chips_per_host=node_gpus if node_gpus == 8 else 4,
        nvlink_domain=node_gpus,
        node_egress_bytes_per_s=node_egress,
        matrix_units=f"{d['sms']} SMs with tensor cores",
        sources=MappingProxyType(sources),
        notes=notes,
    )


_CHIPS: dict[str, Chip] = {}


def _registry() -> dict[str, Chip]:
    if not _CHIPS:
        for name, key in _TPU_KEYS.items():
            _CHIPS[name] = _tpu(name, key)
        for name, key in _GPU_KEYS.items():
            _CHIPS[name] = _gpu(name, key)
    return _CHIPS


def chip_names() -> list[str]:
    """Names accepted by `chip()`: 'tpu-v4p', ..., 'h100', ..."""
    return list(_registry())


def chips() -> list[Chip]:
    """Every chip in the spec table, TPUs first."""
    return list(_registry().values())


def _normalize(name: str) -> str:
    n = name.strip().lower().replace(" ", "-").replace("_", "-")
    n = n.replace("tpu7x", "tpu-7x").replace("ironwood", "tpu-7x").replace("trillium", "tpu-v6e")
    if n.startswith("v") or n == "7x":
        n = "tpu-" + n
    if n in ("tpu-v4", "v4"):
        n = "tpu-v4p"
    if n.startswith("nvidia-"):
        n = n[len("nvidia-"):]
    return n


def chip(name: "str | Chip") -> Chip:
    """Look up a chip by name: 'tpu-v5e' (or 'v5e', 'TPU v5e'), 'h100', 'b200', ...

    Raises `Error` listing the valid names when `name` is unknown.
    """
    if isinstance(name, Chip):
        return name
    if not isinstance(name, str):
        raise Error(f"chip must be a name like 'tpu-v5e' or 'h100', got {name!r}")
    registry = _registry()
    key = _normalize(name)
    if key not in registry:
        raise Error(f"unknown chip {name!r}; valid: {', '.join(registry)}")
    return registry[key]


def spec_row(c: Chip) -> dict[str, str]:
    """One chip's figures as formatted strings, for the spec tables of the book and CLI."""
    c = chip(c)
    f = units.format_quantity
    row = {
        "chip": c.display_name,
        "bf16 FLOP/s": f(c.peak_flops_per_s("bf16"), "FLOP/s"),
        "int8/fp8 OP/s": f(c.flops_per_s.get("int8", c.flops_per_s.get("fp8", float("nan"))), "FLOP/s"),
        "HBM": f(c.hbm_bytes, "B"),
        "HBM bandwidth": f(c.hbm_bytes_per_s, "B/s"),
        "chip-to-chip (one way)": f(c.ici_one_way_bytes_per_s, "B/s") + (" per link" if c.is_tpu else " per GPU"),
        "collective W": f(c.collective_bytes_per_s, "B/s") + (" per axis (bidi)" if c.is_tpu else " egress"),
        "domain": (f"{c.pod_topology} torus" if c.is_tpu else f"{c.nvlink_domain}-GPU NVLink"),
        "critical intensity (bf16)": f"{c.peak_flops_per_s('bf16') / c.hbm_bytes_per_s:.0f} FLOP/B",
    }
    return row
