"""Answer keys of chapter 9 (profiling): HLO lines, memory analyses, parsed profiles, rooflines.

Problems that show an excerpt (an HLO line, a trace) keep it here, so that the page prints
exactly what the key reads: `HLO` holds the lines, `trace_9_4` and `trace_9_12` build the traces
(Chrome trace events, microseconds) that the page parses with `profile.parse_trace`.
"""
from __future__ import annotations

from ... import collectives, profile, roofline, topology, xla
from ...hardware import chip as _chip
from ..problem import problem

#: The mesh the HLO excerpts were compiled for (jax_training's layout).
MESH = {"fsdp": 4, "tp": 2}

#: Problem 9.6's profile: the bytes each device sends in the inserted AllGather of h [4096, 8192] bf16
#: over 8 devices (the page states it; the key solves it for F).
SENT_9_6 = 4096 * 8192 * 2 * 7 // 8

#: HLO lines shown on the problem page.
HLO = {
    "9.1": ("%all-gather.7 = f32[512,4,64]{2,1,0} all-gather(f32[128,4,64]{2,1,0} %param.13), channel_id=3, "
            "replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}, use_global_device_ids=true"),
    "9.2": ("%all-reduce.5 = f32[4,64,256]{2,1,0} all-reduce(f32[4,64,256]{2,1,0} %fusion.3), channel_id=9, "
            "replica_groups=[4,2]<=[8], use_global_device_ids=true, to_apply=%add"),
}


def _op(name: str, device: int, start_ms: float, end_ms: float, run: int = 1) -> dict:
    return {"ph": "X", "pid": 1, "tid": 10 + device, "ts": start_ms * 1e3, "dur": (end_ms - start_ms) * 1e3,
            "name": name, "args": {"hlo_op": name, "hlo_module": "jit_step", "device_ordinal": str(device),
                                   "run_id": str(run)}}


#: 9.4 / 9.5: four devices, one step; (matmul, fusion, all-gather, all-reduce) spans in ms.
SPANS_9_4 = {
    0: ((0, 30), (30, 38), (38, 50), (50, 70)),
    1: ((0, 34), (34, 40), (40, 50), (50, 72)),
    2: ((2, 44), (44, 52), (52, 56), (56, 72)),
    3: ((0, 28), (28, 33), (33, 50), (50, 66)),
}


def trace_9_4() -> dict:
    """The trace of problems 9.4 and 9.5."""
    names = ("ynn_fusion.3", "add_multiply_fusion", "all-gather.1", "all-reduce.2")
    return {"traceEvents": [_op(n, d, a, b) for d, spans in SPANS_9_4.items() for n, (a, b) in zip(names, spans)]}


def trace_9_12() -> dict:
    """The trace of problem 9.12: one device whose AllGather starts while a matmul still runs."""
    return {"traceEvents": [_op("ynn_fusion.1", 0, 0, 6), _op("all-gather.4", 0, 2, 10),
                            _op("exp_fusion", 0, 10, 11), _op("all-reduce.1", 0, 11, 14)]}


@problem("9.1", title="Bytes behind an AllGather line", unit="kB", line=HLO["9.1"], mesh=MESH,
         slips={0.25: "a quarter of the key: V is the gathered output, f32[512,4,64], not the operand shard",
                7 / 6: "too large by 7/6: the replica groups have 4 devices (2 groups over fsdp), not all 8",
                2 / 3: "too small by 2/3: [2,4]<=... means 2 groups of 4 devices, so N = 4"},
         hint="V = bytes of the result shape; each device sends V (N - 1) / N; read N from the replica groups")
def allgather_line(line, mesh):
    (c,) = xla.collectives_in_hlo(line, mesh)
    return c.bytes_per_device / 1e3


@problem("9.2", title="Which axis an AllReduce crosses", unit="kB", line=HLO["9.2"], mesh=MESH,
         slips={1.5: "too large by 1.5: [4,2]<=[8] is 4 groups of 2 neighbours (the tp axis), so N = 2, not 4",
                1.75: "too large by 1.75: the groups have 2 devices, not all 8"},
         hint="an AllReduce sends 2 V (N - 1) / N per device; [4,2]<=[8] lists devices 0..7 as 4 groups of 2")
def allreduce_line(line, mesh):
    (c,) = xla.collectives_in_hlo(line, mesh)
    return c.bytes_per_device / 1e3


