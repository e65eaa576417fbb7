"""Answer keys of chapter 4 (Transformer arithmetic): parameters, FLOPs, memory, KV cache."""
from __future__ import annotations

from ... import hardware, roofline
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


@problem("4.9", title="Long sequences that fit beside an MQA model", unit="", rel_tol=0.0, model="palm-540b", seq_len=32768,
         budget_bytes=40e9, dtype="bf16")
def mqa_sequences(model, seq_len, budget_bytes, dtype):
    per_seq = tr.kv_cache(preset(model), seq_len=seq_len, dtype=dtype).bytes_per_sequence
    return budget_bytes // per_seq


@problem("4.10", title="MFU of LLaMA-3 70B from its GPU-hours", unit="%", model="llama3-70b", tokens=15e12,
         chip_hours=7.0e6, chip="h100",
         slips={3600: "off by 3600: chip-hours become chip-seconds before they meet a peak in FLOP/s"})
def llama70_mfu_from_hours(model, tokens, chip_hours, chip):
    # 6 P D_tok model FLOPs (P: all parameters, as the statement asks) over what the GPUs could do.
    r = tr.mfu_from_chip_hours(preset(model), tokens=tokens, chip_hours=chip_hours, chip=chip)
    return 100 * r.six_nd_mfu


@problem("4.11", title="Decode attention of LLaMA-3 405B", unit="FLOP/B", model="llama3-405b", seq_len=32768,
         batch=16, dtype="bf16",
         slips={16: "the batch cancels: every sequence reads its own cache, so FLOPs and bytes grow together"})
def decode_intensity_405b(model, seq_len, batch, dtype):
    return tr.attention_intensity(preset(model), seq_len=seq_len, batch=batch, phase="decode",
                                  dtype=dtype).intensity_flops_per_byte


@problem("4.12", title="The shortest compute-bound prompt", unit="token", rel_tol=0.0, model="llama3-8b",
         chip="tpu-v5e", dtype="bf16",
         slips={0.5: "off by a factor of 2: a causal kernel does half the score FLOPs for the same bytes"},
         hint="causal attention, a whole number of tokens")
def shortest_compute_bound_prompt(model, chip, dtype):
    # Causal prefill intensity T N / (b/2 (N + K)) / 2 grows with T: find the first whole T at or
    # above the chip's critical intensity.
    m, crit = preset(model), roofline.critical_intensity(chip, dtype)
    t = 1
    while tr.attention_intensity(m, seq_len=t, phase="prefill", causal=True,
                                 dtype=dtype).intensity_flops_per_byte < crit:
        t += 1
    return t


@problem("4.13", title="DeepSeek-V3's batch in fp8 on a B200", unit="token", model="deepseek-v3", chip="b200",
         dtype="fp8",
         slips={1 / 32: "that is one expert's share: each expert sees only B k / E of the batch",
                2: "off by a factor of 2: fp8 halves the bytes per weight and doubles the peak"})
def deepseek_fp8_batch(model, chip, dtype):
    m = preset(model)
    return roofline.moe_critical_batch(chip, routed_experts=m.routed_experts,
                                       experts_per_token=m.experts_per_token, dtype=dtype)


@problem("4.14", title="Attention matmuls of one training step", unit="TFLOP", model="llama3-70b", batch=4,
         seq_len=8192,
         slips={6 / 7: "that is 3 x forward: FlashAttention's backward recomputes Q K^T, five matmuls not four"})
def attention_training_tflop(model, batch, seq_len):
    # One layer, causal: forward 2 matmuls, backward 5 (Q K^T recomputed, dV, dP, dQ, dK).
    c = tr.flash_attention_cost(preset(model), batch=batch, seq_len=seq_len, causal=True)
    return c.training_flops / 1e12


@problem("4.15", title="Keep the probabilities or recompute them?", unit="", model="llama3-8b", chip="h100",
         seq_len=8192, dtype="bf16")
def keep_or_recompute(model, chip, seq_len, dtype):
    # Reading a stored P (N T^2 bf16 numbers per sequence and layer) from HBM against recomputing
    # Q K^T (2 T^2 N H FLOPs) at the bf16 peak; non-causal. Above 1: recomputing is faster.
    c = tr.flash_attention_cost(preset(model), batch=1, seq_len=seq_len, causal=False, dtype=dtype)
    read = roofline.op(chip, flops=0, hbm_bytes=c.probabilities_bytes).memory_seconds
    redo = roofline.op(chip, flops=c.recompute_flops, hbm_bytes=0).compute_seconds
    return read / redo


@problem("4.16", title="Korthikanti's layer against today's", unit="", model="gpt3-175b", seq_len=2048,
         batch=1, dtype="fp16",
         hint="2022 recipe: s b h (34 + 5 a s / h) bytes (dropout masks, probabilities kept); today's: no "
              "dropout, and FlashAttention keeps only a 4-byte log-sum-exp per head and token")
def korthikanti_vs_modern(model, seq_len, batch, dtype):
    # One layer's saved bytes with dropout and materialised probabilities (Korthikanti et al. 2022,
    # eq. 1) over the same layer with no dropout and FlashAttention.
    m = preset(model)
    old = tr.activation_memory(m, batch=batch, seq_len=seq_len, dtype=dtype, dropout=True).layer_bytes
    new = tr.activation_memory(m, batch=batch, seq_len=seq_len, dtype=dtype, flash_attention=True).layer_bytes
    return old / new
