"""Time and memory of one training step, vectorised over many strategies at once (Chapter 5).

`training.estimate` evaluates one strategy with this model and `planner.plan` thousands, so both
give the same numbers. Everything is per chip; the formulas, with tok = microbatch x T / cp tokens
per microbatch on a chip, L_s = ceil(L / pp) layers on a stage and f its share L_s / L:

- compute of one microbatch on one stage: c = (3 F + R) x tok x f / (tp x peak x efficiency)
  x ((1 - a) r + a) plus its memory-bound work (below),
  F the forward matmul FLOPs per token (`transformer.flops_per_token` at T, causal), R the
  recomputed FLOPs per token of the remat policy, a the attention matmuls' share of F (charged
  the flat rate) and r >= 1 the weight matmuls' time priced by shape over their flat time
  (`_shape_ratio`: tile and wave quantisation, HBM-bound small matmuls, `scalebook.efficiency`;
  the backward pass takes the forward pass's r);
- memory-bound (elementwise) work of a microbatch: per token and layer, the forward pass reads and
  writes 10 D elements in its norms and residual adds, 3 F (gated; 2 F plain) in the MLP
  activation and 2 (N + K) H in RoPE; the backward pass twice that, remat once more; at the
  activation dtype through HBM, split over tp (the D-wide part only with sequence parallelism).
  Added to the matmul time: on a GPU these are separate kernels;
- without flash attention (scores materialised, as Megatron-LM's attention of 2021 runs them:
  `SCORE_PASSES`), each of the N T scores per token and layer is read or written 4 times in a
  forward pass (QK^T, softmax, AV) and 7 times in a backward pass, with the forward's count again
  for remat (full, or selective: the attention core), and with dropout (`Strategy.dropout`) a
  dropout pass each way, also memory-bound work; and QK^T and AV
  compute the whole T x T square before the mask, so the attention matmuls take twice their
  causal FLOPs' time (`attention_matmul_factor`);
- TP: (4 + 2 if full remat) AllReduces of tok x D activations per layer over tp (sequence
  parallelism swaps each for an AllGather + ReduceScatter: the same time), plus the vocab-parallel
  embedding and logits: two more of tok x D and three of tok fp32 softmax statistics;
- FSDP: per microbatch and layer, the layer's weights AllGathered twice (forward, backward; once
  when `reshard_after_forward` is off and the gathered weights are kept for the backward pass)
  and their gradients ReduceScattered once over fsdp (experts over the fsdp axes outside ep); the
  embedding, unembedding and final norm gathered once and scattered once;
- DP: gradients of the chip's shard AllReduced once per step over dp and cp;
- PP: each microbatch's activations sent forward and their gradients back, once per virtual
  stage; the bubble adds (pp - 1) / virtual_stages microbatch slots;
- EP: (4 + 2 if full remat) AllToAlls per MoE layer of the k routed copies of each token;
- what an MoE layer costs beyond its expert matmuls, as Megatron-Core's alltoall token dispatcher
  runs it (`MoEAlltoAllTokenDispatcher`: permute, AllToAll, sort the received chunks by local
  expert when a chip holds more than one, the experts, sort back, AllToAll, unpermute; bib key
  megatroncore2025dispatcher): the router's (tok / tp x D) @ (D x E) logits, priced by shape with
  the weight matmuls; its softmax and top-k, 2 E elements per token (E logits read, E
  probabilities written), counted with the elementwise passes; and the copies, each reading and
  writing the k D elements of a token's routed copies: permute and unpermute, plus the two chunk
  sorts when E / ep > 1, so 4 k D or 8 k D elements per token per MoE layer in a pass, once
  forward and once backward (the gradients go through the reverse copies), once more with full
  remat, on tok / tp tokens per chip at the activation dtype through HBM. The routed tokens are
  taken as split evenly over the experts (no capacity factor, no imbalance: the published MoE
  runs force-balance their routing) and each local expert's grouped-GEMM matmul is priced at its
  own ep tok k / E rows (`_shape_ratio`). The unpermute's weighted sum writes D, not k D,
  elements per token: counted as a full copy, an overcount of (k - 1) D per pass;
- CP: (cp - 1) ring steps of the local keys and values per layer forward (twice that backward,
  once more with full remat);
- the optimizer update streams the chip's weights, gradients and Adam state through HBM once.

Overlap, by resource. The compute stream and each network are resources: the ICI (one
resource per chip: its links are driven together and a collective over several axes uses them
all, so TP on one axis and FSDP on another compete), NVLink, and the data-center network
(InfiniBand between GPU nodes, DCN between TPU slices). A group that spans several networks is
charged to its outermost one only (a simplification: its inner stage occupies the inner network
too). What is exposed follows from the dependencies, per microbatch:

- TP is on the critical path; with `tp_overlap` it runs under the matmuls it is fused with, the
  excess over them exposed, and each second of hidden traffic costs `tp_overlap_slowdown`
  seconds of compute (Calculon's processor usage of a network, Isaev et al. 2023). Overlap is
  granted only where the TP group stays on ICI or NVLink: a group that reaches InfiniBand or DCN
  keeps TP on the critical path (an assumption: the decomposed collective's many small
  transfers are cheap only on the fast network);
- FSDP, per layer: the next layer's gather during this layer's forward compute, and in the
  backward pass a gather and the previous layer's reduce-scatter during this layer's backward
  compute; other hidden traffic on the same network (overlapped TP, CP) takes its share of each
  window; the excess is exposed in every layer, and the first gather (layer 0 and the
  embedding tables) is always exposed. Where the strategy's `backward_prefetch` is off
  (PyTorch FSDP's BACKWARD_POST, Composer's default), a backward gather starts only after the
  layer's gradients are computed and is exposed whole in every layer (`fsdp_backward_exposed`). At small batch per chip each layer's gather is
  latency- and bandwidth-bound against little compute, and the exposure grows with the layers;
- CP, per ring step: the step's key/value chunk hides behind the attention of one chunk, 1/cp
  of the chip's causal attention FLOPs (load-balanced chunks);
- EP's AllToAlls and PP's sends are on the critical path;
- DP's AllReduce starts with the last microbatch's backward pass and shares its network with
  whatever that pass sends there; what does not fit in the pass is exposed.

step = (microbatches + bubble) x (c + exposed TP, EP, PP, FSDP, CP) + exposed DP + optimizer,
and never less than any network's busy time (the sum of every collective on it in the step):
where the windows hid more than a network can carry, the excess is charged to its busiest user.

Collectives are priced exactly as `collectives.cost` prices them (tested to agree), including
NCCL's flat ring for AllGather and ReduceScatter over GPUs in several nodes (N - 1 steps, nodes
- 1 of them over InfiniBand).

ZeRO-3 at small batch, what stays unexplained: Narayanan et al. (2021, Table 2) measured DeepSpeed
ZeRO-3 on 175B at a fixed 1,536-sequence batch fall from 144 to 88 to 44 TFLOP/s per A100 on
384, 768 and 1,536 GPUs: the step stays near 67 s from 768 to 1,536 GPUs while the compute per
GPU halves. With NCCL's ring latency (3.3 ms per gather over 1,536 GPUs, with LL128) and one
collective per layer per pass, this model's FSDP traffic is about 7 s per step, hidden behind
14 s of compute, so it predicts about 14 s (+375%). Physically there is more: DeepSpeed's ZeRO-3
of that time issued one AllGather per parameter tensor and synchronised the device before each
(`_allgather_param`, deepspeed/runtime/zero/partition_parameters.py, version 0.3.16 of April
2021; bib key deepspeed), keeping tensors under its `param_persistence_threshold` of 10⁵
elements whole (four gathered matrices per GPT layer). Even with all of that exposed (4 matrices
x 96 layers x 3 collectives: 9.3 s) the step would be about 23 s, not 67 s: the rest of the fall
is not explained by latency or bandwidth the model can source, and the model does not reproduce
it. The prefetch settings of that version do not change this (constants.py and stage3.py at
v0.3.16): the prefetch bucket defaults to 5 × 10⁷ elements and a new prefetch starts only when no
gather is in flight, so one matrix at a time (each of a 175B layer's four holds 1.5 × 10⁸ to 6 × 10⁸
elements) is fetched while the previous one computes; `stage3_max_live_parameters` defaults to
10⁹ elements, about half of a 1.8 × 10⁹-parameter layer. Overlap one matrix ahead instead of one
layer ahead hides about as much, since a matrix's gather and its compute both scale with its size.
Each gradient is ReduceScattered per parameter tensor too (`_reduce_scatter_gradient`), which the
count of 3 collectives per matrix above already includes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from . import transformer as tr
from .errors import model as _as_model
from .errors import require_flag as _require_flag
from .errors import MAX_TOKENS, Error as _Error, _show, require_count as _require_count
from .errors import require_non_negative, require_positive
from . import units
from .models import Transformer
from .strategy import REMAT, Placement
from .topology import PROTOCOLS, Topology, link_protocols

POLICIES = tuple(REMAT)  # index order of the `remat` array
NETWORKS = ("ici", "nvlink", "dcn")  # the resources a collective occupies, by index
SCHEDULE_INDEX = {"1f1b": 0, "gpipe": 1, "interleaved": 2}
#: Reads and writes of each element of the T x T attention scores, per pass, where attention is
#: not fused (no flash attention): Megatron-LM's `ParallelAttention` of 2021 runs QK^T as one
#: batched matmul (torch.baddbmm) into a scores buffer, a fused scale-mask-softmax, dropout, and AV
#: as a second batched matmul (bib key megatronlm2021attention; Calculon lists the same
#: operations, isaev2023calculon). Forward: QK^T
#: writes S, the softmax reads S and writes P, AV reads P: 4. Backward: AV's input gradient writes
#: dP and its weight-side gradient reads P, the softmax's backward reads P and dP and writes dS,
#: and QK^T's two gradients (dQ, dK) each read dS: 7. With dropout on the probabilities
#: (`Strategy.dropout`), its kernel reads P and writes the dropped P' and a 1-byte mask forward, and
#: reads the gradient and the mask and writes dP backward: 2 elements and 1 byte each way (counted
#: in `score_elements`). The residual stream's dropout is fused with its bias and add in Megatron
#: (its mask bytes are left out).
SCORE_PASSES = {"forward": 4.0, "backward": 7.0, "dropout": 2.0}


def score_elements(*, remat_forwards: int, dropout: bool, dtype_bytes: float) -> float:
    """Score elements read or written per score, per step, where attention is unfused (`SCORE_PASSES`).

    A forward pass, a backward pass and `remat_forwards` recomputed forward passes (1 for full
    or selective remat, else 0); with `dropout`, each pass adds 2 elements and a 1-byte mask,
    1 / `dtype_bytes` of an element:

        (4 + d) (1 + remat_forwards) + 7 + d,   d = 2 + 1 / dtype_bytes with dropout, else 0
    """
    _require_count("remat_forwards", remat_forwards, minimum=0, maximum=1)
    _require_flag("dropout", dropout)
    require_positive(dtype_bytes=dtype_bytes)
    return float(_score_elements(remat_forwards, dropout, float(dtype_bytes)))


def _score_elements(remat_forwards, dropout: bool, dtype_bytes: float):
    drop = (SCORE_PASSES["dropout"] + 1.0 / dtype_bytes) if dropout else 0.0
    return (SCORE_PASSES["forward"] + drop) * (1 + np.asarray(remat_forwards, dtype=float)) \
        + SCORE_PASSES["backward"] + drop


def fsdp_backward_exposed(*, gather_seconds: float, scatter_seconds: float, compute_seconds: float,
                          prefetch: bool) -> float:
    """Seconds of one layer's FSDP traffic that its backward pass cannot hide.

    In the backward pass each layer needs the next layer's weights gathered (`gather_seconds`;
    zero when the weights were kept from the forward pass) and sends its own gradients'
    ReduceScatter (`scatter_seconds`, with any other traffic sharing the window). All collectives
    of a GPU run one after another on NCCL's stream (PyTorch's `BackwardPrefetch` docstring,
    torch/distributed/fsdp/api.py; bib key pytorch2023fsdpprefetch). Where `prefetch` is true
    (PyTorch FSDP's BACKWARD_PRE; DeepSpeed and XLA prefetch the same way) the gather is issued
    before the layer's gradient computation, so both hide behind it:

        exposed = max(0, gather + scatter - compute)

    Where it is false (BACKWARD_POST, the default of MosaicML's Composer, bib key
    mosaicml2023composer), the next gather is issued after the gradient computation and the next
    layer waits for it; only the ReduceScatter runs under the next layer's compute:

        exposed = gather + max(0, scatter - compute)
    """
    require_non_negative(gather_seconds=gather_seconds, scatter_seconds=scatter_seconds,
                         compute_seconds=compute_seconds)
    _require_flag("prefetch", prefetch)
    return float(_fsdp_backward_exposed(float(gather_seconds), float(scatter_seconds), float(compute_seconds),
                                        1.0 if prefetch else 0.0))


def _fsdp_backward_exposed(gather_seconds, scatter_seconds, compute_seconds, prefetch):
    """`fsdp_backward_exposed` on arrays (pre-validated; `prefetch` as 0/1)."""
    pre = np.asarray(prefetch, dtype=float)
    return np.where(pre > 0, np.maximum(0.0, gather_seconds + scatter_seconds - compute_seconds),
                    gather_seconds + np.maximum(0.0, scatter_seconds - compute_seconds))


def attention_matmul_factor(flash_attention: bool) -> float:
    """Hardware FLOPs of the attention matmuls (QK^T, AV) over their causal count.

    A fused (flash) kernel skips the masked blocks above the diagonal, so it does the causal
    FLOPs: 1. Without it, QK^T and AV are batched matmuls over the whole T x T square and the
    mask is applied in the softmax afterwards (Megatron-LM's `ParallelAttention`, bib key
    megatronlm2021attention), so they do the
    square's FLOPs, twice the causal ones: 2 (large-T limit; the causal count keeps the
    diagonal, T (T + 1) / 2 of T^2, and is taken as T^2 / 2, chapter 4). Only the time takes the
    factor: the step's `hardware_flops` (and so HFU) keep the causal count of chapter 4.
    """
    _require_flag("flash_attention", flash_attention)
    return 1.0 if flash_attention else 2.0


def _attention_seconds_per_token(s: "Setting", reruns) -> np.ndarray:
    """Seconds per token (before the split over tp and stages) of a step's attention matmuls.

    Forward F_a and each forward re-run of remat (`reruns`) at the forward rate; the backward pass
    2 F_a where the scores are stored (unfused), 2.5 F_a for a fused kernel, which recomputes
    Q K^T (`efficiency.attention_backward_over_forward`), at the backward rate. F_a is the causal
    count times `attention_matmul_factor` (the whole square when unfused). Rates: the fused
    kernel's (`Setting.attention_forward_flops_per_s`, ...) or the flat matmul rate.
    """
    from . import efficiency as _eff
    rate = s.peak_flops_per_s * s.efficiency
    fwd = s.facts.attention_flops_per_token * attention_matmul_factor(s.flash_attention)
    if not s.flash_attention:
        return fwd * (1 + 2 + np.asarray(reruns, dtype=float)) / rate
    r_f = s.attention_forward_flops_per_s or rate
    r_b = s.attention_backward_flops_per_s or rate
    return fwd * ((1 + np.asarray(reruns, dtype=float)) / r_f + _eff.attention_backward_over_forward() / r_b)


_D_WIDE = {"layer input", "norm1 output", "residual after attention", "norm2 output", "output projection"}


# --- collectives on a group, vectorised --------------------------------------------------------

_FIELDS = ("n_ici", "w_ici", "hops_ici", "oneway_ici", "a2a_ici", "wrap1", "m_nvl", "w_nvl", "m_dcn", "w_dcn",
           "share", "latency", "lat_ici", "lat_nvl", "lat_dcn")


def describe(placement: Placement, group: str) -> dict[str, float]:
    """The numbers `price` needs about one group of a placement (see `collectives.cost`).

    Bandwidths are effective (link rate x `Axis.bandwidth_efficiency`); `lat_*` are each network's
    latency per step (`Axis.latency_seconds`); `latency` is the topology's ICI hop, kept for callers.
    """
    topo = placement.topology
    return _describe([topo.axis(n) for n in placement.groups[group]], topo.hop_latency_seconds)


def _describe(axes: "list", hop_latency_seconds: float) -> dict[str, float]:
    """`describe` of a group made of `axes` (`topology.Axis`) on a topology of this ICI hop latency."""
    ici = [a for a in axes if a.network == "ici" and a.size > 1]
    nvl = [a for a in axes if a.network == "nvlink"]
    dcn = [a for a in axes if a.network == "dcn"]
    n_ici = math.prod(a.size for a in ici)
    e_ici = min((a.bandwidth_efficiency for a in ici), default=1.0)
    e_nvl = min((a.bandwidth_efficiency for a in nvl), default=1.0)
    e_dcn = min((a.bandwidth_efficiency for a in dcn), default=1.0)
    return dict(
        n_ici=n_ici,
        w_ici=sum(a.bytes_per_s for a in ici) * e_ici or 1.0,
        hops_ici=sum(a.size // 2 if a.wraparound else a.size - 1 for a in ici),
        oneway_ici=min((a.one_way_bytes_per_s for a in ici), default=1.0) * e_ici,
        a2a_ici=max(((a.size // 2) * ((a.size + 1) // 2) / (a.size * n_ici * a.bytes_per_s * e_ici) for a in ici),
                    default=0.0),
        wrap1=float(len(ici) == 1 and ici[0].wraparound),
        m_nvl=math.prod(a.size for a in nvl), w_nvl=min((a.bytes_per_s for a in nvl), default=1.0) * e_nvl,
        m_dcn=math.prod(a.size for a in dcn), w_dcn=min((a.bytes_per_s for a in dcn), default=1.0) * e_dcn,
        share=math.prod(a.size for a in axes if a.network != "dcn"),
        latency=hop_latency_seconds,
        lat_ici=max((a.latency_seconds for a in ici), default=0.0),
        lat_nvl=max((a.latency_seconds for a in nvl), default=0.0),
        lat_dcn=max((a.latency_seconds for a in dcn), default=0.0),
    )


def stack(descs: list[dict[str, float]]) -> dict[str, np.ndarray]:
    """Turn a list of `describe` results (one per group) into one array per field, for `price`."""
    return {k: np.array([d[k] for d in descs], dtype=float) for k in _FIELDS}


def _unique_columns(*rows: np.ndarray) -> "tuple[np.ndarray, np.ndarray]":
    """`np.unique(np.stack(rows), axis=1, return_inverse=True)`: the distinct columns, sorted, and
    each column's index among them, found through one integer code per column (a 1-D sort on each
    row and on the codes, cheaper than sorting whole columns)."""
    values, codes = zip(*(np.unique(x, return_inverse=True) for x in rows))
    if math.prod(len(u) for u in values) >= 2 ** 62:  # codes would overflow: the general way
        shapes, inverse = np.unique(np.stack(rows), axis=1, return_inverse=True)
        return shapes, inverse.reshape(-1)
    key = codes[0].reshape(-1)
    for u, c in zip(values[1:], codes[1:]):
        key = key * len(u) + c.reshape(-1)
    keys, inverse = np.unique(key, return_inverse=True)
    shapes = np.empty((len(rows), len(keys)), dtype=np.result_type(*rows))
    for j in range(len(rows) - 1, -1, -1):
        keys, digit = np.divmod(keys, len(values[j]))
        shapes[j] = values[j][digit]
    return shapes, inverse.reshape(-1)


def _switched(kind: str, v, m, w):
    m = np.maximum(m, 1.0)
    if kind in ("all-gather", "reduce-scatter"):
        t = v * (m - 1) / (m * w)
    elif kind == "all-reduce":
        t = 2 * v * (m - 1) / (m * w)
    elif kind == "all-to-all":
        t = v * (m - 1) / (m * m * w)
    else:
        t = v / (m * w)
    return np.where(m > 1, t, 0.0)


def _steps(kind: str, m):
    per = {"all-gather": m - 1, "reduce-scatter": m - 1, "all-reduce": 2 * (m - 1)}.get(kind)
    return np.where(m > 1, per if per is not None else 1.0, 0.0)


_NVL_PROTO = link_protocols("nvlink")
_NET_PROTO = link_protocols("infiniband")
assert _NET_PROTO == link_protocols("dcn")


#: Key of a group mapping (`stack`ed, one row per strategy) that says which rows repeat others:
#: (first, inverse, fields), `first` one row of each class of rows with the same description,
#: `inverse` each row's class (as `np.unique`'s return_index and return_inverse), `fields` the
#: group's fields at the rows `first`. `planner` sets it: its rows repeat each set of degrees and
#: microbatch for every remat policy and TP overlap setting.
REPEATS = "_repeats"
#: Key of a group mapping that holds a dict in which `price` keeps what it priced on that group,
#: by collective and V: a caller that evaluates the same groups many times (a fit varying only
#: the efficiency, `training._estimator`) prices each collective once.
PRICED = "_priced"


def price(kind: str, g: Mapping[str, np.ndarray], v) -> np.ndarray:
    """Seconds of collective `kind` of a V-byte array over group `g` (arrays; `collectives.cost`).

    The additive form: every stage's steps x its network's latency, plus the slowest stage's bytes
    at its effective bandwidth, with the fastest of NCCL's protocols where a stage is switched.

    Where `g` says which of its rows repeat others (`REPEATS`) and `v` repeats with them, each
    class is priced once and copied to its rows: the same numbers (the formula is elementwise),
    without pricing duplicates. A `v` that differs within a class is priced row by row.
    Where `g` holds a `PRICED` dict, a collective already priced there at the same V is copied
    from it.
    """
    memo = g.get(PRICED)
    if memo is None:
        return _price_rows(kind, g, v)
    v_arr = np.asarray(v)
    key = (kind, v_arr.dtype.str, v_arr.shape, v_arr.tobytes())
    if key not in memo:
        memo[key] = _price_rows(kind, g, v)
    return memo[key].copy()


def _price_rows(kind: str, g: Mapping[str, np.ndarray], v) -> np.ndarray:
    """`price` without the memo: by class where `g` says which rows repeat (`REPEATS`)."""
    repeats = g.get(REPEATS)
    if repeats is not None:
        first, inverse, fields = repeats
        if not np.ndim(v):
            return _price(kind, fields, v)[inverse]
        if np.shape(v) == inverse.shape:
            v_first = v[first]
            if np.array_equal(v_first[inverse], v):
                return _price(kind, fields, v_first)[inverse]
    return _price(kind, g, v)


def _price(kind: str, g: Mapping[str, np.ndarray], v) -> np.ndarray:
    """`price`, every row computed."""
    n_ici, w = g["n_ici"], g["w_ici"]
    if kind in ("all-gather", "reduce-scatter"):
        t_ici, hops = v * (n_ici - 1) / (n_ici * w), g["hops_ici"]
    elif kind == "all-reduce":
        t_ici, hops = 2 * v * (n_ici - 1) / (n_ici * w), 2 * g["hops_ici"]
    elif kind == "all-to-all":
        t_ici, hops = v * g["a2a_ici"], g["hops_ici"]
    else:
        t_ici = v / (n_ici * g["oneway_ici"])
        hops = np.where(g["wrap1"] > 0, 1.0, g["hops_ici"])
    t_ici = np.where(n_ici > 1, t_ici, 0.0)
    hops = np.where(n_ici > 1, hops, 0.0)
    t_nvl = _switched(kind, v, g["m_nvl"], g["w_nvl"])
    t_dcn = _switched(kind, v / np.maximum(g["share"], 1.0), g["m_dcn"], g["w_dcn"])
    s_nvl, s_dcn = _steps(kind, g["m_nvl"]), _steps(kind, g["m_dcn"])
    if kind in ("all-gather", "reduce-scatter"):
        # NCCL's flat ring over every rank: N - 1 steps, nodes - 1 of them between nodes
        # (`collectives.cost`, "GPU groups across nodes").
        s_nvl = np.where(g["m_dcn"] > 1, g["m_dcn"] * s_nvl, s_nvl)
    switched = (s_nvl + s_dcn) > 0
    t = None
    for p in PROTOCOLS:  # NCCL's fastest protocol where a stage is switched (`collectives.cost`)
        r_nvl, f_nvl = _NVL_PROTO[p]
        r_dcn, f_dcn = _NET_PROTO[p]
        t_p = (np.maximum(np.maximum(t_ici, t_nvl / f_nvl), t_dcn / f_dcn)
               + hops * g["lat_ici"] + s_nvl * g["lat_nvl"] * r_nvl + s_dcn * g["lat_dcn"] * r_dcn)
        if p != "Simple":
            t_p = np.where(switched, t_p, np.inf)
        t = t_p if t is None else np.minimum(t, t_p)
    n = n_ici * g["m_nvl"] * g["m_dcn"]
    return np.where((n > 1) & (v > 0), t, 0.0)


# --- what a model contributes ----------------------------------------------------------------

@dataclass(frozen=True)
class ModelFacts:
    """Per-token and per-parameter facts of a model at one sequence length, for the step model."""

    layers: int
    moe_layers: int
    d_model: int
    vocab: int
    kv_width: int  # K x H
    experts_per_token: int
    routed_experts: int
    heads: int
    kv_heads: int
    d_ff: int
    forward_flops_per_token: float
    attention_flops_per_token: float  # forward QK^T and AV, all layers
    remat_flops_per_token: tuple[float, ...]  # per policy in POLICIES order
    elementwise_wide: float  # elements per token, all layers, of forward D-wide elementwise passes
    elementwise_rest: float  # ... of the MLP activation and RoPE passes (split over tp)
    score_elements_per_t: float  # N x layers: score elements per token per unit of T (no flash; `SCORE_PASSES`)
    layer_dense_params: float  # all layers: everything but the routed experts
    layer_expert_params: float  # all layers: routed experts
    other_params: float  # embedding, unembedding, final norm
    # matmul shapes of one layer (`_shape_ratio`)
    q_width: int = 0  # N_q x H
    dense_layers: int = 0
    dense_d_ff: int = 0
    expert_d_ff: int = 0
    shared_experts: int = 0
    mlp_inputs: int = 1  # 2 for a gated MLP (up and gate), 1 plain
    # elements per token, all MoE layers, one pass: the permute and unpermute copies of the k routed
    # copies of each token, each reading and writing k D (`evaluate` adds the chunk sorts)
    moe_permute_elements: float = 0.0


def model_facts(model: Transformer, seq_len: int) -> ModelFacts:
    """The per-model numbers the step model needs at context `seq_len` (parameters, FLOPs per
    token, recompute FLOPs per remat policy, elementwise passes), computed once per model."""
    model = _as_model(model)
    p = tr.params(model)
    fl = tr.flops_per_token(model, seq_len=seq_len, causal=True)
    remat = tuple(tr.activation_memory(model, batch=1, seq_len=seq_len, policy=REMAT[r]).remat_flops_per_token
                  for r in POLICIES)
    other = p.embedding_params + p.unembedding_params + model.d_model * (2 if model.biases else 1)
    experts = p.routed_expert_params
    act = 3 if model.mlp == "gated" else 2
    moe_width = (model.experts_per_token + model.shared_experts) * model.expert_d_ff
    rope = 2 * (model.heads + model.kv_heads) * (model.head_dim + model.mla_rope_head_dim)
    return ModelFacts(
        layers=model.layers, moe_layers=model.moe_layers, d_model=model.d_model, vocab=model.vocab,
        kv_width=model.kv_heads * model.head_dim, experts_per_token=model.experts_per_token,
        routed_experts=model.routed_experts, heads=model.heads, kv_heads=model.kv_heads,
        d_ff=model.d_ff or model.expert_d_ff,
        forward_flops_per_token=fl.forward_flops, attention_flops_per_token=fl.attention_score_flops,
        remat_flops_per_token=remat,
        elementwise_wide=10.0 * model.d_model * model.layers,
        elementwise_rest=act * (model.dense_layers * model.d_ff + model.moe_layers * moe_width) + rope * model.layers
        + 2.0 * model.routed_experts * model.moe_layers,  # router softmax/top-k: E logits read, E probs written
        score_elements_per_t=1.0 * model.heads * model.layers,
        layer_dense_params=p.total_params - experts - other,
        layer_expert_params=experts, other_params=other,
        q_width=model.heads * model.head_dim, dense_layers=model.dense_layers, dense_d_ff=model.d_ff,
        expert_d_ff=model.expert_d_ff, shared_experts=model.shared_experts,
        mlp_inputs=2 if model.mlp == "gated" else 1,
        moe_permute_elements=4.0 * model.experts_per_token * model.d_model * model.moe_layers)


def activation_bytes_per_token(model: Transformer, *, seq_len: int, policy: str, dtype: str,
                               flash: bool, dropout: bool = False) -> tuple[float, float]:
    """(D-wide, rest) bytes per token that all layers save under `policy`.

    The D-wide tensors (layer input, norms, residuals, residual-stream dropout masks;
    `SavedTensor.d_wide`) are whole on every TP chip unless sequence parallelism splits them; the
    rest (Q, K, V, scores, MLP hidden) are split over tp. Per layer, for Korthikanti et al.
    (2022)'s GPT layer with dropout, wide + rest / t is their eq. 2, s b h (10 + 24/t + 5 a s/(h t)),
    and (wide + rest) / t with sequence parallelism their s b h / t (34 + 5 a s / h).
    """
    _require_flag('flash', flash)
    _require_flag('dropout', dropout)
    if not isinstance(policy, str) or policy not in tr.ACTIVATION_POLICIES:
        raise _Error(f"unknown policy {_show(policy)}; valid: {', '.join(tr.ACTIVATION_POLICIES)}")
    _require_count("seq_len", seq_len, maximum=MAX_TOKENS)
    model = _as_model(model)
    b = units.dtype_bytes(dtype, "dtype")
    wide = rest = 0.0
    for moe, count in ((False, model.dense_layers), (True, model.moe_layers)):
        if not count:
            continue
        for t in tr._saved_tensors(model, seq_len=seq_len, policy=policy, b=b, flash=flash, moe=moe,
                                   dropout=dropout):
            part = t.elements_per_token * t.bytes_per_element * count
            if t.d_wide:
                wide += part
            else:
                rest += part
    return wide, rest


# --- the matmuls' shapes -----------------------------------------------------------------------

def _shape_ratio(facts: ModelFacts, chip, *, tokens, tp, ep, efficiency: float, peak_flops_per_s: float,
                dtype_bytes: float) -> np.ndarray:
    """Time of one layer's weight matmuls priced by shape over the same FLOPs at flat efficiency (>= 1).

    Each forward weight matmul of a layer on one chip, with M = `tokens` of a microbatch:
    QKV (M x D) @ (D x (N_q + 2 K) H / tp), output projection (M x N_q H / tp) @ (N_q H / tp x D),
    MLP (M x D) @ (D x F / tp, twice for a gated MLP) and (M x F / tp) @ (F / tp x D); in a MoE
    layer each of the chip's E / ep routed experts gets ep M k / E tokens (an even split) and runs
    the MLP matmuls at F_e as one grouped launch, shared experts the MLP at S F_e on all M tokens.
    The router's (M / tp x D) @ (D x E) logits, E narrow, are priced the same way (per chip, the
    tokens M / tp that the AllToAll sends, as in `evaluate`).
    Each is timed by `efficiency.matmul_seconds` (tile and wave quantisation; HBM-bound when small)
    and the sum divided by 2 M N K / (peak x efficiency) summed over the same matmuls.
    Simplifications: the backward pass's activation- and weight-gradient matmuls are charged the
    forward pass's ratio, the attention matmuls (scores and values) and the logits none.
    """
    from . import efficiency as _eff
    m = facts
    tok, tp, ep = (np.asarray(x, dtype=float) for x in (tokens, tp, ep))
    D = float(m.d_model)
    shapes = []  # (layers, m, k, n, batch)
    attn = ((tok, D, (m.q_width + 2 * m.kv_width) / tp, 1.0), (tok, m.q_width / tp, D, 1.0))
    mlp = lambda rows, f, batch: ((rows, D, m.mlp_inputs * f / tp, batch), (rows, f / tp, D, batch))
    if m.dense_layers:
        shapes += [(m.dense_layers,) + mm for mm in attn + mlp(tok, float(m.dense_d_ff), 1.0)]
    if m.moe_layers:
        shapes += [(m.moe_layers,) + mm for mm in attn]
        shapes.append((m.moe_layers, tok / tp, D, float(m.routed_experts), 1.0))  # router logits
        routed = np.maximum(1.0, ep * tok * m.experts_per_token / max(m.routed_experts, 1))
        shapes += [(m.moe_layers,) + mm for mm in mlp(routed, float(m.expert_d_ff), m.routed_experts / ep)]
        if m.shared_experts:
            shapes += [(m.moe_layers,) + mm for mm in mlp(tok, float(m.shared_experts * m.expert_d_ff), 1.0)]
    timed = flat = 0.0
    for layers, a, k, n, batch in shapes:
        a, k, n = (np.maximum(np.broadcast_to(x, tok.shape), 1.0) for x in (a, k, n))
        timed = timed + layers * _eff.matmul_seconds(chip, a, k, n, eff_kernel=efficiency, dtype_bytes=dtype_bytes,
                                                     peak_flops_per_s=peak_flops_per_s, batch=batch)
        flat = flat + layers * 2 * batch * a * k * n / (peak_flops_per_s * efficiency)
    return timed / flat


# --- the step --------------------------------------------------------------------------------

def _network(g: Mapping[str, np.ndarray]) -> np.ndarray:
    """Index in NETWORKS of the resource a group's collectives occupy; -1 for a group of one chip.

    A group that spans several networks (NVLink inside a node and InfiniBand across nodes, ICI
    inside a slice and DCN across slices) is attributed to its outermost, slowest network only:
    a simplification, since the collective's inner stage also occupies the inner network.
    """
    return np.where(g["m_dcn"] > 1, 2, np.where(g["m_nvl"] > 1, 1, np.where(g["n_ici"] > 1, 0, -1)))


@dataclass(frozen=True)
class Setting:
    """What is fixed across the strategies being compared."""

    model: Transformer
    facts: ModelFacts
    topology: Topology
    batch_tokens: float
    seq_len: int
    peak_flops_per_s: float
    efficiency: float
    param_bytes: float
    grad_bytes: float
    optimizer_bytes_per_param: float  # two moments + master copy
    activation_bytes: float
    flash_attention: bool
    activation_dtype: str
    tp_overlap_slowdown: float = 0.0  # compute lost per second of TP traffic hidden behind matmuls
    dropout: bool = False  # dropout masks saved; a dropout pass over unfused attention scores
    # the attention matmuls' rates where attention is fused (`efficiency.attention_flops_per_s`);
    # None: the weight matmuls' flat rate, peak x efficiency
    attention_forward_flops_per_s: float | None = None
    attention_backward_flops_per_s: float | None = None


def _act_table(setting: Setting, cps: np.ndarray) -> np.ndarray:
    """Saved bytes per token, [cp value, policy, (D-wide, rest)], at sequence chunk T / cp."""
    out = np.zeros((len(cps), len(POLICIES), 2))
    for i, cp in enumerate(cps):
        for j, pol in enumerate(POLICIES):
            out[i, j] = activation_bytes_per_token(
                setting.model, seq_len=max(1, setting.seq_len // int(cp)), policy=REMAT[pol],
                dtype=setting.activation_dtype, flash=setting.flash_attention, dropout=setting.dropout)
    return out


def evaluate(setting: Setting, a: Mapping[str, np.ndarray], groups: Mapping[str, Mapping[str, np.ndarray]]
             ) -> dict[str, np.ndarray]:
    """Times (seconds per step) and memory (bytes per chip) for every strategy in arrays `a`.

    `a` holds equal-length arrays: dp, fsdp, tp, pp, ep, cp, virtual_stages, microbatch,
    remat (index in POLICIES), sp (0/1), zero, schedule (SCHEDULE_INDEX), tp_overlap (0/1).
    `groups` maps each placement group to `stack`ed descriptions. Invalid rows (batch that does
    not split) come back with NaN-free values but `valid` False.
    """
    s, m = setting, setting.facts
    dp, fsdp, tp, pp, ep, cp = (a[k].astype(float) for k in ("dp", "fsdp", "tp", "pp", "ep", "cp"))
    v, mb, remat = a["virtual_stages"].astype(float), a["microbatch"].astype(float), a["remat"].astype(int)
    sp, zero, sched = a["sp"].astype(float), a["zero"].astype(float), a["schedule"].astype(int)
    full = (remat == POLICIES.index("full")).astype(float)
    # 1: FSDP gathers each layer again for the backward pass; 0: keeps it from the forward pass
    rf = a["reshard_after_forward"].astype(float) if "reshard_after_forward" in a else np.ones_like(dp)
    pre = a["backward_prefetch"].astype(float) if "backward_prefetch" in a else np.ones_like(dp)
    T, D = float(s.seq_len), float(m.d_model)
    b_act = units.dtype_bytes(s.activation_dtype)

    seqs = s.batch_tokens / T
    data = dp * fsdp
    replica_seqs = seqs / data
    n_micro = replica_seqs / mb
    valid = (np.abs(replica_seqs - np.round(replica_seqs)) < 1e-9) & (np.abs(n_micro - np.round(n_micro)) < 1e-9) \
        & (replica_seqs >= 1) & (n_micro >= 1)
    stage_layers = np.ceil(m.layers / pp)
    frac = stage_layers / m.layers
    tok = mb * T / cp

    remat_tok = np.array(m.remat_flops_per_token)[remat]
    flop_tok = 3 * m.forward_flops_per_token + remat_tok
    rate = s.peak_flops_per_s * s.efficiency
    # Weight matmuls priced by their shape (`_shape_ratio`); attention matmuls at the flat rate, on
    # the full T x T square where the scores are materialised (`attention_matmul_factor`).
    shapes, inverse = _unique_columns(tok, tp, ep)  # few distinct shapes
    ratio = _shape_ratio(m, s.topology.chip, tokens=shapes[0], tp=shapes[1], ep=shapes[2], efficiency=s.efficiency,
                         peak_flops_per_s=s.peak_flops_per_s, dtype_bytes=b_act)[inverse.reshape(-1)]
    sel = (remat == POLICIES.index("selective")).astype(float)
    flash = 1.0 if s.flash_attention else 0.0
    # attention FLOPs per token of the step: forward, backward (twice), and what remat recomputes
    # (full: the whole forward; selective: the attention core)
    attn_tok = m.attention_flops_per_token * (3 + full + sel)
    c_matmul = tok * frac / tp * ((flop_tok - attn_tok) * ratio / rate + _attention_seconds_per_token(s, full + sel))
    passes = 3 + full
    elements = (m.elementwise_wide / np.where(sp > 0, tp, 1.0) + m.elementwise_rest / tp) * passes \
        + (1 - flash) * m.score_elements_per_t * T / tp * _score_elements(full + sel, s.dropout, b_act)
    # MoE token permutation (Megatron's alltoall dispatcher, module docstring): permute and unpermute,
    # plus the two chunk sorts when a chip holds more than one expert; once forward, once backward
    # (the gradients take the reverse copies), once more with full remat; tok / tp tokens per chip.
    sorts = np.where(m.routed_experts / ep > 1, 2.0, 1.0)
    elements = elements + m.moe_permute_elements * sorts / tp * (2 + full)
    c_vector = elements * b_act * tok * frac / s.topology.chip.hbm_bytes_per_s
    c = c_matmul + c_vector
    c_bwd = c * (2 * m.forward_flops_per_token + remat_tok) / flop_tok

    g = groups
    tp_each = price("all-reduce", g["tp"], tok * D * b_act)
    tp_count = (4 + 2 * full) * stage_layers
    # Vocab-parallel embedding and logits: the looked-up rows summed over tp (first stage), the
    # unembedding's input gradient summed (last stage), and the softmax's max, sum and target
    # logit per token (last stage).
    vocab_count = np.where(pp > 1, 1.0, 2.0)
    t_vocab = vocab_count * tp_each + 3 * price("all-reduce", g["tp"], tok * 4.0)
    t_tp = tp_count * tp_each + t_vocab

    moe_stage = m.moe_layers * frac
    v_ep = ep * (tok / tp) * m.experts_per_token * D * b_act
    ep_each = price("all-to-all", g["ep"], v_ep)
    ep_count = (4 + 2 * full) * moe_stage
    t_ep = ep_count * ep_each

    dense_w = m.layer_dense_params * frac + m.other_params / np.minimum(pp, 2)
    expert_w = m.layer_expert_params * frac
    # FSDP moves one layer at a time; the embedding, unembedding and final norm (on the first and
    # last stages) are gathered once for the forward pass (a lookup's gradient never reads the
    # table; the unembedding is still whole when the backward pass starts) and scattered once.
    dense_l, expert_l = m.layer_dense_params / m.layers, m.layer_expert_params / m.layers
    top = m.other_params / np.minimum(pp, 2)
    fsdp_gather = price("all-gather", g["fsdp"], dense_l * s.param_bytes / tp) \
        + price("all-gather", g["expert_fsdp"], expert_l * s.param_bytes / (tp * ep))
    scatter_d = price("reduce-scatter", g["fsdp"], dense_l * s.grad_bytes / tp)
    scatter_e = price("reduce-scatter", g["expert_fsdp"], expert_l * s.grad_bytes / (tp * ep))
    fsdp_scatter = scatter_d + scatter_e
    fsdp_top = price("all-gather", g["fsdp"], top * s.param_bytes / tp) \
        + price("reduce-scatter", g["fsdp"], top * s.grad_bytes / tp)
    t_fsdp = stage_layers * ((1 + rf) * fsdp_gather + fsdp_scatter) + fsdp_top

    efsdp = np.where(ep <= fsdp, fsdp / ep, 1.0)
    t_dp = price("all-reduce", g["grad"], dense_w * s.grad_bytes / (tp * fsdp)) \
        + price("all-reduce", g["expert_grad"], expert_w * s.grad_bytes / (tp * ep * efsdp))

    pp_each = price("collective-permute", g["pp"], pp * tok * D * b_act / np.where(sp > 0, tp, 1.0))
    t_pp = 2 * v * pp_each

    kv_local = tok * 2 * m.kv_width * b_act / np.minimum(tp, m.kv_heads)
    cp_each = price("collective-permute", g["cp"], cp * kv_local)
    cp_count = (3 + full) * (cp - 1) * stage_layers
    t_cp = cp_count * cp_each

    # --- overlap by resource (module docstring, "Overlap") ---
    net_tp = _network(g["tp"])
    # Overlap is granted on the fast network only (ICI, NVLink): a TP group that reaches InfiniBand
    # or DCN keeps its collectives on the critical path (an assumption, chapter 5).
    tp_overlap = a["tp_overlap"].astype(float) * (net_tp != NETWORKS.index("dcn"))
    layers_s = stage_layers
    c_fwd = c - c_bwd
    fwd_share, bwd_share = c_fwd / c, c_bwd / c
    # TP: on the critical path, or (tp_overlap) hidden behind the matmuls it is fused with, each
    # second of hidden traffic slowing the matmuls by `tp_overlap_slowdown` of a second.
    tp_hidden = tp_overlap * np.minimum(t_tp, c_matmul)
    exposed_tp = t_tp - tp_hidden + s.tp_overlap_slowdown * tp_hidden
    # CP: each ring step hides behind the attention of one key/value chunk (causal, load-balanced
    # chunks: 1/cp of the chip's causal attention FLOPs, per pass).
    attn_step = m.attention_flops_per_token / m.layers * tok / (cp * tp * rate)
    exposed_cp = cp_count * np.maximum(0.0, cp_each - attn_step)
    cp_hidden = t_cp - exposed_cp
    net_fsdp, net_efsdp = _network(g["fsdp"]), _network(g["expert_fsdp"])
    net_cp, net_dp, net_edp = _network(g["cp"]), _network(g["grad"]), _network(g["expert_grad"])
    net_ep, net_pp = _network(g["ep"]), _network(g["pp"])
    # FSDP, per layer: layer i+1's gather runs during layer i's forward compute, and in the backward
    # pass the next gather and the previous layer's reduce-scatter share the layer's backward
    # compute; what does not fit is exposed in every layer. The first gather (with the embedding
    # tables) has nothing to hide behind. Other hidden traffic on FSDP's network (overlapped TP,
    # CP's ring) takes its share of each window.
    gather_d = price("all-gather", g["fsdp"], dense_l * s.param_bytes / tp)
    gather_e = price("all-gather", g["expert_fsdp"], expert_l * s.param_bytes / (tp * ep))
    g_l, r_l = gather_d + gather_e, fsdp_scatter
    other = (np.where(net_tp == net_fsdp, tp_hidden, 0.0) + np.where(net_cp == net_fsdp, cp_hidden, 0.0)) / layers_s
    top_gather = price("all-gather", g["fsdp"], top * s.param_bytes / tp)
    exposed_fsdp_fwd = np.maximum(0.0, g_l + other * fwd_share - c_fwd / layers_s) * layers_s
    # Without backward prefetch (PyTorch FSDP's BACKWARD_POST) the next layer's gather is issued
    # only after this layer's gradients are computed: it waits in every layer (`fsdp_backward_exposed`).
    exposed_fsdp_bwd = _fsdp_backward_exposed(rf * g_l, r_l + other * bwd_share, c_bwd / layers_s, pre) * layers_s
    exposed_fsdp = np.where(t_fsdp > 0, g_l + top_gather + exposed_fsdp_fwd + exposed_fsdp_bwd, 0.0)
    stage = c + exposed_tp + t_ep + t_pp + exposed_fsdp + exposed_cp
    bubble_slots = np.where(pp > 1, (pp - 1) / v, 0.0)
    # DP: the gradient AllReduce starts with the last microbatch's backward pass and shares its
    # network with whatever else that backward pass sends there (FSDP's gathers and scatters, TP,
    # CP, EP); what does not fit in that window is exposed.
    window = c_bwd + exposed_fsdp_bwd + bwd_share * (exposed_tp + exposed_cp + t_ep + t_pp)
    t_dp_d = price("all-reduce", g["grad"], dense_w * s.grad_bytes / (tp * fsdp))
    t_dp_e = t_dp - t_dp_d
    bwd_traffic = {"tp": (net_tp, bwd_share * t_tp), "cp": (net_cp, bwd_share * t_cp),
                   "ep": (net_ep, bwd_share * t_ep), "pp": (net_pp, bwd_share * t_pp),
                   "fsdp": (net_fsdp, layers_s * (rf * g_l + r_l))}
    load = t_dp + sum(np.where((net == net_dp) & (net >= 0), t, 0.0) for net, t in bwd_traffic.values())
    exposed_dp = np.where(t_dp > 0, np.maximum(0.0, load - window), 0.0)

    # Busy time of each resource over the step: the compute stream and each network.
    traffic = {"tp": (net_tp, t_tp), "ep": (net_ep, t_ep), "pp": (net_pp, t_pp), "cp": (net_cp, t_cp),
               "fsdp": (net_fsdp, stage_layers * ((1 + rf) * gather_d + scatter_d) + fsdp_top),
               "efsdp": (net_efsdp, stage_layers * ((1 + rf) * gather_e + scatter_e))}  # per microbatch
    kinds = ("tp", "ep", "pp", "cp", "fsdp", "dp")
    busy = np.zeros((len(NETWORKS), len(kinds), len(c)))
    for k in range(len(NETWORKS)):
        for j, kind in enumerate(kinds[:-1]):
            net, t = traffic[kind]
            busy[k, j] = np.where(net == k, n_micro * t, 0.0)
        net, t = traffic["efsdp"]
        busy[k, kinds.index("fsdp")] += np.where(net == k, n_micro * t, 0.0)
        busy[k, -1] = np.where(net_dp == k, t_dp_d, 0.0) + np.where(net_edp == k, t_dp_e, 0.0)

    # memory per chip: that of the fullest pipeline stage. Three stages can be the fullest:
    # the first (most microbatches in flight, the embedding), the first one with a whole
    # ceil(L / pp) layers, and the last (the unembedding and the fp32 logits). When pp does not
    # divide L, the pp ceil(L / pp) - L stages with one layer fewer sit at the two ends of the
    # pipeline, first one first, as Llama 3 balances its pipeline (Dubey et al. 2024, sec. 3.3.2).
    # Microbatches in flight on stage r, in units of one microbatch through the whole stage
    # (Korthikanti et al. 2022, sec. 4.2.3): 1F1B min(pp - r, M); GPipe M; interleaved with v
    # chunks per chip (Megatron's schedule, Narayanan et al. 2021) 2 (pp - r - 1) + (v - 1) pp + 1
    # chunk passes before the first is freed, i.e. (2 (pp - r - 1) + (v - 1) pp + 1) / v, which is
    # pp (1 + (pp - 1) / (pp v)) on the first stage; never more than M.
    shard_e = tp * ep * efsdp
    expert_dp = data / (ep * efsdp)
    layer_dense = m.layer_dense_params / m.layers
    layer_expert = m.layer_expert_params / max(m.moe_layers, 1)
    # two layers' gathered weights (the one computing, the next arriving); without resharding after
    # the forward pass every layer of the stage stays gathered until its backward pass
    held = np.where(rf > 0, 2.0, stage_layers)
    gathered_b = np.where(fsdp > 1, held * (layer_dense / tp) * s.param_bytes, 0.0) \
        + np.where(efsdp > 1, held * layer_expert / (tp * ep) * s.param_bytes, 0.0)
    cps, cp_idx = np.unique(a["cp"], return_inverse=True)
    table = _act_table(s, cps)  # [cp, policy, (D-wide, rest)]
    wide, rest = table[cp_idx, remat, 0], table[cp_idx, remat, 1]
    none_wide, none_rest = table[cp_idx, 0, 0], table[cp_idx, 0, 1]
    split_wide = np.where(sp > 0, tp, 1.0)
    layer_micro = tok * (wide / split_wide + rest / tp) / m.layers  # one layer, one microbatch
    # Recomputing one layer in the backward pass holds that layer's full activations.
    working = np.where(remat > 0, tok * (none_wide / split_wide + none_rest / tp) / m.layers, 0.0)
    logits_micro = tok * m.vocab * 4.0 / tp  # fp32, vocab-parallel over tp
    gp, il = sched == SCHEDULE_INDEX["gpipe"], sched == SCHEDULE_INDEX["interleaved"]

    def flight(r):
        f = np.minimum(pp - r, n_micro)
        f = np.where(il, np.minimum((2 * (pp - r - 1) + (v - 1) * pp + 1) / v, n_micro), f)
        return np.where(gp, n_micro, np.where(pp == 1, 1.0, f))

    short = pp * stage_layers - m.layers
    front = np.ceil(short / 2)
    last = pp - 1
    top = m.other_params / np.minimum(pp, 2)  # embedding on the first stage, unembedding on the last
    candidates = (  # (stage index, layers, top parameters, logits)
        (0.0, stage_layers - (short >= 1), top, pp == 1),
        (front, stage_layers, top * ((front == 0) | (front == last)), front == last),
        (last, stage_layers - (short >= 2), top, True))
    parts = []
    for r, layers, top_r, logits in candidates:
        dense_r, expert_r = layer_dense * layers + top_r, m.layer_expert_params / m.layers * layers
        dense_shard, expert_shard = dense_r / (tp * fsdp), expert_r / shard_e
        parts.append((
            (dense_shard + expert_shard) * s.param_bytes,
            (dense_shard / np.where(zero >= 2, dp, 1.0)
             + expert_shard / np.where(zero >= 2, expert_dp, 1.0)) * s.grad_bytes,
            (dense_shard / np.where(zero >= 1, dp, 1.0)
             + expert_shard / np.where(zero >= 1, expert_dp, 1.0)) * s.optimizer_bytes_per_param,
            layer_micro * layers * flight(r) + working,
            np.where(logits, logits_micro, 0.0)))
    totals = np.array([sum(p) for p in parts])
    fullest = np.argmax(totals, axis=0)
    params_b, grads_b, opt_b, act_b, logits_b = (
        np.choose(fullest, [np.broadcast_to(p[k], fullest.shape) for p in parts]) for k in range(5))
    in_flight = np.choose(fullest, [np.broadcast_to(flight(c[0]), fullest.shape) for c in candidates])
    mem = params_b + grads_b + opt_b + gathered_b + act_b + logits_b
    hbm = s.topology.chip.hbm_bytes_per_s
    opt_seconds = (2 * params_b + grads_b + 2 * opt_b) / hbm

    path = (n_micro + bubble_slots) * stage + exposed_dp + opt_seconds
    # No step is shorter than any network's busy time: the excess (traffic that each window hid
    # but that together overfills the network) is charged to the busiest user of that network.
    net_busy = busy.sum(axis=1)
    worst = np.argmax(net_busy, axis=0)
    cols = np.arange(len(c))
    excess = np.maximum(0.0, net_busy[worst, cols] - path)
    blame = np.argmax(busy[worst, :, cols], axis=1)
    extra = {kind: np.where(blame == j, excess, 0.0) for j, kind in enumerate(kinds)}
    step = path + excess
    chips = dp * fsdp * tp * pp * cp
    return dict(
        valid=valid, chips=chips, microbatches=n_micro, compute=n_micro * c, compute_micro=c,
        matmul=n_micro * c_matmul, vector=n_micro * c_vector,
        tp=n_micro * t_tp, ep=n_micro * t_ep, fsdp=n_micro * t_fsdp, dp=t_dp, pp=n_micro * t_pp, cp=n_micro * t_cp,
        exposed_tp=n_micro * exposed_tp + extra["tp"], exposed_ep=n_micro * t_ep + extra["ep"],
        exposed_pp=n_micro * t_pp + extra["pp"], exposed_fsdp=n_micro * exposed_fsdp + extra["fsdp"],
        exposed_cp=n_micro * exposed_cp + extra["cp"], exposed_dp=exposed_dp + extra["dp"],
        busy_compute=n_micro * c + opt_seconds,
        **{f"busy_{name}": net_busy[k] for k, name in enumerate(NETWORKS)},
        bubble=bubble_slots * stage, optimizer=opt_seconds, step=step,
        tp_each=tp_each, tp_count=tp_count * n_micro, ep_each=ep_each, ep_count=ep_count * n_micro,
        pp_each=pp_each, cp_each=cp_each, cp_count=cp_count * n_micro,
        params_bytes=params_b, grads_bytes=grads_b, optimizer_bytes=opt_b, gathered_weights_bytes=gathered_b,
        activation_bytes=act_b, logits_bytes=logits_b, memory=mem, in_flight=in_flight,
        model_flops=3 * m.forward_flops_per_token * s.batch_tokens,
        hardware_flops=flop_tok * s.batch_tokens,
        dense_stage_params=dense_w, expert_stage_params=expert_w, stage_layers=stage_layers,
    )
