"""The original book's rules of thumb for training (chapters 5 and 6), beside the exact forms.

Austin et al. (2025), part 5 ("How to Parallelize a Transformer for Training"), reasons about one
MLP block: two matmuls of a D x F weight per layer, the forward pass only, every collective in its
large-N form (no (N - 1)/N), and, when FSDP and tensor parallelism share a slice, their two
collectives running at once on different mesh axes, so that the slower one (the max, not the sum)
decides. Write alpha = C / W for the chip's bf16 peak C over the bidirectional bandwidth W of one
ICI axis (2,550 on a TPU v5p), M_X and M_Y for the number of mesh axes FSDP and TP span, and B for
the global batch in tokens on N chips. Then:

- pure FSDP (or DP) is compute-bound when B / N > alpha / M_X (`fsdp_min_batch_per_chip`);
- TP is compute-bound while Y < M_Y F / alpha (`tp_max_degree_mlp`);
- with X-way FSDP by Y-way TP (N = X Y), the two collectives take equal time at
  X_opt = sqrt(B N M_X / (F M_Y)) (`fsdp_tp_best_fsdp_degree`), and the pair is compute-bound
  while B / N > alpha^2 / (M_X M_Y F) (`fsdp_tp_min_batch_per_chip`).

The package's exact forms live in `scalebook.training`: `rule_of_thumb_batch_per_chip` (the same
FSDP rule, with bytes per gradient element), `max_tp_degree` (the whole layer, attention
included, four collectives per layer forward and backward, summed against the whole layer's
compute) and `critical_batch_per_chip` (the step model, which adds the collectives that share a
resource and keeps every (N - 1)/N). Chapter 5 shows both side by side.

The quick estimates of the original's chapter 6 are here too: `training_days` (model FLOPs over
chips x peak x an assumed MFU) and `fewest_chips_by_memory` (the training state over one chip's
HBM: "clusters are for FLOPs, not memory"), and the large-N collective times chapter 5 uses for
DP and FSDP (`dp_allreduce_seconds`, `fsdp_collectives_seconds`).
"""
from __future__ import annotations

import math

from ..errors import MAX_CHIPS, Error, require_count, require_positive
from ..hardware import Chip, chip as _chip
from .. import training as _training

__all__ = ["alpha", "fsdp_min_batch_per_chip", "tp_max_degree_mlp", "fsdp_tp_best_fsdp_degree",
           "fsdp_tp_min_batch_per_chip", "dp_allreduce_seconds", "fsdp_collectives_seconds", "training_days",
           "fewest_chips_by_memory"]


def _axes(name: str, value: object) -> int:
    return require_count(name, value, maximum=8, what="mesh axes")


def alpha(chip: "str | Chip", *, link: str = "ici") -> float:
    """alpha = C / W: the chip's dense bf16 peak over the per-chip bandwidth of `link`, in FLOPs per byte.

    For 'ici' W is one axis in both directions (wraparound), as the original uses it: 2,550 on a
    TPU v5p. `link` as in `training.link_bytes_per_s`.
    """
    c = _chip(chip)
    return c.peak_flops_per_s("bf16") / _training.link_bytes_per_s(c, link)


def fsdp_min_batch_per_chip(chip: "str | Chip", *, fsdp_axes: int = 1, link: str = "ici") -> float:
    """The original's FSDP (and DP) rule: compute-bound while B / N > alpha / M_X tokens per chip.

    Large-N, bf16 gradients. Equals `training.rule_of_thumb_batch_per_chip(chip, link=link) /
    fsdp_axes`; the step model's exact threshold is `training.critical_batch_per_chip`.
    """
    return alpha(chip, link=link) / _axes("fsdp_axes", fsdp_axes)


def tp_max_degree_mlp(chip: "str | Chip", *, d_ff: int, tp_axes: int = 1, link: str = "ici") -> float:
    """The original's tensor-parallel limit, counting the MLP only: Y < M_Y F / alpha.

    Forward pass of one plain MLP (two D x F matmuls, 4 D F FLOPs per token) against an AllGather
    and a ReduceScatter of the D-wide activation (2 x 2 D bytes per token in bf16), large-N.
    The package's exact bound, `training.max_tp_degree`, counts the whole layer (attention and a
    gated MLP's third matmul) and four collectives per layer forward and backward.
    """
    require_count("d_ff", d_ff)
    return _axes("tp_axes", tp_axes) * d_ff / alpha(chip, link=link)


