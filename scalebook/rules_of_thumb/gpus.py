"""The original book's GPU rules (part 12 of Austin and others, 2025), beside chapter 2b's exact forms.

- data parallelism hides above C / W tokens per GPU (W the GPU's or the node's egress): the same
  rule as `training.rule_of_thumb_batch_per_chip`;
- tensor parallelism counts the MLP only: Y < F W / C, against chapter 2b's forward-pass rule
  for a whole layer, tp <= 6 D W / (b C) (`collectives.tp_forward_max_degree`);
- SHARP doubles the AllReduce bandwidth in theory (2 (N-1)/N, 1.75x for 8 GPUs), about 1.3x
  measured;
- a mixture of experts inflates the data-parallel batch by E/k (the package's exact ratio is
  total over active parameters, `transformer.params`);
- data parallelism over only X nodes needs (X-1)/X of the batch (the scale-out stage only;
  chapter 2b adds the NVLink stage, which binds at two nodes);
- model parallelism spanning nodes divides the data-parallel batch by the nodes it spans;
- a ragged (top-k) AllToAll moves min(k/N, 1) of the dense traffic, against the exact expected
  share of destinations `ragged_destination_fraction`.
"""
from __future__ import annotations

from math import comb

from ..errors import Error, require_positive
from ..errors import MAX_CHIPS, require_count

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


def _count(name: str, v) -> int:
    return require_count(name, v, maximum=MAX_CHIPS)  # GPUs, experts, groups: at most 10**7


def dp_min_batch_per_gpu_moe(*, experts: int, experts_per_token: int, flops_per_s: float,
                             collective_bytes_per_s: float) -> float:
    """The original's DP/FSDP batch for a mixture of experts: B / X > (E / k) C / W.

    Every expert's weights are synchronised but a token computes with only k of them, so the
    bytes per step grow E / k times faster than the FLOPs per token. The exact ratio, counting
    attention and shared experts, is total over active parameters (`transformer.params`);
    chapter 2b shows both.
    """
    _count("experts", experts)
    _count("experts_per_token", experts_per_token)
    if experts_per_token > experts:
        raise Error(f"experts_per_token must be at most experts = {experts}, got {experts_per_token}")
    return experts / experts_per_token * dp_min_batch_per_gpu(
        flops_per_s=flops_per_s, collective_bytes_per_s=collective_bytes_per_s)


def dp_min_batch_per_gpu_few_nodes(*, nodes: int, flops_per_s: float, node_bytes_per_s: float) -> float:
    """The original's DP batch over whole nodes when they are few: B / N > ((X - 1) / X) C / W_node.

    W_node is a node's scale-out egress (its NICs together); the (X - 1) / X factor of a ring over
    X nodes halves the bound at two nodes. Only the scale-out stage is counted: chapter 2b adds
    the NVLink stage (ReduceScatter and AllGather in the node, C (g - 1) / (g W_NVLink)), which is
    the larger at two H100 nodes.
    """
    _count("nodes", nodes)
    require_positive(flops_per_s=flops_per_s, node_bytes_per_s=node_bytes_per_s)
    return (nodes - 1) / nodes * flops_per_s / node_bytes_per_s


def dp_min_batch_per_gpu_model_parallel(*, model_parallel: int, gpus_per_node: int, flops_per_s: float,
                                        gpu_bytes_per_s: float, node_bytes_per_s: float) -> float:
    """The original's DP batch when each replica is split over `model_parallel` = m GPUs (the
    reduction runs over an outer axis while the weights are sharded over an inner one):

        B / N > C max(1 / (W_gpu min(m, g)), g / (W_node max(m, g)))

    Each GPU synchronises 1/m of the weights. Inside the node that divides the NVLink stage by
    min(m, g); across nodes the node's egress W_node carries g / max(m, g) of a replica's bytes,
    so only model parallelism that spans nodes (m > g) lowers the scale-out bound. Large-N form.

    The NVLink term is the original's; once m >= g no two GPUs of a node hold the same shard, so
    nothing is reduced over NVLink and the exact bound is C / (m W_IB), each GPU reducing with its
    peers in other nodes through its own NIC (chapter 2b: 155 tokens for Llama 3 405B's m = 128 on
    H100s, where this form gives 275).
    """
    m, g = _count("model_parallel", model_parallel), _count("gpus_per_node", gpus_per_node)
    require_positive(flops_per_s=flops_per_s, gpu_bytes_per_s=gpu_bytes_per_s, node_bytes_per_s=node_bytes_per_s)
    return flops_per_s * max(1 / (gpu_bytes_per_s * min(m, g)), g / (node_bytes_per_s * max(m, g)))


def ragged_all_to_all_fraction(*, experts_per_token: int, group: int) -> float:
    """The original's share of a dense AllToAll that a top-k (ragged) one moves: min(k / N, 1).

    A token goes only to the chips that hold its k experts. The exact expected share, with k
    distinct experts spread evenly over the N chips, is `ragged_destination_fraction`.
    """
    k, n = _count("experts_per_token", experts_per_token), _count("group", group)
    return min(k / n, 1.0)


def ragged_destination_fraction(*, experts: int, experts_per_token: int, group: int) -> float:
    """Exact: the expected share of `group` = N chips (or nodes) that a token's k distinct experts,
    out of E spread evenly (E / N per chip), land on: 1 - C(E - E/N, k) / C(E, k).

    The complement is the chance that all k experts avoid one given chip. Chapter 2b compares it
    with the original's min(k / N, 1) (`ragged_all_to_all_fraction`).
    """
    e, k, n = _count("experts", experts), _count("experts_per_token", experts_per_token), _count("group", group)
    if k > e:
        raise Error(f"experts_per_token must be at most experts = {e}, got {k}")
    if e % n:
        raise Error(f"group must divide experts = {e} (experts spread evenly), got {n}")
    return 1 - comb(e - e // n, k) / comb(e, k)


def ep_min_expert_width(*, ep: int, experts_per_token: int, gpus_per_node: int, flops_per_s: float,
                        node_bytes_per_s: float) -> float:
    """The original's expert-parallel bound across nodes: an expert's width F above which its
    matmuls hide the two AllToAlls, with Z = `ep` GPUs over Z / g nodes,

        F > (C / W_node) (Z - g) min(g k / Z, 1) / k.

    Compute per token is 4 k D F / Z per GPU against 4 D (Z - g) / (W Z) min(g k / Z, 1) of
    AllToAll (only the (Z - g) / Z of destinations outside the node cross it; a token reaches at
    most k of the Z / g nodes). Two regimes: a little EP across nodes (Z <= g k) needs
    F > alpha (Z - g) / k, which grows with Z; a lot (Z >> g k) needs F > g alpha (Z - g) / Z,
    which levels off at g alpha (alpha = C / W_node). Returns 0 inside one node (Z <= g).
    Chapter 2b's forward-pass rule, `collectives.ep_forward_min_expert_width`, sends every routed
    token through the GPU's own NIC instead: F_e >= (beta / 3) C / W_IB.
    """
    z, k, g = _count("ep", ep), _count("experts_per_token", experts_per_token), _count("gpus_per_node", gpus_per_node)
    require_positive(flops_per_s=flops_per_s, node_bytes_per_s=node_bytes_per_s)
    if z <= g:
        return 0.0
    return flops_per_s / node_bytes_per_s * (z - g) * min(g * k / z, 1.0) / k
