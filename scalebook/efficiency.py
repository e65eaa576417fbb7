"""How long one matmul takes on one chip, from its shape (Chapter 5; issue 18, item 5).

A matmul of an (M x K) by a (K x N) matrix, per chip after sharding, in `b`-byte elements:

    t = max(2 M N K / (peak x eff_kernel x q),  b (M K + K N + M N) / HBM bandwidth)

The first term is the arithmetic, the second the bytes the matmul must at least read and write
(a small or skinny matmul is memory-bound). `q` <= 1 is what quantisation wastes:

- tile quantisation: the matrix units work on whole tiles, so M and N are rounded up to the tile
  (tm x tn) and K to tk;
- wave quantisation: the output tiles are dealt to `units` engines that work in waves, and the
  last wave is partly idle: ceil(tiles / units) waves of `units` tiles are paid for.

    q = 2 M N K / (2 x ceil(tiles / units) x units x tm x tn x ceil(K / tk) x tk)

The tiles and engines, per chip kind (figures from `hardware.microarchitecture`):

- TPU: tm = tn = tk = the MXU side (128 on v4, v5e and v5p; 256 on v6e), and the engines are the
  chip's TensorCores (2 with megacore on v4 and v5p, 1 on v5e and v6e). Where the MXU size is not
  published (TPU 7x), no quantisation is charged.
- GPU: a thread-block tile of 256 x 128 output elements, one of the tile shapes cuBLASLt offers
  for large GEMMs (NVIDIA, cuBLASLt `MatmulTile`), taken as the one large bf16 matmuls use; a side
  shorter than the tile gets a smaller tile (the next power of two, at least 16), as the library
  picks smaller tiles for small matrices; K is not rounded (the kernel loops over K, and a short
  last slice costs in proportion); the engines are the streaming multiprocessors (108 on A100,
  132 on H100). The tile choice is an assumption of the model, not a measurement.

`eff_kernel` is the one remaining constant per chip family, fitted on published runs
(`training.default_efficiency`): what a kernel achieves on whole waves of whole tiles.

Where it is used: `scalebook.step` prices each layer's weight matmuls (QKV, output projection,
MLP, experts) with `matmul_seconds` and scales the layer's matmul time by the ratio to the flat
rate (`step._shape_ratio`; the backward pass takes the forward's ratio, attention's matmuls the
flat rate). `eff_kernel` is then `training.default_efficiency`, refitted with
`tools/fit_efficiency.py`. On the published runs (validation rows only) this lowered the median
error from 9.3% to 8.3% (A100 8.6% to 7.3%); it does not explain the small models that run
slower than predicted on H100 (MPT, +25..80%), whose matmuls fill their waves, nor the small
Megatron models on A100 (+36% at 1.7B); those came closer (+9% at 1.7B) once `scalebook.step`
priced their unfused attention as Megatron-LM ran it (the whole T x T square, each score's reads
and writes, the dropout pass). `training.critical_batch_per_chip` solves its threshold
numerically, since compute is no longer linear in the batch.
Everything is vectorised over numpy arrays of M, K and N (the planner prices thousands of
strategies at once).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ._data import load
from ._readable import Readable
from .errors import MAX_NUMBER, MIN_POSITIVE, Error, choose, number, require_positive
from .hardware import Chip, chip as _chip, microarchitecture

__all__ = ["Tiling", "tiling", "quantisation", "matmul_seconds", "ATTENTION_KERNELS", "AttentionRates",
           "attention_flops_per_s", "attention_backward_over_forward"]

#: Output tile of one GPU thread block (cuBLASLt tile shape 256 x 128), in elements.
GPU_TILE = (256, 128)


@dataclass(frozen=True)
class Tiling:
    """How a chip cuts a matmul: an output tile of `tile_m` x `tile_n`, K in steps of `tile_k`,
    tiles dealt to `units` engines in waves. `units` = 0 means no quantisation is charged."""

    chip: str
    tile_m: int
    tile_n: int
    tile_k: int
    units: int
    #: GPU kernels pick a smaller tile for a matrix side shorter than the tile (down to 16).
    shrinks: bool = False


def tiling(chip: "str | Chip") -> Tiling:
    """The tile and engine count of `chip` (module docstring)."""
    return _tiling(_chip(chip).name)


@functools.lru_cache(maxsize=None)
def _tiling(name: str) -> Tiling:
    c = _chip(name)
    micro = microarchitecture(c)
    if c.is_tpu:
        side = micro.mxu_side
        if not side or not micro.cores_per_chip:
            return Tiling(chip=c.name, tile_m=1, tile_n=1, tile_k=1, units=0)
        return Tiling(chip=c.name, tile_m=side, tile_n=side, tile_k=side, units=int(micro.cores_per_chip))
    if not micro.cores_per_chip:
        return Tiling(chip=c.name, tile_m=1, tile_n=1, tile_k=1, units=0)
    return Tiling(chip=c.name, tile_m=GPU_TILE[0], tile_n=GPU_TILE[1], tile_k=1, units=int(micro.cores_per_chip),
                  shrinks=True)


def _positive_array(name: str, value) -> np.ndarray:
    """`value` (a number or an array of them) as a float array; `Error` naming `name` unless every
    entry is a finite number above 0."""
    if isinstance(value, (str, bytes, bool, dict)) or value is None:
        raise Error(f"{name} must be a positive number or an array of them, got {value!r:.60}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise Error(f"{name} must be a positive number or an array of them, got {value!r:.60}") from None
    if arr.dtype == object or not (np.all(np.isfinite(arr)) and np.all(arr > 0)):
        raise Error(f"{name} must be positive and finite, got {value!r:.60}")
    if arr.size == 0 or not (np.all(arr >= MIN_POSITIVE) and np.all(arr <= MAX_NUMBER)):
        raise Error(f"{name} must hold numbers from {MIN_POSITIVE:g} to {MAX_NUMBER:g}, got {value!r:.60}")
    return arr


def _dims(m, k, n):
    return tuple(_positive_array(name, x) for name, x in (("m", m), ("k", k), ("n", n)))


def quantisation(chip: "str | Chip", m, k, n, *, batch=1) -> np.ndarray:
    """q: the useful share of the tile-and-wave work of `batch` (m x k) @ (k x n) matmuls launched
    together, as a batched matmul over attention heads is (module docstring)."""
    m, k, n = _dims(m, k, n)
    batch = _positive_array("batch", batch)
    t = tiling(chip)
    if not t.units:
        return np.ones(np.broadcast(m, k, n).shape)
    # the matmul's larger output side goes along the tile's longer side
    big, small = np.maximum(m, n), np.minimum(m, n)
    tm, tn = float(t.tile_m), float(t.tile_n)
    if t.shrinks:  # the next power of two that holds the side, at least 16, at most the tile
        tm = np.minimum(tm, np.maximum(16.0, 2.0 ** np.ceil(np.log2(big))))
        tn = np.minimum(tn, np.maximum(16.0, 2.0 ** np.ceil(np.log2(small))))
    tiles = batch * np.ceil(big / tm) * np.ceil(small / tn)
    waves = np.ceil(tiles / t.units)
    k_pad = np.ceil(k / t.tile_k) * t.tile_k
    with np.errstate(all="ignore"):
        q = (batch * m * n * k) / (waves * t.units * tm * tn * k_pad)
    if not np.all(np.isfinite(q)):
        raise Error("matmul dimensions m, k, n and batch are too large to price (the work overflows a float)")
    return q


def matmul_seconds(chip: "str | Chip", m, k, n, *, eff_kernel: float, dtype_bytes: float = 2.0,
                   peak_flops_per_s: float | None = None, batch=1) -> np.ndarray:
    """Seconds of `batch` (m x k) @ (k x n) matmuls launched together on one chip: the larger of their
    quantised arithmetic and their HBM traffic (module docstring). `peak_flops_per_s` defaults to
    the chip's bf16 peak; `dtype_bytes` = 0 prices the arithmetic alone (operands that stay on chip,
    as in a fused attention kernel)."""
    c = _chip(chip)
    eff_kernel, dtype_bytes = number("eff_kernel", eff_kernel), number("dtype_bytes", dtype_bytes)
    if not 0 < eff_kernel <= 1:
        raise Error(f"eff_kernel is a fraction of peak in (0, 1], got {eff_kernel!r}")
    if not dtype_bytes >= 0:
        raise Error(f"dtype_bytes must be at least 0 (0: operands never leave on-chip memory), got {dtype_bytes!r}")
    m, k, n = _dims(m, k, n)
    if peak_flops_per_s is not None:
        require_positive(peak_flops_per_s=peak_flops_per_s)
    peak = c.peak_flops_per_s("bf16") if peak_flops_per_s is None else number("peak_flops_per_s", peak_flops_per_s)
    if not peak > 0:
        raise Error(f"peak_flops_per_s must be positive, got {peak!r}")
    batch = _positive_array("batch", batch)
    compute = 2 * batch * m * n * k / (peak * eff_kernel * quantisation(c, m, k, n, batch=batch))
    memory = dtype_bytes * batch * (m * k + k * n + m * n) / c.hbm_bytes_per_s
    return np.maximum(compute, memory)


# --- fused attention kernels -------------------------------------------------------------------

from .strategy import ATTENTION_KERNELS  # noqa: E402  (the choices live with the Strategy field)


@dataclass(frozen=True)
class AttentionRates(Readable):
    """FLOP/s of a fused attention kernel's matmuls (Q K^T, P V and their gradients) on one chip."""

    kernel: str
    chip: str
    forward_flops_per_s: float
    backward_flops_per_s: float