@problem("9.3", title="How far the temporaries may grow", unit="GB", argument_bytes=3.52e9, output_bytes=3.49e9,
         alias_bytes=3.48e9, chip_name="tpu-v5e",
         slips={(16 - 3.52 - 3.49) / (16 - 3.52 - 3.49 + 3.48): "too small: outputs aliased to donated inputs reuse "
                                                               "their memory; subtract the aliased bytes",
                (16 - 0.01) / (16 - 3.52 - 3.49 + 3.48): "too large: the arguments stay resident through the step"},
         hint="peak = arguments + outputs - aliased + temporaries; set it equal to the chip's HBM")
def temporaries_headroom(argument_bytes, output_bytes, alias_bytes, chip_name):
    # memory_analysis's peak read backwards: the HBM left for temporaries once the resident buffers are placed
    from ...jax_training import MemoryAnalysis

    resident = MemoryAnalysis(argument_bytes=int(argument_bytes), output_bytes=int(output_bytes),
                              alias_bytes=int(alias_bytes), temp_bytes=0, generated_code_bytes=0).bytes
    return (_chip(chip_name).hbm_bytes - resident) / 1e9


@problem("9.4", title="Communication share of a profiled step", unit="%",
         hint="add each device's AllGather and AllReduce time, and divide by devices x the step")
def comm_share():
    p = profile.parse_trace(trace_9_4())
    t = p.totals()
    return 100 * sum(t[k] for k in profile.COLLECTIVES) / sum(t.values())


@problem("9.5", title="The step if communication were hidden", unit="ms",
         slips={50 / 52: "too small: device 2 starts its first op 2 ms into the step; its compute ends at 52 ms",
                40.25 / 52: "too small: that is the mean device; the step waits for the slowest one",
                38 / 52: "too small: take the device that finishes its compute last, not device 0"},
         hint="with every collective hidden, a device finishes at (when it starts) + its matmul and fusion time; "
              "the step ends when the last device finishes")
def hidden_comm_step():
    p = profile.parse_trace(trace_9_4())
    step_start = p.step_window(0)[0]
    ends = []
    for d in p.devices:
        ev = p.ops(step=0, device=d)
        compute = sum(e.duration for e in ev if e.category not in profile.COLLECTIVES)
        ends.append(min(e.start for e in ev) - step_start + compute)
    return 1e3 * max(ends)


@problem("9.6", title="The hidden width behind an unintended gather", unit="", batch=4096, d_model=2048,
         devices=8, dtype_bytes=2, sent_bytes=SENT_9_6,
         slips={7 / 8: "each device already holds its own B / N rows of h, so it sends V (N - 1) / N, not V",
                0.5: "h is bf16 here: 2 bytes a value, not 4",
                4: "the gathered array is h [B, F], not x [B, D]: solve for F"},
         hint="P() replicates h [B, F]: an AllGather over the N devices in which each sends B F x 2 bytes x "
              "(N - 1) / N; solve that for F")
def hidden_width_from_gather(batch, d_model, devices, dtype_bytes, sent_bytes):
    # 9.6 reversed: the bytes a device sends in the inserted AllGather of h [B, F] are linear in F
    per_column = xla.sent_bytes_per_device("all-gather", batch * dtype_bytes, devices)
    return sent_bytes / per_column


@problem("9.7", title="The unintended gather on a line of TPU v5e chips", unit="", batch=4096, d_model=2048, d_ff=8192,
         devices=8, dtype_bytes=2, chip_name="tpu-v5e",
         slips={8: "too large by 8: each chip multiplies only its B / 8 rows"},
         hint="AllGather on one ICI axis: V (N - 1) / (N W_axis) + (N - 1) hops x 1 us; the matmul h @ w2 on one chip: 2 (B / 8) F D / peak")
def gather_vs_matmul(batch, d_model, d_ff, devices, dtype_bytes, chip_name):
    topo = topology.for_mesh(chip_name, {"X": devices})
    gather = collectives.cost("all-gather", topo, axes=("X",), bytes_=batch * d_ff * dtype_bytes).seconds
    matmul = 2 * (batch / devices) * d_ff * d_model / _chip(chip_name).peak_flops_per_s("bf16")
    return gather / matmul


@problem("9.8", title="Roofline of a fusion from cost_analysis", unit="us", flops=1.1e10, bytes_accessed=2.6e8,
         chip_name="tpu-v5e",
         slips={(1.1e10 / 197e12) / (2.6e8 / 820e9): "too small: that is the compute time; this fusion is "
                                                     "memory-bound, so bytes / HBM bandwidth sets it",
                1 + (1.1e10 / 197e12) / (2.6e8 / 820e9): "too large: compute and memory traffic overlap; take the "
                                                         "larger of the two, not their sum"})
