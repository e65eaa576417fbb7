"""Problems of chapter 2b (GPUs in earnest): keys computed with hardware, memory_levels, gpu_network."""
from __future__ import annotations

import math

from ... import collectives
from ... import gpu_network as gn
from ... import memory_levels as ml
from ...hardware import chip, dense_flops_per_s
from ..problem import problem

_INT = 1e-6  # integer answers: checked exactly


@problem("2g.1", title="A datasheet peak with sparsity", unit="ms", flops=2 * 8192 * 8192 * 65536,
         chip_name="h100", slips={2: "off by 2: the datasheet's figure assumes 2:4 sparsity; a dense matmul gets half"},
         hint="a dense matmul runs at half the 'with sparsity' figure")
def sparse_sheet_matmul(flops, chip_name):
    sheet = 2 * chip(chip_name).peak_flops_per_s("bf16")  # the spec sheet quotes the sparse rate
    return flops / dense_flops_per_s(sheet) / 1e-3


@problem("2g.2", title="Tensor cores in an NVL72 rack", unit="", rel_tol=_INT, chip_name="gb200",
         slips={72: "that is one GPU's count: the rack holds a whole NVLink domain of GPUs"},
         hint="one tensor core per SM quarter, on every GPU of the NVLink domain")
def tensor_cores_rack(chip_name):
    c = chip(chip_name)
    return int(c.micro.matrix_units_per_chip * c.nvlink_domain)


@problem("2g.3", title="Which level binds?", unit="ms", chip_name="h100", flops=1e12, hbm_bytes=2e9,
         smem_bytes=5e10, hint="time = the largest of compute, HBM traffic and SMEM traffic")
def which_level(chip_name, flops, hbm_bytes, smem_bytes):
    c = chip(chip_name)
    times = [ml.roofline(c, flops=flops, bytes_=hbm_bytes, level="hbm").seconds,
             ml.roofline(c, flops=flops, bytes_=smem_bytes, level="smem").seconds]
    return max(times) / 1e-3


@problem("2g.4", title="A square tile in fp8 on a B200", unit="", rel_tol=_INT, chip_name="b200", dtype="fp8",
         hint="a square tile of side T reaches T / b FLOPs per HBM byte; b = 1 byte in fp8")
def fp8_tile(chip_name, dtype):
    return int(ml.min_square_tile(chip_name, dtype))


@problem("2g.5", title="Loading a checkpoint into an H200 node", unit="s", bytes_=810e9, chip_name="h200", gpus=8,
         slips={8: "each GPU has its own PCIe link; the copies run in parallel"},
         hint="each GPU copies its eighth over its own link, one direction")
def checkpoint_load(bytes_, chip_name, gpus):
    return ml.host_transfer_seconds(chip_name, bytes_, chips=gpus)


@problem("2g.6", title="How much can a GB200 offload?", unit="GB", chip_name="gb200", params=8e9,
         tokens=16384, slips={2: "off by 2: the host link carries the two directions at the same time, so the "
                                 "copy out and the copy back overlap"},
         hint="the step lasts 6 P tokens / C at peak; in that time the link moves W_host bytes each way")
def gb200_offload_limit(chip_name, params, tokens):
    # the step's compute time, 6 P D / C, times one direction of the host link (full duplex)
    c = chip(chip_name)
    step_seconds = 6 * params * tokens / c.peak_flops_per_s("bf16")
    return step_seconds * ml.level_bytes_per_s(c, "host") / 1e9


@problem("2g.7", title="InfiniBand nodes to match an NVL72 rack", unit="", rel_tol=_INT, chip_name="gb200",
         node_chip="h100", slips={2: "off by 2: bisection counts half the nodes sending across the cut"},
         hint="rack bisection = (GPUs / 2) x NVLink egress; a full fat tree of n nodes gives (n / 2) x node egress")
def nodes_to_match_nvl72(chip_name, node_chip):
    # (n / 2) x node egress >= rack bisection  ->  n = 2 x bisection / node egress, whole nodes
    rack = gn.nvlink_bisection_bytes_per_s(chip_name)
    return math.ceil(2 * rack / chip(node_chip).node_egress_bytes_per_s - 1e-9)


@problem("2g.8", title="How far to oversubscribe", unit="", chip_name="h100", nodes=256, target_bytes_per_s=40e12,
         hint="bisection = (nodes / 2) x node egress / oversubscription; solve for the oversubscription")
