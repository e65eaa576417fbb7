"""`scalebook train-estimate MODEL --chip C --chips N ...`: one training step priced (Chapter 5).

MODEL is a preset name or a JSON file of `models.Transformer` fields (README, "Your own model").
Prints step time, MFU, memory per chip and where the time goes; `--json` gives every field of
`TrainingEstimate.to_dict()` (step_seconds, tokens_per_s, tokens_per_s_per_chip,
model_flops_per_s_per_chip, mfu, hfu, memory_bytes_per_chip, fits, per-part times and bytes).
"""
from __future__ import annotations

import argparse

from .. import models, units
from ..cli import add_json_flag, emit, positive_number, table, whole_number
from ..errors import Error
from ..strategy import ATTENTION_KERNELS, POLICY_NAMES, SCHEDULES, Strategy


whole = whole_number  # argparse type: a positive whole number (the shared CLI number parser)


def add_common(p: argparse.ArgumentParser) -> None:
    """MODEL, chips, batch and sequence flags shared by train-estimate and plan."""
    p.add_argument("model", metavar="MODEL", help="a preset (see `scalebook models`) or a JSON file of Transformer fields")
    p.add_argument("--chip", required=True, help="chip name, e.g. tpu-v5p, h100 (see `scalebook specs`)")
    p.add_argument("--chips", required=True, type=whole, help="number of chips")
    batch = p.add_mutually_exclusive_group(required=True)
    batch.add_argument("--batch-tokens", type=positive_number, help="global batch in tokens per step")
    batch.add_argument("--batch-seqs", type=whole, help="global batch in sequences per step")
    p.add_argument("--seq-len", required=True, type=whole, help="tokens per sequence")
    p.add_argument("--efficiency", type=positive_number, default=None,
                   help="achieved fraction of peak FLOP/s in the matmuls (default: fitted per chip family)")


def register(sub) -> None:
    p = sub.add_parser("train-estimate", help="time, memory and MFU of one training step under a parallel strategy")
    add_common(p)
    for name, what in (("dp", "data-parallel degree (weights replicated)"),
                       ("fsdp", "fully sharded data-parallel degree (ZeRO-3)"),
                       ("tp", "tensor-parallel degree (Megatron)"), ("pp", "pipeline stages"),
                       ("virtual-stages", "virtual stages per pipeline stage (interleaved schedule)"),
                       ("ep", "expert-parallel degree (inside dp x fsdp)"), ("cp", "context-parallel degree")):
        p.add_argument(f"--{name}", type=whole, default=1, help=f"{what} (default 1)")
    p.add_argument("--microbatch", type=whole, default=None,
                   help="sequences per microbatch per data-parallel replica (default: all at once; 1 with --pp)")
    p.add_argument("--sequence-parallel", action="store_true", help="TP with sequence parallelism")
    p.add_argument("--schedule", choices=SCHEDULES, default=None, help="pipeline schedule (default 1f1b)")
    p.add_argument("--zero", type=int, choices=(0, 1, 2), default=0, help="ZeRO stage of the dp part (default 0)")
    p.add_argument("--dtype", default="bf16", help="matmul dtype: bf16 (fp16 counts as bf16) or fp8")
    p.add_argument("--remat", choices=POLICY_NAMES, default="none", help="activation recomputation (default none)")
    p.add_argument("--tp-overlap", action="store_true", help="hide TP collectives behind the matmuls")
    p.add_argument("--no-reshard-after-forward", action="store_true",
                   help="FSDP keeps each layer's gathered weights from forward to backward (one gather, not two)")
    p.add_argument("--no-backward-prefetch", action="store_true",
                   help="FSDP gathers the next layer only after this layer's gradients (PyTorch's BACKWARD_POST)")
    p.add_argument("--dropout", action="store_true",
                   help="dropout on attention probabilities and residuals (masks saved; a pass over unfused scores)")
    p.add_argument("--no-flash-attention", action="store_true",
                   help="attention materialises its scores (memory and softmax traffic grow with T)")
    p.add_argument("--attention-kernel", choices=ATTENTION_KERNELS, default="native",
                   help="the fused attention kernel: native (written for the chip, at the matmul rate; default), "
                        "flash-attention-2 or flash-attention-triton at their published speeds")
    p.add_argument("--train-tokens", type=positive_number, default=None,
                   help="token budget: also report days, chip-hours and cost")
    p.add_argument("--usd-per-chip-hour", type=positive_number, default=None,
                   help="price for the cost (default: the spec data's on-demand price, where it has one)")
    add_json_flag(p)
    p.set_defaults(run=run)