def attention_backward_over_forward() -> float:
    """Matmul FLOPs of a fused attention kernel's backward pass over its forward pass: 2.5.

    The forward pass runs 2 matmuls (Q K^T, P V); the backward pass 5, since it recomputes Q K^T
    from Q and K rather than reading stored scores (Dao 2023, sec. 4.1). Unfused attention, which
    stores the scores, runs 4 backward matmuls: 2.
    """
    return _backward_over_forward()


@functools.lru_cache(maxsize=1)
def _backward_over_forward() -> float:
    return float(load("attention_kernels")["backward_over_forward_flops"]["value"])


def attention_flops_per_s(chip: "str | Chip", kernel: str, *, matmul_flops_per_s: float) -> AttentionRates:
    """How fast `kernel`'s attention matmuls run on `chip`, forward and backward (Chapter 5).

        forward  = min(matmul rate, FlashAttention-2's best on the chip) x f
        backward = min(matmul rate, FlashAttention-2's best on the chip) x g

    `matmul_flops_per_s` is the rate the step model gives the weight matmuls (peak x the fitted
    efficiency). FlashAttention-2's best (Dao 2023): 230 TFLOP/s on A100 (73% of peak), 335 TFLOP/s
    on H100, where it uses no Hopper instruction (FlashAttention-3's paper, Shah et al. 2024: 35%
    utilisation). f and g compare the kernel with FlashAttention-2: 1 and 1 for FlashAttention-2,
    1/1.4 and 1/2 for FlashAttention in Triton (Dao 2023, sec. 4.1, measured on A100 and assumed
    on H100). 'native' (a kernel written for the chip: FlashAttention-3 or cuDNN on Hopper,
    FlashAttention-2 on Ampere, flash or splash attention on TPUs) runs at the matmul rate both
    ways. Figures are the papers' best cases, so the rates are ceilings. A kernel with no published
    figure for the chip raises `Error`.
    """
    c = _chip(chip)
    choose("attention kernel", kernel, ATTENTION_KERNELS)
    rate = number("matmul_flops_per_s", matmul_flops_per_s)
    require_positive(matmul_flops_per_s=rate)
    spec = load("attention_kernels")["kernels"][kernel]
    ceilings = spec["ceiling_flops_per_s"]
    if kernel != "native" and c.name not in ceilings:
        raise Error(f"attention kernel {kernel!r} has no published speed on {c.name}; it has on "
                    f"{', '.join(sorted(ceilings))}, or use 'native' (the chip's matmul rate)")
    best = min(rate, float(ceilings[c.name])) if c.name in ceilings else rate
    return AttentionRates(kernel=kernel, chip=c.name,
                          forward_flops_per_s=best * float(spec["forward_over_flash_attention_2"]),
                          backward_flops_per_s=best * float(spec["backward_over_flash_attention_2"]))
