"""Answer keys of chapter 6 (a training plan for LLaMA 3): compute, memory, layouts, thresholds, cost, published runs."""
from __future__ import annotations

import math

from ... import hardware, planner, runs, training
from ... import transformer as tr
from ...errors import Error
from ...models import preset
from ...training import Strategy
from ..problem import problem

_T = 8192  # tokens per sequence in every LLaMA 3 question of the chapter


def _run_estimate(run_id: str, **assume) -> training.TrainingEstimate:
    r = runs.published_run(run_id)
    kw = r.estimate_kwargs()
    return training.estimate(r.model_config(), strategy=Strategy(**{**kw.pop("strategy_kwargs"), **assume}), **kw)


@problem("6.1", title="Training compute of LLaMA-3 405B", unit="FLOP",
         model="llama3-405b", tokens=15.6e12, seq_len=_T,
         hint="model FLOPs per token = 3 x forward: 2 x the matmul weights (unembedding included, the embedding "
              "lookup not) plus the causal attention scores 2 T N_q H per layer")
def training_compute(model, tokens, seq_len):
    return tr.flops_per_token(preset(model), seq_len=seq_len, causal=True).training_flops * tokens


@problem("6.2", title="The smallest slice for pure FSDP", unit="chip",
         model="llama3-70b", chip="tpu-v5p", candidates=(4, 8, 16, 32, 64, 128),
         hint="16 bytes of training state per parameter split over N chips, plus what no split removes: the "
              "saved layer inputs under full remat, the gathered layers and the fp32 logits of one sequence")
def smallest_fsdp_slice(model, chip, candidates):
    m = preset(model)
    for n in candidates:
        e = training.estimate(m, strategy=Strategy(fsdp=n, remat="full"), seq_len=_T, batch_seqs=n, chip=chip,
                              chips=n)
        if e.fits:
            return n
    raise Error("no candidate chip count fits")


@problem("6.3", title="How much tensor parallelism a v5e axis can carry", unit="",
         model="llama3-70b", chip="tpu-v5e",
         slips={2: "off by 2: an AllReduce moves about 2V / W, and there are 4 per layer (8 D b / W per token)"},
         hint="TP hides behind compute while Y <= 6 P_layer W / (8 D beta C); round down to a power of two")
def tp_limit(model, chip):
    return 2 ** math.floor(math.log2(training.max_tp_degree(preset(model), chip=chip)))


#: The three layouts problem 6.4 offers for LLaMA-3 70B on 2048 TPU v5p chips (half the chapter's slice) at 4M
#: tokens: the chapter's three kinds of layout with the FSDP degree halved.
LAYOUTS_6_4 = {
    "FSDP256 x TP8": dict(fsdp=256, tp=8, sequence_parallel=True),
    "FSDP64 x TP8 x PP4": dict(fsdp=64, tp=8, pp=4, sequence_parallel=True, microbatch=1),
    "FSDP256 x CP8": dict(fsdp=256, cp=8),
}


@problem("6.4", title="The 70B layouts on half the v5p slice", unit="ms", rel_tol=0.05,
         model="llama3-70b", chip="tpu-v5p", n_chips=2048, batch_tokens=2**22,
         hint="twice the tokens per chip of the chapter's slice: price each layout again. TP adds 4 exposed "
              "activation AllReduces per layer, PP a bubble of (pp - 1) slots over its microbatches, CP passes "
              "small GQA keys and values round a ring that now fills a whole axis, behind the attention FLOPs")
def pick_layout(model, chip, n_chips, batch_tokens):
    m = preset(model)
    return 1e3 * min(training.estimate(m, strategy=Strategy(**kw), seq_len=_T, batch_tokens=batch_tokens,
                                       chip=chip, chips=n_chips).step_seconds for kw in LAYOUTS_6_4.values())


@problem("6.5", title="Enough H100s for 70B in 25 days", unit="chip",
         model="llama3-70b", chip="h100", tokens=15e12, days=25, batch_tokens=2**23, candidates=(2048, 4096, 8192, 16384),
         hint="even at full matmul efficiency, days = model FLOPs / (N x peak x efficiency); the first N that can "
              "meet the target must also keep its best layout near compute-bound")
