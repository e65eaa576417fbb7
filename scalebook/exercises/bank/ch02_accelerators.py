"""Problems of chapter 2 (Accelerators: TPUs and GPUs): keys computed from the spec table."""
from __future__ import annotations

import math

from ... import topology, units
from ..._data import load
from ...hardware import chip
from ..problem import problem


def _tpu_data(name: str) -> dict:
    return load("hardware_specs")["tpu"][chip(name).display_name]


def _gpu_data(key: str) -> dict:
    return load("hardware_specs")["gpu"][key]


def mxu_size(name: str) -> int:
    """Side of one matrix unit of a TPU (128 up to v5p, 256 from v6e), from the spec data."""
    return int(_tpu_data(name)["mxu_shape"].split("x")[0])


@problem("2.1", title="Reading every weight once", unit="ms",
         params=27e9, dtype="bf16", chip_name="tpu-v5p",
         hint="bytes = parameters x bytes per parameter; time = bytes / HBM bandwidth")
def weights_read_time(params, dtype, chip_name):
    return params * units.dtype_bytes(dtype) / chip(chip_name).hbm_bytes_per_s / 1e-3


@problem("2.2", title="The clock behind the v4's peak", unit="", chip_name="tpu-v4",
         slips={2: "off by 2: each cell's multiply-add is 2 FLOPs per cycle",
                0.5: "off by 2: a v4 chip has two TensorCores, each with its own MXUs"},
         hint="peak = MXUs per chip x 2 x side^2 FLOPs per cycle x clock; solve for the clock")
def v4_clock(chip_name):
    # peak = cores x MXUs per core x 2 n^2 x clock  ->  clock = peak / (MXUs x 2 n^2)
    c = chip(chip_name)
    n = mxu_size(chip_name)
    return c.peak_flops_per_s("bf16") / (c.micro.matrix_units_per_chip * 2 * n * n) / 1e9


@problem("2.3", title="Padding on a 256-wide array", unit="", chip_name="tpu-v6e", d_in=320, d_out=640,
         hint="pad each dimension up to the next multiple of the array side")
def padding_fraction(chip_name, d_in, d_out):
    n = mxu_size(chip_name)
    return (d_in * d_out) / (n * math.ceil(d_in / n) * n * math.ceil(d_out / n))


@problem("2.4", title="Latency of the longest route in a slice", unit="us", chip_name="tpu-v5e", shape="8x16",
         hint="hops per axis: size // 2 with a wraparound, size - 1 without; 1 us per hop")