def fusion_roofline(flops, bytes_accessed, chip_name):
    return roofline.op(chip_name, flops=flops, hbm_bytes=bytes_accessed).lower_seconds * 1e6


@problem("9.9", title="FLOP/s the simulated devices reach together", unit="FLOP/s", chips=8,
         flops_per_device=1.08e9, devices=8, step_seconds=0.180, matmul_seconds=0.045,
         slips={4: "too large by 4: divide by the step time (180 ms), not by the time in matmul fusions"},
         hint="cost_analysis counts one device's program; all 8 ran in the 180 ms step")
def achieved_rate(flops_per_device, devices, step_seconds, matmul_seconds):
    return flops_per_device * devices / step_seconds


@problem("9.10", title="A gradient ReduceScatter on CPU", unit="MB", array_bytes=4.2e6, fsdp=4,
         slips={0.5: "half the key: that is what a ReduceScatter sends; XLA on CPU compiles it as an AllReduce "
                     "(then a dynamic-slice), which sends twice as much"},
         hint="on CPU a ReduceScatter becomes an AllReduce of the same V: 2 V (N - 1) / N per device")
def cpu_reduce_scatter(array_bytes, fsdp):
    kind = xla.CPU_EQUIVALENTS["reduce-scatter"]
    return xla.sent_bytes_per_device(kind, array_bytes, fsdp) / 1e6


@problem("9.11", title="AllGathers in a deeper ZeRO-3 step", unit="", layers=6,
         slips={(2 * (9 * 6 + 3)) / (16 * 6 + 3): "too large: the embedding, unembedding and norm scales are "
                                                 "gathered once; only each layer's 7 matrices are gathered again",
                (9 * 6 + 3) / (16 * 6 + 3): "too small: with regather=True each layer's matrices are gathered "
                                            "again for the backward pass"},
         hint="forward: every weight of every layer, plus 3 top-level weights; backward: each layer's matrices")
def zero3_gathers(layers):
    from ... import jax_training as jt

    specs = jt.param_specs(jt.SMALL.replace(layers=layers))
    layer = specs["layers"][0]
    matrices = [n for n, spec in layer.items() if len(tuple(spec)) > 1]
    top = len(specs) - 1
    return layers * (len(layer) + len(matrices)) + top


@problem("9.12", title="Exposed time of an overlapped gather", unit="ms",
         slips={11 / 7: "too large: from 2 ms to 6 ms the AllGather runs beside the matmul; only the time no "
                        "compute covers is exposed"},
         hint="walk along the timeline: which instants have a collective running and no compute?")
def exposed_gather():
    t = profile.parse_trace(trace_9_12()).totals()
    return 1e3 * sum(t[k] for k in profile.COLLECTIVES)


def trace_9_14() -> dict:
    """The trace of problem 9.14: one TPU device's op track, an AllGather issued asynchronously."""
    return {"traceEvents": [_op("all-gather-start.3", 0, 0.0, 0.1), _op("fusion.8", 0, 0.1, 3.0),
                            _op("convolution_fusion.2", 0, 3.0, 7.0), _op("all-gather-done.3", 0, 7.0, 9.5),
                            _op("convolution_fusion.5", 0, 9.5, 12.0)]}


@problem("9.13", title="A key cache slice on a TPU", unit="MB", shape=(2048, 4, 96), dtype="bf16",
         slips={2048 * 4 * 96 * 2 / (2048 * 16 * 128 * 2): "too small: that is the logical size; the last two "
                                                            "dimensions are padded to whole tiles",
                2048 * 8 * 128 * 2 / (2048 * 16 * 128 * 2): "too small: bf16 packs two rows into each 32-bit "
                                                             "word, so its tile is 16 x 128, not 8 x 128"},
         hint="pad the last two dimensions up to the tile: 16 x 128 for bf16 (8 x 128 words of two rows each)")
def tiled_cache_slice(shape, dtype):
    return xla.tiled_bytes(shape, dtype).padded_bytes / 1e6


@problem("9.14", title="What an asynchronous gather leaves exposed", unit="ms",
         slips={9.5 / 2.6: "too large: from the start op to the done op the device ran other kernels; only the "
                           "start and done ops themselves hold the device",
                2.5 / 2.6: "too small: the start op takes device time too"},
         hint="on an accelerator a collective occupies the op track only in its -start and -done ops; the transfer "
              "runs in between, behind the other kernels")
def async_exposed():
    p = profile.parse_trace(trace_9_14())
    return 1e3 * p.totals(device=0)["all-gather"]