def max_oversubscription(chip_name, nodes, target_bytes_per_s):
    full = gn.superpod(chip_name, nodes=nodes).bisection_bytes_per_s
    ratio = full / target_bytes_per_s
    # the package's fat tree at that ratio gives back the target
    assert math.isclose(gn.superpod(chip_name, nodes=nodes, oversubscription=ratio).bisection_bytes_per_s,
                        target_bytes_per_s)
    return ratio


@problem("2g.9", title="What SHARP saves", unit="ms", bytes_=4e9, chip_name="b200",
         hint="ring: 2 V (N-1) / (N W); with the switch reducing: V / W")
def sharp_saving(bytes_, chip_name):
    return (gn.all_reduce_seconds(chip_name, bytes_) - gn.all_reduce_seconds(chip_name, bytes_, sharp=True)) / 1e-3


@problem("2g.10", title="The largest model a 100 ms AllReduce allows", unit="param", chip_name="h100", nodes=32,
         budget_seconds=0.1,
         slips={2: "off by 2: bf16 gradients are 2 bytes per parameter"},
         hint="the hierarchical AllReduce's time is proportional to its bytes: time one byte, then divide")
def largest_model_for_allreduce(chip_name, nodes, budget_seconds):
    # every stage is bandwidth-bound, so the time is linear in the bytes: scale a 1-byte array
    per_byte = gn.hierarchical_all_reduce(chip_name, 1.0, nodes=nodes).seconds
    return budget_seconds / per_byte / 2  # bf16 gradients: 2 bytes per parameter


@problem("2g.11", title="NCCL's rings or hierarchical?", unit="", bytes_=1e9, chip_name="b200", nodes=64,
         # 4.2255 = (single ring / hierarchical) / key on these inputs: 5.814 / 1.376
         slips={4.2255: "that compares with a single ring through one NIC per node, which NCCL never runs: "
                             "it runs one ring per NIC, each carrying an eighth of the array"},
         hint="NCCL's flat rings: each GPU sends 2 (V/8)(N-1)/N through its own NIC; hierarchical: "
              "ReduceScatter and AllGather on NVLink plus an AllReduce of V/8 across nodes")
def hierarchical_over_nccl_rings(bytes_, chip_name, nodes):
    # NCCL runs one flat ring per NIC (rings = GPUs per node), not one ring through a single NIC
    return gn.hierarchical_all_reduce(chip_name, bytes_, nodes=nodes).seconds / \
        gn.flat_ring_all_reduce_seconds(chip_name, bytes_, nodes=nodes)


@problem("2g.12", title="AllToAll across four nodes", unit="us", bytes_=2e9, chip_name="h100", gpus=32,
         hint="each GPU sends V (N - g) / N^2 through its NIC")
def all_to_all_nodes(bytes_, chip_name, gpus):
    return gn.all_to_all_seconds(chip_name, bytes_, gpus=gpus) / 1e-6


@problem("2g.13", title="Data parallelism across NVL72 racks", unit="token", chip_name="gb200",
         slips={18: "that is one GPU per rack on InfiniBand: whole racks join the group, so only 1/72 of the "
                    "bytes cross InfiniBand per GPU",
                0.25: "that is the InfiniBand stage alone; every byte also crosses NVLink inside the rack, "
                      "and that stage is the slower one"})
def nvl72_dp_batch(chip_name):
    return gn.parallelism_limits(chip_name, d_model=8192).dp_batch_across_nodes


@problem("2g.14", title="The widest tensor parallelism", unit="", rel_tol=_INT, chip_name="h100", d_model=4096,
         slips={2: "8 follows from 9 D W / (b C), which averages the forward and backward passes; the forward "
                   "pass must hide its own AllReduces: 6 D W / (b C)"},
         hint="tp <= 6 D W / (b C) with W the NVLink egress; then the largest power of two below it")
def widest_tp(chip_name, d_model):
    c = chip(chip_name)
    limit = collectives.tp_forward_max_degree(d_model=d_model, flops_per_s=c.peak_flops_per_s("bf16"),
                                              link_bytes_per_s=c.ici_one_way_bytes_per_s)
    return int(2 ** math.floor(math.log2(limit)))


@problem("2g.15", title="Experts across B200 nodes", unit="", chip_name="b200",
         slips={2 / 3: "(2b/9) C/W averages the forward and backward passes; the forward pass must hide its "
                       "own two AllToAlls: (b/3) C/W"},
         hint="F_e >= (b / 3) C / W with W the InfiniBand share of one GPU")
def expert_width_nodes(chip_name):
    c = chip(chip_name)
    return collectives.ep_forward_min_expert_width(flops_per_s=c.peak_flops_per_s("bf16"),
                                                   link_bytes_per_s=gn.ib_bytes_per_s(c))