def longest_route_latency(chip_name, shape):
    topo = topology.slice(chip_name, shape)
    hops = sum(a.size // 2 if a.wraparound else a.size - 1 for a in topo.axes)
    return hops * topo.hop_latency_seconds / 1e-6


@problem("2.5", title="A copy to the next chip", unit="ms", bytes_=3.6e9, chip_name="tpu-v5e",
         slips={2: "off by 2: one link carries the one-way figure in each direction; the 'bidirectional' "
                   "figure adds both directions together"})
def neighbour_copy(bytes_, chip_name):
    return bytes_ / chip(chip_name).ici_one_way_bytes_per_s / 1e-3


@problem("2.6", title="Filling the chips of a host over PCIe", unit="s", bytes_per_chip=60e9,
         chip_name="tpu-v5p", chips=4,
         hint="every chip has its own PCIe link, and the copies run at the same time")
def host_fill(bytes_per_chip, chip_name):
    return bytes_per_chip / chip(chip_name).pcie_bytes_per_s


@problem("2.7", title="From one slice to another over DCN", unit="ms", bytes_=40e9, chip_name="tpu-v5p",
         shape="8x8x8", chips=512,
         hint="the array is spread evenly: each chip sends its share through its share of the host NIC")
def slice_to_slice(bytes_, chip_name, shape):
    topo = topology.slice(chip_name, shape)
    return bytes_ / topo.num_chips / topo.chip.dcn_bytes_per_s / 1e-3


@problem("2.8", title="Out of an H100 over NVLink", unit="ms", bytes_=13.5e9, chip_name="h100",
         slips={2: "off by 2: '900 GB/s' counts both directions; an H100 sends 450 GB/s one way"})
def nvlink_send(bytes_, chip_name):
    return bytes_ / chip(chip_name).ici_one_way_bytes_per_s / 1e-3


@problem("2.9", title="Out of the node over InfiniBand", unit="ms", bytes_=13.5e9, chip_name="h100",
         hint="each GPU has its own NIC: node egress / GPUs per node")
def infiniband_send(bytes_, chip_name):
    c = chip(chip_name)
    return bytes_ / (c.node_egress_bytes_per_s / c.nvlink_domain) / 1e-3


@problem("2.10", title="Chips to hold the weights", unit="chip", params=405e9, dtype="bf16", chip_name="tpu-v5e",
         hint="round up: a fraction of a chip is a whole chip")
def chips_for_weights(params, dtype, chip_name):
    return topology.chips_to_hold(params * units.dtype_bytes(dtype), chip_name)


@problem("2.11", title="A rack-wide weight read", unit="ms", params=1.8e12, dtype="fp8", chip_name="gb200",
         chips=72, hint="each GPU reads only its own share of the weights, all at once")
def rack_weight_read(params, dtype, chip_name):
    c = chip(chip_name)
    return params * units.dtype_bytes(dtype) / c.nvlink_domain / c.hbm_bytes_per_s / 1e-3


@problem("2.12", title="Tensor-core peak from the parts list", unit="TFLOP/s", gpu="B200",
         hint="SMs x tensor cores per SM x FLOPs per cycle per tensor core x clock")
def tensor_core_peak(gpu):
    d = _gpu_data(gpu)
    cores_per_sm = _gpu_data("H100")["subpartitions_per_sm"]  # one tensor core per SM quarter
    return d["sms"] * cores_per_sm * d["tc_flops_per_cycle_est"] * d["clock_hz_estimates"]["footnote_tc_calc"] / 1e12


@problem("2.13", title="MXUs on a v5p chip", unit="", rel_tol=1e-6, chip_name="tpu-v5p",
         hint="megacore: count the MXUs of both TensorCores")
def v5p_mxus(chip_name):
    return int(chip(chip_name).micro.matrix_units_per_chip)


@problem("2.14", title="A kernel that lives in VMEM", unit="us", chip_name="tpu-v5e", flops=2e10,
         vmem_bytes=2e9, hbm_bytes=5e7, hint="time = the largest of compute, VMEM traffic and HBM traffic")
def vmem_kernel(chip_name, flops, vmem_bytes, hbm_bytes):
    from ... import memory_levels as ml

    return max(ml.roofline(chip_name, flops=flops, bytes_=vmem_bytes, level="vmem").seconds,
               ml.roofline(chip_name, flops=flops, bytes_=hbm_bytes, level="hbm").seconds) / 1e-6


@problem("2.15", title="Checkpointing a host's shard", unit="s", bytes_=40e9, chip_name="tpu-v5p", chips=4,
         hint="each chip copies its share over its own PCIe link")
def host_checkpoint(bytes_, chip_name):
    from ... import memory_levels as ml

    return ml.host_transfer_seconds(chip_name, bytes_, chips=topology.slice(chip_name, "2x2x1").num_chips)


@problem("2.16", title="Corner to corner on a full pod", unit="", rel_tol=1e-6, chip_name="tpu-v5e",
         hint="with a wraparound, one step back from 0 reaches the last chip of the axis")
def corner_hops(chip_name):
    topo = topology.slice(chip_name, chip(chip_name).pod_topology)
    # from index 0 to the last index of an axis: one hop back over the wraparound, or the whole line
    return int(sum(1 if a.wraparound else a.size - 1 for a in topo.axes))


@problem("2.17", title="How much VMEM traffic the MXUs can hide", unit="GB", chip_name="tpu-v5e", flops=2e10,
         hint="the MXUs set the time while VMEM bytes <= FLOPs / (VMEM critical intensity)")
def vmem_budget(chip_name, flops):
    from ... import memory_levels as ml

    # the reversed question of 2.14: the largest VMEM traffic whose time does not exceed the compute time
    return flops / ml.critical_intensity(chip_name, "vmem") / 1e9


@problem("2.18", title="One v5p or four v5e for a weight read?", unit="", params=27e9, dtype="bf16",
         big="tpu-v5p", small="tpu-v5e", small_chips=4,
         hint="each v5e reads a quarter of the weights from its own HBM, all at once: time = share / HBM bandwidth")
def v5p_or_four_v5e(params, dtype, big, small, small_chips):
    one = params * units.dtype_bytes(dtype) / chip(big).hbm_bytes_per_s
    four = params * units.dtype_bytes(dtype) / small_chips / chip(small).hbm_bytes_per_s
    if params * units.dtype_bytes(dtype) / small_chips > chip(small).hbm_bytes:
        raise ValueError("the quarter must fit in a v5e's HBM for the question to hold")
    return one / four


@problem("2.19", title="The largest model a v5e slice decodes in 10 ms", unit="", chip_name="tpu-v5e", shape="4x4",
         seconds=0.01, dtype="bf16",
         hint="two limits: the weights must fit in the slice's HBM, and each chip must read its share within the time")
def largest_model_v5e(chip_name, shape, seconds, dtype):
    topo = topology.slice(chip_name, shape)
    c = topo.chip
    by_time = seconds * c.hbm_bytes_per_s * topo.num_chips / units.dtype_bytes(dtype)
    by_memory = c.hbm_bytes * topo.num_chips / units.dtype_bytes(dtype)
    return min(by_time, by_memory) / 1e9  # billions of parameters


@problem("2.20", title="How many chips to cross DCN in time", unit="chip", bytes_=40e9, chip_name="tpu-v5p",
         seconds=0.04, hint="each chip sends its share through its share of its host's NIC: chips >= bytes / (time x per-chip DCN)")
def chips_for_dcn(bytes_, chip_name, seconds):
    # the reverse of 2.7: the fewest chips whose DCN shares move the array within the time
    need = bytes_ / (seconds * chip(chip_name).dcn_bytes_per_s)
    return math.ceil(need - 1e-9)
