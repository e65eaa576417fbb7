"""The original book's rules of thumb for inference (part 7 of Austin et al., 2025), beside the
forms they round (chapter 7).

Each `*_rule` function is the original's approximation; the function named in its docstring is
the form it approximates, derived in chapter 7 under the same assumptions with nothing dropped.
The rules share one picture of a model-parallel MLP block: two weight matrices $D \\times F$ split
over $Y$ chips, the activations $B \\times D$ gathered before them and reduce-scattered after (an
AllGather and a ReduceScatter, each moving $B D \\beta_a (Y-1)/Y$ bytes per chip over $n$ mesh axes
of bandwidth $W_\\text{ici}$ each). The rules drop the $(Y-1)/Y$ (large $Y$) and assume
$\\beta_w = \\beta_a$ and one axis. Nothing here feeds the step model (`scalebook.inference`),
which prices the collectives with latency and protocols as well; chapter 7 sets the three side
by side.
"""
from __future__ import annotations

import math

from ..errors import require_count, require_positive


def _positive(**kw: float) -> None:
    require_positive(**kw)


def _axes(n_axes: int) -> None:
    require_count("n_axes", n_axes, maximum=8, what="mesh axes the model is split over")


# --- decode, memory-bound: weight reads against the activations' collectives ----------------------

def decode_model_parallel_limit_memory_bound_rule(*, d_ff: float, batch: float, hbm_bytes_per_s: float,
                                                  ici_bytes_per_s: float) -> float:
    """The original's limit on model parallelism in memory-bound decode: $Y < F / (B r)$, with
    $r = W_\\text{hbm} / W_\\text{ici}$ (the original writes it $\\beta$; this book keeps $\\beta$ for bytes
    per element).

    Per chip and MLP block the weight reads take $2DF\\beta/(Y W_\\text{hbm})$ and the two
    collectives of the activations $2BD\\beta/W_\\text{ici}$; the reads hide the collectives while
    $Y < F W_\\text{ici} / (B W_\\text{hbm})$. Large-$Y$ form of
    `decode_model_parallel_limit_memory_bound` (chapter 7).
    """
    _positive(d_ff=d_ff, batch=batch, hbm_bytes_per_s=hbm_bytes_per_s, ici_bytes_per_s=ici_bytes_per_s)
    return d_ff / (batch * hbm_bytes_per_s / ici_bytes_per_s)


def decode_model_parallel_limit_memory_bound(*, d_ff: float, batch: float, hbm_bytes_per_s: float,
                                             ici_bytes_per_s: float, n_axes: int = 1, weight_bytes: float = 2.0,
                                             activation_bytes: float = 2.0, matrices: int = 2) -> float:
    """Largest $Y$ at which an MLP block's weight reads still hide its activation collectives.

    Reads: $m D F \\beta_w / (Y W_\\text{hbm})$ for $m$ matrices; collectives: an AllGather and a
    ReduceScatter of $B D \\beta_a$ bytes, $2 B D \\beta_a (Y-1) / (Y n W_\\text{ici})$ over $n$ axes.
    Equal when $Y - 1 = m n F \\beta_w W_\\text{ici} / (2 B \\beta_a W_\\text{hbm})$. With $m = 2$,
    $n = 1$ and $\\beta_w = \\beta_a$ this is the original's $F/(B r)$ plus one (chapter 7). A gated MLP
    has $m = 3$.
    """
    _positive(d_ff=d_ff, batch=batch, hbm_bytes_per_s=hbm_bytes_per_s, ici_bytes_per_s=ici_bytes_per_s,
              weight_bytes=weight_bytes, activation_bytes=activation_bytes, matrices=matrices)
    _axes(n_axes)
    return 1 + matrices * n_axes * d_ff * weight_bytes * ici_bytes_per_s / (
        2 * batch * activation_bytes * hbm_bytes_per_s)


# --- decode or prefill, compute-bound: matmul FLOPs against the same collectives --------------------