def chips_for_deadline(model, chip, tokens, days, batch_tokens, candidates):
    m = preset(model)
    for n in candidates:
        best = planner.plan(m, chip=chip, chips=n, batch_tokens=batch_tokens, seq_len=_T, top=1).best[0]
        if best.days(tokens) <= days:
            return n
    raise Error("no candidate chip count meets the deadline")


@problem("6.6", title="TPU v5p or H100 at negotiated prices", unit="$", rel_tol=0.05,
         model="llama3-70b", n_chips=4096, tokens=15e12, batch_tokens=2**22,
         prices={"tpu-v5p": 2.50, "h100": 6.00},
         hint="cost = chip-hours x price = model FLOPs / (achieved FLOP/s per chip) / 3600 x price; the chip count cancels")
def cheaper_chip(model, n_chips, tokens, batch_tokens, prices):
    m = preset(model)
    costs = [planner.plan(m, chip=c, chips=n_chips, batch_tokens=batch_tokens, seq_len=_T, top=1).best[0]
             .chip_hours(tokens) * price for c, price in prices.items()]
    return min(costs)


@problem("6.7", title="When FSDP stops hiding on H100s", unit="token", chips=8, rel_tol=0.03,
         model="llama3-70b", chip="h100", n_chips=4096, fsdp=512, tp=8,
         slips={8: "off by 8: the FSDP gather leaves a node through all 8 NICs at once (each GPU moves 1/tp of the "
                   "weights), so the node's 400 GB/s, not one GPU's 50 GB/s, carries a node's share"},
         hint="B* = FSDP seconds per step (3 collectives of the weights / tp over the IB group) divided by the "
              "seconds of compute per token per chip, (3F + F_att / 2) / (peak x efficiency), F_att the attention "
              "matmuls' share of F (a fused kernel's backward pass recomputes QK^T)")
def fsdp_threshold_h100(model, chip, n_chips, fsdp, tp):
    return training.critical_batch_per_chip(preset(model), strategy=Strategy(fsdp=fsdp, tp=tp, sequence_parallel=True),
                                            seq_len=_T, chip=chip, chips=n_chips)


@problem("6.8", title="Virtual stages for Meta's pipeline", unit="",
         run="llama3-405b-h100-16k", share=0.2, max_v=7,
         hint="the bubble is (pp - 1) / v microbatch slots against 16 microbatches of work")
def virtual_stages(run, share, max_v):
    for v in range(1, max_v + 1):
        e = _run_estimate(run, sequence_parallel=True, remat="selective", virtual_stages=v)
        if e.bubble_seconds / e.step_seconds < share:
            return v
    raise Error("no virtual-stage count brings the bubble under the target")


@problem("6.9", title="MT-NLG's MFU from its step time", unit="%",
         run="mt-nlg-530b-a100-2240",
         slips={4 / 3: "off by 4/3: MFU counts model FLOPs only, not the extra forward pass of recomputation",
                100: "off by 100: give a percentage, not a fraction"},
         hint="model FLOPs per step = 3 x forward FLOPs per token (attention at T = 2048 included) x tokens; "
              "MFU = that / (step seconds x GPUs x peak)")
def mtnlg_mfu(run):
    r = runs.published_run(run)
    f = tr.flops_per_token(r.model_config(), seq_len=r.seq_len, causal=True).training_flops * r.batch_tokens
    return 100 * f / (r.reported_step_seconds * r.chips * hardware.chip(r.chip).peak_flops_per_s(r.dtype))


@problem("6.10", title="Days for 405B at Meta's rate", unit="days",
         model="llama3-405b", tokens=15.6e12, chip_count=16384, flops_per_s_per_chip=400e12,
         slips={16384: "off by the GPU count: the 400 TFLOP/s are per GPU"})
def days_405b(model, tokens, chip_count, flops_per_s_per_chip):
    total = tr.flops_per_token(preset(model), seq_len=_T, causal=True).training_flops * tokens
    return total / (chip_count * flops_per_s_per_chip) / 86400


