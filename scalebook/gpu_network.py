"""GPU networks: NVLink domains, fat trees, in-network reduction and hierarchical collectives.

Chapter 2b of the book. A GPU cluster has two switched networks: NVLink inside a domain of g GPUs
(8 on HGX nodes, 72 on GB200 NVL72; W_nvl = one GPU's NVLink egress, one way) and InfiniBand
between domains, arranged as a fat tree of leaf and spine switches (W_ib = node egress / g per
GPU, one way). All formulas keep their exact (N-1)/N factors; the prose drops them.

    in one domain (N GPUs):  AllGather = ReduceScatter = V (N-1) / (N W_nvl)
                             AllReduce = 2 V (N-1) / (N W_nvl); with in-network reduction
                             (NVLink SHARP) each GPU sends V and receives V once: V / W_nvl
                             AllToAll = V (N-1) / (N^2 W_nvl)
    across M domains of g GPUs (hierarchical, stages run one after another):
        AllReduce = ReduceScatter in the domain + AllReduce of V/g over the M domains (one GPU per
                    domain and rank, each on its own NIC) + AllGather in the domain
        AllToAll  = each GPU sends V (N - g) / N^2 over InfiniBand (N = M g), in parallel with the
                    NVLink part: max of the two

`collectives.cost` prices the same hierarchical collectives with its stages overlapped (the time
of the slowest), at NCCL's usable share of each link and with each network's latency per step;
the functions here give the bandwidth terms at the links' full rate, and `hierarchical_*` list the
stages and add them, the bound for an implementation that runs them back to back.

InfiniBand is rail-optimised: a node has one NIC per GPU, GPU i of every node sits on rail i, and
NCCL runs one ring (channel) per NIC. When all g GPUs of each node take part in a cross-node
collective, each GPU drives its own NIC: W_ib = node egress / g per GPU, and the node moves its
full egress. A group with one GPU per node (DP across nodes with TP filling the node) gets the
same W_ib per GPU while the other GPUs' NICs serve their own groups; only if those NICs sat idle
could NCCL's PXN (routing over NVLink to a NIC on another rail) lend them, which this model does
not count.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import units
from ._data import load
from .errors import MAX_CHIPS, Error, _show, number, require_flag, require_non_negative
from .errors import require_flag as _require_flag
from .hardware import Chip, chip as _chip


def _gpu(chip: "str | Chip") -> Chip:
    c = _chip(chip)
    if c.is_tpu:
        raise Error(f"{c.name} is a TPU; GPU networks are for a100, h100, h200, b200, gb200, h800")
    return c


def _count(name: str, v: int, lo: int = 1) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise Error(f"{name} must be an integer >= {lo}, got {_show(v)}")
    if v > MAX_CHIPS:
        raise Error(f"{name} is too large (at most {MAX_CHIPS:,}: a cluster has fewer GPUs), got {_show(v)}")


def ib_bytes_per_s(chip: "str | Chip") -> float:
    """One GPU's share of its domain's InfiniBand egress, one way: node egress / GPUs per domain."""
    c = _gpu(chip)
    return c.node_egress_bytes_per_s / c.nvlink_domain


# --- fat trees -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class FatTree:
    """A two-level InfiniBand fat tree of NVLink domains (nodes), as in NVIDIA's DGX SuperPod.

    Nodes hang off leaf switches in scalable units of `nodes_per_leaf`; every leaf connects to
    every spine. `oversubscription` is leaf downlink / uplink bandwidth (1 = full bisection).
    """

    chip: str
    nodes: int
    gpus_per_node: int
    nodes_per_leaf: int
    leaf_switches: int
    spine_switches: int
    node_egress_bytes_per_s: float
    oversubscription: float = 1.0

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def bisection_bytes_per_s(self) -> float:
        """Bytes/s one half of the nodes can send the other half, one way (chapter 2b).

        Half the nodes each push their egress across the cut: (nodes / 2) x node egress, divided by
        the oversubscription of the leaf uplinks when the halves sit under different leaves.
        """
        cross = (self.nodes / 2) * self.node_egress_bytes_per_s
        return cross if self.nodes <= self.nodes_per_leaf else cross / self.oversubscription


def superpod(chip: "str | Chip" = "h100", *, nodes: int | None = None, oversubscription: float = 1.0) -> FatTree:
    """A fat tree shaped like the DGX H100 SuperPod reference design (chapter 2b).

    Defaults: the reference design's 128 nodes in scalable units of 32, with 8 leaf switches per
    unit and 16 spines for the full pod (spines scale with the number of units). `chip` sets the
    node: its GPUs per NVLink domain and its InfiniBand egress.
    """
    c = _gpu(chip)
    pod = load("hardware_specs")["gpu_networking"]["dgx_h100_superpod_1024"]
    n = pod["nodes"] if nodes is None else nodes
    _count("nodes", n)
    if number("oversubscription", oversubscription, maximum=1e3) < 1:
        raise Error(f"oversubscription must be a number >= 1 (1 = full bisection), got {oversubscription!r}")
    per_leaf = pod["nodes_per_su"]
    units_ = math.ceil(n / per_leaf)
    spines = 0 if units_ == 1 else math.ceil(pod["spine_switches"] * units_ / pod["sus"])
    return FatTree(chip=c.name, nodes=n, gpus_per_node=c.nvlink_domain, nodes_per_leaf=per_leaf,
                   leaf_switches=units_ * pod["leaf_switches_per_su"], spine_switches=spines,
                   node_egress_bytes_per_s=c.node_egress_bytes_per_s, oversubscription=float(oversubscription))


def nvlink_bisection_bytes_per_s(chip: "str | Chip") -> float:
    """Bisection bandwidth of one NVLink domain, one way: half its GPUs x NVLink egress.

    The NVSwitches carry every GPU's full egress, so any half of the domain sends the other half
    (g / 2) x W_nvl (1.8 TB/s for 8 H100s; the "3.6 TB/s" often quoted adds both directions).
    """
    c = _gpu(chip)
    return c.nvlink_domain / 2 * c.ici_one_way_bytes_per_s


# --- collectives in one NVLink domain ----------------------------------------------------------------

def _in_domain(c: Chip, gpus: int | None) -> int:
    n = c.nvlink_domain if gpus is None else gpus
    _count("gpus", n)
    if n > c.nvlink_domain:
        raise Error(f"{n} GPUs do not fit one {c.name} NVLink domain of {c.nvlink_domain}; "
                    f"use hierarchical_all_reduce for several domains")
    return n


def all_reduce_seconds(chip: "str | Chip", bytes_: float, *, gpus: int | None = None, sharp: bool = False) -> float:
    """AllReduce of a V-byte array over `gpus` GPUs of one NVLink domain (chapter 2b).

    Ring or tree in the GPUs: 2 V (N-1) / (N W), every byte leaves each GPU about twice. With
    in-network reduction (NVLink SHARP, NVLS) the switch adds the contributions, so each GPU sends
    its V once and receives the sum once: V / W, a speedup of 2 (N-1) / N.
    """
    _require_flag('sharp', sharp)
    c = _gpu(chip)
    require_non_negative(bytes_=bytes_)
    n = _in_domain(c, gpus)
    if n == 1:
        return 0.0
    w = c.ici_one_way_bytes_per_s
    return bytes_ / w if sharp else 2 * bytes_ * (n - 1) / (n * w)


def all_gather_seconds(chip: "str | Chip", bytes_: float, *, gpus: int | None = None) -> float:
    """AllGather (or ReduceScatter) of V bytes in one NVLink domain: V (N-1) / (N W) (chapter 2b)."""
    c = _gpu(chip)
    require_non_negative(bytes_=bytes_)
    n = _in_domain(c, gpus)
    return bytes_ * (n - 1) / (n * c.ici_one_way_bytes_per_s)


def all_to_all_seconds(chip: "str | Chip", bytes_: float, *, gpus: int) -> float:
    """AllToAll of V bytes (all shards together) over `gpus` GPUs, in one domain or across several.

    Each GPU holds V / N and sends V / N^2 to each of the other N - 1. In one domain that is
    V (N-1) / (N^2 W_nvl). Across M domains of g GPUs (N = M g), V (N - g) / N^2 per GPU crosses
    InfiniBand at W_ib while V (g - 1) / N^2 stays on NVLink; the two overlap, so the time is the
    larger (chapter 2b).
    """
    c = _gpu(chip)
    require_non_negative(bytes_=bytes_)
    _count("gpus", gpus)
    g = c.nvlink_domain
    if gpus <= g:
        return bytes_ * (gpus - 1) / (gpus**2 * c.ici_one_way_bytes_per_s)
    if gpus % g:
        raise Error(f"{gpus} GPUs are not whole {g}-GPU NVLink domains; use a multiple of {g}")
    nvl = bytes_ * (g - 1) / (gpus**2 * c.ici_one_way_bytes_per_s)
    ib = bytes_ * (gpus - g) / (gpus**2 * ib_bytes_per_s(c))
    return max(nvl, ib)


# --- hierarchical collectives across domains ---------------------------------------------------------

@dataclass(frozen=True)
class Stage:
    """One step of a hierarchical collective: which network, bytes each GPU sends, seconds."""

    name: str
    network: str
    bytes_per_gpu: float
    seconds: float


@dataclass(frozen=True)
class HierarchicalCollective:
    """A collective over `nodes` NVLink domains of `gpus_per_node` GPUs, as its stages."""

    kind: str
    chip: str
    nodes: int
    gpus_per_node: int
    array_bytes: float
    stages: tuple[Stage, ...]

    @property
    def seconds(self) -> float:
        """Stages back to back (no overlap)."""
        return sum(s.seconds for s in self.stages)

    @property
    def overlapped_seconds(self) -> float:
        """Stages fully pipelined: the slowest one (what `collectives.cost` reports)."""
        return max((s.seconds for s in self.stages), default=0.0)


def _hier_setup(chip, bytes_, nodes):
    c = _gpu(chip)
    require_non_negative(bytes_=bytes_)
    _count("nodes", nodes)
    return c, c.nvlink_domain, c.ici_one_way_bytes_per_s, ib_bytes_per_s(c)


def hierarchical_all_reduce(chip: "str | Chip", bytes_: float, *, nodes: int, sharp: bool = False,
                            ib_sharp: bool = False) -> HierarchicalCollective:
    """AllReduce of V bytes over `nodes` whole NVLink domains, in three stages (chapter 2b).

    1. ReduceScatter in each domain: V (g-1) / (g W_nvl); each GPU keeps a V/g shard.
    2. AllReduce of the V/g shards across domains, one GPU per domain per shard, each on its own
       NIC: 2 (V/g)(M-1) / (M W_ib) (or (V/g) / W_ib with SHARP in the InfiniBand switches).
    3. AllGather in each domain: V (g-1) / (g W_nvl).

    With `sharp`, stages 1 and 3 become one NVLink SHARP AllReduce in the domain (V / W_nvl),
    split evenly between them.
    """
    _require_flag('sharp', sharp)
    _require_flag('ib_sharp', ib_sharp)
    c, g, w_nvl, w_ib = _hier_setup(chip, bytes_, nodes)
    v = float(bytes_)
    shard = v / g
    if sharp:
        rs = ag = v / w_nvl / 2
    else:
        rs = ag = v * (g - 1) / (g * w_nvl)
    if nodes == 1:
        cross = 0.0
    else:
        cross = shard / w_ib if ib_sharp else 2 * shard * (nodes - 1) / (nodes * w_ib)
    cross_bytes = shard if ib_sharp else 2 * shard * (nodes - 1) / nodes
    stages = (Stage("ReduceScatter in node", "nvlink", v * (g - 1) / g, rs),
              Stage("AllReduce across nodes", "infiniband", cross_bytes if nodes > 1 else 0.0, cross),
              Stage("AllGather in node", "nvlink", v * (g - 1) / g, ag))
    return HierarchicalCollective("all-reduce", c.name, nodes, g, v, stages)


def hierarchical_all_gather(chip: "str | Chip", bytes_: float, *, nodes: int) -> HierarchicalCollective:
    """AllGather of V bytes (gathered size) over `nodes` NVLink domains (chapter 2b).

    1. Across domains, GPUs of the same local rank gather their V/g slab: (V/g)(M-1) / (M W_ib).
    2. In each domain, the GPUs gather the slabs: V (g-1) / (g W_nvl).

    A ReduceScatter is the same two stages in reverse order and costs the same.
    """
    c, g, w_nvl, w_ib = _hier_setup(chip, bytes_, nodes)
    v = float(bytes_)
    cross = (v / g) * (nodes - 1) / (nodes * w_ib)
    stages = (Stage("AllGather across nodes", "infiniband", (v / g) * (nodes - 1) / nodes, cross),
              Stage("AllGather in node", "nvlink", v * (g - 1) / g, v * (g - 1) / (g * w_nvl)))
    return HierarchicalCollective("all-gather", c.name, nodes, g, v, stages)


def flat_ring_all_reduce_seconds(chip: "str | Chip", bytes_: float, *, nodes: int, rings: int | None = None) -> float:
    """AllReduce as flat rings over all N = M g GPUs, each ring through one NIC per node (chapter 2b).

    A ring through every GPU crosses InfiniBand once at each node boundary; its slowest link is
    that NIC, so a ring carrying a share V_r of the array takes 2 V_r (N-1) / (N W_ib). NCCL runs
    one ring per NIC (`rings` = g, the default), each with V / g: T = 2 V (N-1) / (N g W_ib), the
    node's whole egress, about the InfiniBand stage of the hierarchical form; its cost is latency,
    2 (N-1) ring steps instead of 2 (M-1). `rings=1` is a single ring through one NIC per node,
    T = 2 V (N-1) / (N W_ib), which NCCL never runs: g times slower.
    """
    c, g, _, w_ib = _hier_setup(chip, bytes_, nodes)
    r = g if rings is None else rings
    _count("rings", r)
    if r > g:
        raise Error(f"rings must be at most the {g} NICs of a {c.name} node (one ring per NIC), got {r}")
    n = nodes * g
    if nodes == 1:
        return all_reduce_seconds(c, bytes_)
    return 2 * bytes_ * (n - 1) / (n * r * w_ib)


# --- parallelism rooflines on GPU clusters -------------------------------------------------------------

def pipeline_min_layers_per_stage(chip: "str | Chip", *, d_model: int, link: str = "infiniband",
                                  activation_dtype: str = "bf16") -> float:
    """Fewest layers per pipeline stage for which sending activations hides behind compute.

    Per token a stage sends D b bytes of activations to the next (at W of `link`) and computes
    2 x 12 D^2 FLOPs per layer in the forward pass (a standard layer, P_layer = 12 D^2; the
    backward pass doubles both), so L_stage >= b C / (24 D W). Chapter 2b.
    """
    from .training import link_bytes_per_s

    c = _gpu(chip)
    _count("d_model", d_model)
    w = link_bytes_per_s(c, link)
    return units.dtype_bytes(activation_dtype, "activation_dtype") * c.peak_flops_per_s("bf16") / (24 * d_model * w)


@dataclass(frozen=True)
class ParallelismLimits:
    """Chapter 2b's table row for one GPU: where each parallelism stops hiding its communication.

    Batches are tokens per GPU per step (bf16 gradients); widths are the expert's F_e. The TP degree
    and the expert widths are the forward-pass bounds (the forward pass must hide its own
    collectives; the backward pass, with twice the FLOPs, hides them more easily). Link rates
    are the full ones (NCCL's usable share, 0.8 of NVLink, would raise the NVLink bounds by 1/0.8).
    """

    chip: str
    dp_batch_in_node: float
    dp_batch_across_nodes: float
    dp_batch_across_nodes_tp_in_node: float
    tp_max_degree_in_node: float
    ep_min_expert_width_in_node: float
    ep_min_expert_width_across_nodes: float
    pp_min_layers_per_stage_across_nodes: float


def parallelism_limits(chip: "str | Chip", *, d_model: int) -> ParallelismLimits:
    """DP/FSDP critical batches, TP degree, EP expert width and PP stage depth on one GPU type.

    - DP/FSDP in a node: B > C / W_nvl tokens per GPU (chapter 5's rule, large-N limit).
    - across nodes, every GPU of a node in the data-parallel group: the collective runs
      hierarchically, an NVLink stage (every byte, B > C / W_nvl) and an InfiniBand stage (1/g of
      the bytes per GPU, B > C / (g W_ib)); pipelined, the slower stage sets the bound:
      B > max(C / W_nvl, C / (g W_ib)). On H100 the InfiniBand stage is slower (g W_ib = 400 GB/s
      < 450 GB/s); on GB200 NVL72 the NVLink stage is (72 x 50 GB/s = 3.6 TB/s > 900 GB/s).
    - with g-way TP in the node and DP across nodes: each GPU holds 1/g of the weights and the
      group has one GPU per node: B > C / (g W_ib) again, now per GPU of the TP group.
    - TP in a node: tp <= 6 D W_nvl / (b C) for a standard layer (`collectives.tp_forward_max_degree`:
      the forward pass's two AllReduces of the D-wide activation hide behind its own 24 D^2 / tp
      FLOPs per token; averaging with the backward pass would give 9 D W / (b C), a degree at
      which the forward pass's AllReduces no longer hide).
    - EP: F_e >= (b / 3) C / W (`collectives.ep_forward_min_expert_width`: the forward pass's
      dispatch and combine against its gated expert's 6 k D F_e FLOPs), W = W_nvl in a node and
      one GPU's InfiniBand share across nodes.
    - PP across nodes: `pipeline_min_layers_per_stage`.

    Chapter 2b.
    """
    from .collectives import ep_forward_min_expert_width, tp_forward_max_degree
    from .training import rule_of_thumb_batch_per_chip

    c = _gpu(chip)
    _count("d_model", d_model)
    g = c.nvlink_domain
    b = units.dtype_bytes("bf16")
    peak = c.peak_flops_per_s("bf16")
    return ParallelismLimits(
        chip=c.name,
        dp_batch_in_node=rule_of_thumb_batch_per_chip(c, link="nvlink"),
        dp_batch_across_nodes=max(rule_of_thumb_batch_per_chip(c, link="nvlink"),
                                  rule_of_thumb_batch_per_chip(c, link="infiniband", chips_sharing=g)),
        dp_batch_across_nodes_tp_in_node=rule_of_thumb_batch_per_chip(c, link="infiniband", tp=g),
        tp_max_degree_in_node=tp_forward_max_degree(d_model=d_model, flops_per_s=peak,
                                                    link_bytes_per_s=c.ici_one_way_bytes_per_s, bytes_per_element=b),
        ep_min_expert_width_in_node=ep_forward_min_expert_width(flops_per_s=peak, link_bytes_per_s=c.ici_one_way_bytes_per_s,
                                                                bytes_per_element=b),
        ep_min_expert_width_across_nodes=ep_forward_min_expert_width(flops_per_s=peak, link_bytes_per_s=ib_bytes_per_s(c),
                                                                     bytes_per_element=b),
        pp_min_layers_per_stage_across_nodes=pipeline_min_layers_per_stage(c, d_model=d_model),
    )
