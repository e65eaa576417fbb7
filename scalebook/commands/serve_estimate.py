"""`scalebook serve-estimate MODEL --chip C (--chips N | --tp T [--ep E] [--pp P]) --batch (B | max)
--prompt-len P --output-len O [--weights DTYPE] [--attention-weights DTYPE] [--kv DTYPE] [--workspace-tokens N]
[--layer-overhead SECONDS]`: serving priced (Chapter 7).

`--json` prints `ServingEstimate.to_dict()`: prefill_seconds, ttft_seconds, decode_step_seconds,
per_token_latency_seconds, output_tokens_per_s, output_tokens_per_s_per_chip, max_batch,
memory_bytes_per_chip, fits, and the parts; with `--usd-per-chip-hour` also the cost per
million input and output tokens under continuous batching.
"""
from __future__ import annotations

import argparse

from .. import models, units
from ..cli import add_json_flag, emit, number_arg, positive_number, table
from ..errors import Error
from .train_estimate import whole


def batch_arg(text: str) -> "int | str":
    if text.strip().lower() == "max":
        return "max"
    return whole(text)


fraction = number_arg(high=1.0, words="a fraction in (0, 1]")


def add_serving_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="a preset (see `scalebook models`) or a JSON file of Transformer fields")
    p.add_argument("--chip", required=True, help="chip name, e.g. tpu-v5e, h100")
    p.add_argument("--prompt-len", required=True, type=whole, help="prompt tokens per request")
    p.add_argument("--output-len", required=True, type=whole, help="generated tokens per request")
    p.add_argument("--bandwidth-efficiency", type=fraction, default=None,
                   help="achieved fraction of HBM bandwidth in decode (default: fitted per chip family)")
    p.add_argument("--compute-efficiency", type=fraction, default=None,
                   help="achieved fraction of peak FLOP/s in prefill (default: fitted per chip family)")


def register(sub) -> None:
    p = sub.add_parser("serve-estimate", help="latency, throughput and memory of serving a model")
    add_serving_common(p)
    p.add_argument("--chips", type=whole, default=None, help="chips, all tensor-parallel (or give --tp/--ep/--pp)")
    p.add_argument("--tp", type=whole, default=None, help="tensor-parallel degree")
    p.add_argument("--ep", type=whole, default=1, help="expert-parallel degree (MoE)")
    p.add_argument("--pp", type=whole, default=1, help="pipeline stages")
    p.add_argument("--batch", required=True, type=batch_arg, help="concurrent sequences, or 'max' (largest that fits)")
    p.add_argument("--weights", default="bf16", help="weight dtype: bf16, fp16, fp8, int8, int4, fp4")
    p.add_argument("--attention-weights", default=None,
                   help="dtype of every weight outside the MLP (attention, norms, embeddings) when it differs from "
                        "--weights, which then covers the MLP only, e.g. --weights fp8 --attention-weights bf16")
    p.add_argument("--kv", default="bf16", help="KV cache dtype: bf16, fp16, fp8, int8, int4")
    p.add_argument("--layer-overhead", type=number_arg("s", low_inclusive=True), default=None,
                   help="fixed time per layer of every forward pass, e.g. 180us (default: fitted per chip family)")
    p.add_argument("--attention", choices=("auto", "heads", "batch"), default="auto",
                   help="how tp splits attention: by kv heads, by sequences (Pope et al.), or auto (default)")
    p.add_argument("--workspace-tokens", type=whole, default=None,
                   help="tokens one prefill pass runs at once, whose activations memory reserves "
                        "(default: the whole prompt; give the chunk size of a chunked prefill)")
    p.add_argument("--prefix-hit-rate", type=number_arg(low_inclusive=True, high=1.0), default=0.0, help="fraction of each prompt in a prefix cache")
    p.add_argument("--usd-per-chip-hour", type=positive_number, default=None,
                   help="price: also report USD per million input and output tokens")
    add_json_flag(p)
    p.set_defaults(run=run)


def deployment(args):
    from ..inference import Deployment

    tp = args.tp
    if args.chips is not None:
        if tp is None:
            if args.chips % (args.ep * args.pp):
                raise Error(f"--chips {args.chips} is not a multiple of ep x pp = {args.ep * args.pp}")
            tp = args.chips // (args.ep * args.pp)
        elif tp * args.ep * args.pp != args.chips:
            raise Error(f"--chips {args.chips} but tp x ep x pp = {tp * args.ep * args.pp}")
    attn = getattr(args, "attention_weights", None)
    return Deployment(tp=tp or 1, ep=args.ep, pp=args.pp, weights=args.weights.lower(), kv=args.kv.lower(),
                      attention=args.attention, attention_weights=None if attn is None else attn.lower())


def run(args) -> int:
    from .. import serving

    model = models.from_spec(args.model)
    d = deployment(args)
    eff = {"bandwidth_efficiency": args.bandwidth_efficiency, "compute_efficiency": args.compute_efficiency,
           "workspace_tokens": args.workspace_tokens, "layer_overhead_seconds": args.layer_overhead}
    w = serving.continuous_batching(model, chip=args.chip, deployment=d, batch=args.batch, prompt_len=args.prompt_len,
                                    output_len=args.output_len, prefix_hit_rate=args.prefix_hit_rate, **eff)
    e = w.estimate
    data = e.to_dict()
    data["continuous_batching"] = {"step_seconds": w.step_seconds, "per_token_latency_seconds": w.per_token_latency_seconds,
                                   "output_tokens_per_s": w.output_tokens_per_s,
                                   "input_tokens_per_s": w.input_tokens_per_s, "requests_per_s": w.requests_per_s,
                                   "prefill_share": w.prefill_share, "prefix_hit_rate": w.prefix_hit_rate}
    if args.usd_per_chip_hour is not None:
        cin, cout = w.usd_per_million(args.usd_per_chip_hour)
        data["usd_per_million_input_tokens"], data["usd_per_million_output_tokens"] = cin, cout

    def text() -> str:
        f = units.format_quantity
        lines = [str(e),
                 f"  time to first token   {f(e.ttft_seconds, 's')} (prefill {f(e.prefill_seconds, 's')}, {e.prefill.bound}-bound)",
                 f"  per output token      {f(e.per_token_latency_seconds, 's')} ({e.decode.bound}-bound)",
                 f"  output tokens/s       {units.fmt_number(e.output_tokens_per_s, 4)} ({units.fmt_number(e.output_tokens_per_s_per_chip, 4)} per chip)",
                 f"  with prefill mixed in {units.fmt_number(w.output_tokens_per_s, 4)} output token/s, {w.requests_per_s:.3g} requests/s",
                 f"  memory per chip       {f(e.memory.bytes, 'B')} of {f(e.memory.hbm_bytes, 'B')} "
                 f"({'fits' if e.fits else 'does NOT fit'}); largest batch {e.max_batch} beside a "
                 f"{e.workspace_tokens}-token prefill workspace"]
        if "usd_per_million_output_tokens" in data:
            lines.append(f"  cost per million      ${data['usd_per_million_input_tokens']:.3g} input, "
                         f"${data['usd_per_million_output_tokens']:.3g} output")
        rows = [{"decode part": k, "seconds": f(v, "s")} for k, v in e.decode.parts().items() if v]
        return "\n".join(lines) + "\n\n" + table(rows)

    emit(args, data, text)
    return 0
