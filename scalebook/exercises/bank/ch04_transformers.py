"""Answer keys of chapter 4 (Transformer arithmetic): parameters, FLOPs, memory, KV cache."""
from __future__ import annotations

from ... import hardware
from ... import transformer as tr
from ...models import Transformer, preset
from ..problem import problem

#: The custom configs of the problems, by name, so the page and the key share one definition.
CONFIGS = {
    "4.1": dict(name="problem-4.1", layers=32, d_model=3072, heads=24, kv_heads=8, head_dim=128, d_ff=8192,
                vocab=100_000, mlp="gated"),
    "4.6": dict(name="problem-4.6", layers=24, d_model=2048, heads=16, kv_heads=4, head_dim=128, vocab=50_000,
                mlp="gated", routed_experts=64, experts_per_token=4, shared_experts=1, expert_d_ff=1024),
    "4.7": dict(name="problem-4.7", layers=40, d_model=5120, heads=40, kv_heads=8, head_dim=128, d_ff=13824,
                vocab=32_000, mlp="gated"),
}


@problem("4.1", title="Parameters of a GQA model", unit="param", config=CONFIGS["4.1"])
def params_of_config(config):
    return tr.params(Transformer(**config)).total_params


@problem("4.2", title="Days to train LLaMA-3 70B", unit="days", chips=2048,
         model="llama3-70b", tokens=2e12, n_chips=2048, chip="h100", mfu=0.4)
def training_days(model, tokens, n_chips, chip, mfu):
    flops = tr.training_flops(preset(model), tokens=tokens).six_nd_flops
    seconds = flops / (n_chips * hardware.chip(chip).peak_flops_per_s("bf16") * mfu)
    return seconds / 86400


@problem("4.3", title="KV cache per token of LLaMA-3 405B", unit="kB", model="llama3-405b", dtype="bf16")
def kv_per_token(model, dtype):
    return tr.kv_cache(preset(model), dtype=dtype).bytes_per_token / 1e3


@problem("4.4", title="KV cache of a serving batch", unit="GB", model="llama3-70b", seq_len=8192, batch=32,
         dtype="bf16")
def kv_batch(model, seq_len, batch, dtype):
    return tr.kv_cache(preset(model), seq_len=seq_len, batch=batch, dtype=dtype).bytes / 1e9


@problem("4.5", title="Adam state per chip, fully sharded", unit="GB", chips=64, model="llama3-8b", n_chips=64)
def adam_state_per_chip(model, n_chips):
    return tr.training_memory(preset(model)).bytes / n_chips / 1e9


@problem("4.6", title="Active parameters of a small MoE", unit="param", config=CONFIGS["4.6"])
def moe_active(config):
    return tr.params(Transformer(**config)).active_params


@problem("4.7", title="Where attention overtakes the weights", unit="token", config=CONFIGS["4.7"])
def crossover(config):
    return tr.attention_crossover_seq_len(Transformer(**config), causal=False)


@problem("4.8", title="The FLOP price of recomputing attention", unit="PFLOP", model="llama3-8b",
         seq_len=8192, batch=256)
def remat_attention_flops(model, seq_len, batch):
    a = tr.activation_memory(preset(model), batch=1, seq_len=seq_len, policy="matmul_outputs", causal=True)
    return a.remat_flops_per_token * seq_len * batch / 1e15


@problem("4.9", title="Long sequences that fit beside an MQA model", unit="", model="palm-540b", seq_len=32768,
         budget_bytes=40e9, dtype="bf16")
def mqa_sequences(model, seq_len, budget_bytes, dtype):
    per_seq = tr.kv_cache(preset(model), seq_len=seq_len, dtype=dtype).bytes_per_sequence
    return budget_bytes // per_seq