def model_parallel_limit_compute_bound_rule(*, d_ff: float, n_axes: int, flops_per_s: float,
                                            ici_bytes_per_s: float) -> float:
    """The original's limit on model parallelism when the matmuls are compute-bound:
    $Y < n F / \\alpha$, with $\\alpha = C / W_\\text{ici}$ (chapters 5 and 7).

    Per chip, the two matmuls take $4BDF/(Y C)$ and the two collectives $4BD/(n W_\\text{ici})$
    (bf16 activations); $B$ cancels. Large-$Y$ form of `model_parallel_limit_compute_bound`.
    """
    _positive(d_ff=d_ff, flops_per_s=flops_per_s, ici_bytes_per_s=ici_bytes_per_s)
    _axes(n_axes)
    return n_axes * d_ff / (flops_per_s / ici_bytes_per_s)


def model_parallel_limit_compute_bound(*, d_ff: float, n_axes: int, flops_per_s: float,
                                       ici_bytes_per_s: float) -> float:
    """Largest $Y$ at which the matmuls hide the collectives, keeping the $(Y-1)/Y$:
    $4BD(Y-1)/(Y n W) = 4BDF/(YC)$ gives $Y = 1 + n F W / C$ (chapter 7)."""
    return 1 + model_parallel_limit_compute_bound_rule(d_ff=d_ff, n_axes=n_axes, flops_per_s=flops_per_s,
                                                       ici_bytes_per_s=ici_bytes_per_s)


# --- 2D weight-stationary sharding (Pope et al. 2022), the original's appendix B -------------------

def weight_stationary_1d_comm_seconds(*, batch: float, d_model: float, ici_bytes_per_s: float,
                                      n_axes: int = 3) -> float:
    """1D weight-stationary (Megatron) MLP: gather and scatter $B \\times D$ bf16 activations over $n$
    axes, $4BD/(n W_\\text{ici})$ seconds, whatever the chip count (large-$N$ form, chapter 7)."""
    _positive(batch=batch, d_model=d_model, ici_bytes_per_s=ici_bytes_per_s)
    _axes(n_axes)
    return 4 * batch * d_model / (n_axes * ici_bytes_per_s)


def weight_stationary_2d_best_x(*, d_model: float, d_ff: float, chips: float) -> float:
    """The split $X$ of $D$ that minimises 2D weight-stationary traffic, $X = \\sqrt{N D / (2F)}$ (so
    $YZ = N/X$); $\\sqrt{N/8}$ when $F = 4D$, as the original states (chapter 7)."""
    _positive(d_model=d_model, d_ff=d_ff, chips=chips)
    return math.sqrt(chips * d_model / (2 * d_ff))


def weight_stationary_2d_comm_seconds(*, batch: float, d_model: float, d_ff: float, chips: float,
                                      ici_bytes_per_s: float, x: float | None = None) -> float:
    """2D weight-stationary MLP (weights split over $D$ by $X$ and over $F$ by $YZ$, $X \\cdot YZ = N$):
    $2BD/(X W) + 4BF/(YZ W)$ seconds of collectives, bf16 activations, large-$N$. At the best $X$
    this is $(4B/W)\\sqrt{2DF/N}$, falling as $1/\\sqrt{N}$ (Pope et al. 2022; chapter 7)."""
    _positive(batch=batch, d_model=d_model, d_ff=d_ff, chips=chips, ici_bytes_per_s=ici_bytes_per_s)
    x = weight_stationary_2d_best_x(d_model=d_model, d_ff=d_ff, chips=chips) if x is None else x
    _positive(x=x)
    return 2 * batch * d_model / (x * ici_bytes_per_s) + 4 * batch * d_ff / ((chips / x) * ici_bytes_per_s)


def weight_stationary_2d_threshold(*, d_model: float, d_ff: float, n_axes: int = 3) -> float:
    """Chips above which 2D weight-stationary moves less than 1D over $n$ axes:
    $(4B/W)\\sqrt{2DF/N} < 4BD/(nW)$ gives $N > 2 n^2 F / D$ (chapter 7)."""
    _positive(d_model=d_model, d_ff=d_ff)
    _axes(n_axes)
    return 2 * n_axes ** 2 * d_ff / d_model


def weight_stationary_2d_threshold_rule() -> float:
    """The original's threshold for $F = 4D$ and 1D sharding over three axes:
    $N > 128 (3/4)^2 = 72$ chips. (The original prints 81; its own inequality gives 72.)
    `weight_stationary_2d_threshold` is the form for any $F/D$ and axis count."""
    return 128 * (3 / 4) ** 2