def fsdp_tp_best_fsdp_degree(*, batch_tokens: float, chips: int, d_ff: int, fsdp_axes: int = 2,
                             tp_axes: int = 1) -> float:
    """The original's best FSDP degree under FSDP x TP: X_opt = sqrt(B N M_X / (F M_Y)).

    FSDP's gathers cost F / (Y M_X) and TP's B / (X M_Y) (in the same units of D / W, large-N);
    with N = X Y fixed they are equal, and their max is smallest, at X_opt. The TP degree is
    N / X_opt. A real degree must divide N and the heads; this is the continuous optimum.
    """
    require_positive(batch_tokens=batch_tokens)
    require_count("chips", chips, maximum=MAX_CHIPS)
    require_count("d_ff", d_ff)
    return math.sqrt(batch_tokens * chips * _axes("fsdp_axes", fsdp_axes) / (d_ff * _axes("tp_axes", tp_axes)))


def fsdp_tp_min_batch_per_chip(chip: "str | Chip", *, d_ff: int, fsdp_axes: int = 2, tp_axes: int = 1,
                               link: str = "ici") -> float:
    """The original's FSDP x TP threshold: compute-bound while B / N > alpha^2 / (M_X M_Y F).

    At X_opt the max of the two collective times is sqrt(B F / (N M_X M_Y)) against compute
    B F / (N alpha) (same units); the ratio exceeds 1 above this batch per chip. About 100 tokens
    on a TPU v5p for F near 30,000 with M_X M_Y = 2. It takes the max of the two collectives
    (they run on different axes at once) and the MLP's forward pass only; chapter 5 compares it
    with the step model, which adds what shares a link.
    """
    require_count("d_ff", d_ff)
    return alpha(chip, link=link) ** 2 / (_axes("fsdp_axes", fsdp_axes) * _axes("tp_axes", tp_axes) * d_ff)


def dp_allreduce_seconds(*, params: float, bytes_per_s: float, bytes_per_element: float = 2) -> float:
    """Large-N AllReduce of the gradients, chapter 5's data-parallel traffic: 2 beta P / W.

    The exact ring time keeps (N - 1)/N and a latency per step (`collectives.cost`).
    """
    require_positive(params=params, bytes_per_s=bytes_per_s, bytes_per_element=bytes_per_element)
    return 2 * bytes_per_element * params / bytes_per_s


def fsdp_collectives_seconds(*, params: float, bytes_per_s: float, bytes_per_element: float = 2) -> float:
    """Large-N FSDP traffic of one step, chapter 5: two AllGathers and a ReduceScatter, 3 beta P / W."""
    require_positive(params=params, bytes_per_s=bytes_per_s, bytes_per_element=bytes_per_element)
    return 3 * bytes_per_element * params / bytes_per_s


def training_days(*, model_flops: float, chips: int, chip: "str | Chip", mfu: float = 0.4) -> float:
    """The original's quick estimate of a run's length: model FLOPs / (N x C x MFU), in days.

    `mfu` is an assumption (the original uses 40%); the step model's own MFU comes from
    `training.estimate` or `planner.plan`.
    """
    require_positive(model_flops=model_flops, mfu=mfu)
    require_count("chips", chips, maximum=MAX_CHIPS)
    if mfu > 1:
        raise Error(f"mfu is a fraction of peak, at most 1, got {mfu!r}")
    return model_flops / (chips * _chip(chip).peak_flops_per_s("bf16") * mfu) / 86400


def fewest_chips_by_memory(*, params: float, chip: "str | Chip", bytes_per_param: float = 16) -> int:
    """Fewest chips whose HBM holds the training state: ceil(bytes_per_param x P / HBM).

    16 bytes per parameter: bf16 weights and gradients, fp32 master copy and two Adam moments.
    Activations, gathered layers and workspace come on top, so a real run needs more; the
    original's point is that this count is far below the chips a run needs for its FLOPs.
    """
    require_positive(params=params, bytes_per_param=bytes_per_param)
    return math.ceil(bytes_per_param * params / _chip(chip).hbm_bytes)
