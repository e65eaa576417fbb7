"""The original book's GPU rules (part 12 of Austin and others, 2025), beside chapter 2b's exact forms.

- data parallelism hides above C / W tokens per GPU (W the GPU's or the node's egress): the same
  rule as `training.rule_of_thumb_batch_per_chip`;
- tensor parallelism counts the MLP only: Y < F W / C, against chapter 2b's forward-pass rule
  for a whole layer, tp <= 6 D W / (b C) (`collectives.tp_forward_max_degree`);
- SHARP doubles the AllReduce bandwidth in theory (2 (N-1)/N, 1.75x for 8 GPUs), about 1.3x
  measured.
"""
from __future__ import annotations

from ..errors import require_positive

#: The original's measured SHARP gain on an H100 node ("closer to 30%"), against 2 (N-1)/N in theory.
SHARP_MEASURED_GAIN = 1.3


def dp_min_batch_per_gpu(*, flops_per_s: float, collective_bytes_per_s: float) -> float:
    """Tokens per GPU above which DP/FSDP traffic hides: B / X > C / W_collective (large N).

    The original's rule; the package's `training.rule_of_thumb_batch_per_chip` is the same
    formula with W looked up per link, and `training.critical_batch_per_chip` the full step model.
    """
    require_positive(flops_per_s=flops_per_s, collective_bytes_per_s=collective_bytes_per_s)
    return flops_per_s / collective_bytes_per_s


def tp_max_degree_mlp_only(*, d_ff: int, flops_per_s: float, collective_bytes_per_s: float) -> float:
    """The original's TP limit: the MLP's forward matmuls hide its AllGather and ReduceScatter
    when Y < F W / C (4 B D F / (Y C) FLOP-seconds against 4 B D / W, large N).

    Chapter 2b's rule, `collectives.tp_forward_max_degree`, counts the whole layer (attention
    and MLP, 12 D^2 parameters) and gives 6 D W / (b C); with F = 4 D and b = 2 the original's
    F W / C = 4 D W / C is 4/3 of the whole layer's 3 D W / C.
    """
    require_positive(d_ff=d_ff, flops_per_s=flops_per_s, collective_bytes_per_s=collective_bytes_per_s)
    return d_ff * collective_bytes_per_s / flops_per_s
