"""Rooflines at every memory level: on-chip (TPU VMEM, GPU shared memory), HBM, and the host link.

Chapter 1's roofline compares a kernel's FLOPs with the bytes it moves through HBM. The same
comparison holds one level in (VMEM on a TPU, SMEM on a GPU: bandwidths tens of times HBM's, so
far lower critical intensities) and one level out (PCIe to the host: a bandwidth hundreds of times
below HBM's, so a host transfer hides only behind thousands of FLOPs per byte). Chapter 2 (TPUs)
and chapter 2b (GPUs).

Levels: 'local' (VMEM on a TPU, the SMEM of all SMs together on a GPU; aliases 'vmem', 'smem'),
'hbm', and 'host' (one direction of the chip's PCIe link; a GB200 GPU's NVLink-C2C to Grace).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import units
from .errors import Error, require_non_negative, require_positive
from .errors import MAX_CHIPS, MAX_COUNT, MAX_TOKENS, require_count as _require_count  # noqa: F401
from .hardware import Chip, chip as _chip

LEVELS = ("local", "hbm", "host")
_ALIASES = {"vmem": "local", "smem": "local", "pcie": "host"}


def _level(c: Chip, level: str) -> str:
    if not isinstance(level, str):
        raise Error(f"level must be one of {', '.join(LEVELS)} (or vmem, smem, pcie), got {level!r}")
    lv = level.strip().lower()
    if lv == "vmem" and not c.is_tpu:
        raise Error(f"{c.name} is a GPU: its on-chip level is 'smem' (or 'local')")
    if lv == "smem" and c.is_tpu:
        raise Error(f"{c.name} is a TPU: its on-chip level is 'vmem' (or 'local')")
    lv = _ALIASES.get(lv, lv)
    if lv not in LEVELS:
        raise Error(f"unknown memory level {level!r}; valid: {', '.join(LEVELS)}, vmem, smem, pcie")
    return lv


def level_bytes_per_s(chip: "str | Chip", level: str) -> float:
    """Bandwidth of one memory level of one chip, bytes/s (one direction for 'host').

    Raises `Error` when the vendor publishes no figure for that level (chapter 2b).
    """
    c = _chip(chip)
    lv = _level(c, level)
    value = {"local": c.micro.local_memory_bytes_per_s, "hbm": c.hbm_bytes_per_s, "host": c.pcie_bytes_per_s}[lv]
    if value is None:
        raise Error(f"{c.name} has no published {level} bandwidth in the spec table")
    return value


def level_capacity_bytes(chip: "str | Chip", level: str) -> float:
    """Capacity of one memory level: VMEM of the chip, or SMEM x SMs, or HBM (chapter 2b)."""
    c = _chip(chip)
    lv = _level(c, level)
    if lv == "host":
        raise Error("host memory is not part of the spec table; valid: local, hbm")
    if lv == "hbm":
        return c.hbm_bytes
    m = c.micro
    if m.local_memory_bytes is None:
        raise Error(f"{c.name} has no published on-chip memory size")
    return m.local_memory_bytes if c.is_tpu else m.local_memory_bytes * m.cores_per_chip


def critical_intensity(chip: "str | Chip", level: str, dtype: str = "bf16") -> float:
    """FLOPs per byte moved through `level` above which the chip is compute-bound: peak / bandwidth.

    For 'host' it is the compute needed per byte copied over PCIe to hide the copy (chapter 2b).
    """
    c = _chip(chip)
    return c.peak_flops_per_s(c.compute_dtype(dtype)) / level_bytes_per_s(c, level)


@dataclass(frozen=True)
class LevelRoofline:
    """Time of a kernel against one memory level: max(compute, transfer), per chip."""

    chip: str
    level: str
    flops: float
    bytes: float
    compute_seconds: float
    transfer_seconds: float

    @property
    def seconds(self) -> float:
        return max(self.compute_seconds, self.transfer_seconds)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_seconds >= self.transfer_seconds else f"{self.level} bandwidth"

    @property
    def intensity_flops_per_byte(self) -> float:
        return self.flops / self.bytes if self.bytes else math.inf


def roofline(chip: "str | Chip", *, flops: float, bytes_: float, level: str, dtype: str = "bf16") -> LevelRoofline:
    """Roofline of `flops` of work moving `bytes_` through memory `level` (chapter 2b).

    compute = flops / peak(dtype); transfer = bytes / bandwidth(level); the kernel takes the larger
    (perfect overlap), and is compute-bound when flops / bytes reaches `critical_intensity`.
    """
    c = _chip(chip)
    require_non_negative(flops=flops, bytes_=bytes_)
    lv = _level(c, level)
    peak = c.peak_flops_per_s(c.compute_dtype(dtype))
    return LevelRoofline(chip=c.name, level=lv, flops=float(flops), bytes=float(bytes_),
                         compute_seconds=flops / peak, transfer_seconds=bytes_ / level_bytes_per_s(c, lv))


def host_transfer_seconds(chip: "str | Chip", bytes_: float, *, chips: int = 1) -> float:
    """Seconds to copy `bytes_` between host memory and HBM, spread over `chips` chips' own links.

    Every chip has its own PCIe link (a GB200 GPU its NVLink-C2C), so the copies run in parallel:
    bytes / (chips x one-way host bandwidth). Chapter 2, worked question 3, and chapter 2b.
    """
    c = _chip(chip)
    require_non_negative(bytes_=bytes_)
    chips = _require_count("chips", chips, maximum=MAX_CHIPS)
    return bytes_ / (chips * level_bytes_per_s(c, "host"))


def output_tile_intensity(tile_m: int, tile_n: int, dtype: str = "bf16") -> float:
    """FLOPs per HBM byte of a matmul computed one (tile_m x tile_n) output tile at a time.

    The tile's accumulator stays in VMEM / SMEM (or TMEM) while the contraction dimension streams
    in: each step of K reads tile_m + tile_n inputs and does 2 tile_m tile_n FLOPs, so the
    intensity is 2 m n / ((m + n) b), tile_m / b for a square tile. No reuse between tiles is
    assumed (an L2 or VMEM hit would raise it). Chapter 2b.
    """
    for name, v in (("tile_m", tile_m), ("tile_n", tile_n)):
        v = _require_count(name, v, maximum=MAX_COUNT)
    return 2 * tile_m * tile_n / ((tile_m + tile_n) * units.dtype_bytes(dtype, "dtype"))


def min_square_tile(chip: "str | Chip", dtype: str = "bf16") -> int:
    """Smallest square output tile whose HBM intensity (tile / b) reaches the HBM critical intensity.

    The tile side T must satisfy T / b >= peak / W_hbm, so T = ceil(b x peak / W_hbm). On a GPU the
    tile is per SM, since every SM streams its own tile from the shared HBM. Chapter 2b.
    """
    c = _chip(chip)
    require_positive(peak=c.peak_flops_per_s(c.compute_dtype(dtype)))
    return math.ceil(units.dtype_bytes(dtype, "dtype") * critical_intensity(c, "hbm", dtype) - 1e-9)
