"""`scalebook model NAME [--seq-len S]`: parameters, FLOPs, KV cache and training memory (Chapter 4)."""
from __future__ import annotations

from .. import models, transformer, units
from ..cli import add_json_flag, emit, whole_number
from ..errors import Error


def register(sub) -> None:
    p = sub.add_parser("model", help="parameters, FLOPs per token, KV cache and training memory of a preset")
    p.add_argument("name", help=f"one of: {', '.join(models.preset_names())}")
    p.add_argument("--seq-len", type=whole_number, default=None,
                   help="sequence length for the attention FLOPs (default: the model's training length, else 0)")
    add_json_flag(p)
    p.set_defaults(run=run)


def run(args) -> int:
    m = models.preset(args.name)
    seq = args.seq_len if args.seq_len is not None else (m.train_seq_len or 0)
    if seq != int(seq):
        raise Error(f"--seq-len must be a whole number of tokens, got {seq:g}")
    seq = int(seq)
    p = transformer.params(m)
    fl = transformer.flops_per_token(m, seq_len=seq, causal=True)
    kv = transformer.kv_cache(m, dtype="bf16")
    mem = transformer.training_memory(m)
    data = {
        "name": m.name, "config": repr(m), "source": m.source, "seq_len": seq, "causal": True,
        "total_params": p.total_params, "active_params": p.active_params,
        "embedding_params": p.embedding_params + p.unembedding_params,
        "published_params": m.published_params, "published_source": m.published_source,
        "forward_flops_per_token": fl.forward_flops, "training_flops_per_token": fl.training_flops,
        "attention_flops_per_token": fl.attention_score_flops,
        "kv_cache_bytes_per_token_bf16": kv.bytes_per_token,
        "training_bytes_per_param": mem.bytes_per_param, "training_state_bytes": mem.bytes,
    }
    f, c = units.format_quantity, transformer.format_count

    def text() -> str:
        lines = [
            str(m),
            f"  source                     {m.source}",
            f"  parameters                 {c(p.total_params)} total, {c(p.active_params)} active per token",
            f"  embedding parameters       {c(data['embedding_params'])} (embedding + unembedding)",
        ]
        if m.published_params:
            lines.append(f"  published                  {c(m.published_params)} ({m.published_source})")
        lines += [
            f"  FLOPs per token (T={seq}, causal)  forward {f(fl.forward_flops, 'FLOP')}, "
            f"training {f(fl.training_flops, 'FLOP')} (attention {units.fmt_percent(fl.attention_fraction, 1)})",
            f"  KV cache per token (bf16)  {f(kv.bytes_per_token, 'B')}",
            f"  training state             {mem.bytes_per_param:g} B/param = {f(mem.bytes, 'B')} "
            "(bf16 params + grads, fp32 Adam moments + master weights)",
        ]
        return "\n".join(lines)

    emit(args, data, text)
    return 0