@problem("6.11", title="Meta's layout without sequence parallelism", unit="GB", rel_tol=0.05,
         run="llama3-405b-h100-16k", policies=("none", "selective", "full"),
         hint="the fullest stage is the second: 8 layers with 15 microbatches in flight under 1F1B (the first "
              "has 7 layers and 16); without sequence parallelism the D-wide tensors are whole on every TP chip")
def meta_layout_memory(run, policies):
    for pol in policies:
        e = _run_estimate(run, sequence_parallel=False, remat=pol)
        if e.fits:
            return e.memory.bytes / 1e9
    raise Error("no remat policy fits")


@problem("6.12", title="What 70B costs on H100s at 40% MFU", unit="$",
         model="llama3-70b", tokens=15e12, chip="h100", mfu=0.40,
         hint="chip-hours = model FLOPs / (peak x MFU) / 3600, whatever the chip count; times the price per chip-hour")
def cost_70b_h100(model, tokens, chip, mfu):
    total = tr.flops_per_token(preset(model), seq_len=_T, causal=True).training_flops * tokens
    hours = total / (hardware.chip(chip).peak_flops_per_s("bf16") * mfu) / 3600
    return hours * training.price_per_chip_hour(chip)


@problem("6.13", title="A step of 405B at 41% MFU", unit="s",
         model="llama3-405b", chip="h100", chip_count=16384, batch_tokens=2**24, mfu=0.41,
         slips={16384: "off by the GPU count: all 16,384 GPUs share one step"})
def step_405b(model, chip, chip_count, batch_tokens, mfu):
    total = tr.flops_per_token(preset(model), seq_len=_T, causal=True).training_flops * batch_tokens
    return total / (chip_count * hardware.chip(chip).peak_flops_per_s("bf16") * mfu)


@problem("6.14", title="Llama 3's long-context MFU, counted causally", unit="%", rel_tol=0.02,
         model="llama3-405b", seq_len=131072, flops_per_s_per_gpu=380e12, chip="h100",
         slips={1.4012: "that is the MFU over the full T x T square (380 TFLOP/s over the peak): convert to tokens "
                        "per second with the full-square count first, then count those tokens causally",
                1.9636: "converted the wrong way round: the full-square count gives fewer tokens per second, so "
                        "the causal MFU is lower than 380 TFLOP/s over the peak"})
def causal_mfu_128k(model, seq_len, flops_per_s_per_gpu, chip):
    m = preset(model)
    causal = tr.flops_per_token(m, seq_len=seq_len, causal=True).training_flops
    full = tr.flops_per_token(m, seq_len=seq_len, causal=False).training_flops
    tokens_per_s = flops_per_s_per_gpu / full
    return 100 * tokens_per_s * causal / hardware.chip(chip).peak_flops_per_s("bf16")


@problem("6.15", title="Microbatches for Meta's interleaved pipeline", unit="", pp=16, virtual_stages=4,
         target=0.10,
         slips={4.0: "with v virtual stages the bubble is (p - 1) / v slots: solve 3.75 / (m + 3.75) <= 0.1"})
def meta_microbatches(pp, virtual_stages, target):
    m = 1
    while training.pipeline_bubble_fraction(pp=pp, microbatches=m, virtual_stages=virtual_stages) > target:
        m += 1
    return m


@problem("6.16", title="Meta's pipeline under a zero-bubble schedule", unit="%", pp=16, microbatches=16,
         slips={2.0323: "that is 1F1B's bubble; ZB-H1 idles (p - 1)(F + B - 2W), a third as much",
                1.3125: "the bubble is a share of the whole step: idle / (work + idle), not idle / work"})
def zero_bubble_share(pp, microbatches):
    # With F : B : W = 1 : 2 : 1, ZB-H1 idles a third of 1F1B's (p - 1)(F + B): the same share as 1F1B with
    # (p - 1) / 3 idle slots, which is what a 3-way interleave gives in the step model's formula.
    return 100 * training.pipeline_bubble_fraction(pp=pp, microbatches=microbatches, virtual_stages=3)
