"""Accelerator specs: TPU v4p/v5e/v5p/v6e/7x and NVIDIA A100/H100/H200/B200/GB200 (plus the H800).

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
- `pcie_bytes_per_s`: host to HBM, one direction, per chip (GB200: its NVLink-C2C link to Grace).
- `dcn_bytes_per_s`: per-chip share of the data-center network (TPU: host NIC / chips per host;
  GPU: InfiniBand node egress / GPUs per node).

Inside a chip, `microarchitecture(name)` (also `chip(name).micro`) gives the parts: TensorCores,
MXUs and their size, VPU, VMEM (TPU); SMs, tensor cores, CUDA cores, registers, shared memory, L2
and TMEM (GPU). Figures a vendor has not published are None. HBM capacities published in GiB are
stored as GiB x 2**30 bytes. GPU spec sheets quote tensor-core peaks with 2:4 sparsity;
`dense_flops_per_s` converts them (chapter 2b).

TPU v2 and v3 are kept in the data file (`spec_data()["tpu"]`) but are not `Chip`s: each of their
two TensorCores has its own HBM and is a separate device, so a per-chip record would not describe
what a program runs on. v2's figures come from reports of Google's Hot Chips talks and Google's
v2 page (the primary papers were not read); its ICI bandwidth is not stated there and stays None.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ._readable import Readable
from . import units
from ._data import load
from .errors import Error, require_non_negative, require_positive

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
#: Export variants: looked up by `chip()` but not listed by `chips()` (they share a die with a listed chip).
_VARIANT_KEYS = {"h800": "H800"}

#: Structured sparsity of NVIDIA tensor cores: 2 non-zeros kept in every 4 weights.
SPARSITY_PATTERNS = {"2:4": (2, 4)}

# Dtypes a matmul may be computed in when the chip has no peak of its own for that dtype.
_FALLBACK = {"int4": "int8", "fp4": "fp8", "fp8": "bf16", "int8": "bf16", "fp16": "bf16"}


@dataclass(frozen=True)
class Chip(Readable):
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
    def micro(self) -> "Microarchitecture":
        """The parts inside the chip (cores, matrix units, on-chip memories): `microarchitecture`."""
        return microarchitecture(self.name)

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


def _tpu_flops(d: Mapping) -> dict[str, float]:
    flops = {"bf16": d["peak_bf16_flops_per_s"]}
    if "peak_int8_ops_per_s" in d:
        flops["int8"] = d["peak_int8_ops_per_s"]
    if "peak_fp8_flops_per_s" in d:  # TPU7x: native fp8, no published int8
        flops["fp8"] = d["peak_fp8_flops_per_s"]
    return flops


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
        flops_per_s=MappingProxyType(_tpu_flops(d)),
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
        sources=MappingProxyType({"all": _TPU_SOURCE, **d.get("sources", {})}),
        notes=d.get("notes", ""),
    )


def _nvlink_egress(generation: str) -> float:
    for row in load("hardware_specs")["gpu_networking"]["nvlink_generations"]:
        if row["gpu"] == generation:
            return row["gpu_to_gpu_bytes_per_s"]
    raise KeyError(generation)


def _gpu_figures(key: str) -> tuple[dict, dict[str, str], str]:
    """(figures, sources, notes) of one GPU; GB200 and H800 start from the chip they share a die with."""
    gpus = load("hardware_specs")["gpu"]
    sources = {"all": _GPU_SOURCE}
    if key == "GB200 NVL72":
        # A GB200 superchip pairs two Blackwell GPUs with a Grace CPU. The parts (SMs, caches) are
        # B200's; peaks and HBM are the GB200 datasheet's own, per GPU; NVLink and egress the rack's.
        rack = gpus[key]
        d = dict(gpus["B200"])
        d.update(node_gpus=rack["gpus_per_nvlink_domain"], nvlink_gpu_egress_bytes_per_s=rack["gpu_egress_bytes_per_s"],
                 node_egress_ib_bytes_per_s=rack["node_egress_bytes_per_s"],
                 peak_bf16_flops_per_s=rack["gpu_peak_bf16_flops_per_s"],
                 peak_fp8_int8_ops_per_s=rack["gpu_peak_fp8_flops_per_s"],
                 peak_fp4_flops_per_s=rack["gpu_peak_fp4_flops_per_s"],
                 hbm_capacity_bytes=rack["gpu_hbm_capacity_bytes"], hbm_bw_bytes_per_s=rack["gpu_hbm_bw_bytes_per_s"],
                 pcie_bw_bytes_per_s=rack["host_link_bytes_per_s"])
        sources["SMs and caches"] = f"B200 figures ({rack['composition']})"
        sources.update(rack.get("sources", {}))
        return d, sources, rack["notes"]
    if key == "H800":
        v = gpus[key]
        d = dict(gpus[v["base"]])
        d.update(nvlink_gpu_egress_bytes_per_s=v["nvlink_gpu_bw_bytes_per_s"],
                 peak_fp8_int8_ops_per_s=v["peak_fp8_flops_per_s_dense"],
                 peak_bf16_flops_per_s=v["peak_bf16_flops_per_s_dense"])
        d.pop("sources", None)
        sources.update(v.get("sources", {}))
        return d, sources, v["notes"]
    d = gpus[key]
    sources.update(d.get("sources", {}))
    return d, sources, d.get("notes", "")


def _gpu(name: str, key: str) -> Chip:
    d, sources, notes = _gpu_figures(key)
    gpus = load("hardware_specs")["gpu"]
    egress = d.get("nvlink_gpu_egress_bytes_per_s") or d.get("nvlink_gpu_bw_bytes_per_s")
    if egress is None:  # H200: Hopper, the same NVLink 4 as H100
        egress = _nvlink_egress(d["generation"])
        sources["NVLink"] = f"NVLink generation of {d['generation']} GPUs ({BOOK}, Part 12)"
    node_gpus = d.get("node_gpus", 8)
    node_egress = d.get("node_egress_ib_bytes_per_s")
    if node_egress is None:  # H200 HGX nodes: 8 x 400 Gbps NICs as on H100 nodes
        node_egress = gpus["H100"]["node_egress_ib_bytes_per_s"]
        sources["InfiniBand"] = "assumed as for an 8-GPU H100 node (8 x 400 Gbps NICs)"
    flops = {"bf16": d["peak_bf16_flops_per_s"]}
    if "peak_fp8_int8_ops_per_s" in d:
        flops["int8"] = d["peak_fp8_int8_ops_per_s"]
        if d.get("generation") != "Ampere":  # fp8 tensor cores arrived with Hopper
            flops["fp8"] = d["peak_fp8_int8_ops_per_s"]
    if "peak_fp4_flops_per_s" in d:
        flops["fp4"] = d["peak_fp4_flops_per_s"]
    display = {"GB200 NVL72": "GB200 (NVL72)"}.get(key, key)
    return Chip(
        name=name,
        display_name=display,
        vendor="NVIDIA",
        hbm_bytes=d["hbm_capacity_bytes"],
        hbm_bytes_per_s=d["hbm_bw_bytes_per_s"],
        flops_per_s=MappingProxyType(flops),
        ici_one_way_bytes_per_s=egress,
        ici_bidi_bytes_per_s=None,
        pcie_bytes_per_s=d.get("pcie_bw_bytes_per_s"),
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
_VARIANTS: dict[str, Chip] = {}


def _registry() -> dict[str, Chip]:
    if not _CHIPS:
        for name, key in _TPU_KEYS.items():
            _CHIPS[name] = _tpu(name, key)
        for name, key in _GPU_KEYS.items():
            _CHIPS[name] = _gpu(name, key)
        for name, key in _VARIANT_KEYS.items():
            _VARIANTS[name] = _gpu(name, key)
    return _CHIPS


def export_variants() -> list[Chip]:
    """Export variants (the H800: an H100 with cut NVLink), accepted by `chip()` but not in `chips()`."""
    _registry()
    return list(_VARIANTS.values())


def spec_data() -> dict:
    """The vetted hardware figures as published, with their sources: the records behind `chip()`,
    including fields `Chip` does not model (MXU shape, subpartitions per SM, measured L2
    bandwidth, export variants). Chapter 2 and the GPU page quote them. A deep copy: changing it
    changes nothing in the package."""
    return copy.deepcopy(load("hardware_specs"))


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
    if key in _VARIANTS:
        return _VARIANTS[key]
    if key not in registry:
        raise Error(f"unknown chip {name!r}; valid: {', '.join([*registry, *_VARIANTS])}")
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


# --- inside the chip (chapter 2 and chapter 2b) --------------------------------------------------

@dataclass(frozen=True)
class Microarchitecture:
    """The parts of one chip, per core where the vendor counts them that way; None if unpublished.

    A *core* is a TensorCore on a TPU and a streaming multiprocessor (SM) on a GPU; its *matrix
    units* are MXUs (TPU) or tensor cores (GPU). `local_memory_bytes` is the software-managed memory
    next to the matrix units: VMEM for the whole chip on a TPU, shared memory (SMEM, carved out of
    the combined L1) per SM on a GPU. `local_memory_bytes_per_s` is the whole chip's bandwidth to it
    (TPU VMEM; GPU SMEM = SMs x bytes per clock per SM x clock). Chapter 2 (TPUs), chapter 2b (GPUs).
    """

    chip: str
    core_kind: str
    cores_per_chip: int | None
    matrix_units_per_core: int | None
    #: TPU only: side of one square MXU (128 or 256).
    mxu_side: int | None
    #: bf16 dense FLOPs one matrix unit does per clock cycle (2 x side**2 for an MXU).
    matrix_unit_flops_per_cycle: float | None
    clock_hz: float | None
    #: fp32 FLOP/s of the vector units of the whole chip (TPU VPUs; GPU CUDA cores, FMA = 2 FLOPs).
    vector_flops_per_s: float | None
    #: GPU: fp32 CUDA cores of the chip; TPU: VPU ALUs of the chip.
    vector_lanes: int | None
    register_bytes_per_core: float | None
    local_memory_bytes: float | None
    local_memory_bytes_per_s: float | None
    #: GPU only: L2 shared by all SMs.
    l2_bytes: float | None
    #: Blackwell only: tensor memory per SM, where tensor cores keep their accumulators.
    tmem_bytes_per_sm: float | None

    @property
    def matrix_units_per_chip(self) -> int | None:
        """MXUs (TPU) or tensor cores (GPU) of the whole chip: cores x matrix units per core."""
        if self.cores_per_chip is None or self.matrix_units_per_core is None:
            return None
        return self.cores_per_chip * self.matrix_units_per_core

    def peak_from_parts_flops_per_s(self, clock_hz: float | None = None) -> float:
        """bf16 peak rebuilt from the parts: matrix units x FLOPs per cycle x clock (chapter 2).

        `clock_hz` defaults to the published clock; raises `Error` when a part is not published.
        """
        clock = self.clock_hz if clock_hz is None else clock_hz
        units_ = self.matrix_units_per_chip
        if units_ is None or self.matrix_unit_flops_per_cycle is None or clock is None:
            raise Error(f"{self.chip}: the vendor does not publish enough parts (matrix units, FLOPs per cycle "
                        f"and clock) to rebuild its peak; pass clock_hz= if only the clock is missing")
        require_positive(clock_hz=clock)
        return units_ * self.matrix_unit_flops_per_cycle * clock

    def implied_clock_hz(self) -> float:
        """The clock at which the parts reach the datasheet's dense bf16 peak: peak / (units x FLOPs/cycle)."""
        if self.matrix_units_per_chip is None or self.matrix_unit_flops_per_cycle is None:
            raise Error(f"{self.chip}: matrix-unit count or size not published")
        return chip(self.chip).peak_flops_per_s("bf16") / (self.matrix_units_per_chip * self.matrix_unit_flops_per_cycle)