def batch_kwargs(args) -> dict:
    return {"batch_tokens": args.batch_tokens} if args.batch_tokens is not None else {"batch_seqs": args.batch_seqs}


def matmul_dtype(text: str) -> str:
    d = text.strip().lower()
    if d in ("fp16", "float16", "f16", "bfloat16", "bf16"):
        return "bf16"
    if d in ("fp8", "float8", "e4m3", "e5m2"):
        return "fp8"
    if d in ("fp32", "float32", "f32", "tf32"):
        return "fp32"
    raise Error(f"unknown --dtype {text!r}; valid: bf16, fp16 (as bf16), fp8, fp32")


def run(args) -> int:
    from .. import training

    model = models.from_spec(args.model)
    schedule = args.schedule or ("interleaved" if args.virtual_stages > 1 else "1f1b")
    strategy = Strategy(dp=args.dp, fsdp=args.fsdp, tp=args.tp, pp=args.pp, virtual_stages=args.virtual_stages,
                        ep=args.ep, cp=args.cp, microbatch=args.microbatch, sequence_parallel=args.sequence_parallel,
                        schedule=schedule, zero=args.zero, remat=args.remat, matmul_dtype=matmul_dtype(args.dtype),
                        tp_overlap=args.tp_overlap, flash_attention=not args.no_flash_attention,
                        reshard_after_forward=not args.no_reshard_after_forward,
                        backward_prefetch=not args.no_backward_prefetch, dropout=args.dropout,
                        attention_kernel=args.attention_kernel)
    e = training.estimate(model, strategy=strategy, seq_len=args.seq_len, chip=args.chip, chips=args.chips,
                          efficiency=args.efficiency, **batch_kwargs(args))
    data = e.to_dict()
    if args.train_tokens is not None:
        data["train_tokens"] = args.train_tokens
        data["days"] = e.days(args.train_tokens)
        data["chip_hours"] = e.chip_hours(args.train_tokens)
        price = args.usd_per_chip_hour if args.usd_per_chip_hour is not None else training.price_per_chip_hour(e.chip)
        data["usd_per_chip_hour"] = price
        data["cost_usd"] = e.chip_hours(args.train_tokens) * price if price is not None else None
    emit(args, data, lambda: text(e, data))
    return 0


def text(e, data: dict) -> str:
    f = units.format_quantity
    lines = [str(e), f"  placement        {e.placement}",
             f"  step             {f(e.step_seconds, 's')} ({e.microbatches} microbatches), "
             f"{f(e.tokens_per_s, 'token/s')} ({f(e.tokens_per_s_per_chip, 'token/s')} per chip)",
             f"  utilisation      MFU {units.fmt_percent(e.mfu, 1)}, HFU {units.fmt_percent(e.hfu, 1)} at efficiency {e.efficiency:.3g}",
             f"  memory per chip  {f(e.memory.bytes, 'B')} of {f(e.memory.hbm_bytes, 'B')} "
             f"({'fits' if e.fits else 'does NOT fit'})"]
    if "days" in data:
        cost = f", ${data['cost_usd']:,.0f}" if data.get("cost_usd") is not None else ""
        lines.append(f"  {units.fmt_count(data['train_tokens'])} tokens  {data['days']:.1f} days, "
                     f"{data['chip_hours']:,.0f} chip-hours{cost}")
    rows = [{"part": k, "seconds": f(v, "s"), "share": f"{units.fmt_percent(v / e.step_seconds, 1)}"}
            for k, v in e.breakdown().items()]
    rows += [{"part": f"memory: {k}", "seconds": f(v, "B"), "share": ""} for k, v in e.memory.parts().items() if v]
    return "\n".join(lines) + "\n\n" + table(rows)