def _tpu_micro(name: str, d: Mapping) -> Microarchitecture:
    side = int(d["mxu_shape"].split("x")[0]) if "mxu_shape" in d else None
    cores = d.get("cores_per_chip")
    vpu = d.get("vpu_flops_per_s_per_core")
    vmem = d.get("vmem_bytes")
    vmem_bw = d["vmem_bw_over_hbm_bw"] * d["hbm_bw_bytes_per_s"] if "vmem_bw_over_hbm_bw" in d else None
    alus = d.get("vpu_alus_per_core")
    return Microarchitecture(
        chip=name, core_kind="TensorCore", cores_per_chip=cores, matrix_units_per_core=d.get("mxus_per_core"),
        mxu_side=side, matrix_unit_flops_per_cycle=2 * side * side if side else None,
        clock_hz=d.get("clock_hz", d.get("mxu_clock_hz")),
        vector_flops_per_s=vpu * cores if vpu and cores else None,
        vector_lanes=alus * cores if alus and cores else None,
        register_bytes_per_core=d.get("vreg_bytes_per_core"),
        local_memory_bytes=vmem, local_memory_bytes_per_s=vmem_bw, l2_bytes=None, tmem_bytes_per_sm=None)


def _gpu_micro(name: str, d: Mapping) -> Microarchitecture:
    clock = d.get("clock_hz") or (d["clock_hz_base_boost"][1] if "clock_hz_base_boost" in d else None)
    smem_bw = d["sms"] * d["smem_bytes_per_cycle_per_sm"] * clock if clock and "smem_bytes_per_cycle_per_sm" in d else None
    vector = d.get("cuda_core_fp32_flops_per_s_fma_boost", d.get("cuda_core_fp32_flops_per_s",
                                                                 d.get("vector_fp32_flops_per_s_fma")))
    return Microarchitecture(
        chip=name, core_kind="SM", cores_per_chip=d["sms"], matrix_units_per_core=d.get("tensor_cores_per_sm"),
        mxu_side=None, matrix_unit_flops_per_cycle=d.get("tc_flops_per_cycle", d.get("tc_flops_per_cycle_est")),
        clock_hz=clock, vector_flops_per_s=vector, vector_lanes=d.get("fp32_cuda_cores"),
        register_bytes_per_core=d.get("register_bytes_per_sm"), local_memory_bytes=d.get("smem_per_sm_bytes"),
        local_memory_bytes_per_s=smem_bw, l2_bytes=d.get("l2_bytes"), tmem_bytes_per_sm=d.get("tmem_per_sm_bytes"))


def microarchitecture(name: "str | Chip") -> Microarchitecture:
    """The parts inside chip `name`: TensorCores, MXUs, VPU, VMEM (TPU); SMs, tensor cores, CUDA
    cores, registers, SMEM, L2, TMEM (GPU). Chapter 2 (TPU) and chapter 2b (GPU).

    GB200 has B200's parts and the H800 the H100's (same dies). Unpublished parts are None.
    """
    c = chip(name)
    data = load("hardware_specs")
    if c.is_tpu:
        return _tpu_micro(c.name, data["tpu"][c.display_name])
    key = {"gb200": "B200", "h800": "H100"}.get(c.name, c.display_name)
    return _gpu_micro(c.name, data["gpu"][key])


def dense_flops_per_s(spec_sheet_flops_per_s: float, *, pattern: str = "2:4") -> float:
    """Dense peak from a spec sheet's sparse tensor-core figure: sparse x kept / group (chapter 2b).

    NVIDIA quotes many tensor-core peaks "with sparsity": with 2:4 structured sparsity the tensor
    core skips the 2 zero weights of every 4, so the quoted figure is twice the dense one, which
    is what a dense matmul can reach. Raises `Error` for an unknown pattern or a negative figure.
    """
    if not isinstance(pattern, str) or pattern not in SPARSITY_PATTERNS:
        raise Error(f"unknown sparsity pattern {pattern!r}; valid: {', '.join(SPARSITY_PATTERNS)}")
    require_non_negative(spec_sheet_flops_per_s=spec_sheet_flops_per_s)
    kept, group = SPARSITY_PATTERNS[pattern]
    return spec_sheet_flops_per_s * kept / group
