"""Remat with chosen checkpoints (`transformer.activation_memory_saving`, Chapter 4) against hand counts."""
import math

import pytest

import scalebook
from scalebook import transformer as tr
from scalebook.models import Transformer, preset


def tiny(**kw):
    """L=2, D=8, N=2, K=1, H=4, F=16, gated: counted by hand below."""
    base = dict(name="tiny", layers=2, d_model=8, heads=2, kv_heads=1, head_dim=4, d_ff=16, vocab=10)
    return Transformer(**{**base, **kw})


# T = 16, causal: each query sees T/2 = 8 keys. Per layer and token: QK^T and AV 2 x 8 x N(=2) x H(=4)
# each, 256 together; the output projection 2 N H D = 128; gate and up 2 D F = 256 each.
T, CORE, OUT_PROJ, GATE_UP = 16, 2 * (2 * 8 * 2 * 4), 2 * 2 * 4 * 8, 2 * (2 * 8 * 16)


def test_names_follow_the_layer_in_forward_order():
    assert tr.checkpoint_names(tiny()) == (
        "layer input", "norm1 output", "Q", "K", "V", "softmax probabilities", "attention output",
        "output projection", "residual after attention", "norm2 output", "gate", "up", "act(gate) * up")


def test_keeping_attention_inputs_and_matmul_outputs_of_the_mlp_by_hand():
    # saved: x (always), Q, K, V, attention output, gate, up = 8 + 8 + 4 + 4 + 8 + 16 + 16 = 64 elements per token
    a = tr.activation_memory_saving(tiny(), saved=["Q", "K", "V", "attention output", "gate", "up"],
                                    batch=3, seq_len=T)
    assert a.bytes == 2 * 3 * T * 64 * 2  # layers x B T x elements x 2 bytes
    # the backward needs the probabilities (re-run the core) and the residual (re-run the output projection)
    assert a.remat_flops_per_token == 2 * (CORE + OUT_PROJ)


def test_keeping_the_attention_block_and_recomputing_the_mlp_by_hand():
    # saved: x, norm1, Q, K, V, attention output, residual, norm2 = 8+8+8+4+4+8+8+8 = 56 elements per token
    saved = ["norm1 output", "Q", "K", "V", "attention output", "residual after attention", "norm2 output"]
    a = tr.activation_memory_saving(tiny(), saved=saved, batch=1, seq_len=T)
    assert a.bytes == 2 * T * 56 * 2
    assert a.remat_flops_per_token == 2 * (CORE + GATE_UP)  # probabilities, gate and up again
    assert [t.name for t in a.tensors] == ["layer input", *saved]


@pytest.mark.parametrize("name", ["llama3-8b", "mixtral-8x7b", "gpt3-175b"])
@pytest.mark.parametrize("dropout", [False, True])
@pytest.mark.parametrize("flash", [False, True])
@pytest.mark.parametrize("policy", tr.ACTIVATION_POLICIES)
def test_the_four_policies_are_special_cases(name, dropout, flash, policy):
    m = preset(name)
    a = tr.activation_memory(m, batch=2, seq_len=4096, policy=policy, flash_attention=flash, dropout=dropout)
    c = tr.activation_memory_saving(m, saved=[t.name for t in a.tensors], batch=2, seq_len=4096,
                                    flash_attention=flash, dropout=dropout)
    assert math.isclose(c.bytes, a.bytes)
    if policy == "attention" and flash:
        # flash attention keeps no [B, N, T, T] tensor: 'attention' keeps everything, so nothing is recomputed
        assert c.remat_flops_per_token == 0 < a.remat_flops_per_token
    else:
        assert math.isclose(c.remat_flops_per_token, a.remat_flops_per_token)


def test_an_empty_choice_is_full_remat():
    m = tiny()
    assert tr.activation_memory_saving(m, saved=[], batch=1, seq_len=T).bytes == \
        tr.activation_memory(m, batch=1, seq_len=T, policy="full").bytes


@pytest.mark.parametrize("call", [
    lambda: tr.activation_memory_saving(tiny(), saved=["Q", "probs"], batch=1, seq_len=T),
    lambda: tr.activation_memory_saving(tiny(), saved="Q", batch=1, seq_len=T),
    lambda: tr.activation_memory_saving(tiny(), saved=["Q"], batch=0, seq_len=T),
    lambda: tr.activation_memory_saving(preset("deepseek-v3"), saved=["Q"], batch=1, seq_len=T),
])
def test_bad_input_raises_error_naming_what_is_valid(call):
    with pytest.raises(scalebook.Error):
        call()


def test_an_unknown_name_lists_the_valid_ones():
    with pytest.raises(scalebook.Error, match="softmax probabilities"):
        tr.activation_memory_saving(tiny(), saved=["probs"], batch=1, seq_len=T)


# --- elementwise FLOPs (transformer.layer_elementwise_flops_per_token) -----------------------------

def test_elementwise_flops_of_the_tiny_layer_by_hand():
    # D = 8, N = 2, K = 1, H = 4, F = 16, T = 16 causal (8 scores per query):
    # norms 2 x 4 x 8 = 64; residual adds 2 x 8 = 16; SiLU and product 5 x 16 = 80;
    # RoPE 3 x (2 + 1) x 4 = 36; softmax 5 x 2 x 8 = 80
    e = tr.layer_elementwise_flops_per_token(tiny(), seq_len=16)
    assert (e.norm_flops, e.residual_flops, e.activation_flops, e.rotary_flops, e.softmax_flops) == (64, 16, 80, 36, 80)
    assert e.flops == 276


def test_a_plain_mlp_pays_nine_flops_per_element_for_gelu():
    assert tr.layer_elementwise_flops_per_token(tiny(mlp="plain"), seq_len=16).activation_flops == 9 * 16


def test_elementwise_flops_are_a_share_of_order_one_over_d_of_a_llama_layer():
    # LLaMA-3 8B at T = 8192, causal: 10 x 4096 + 5 x 14336 + 3 x 40 x 128 + 5 x 32 x 4096 = 783,360
    m = preset("llama3-8b")
    e = tr.layer_elementwise_flops_per_token(m, seq_len=8192)
    assert e.flops == 10 * 4096 + 5 * 14336 + 3 * 40 * 128 + 5 * 32 * 4096
    assert e.flops / tr.layer_flops_per_token(m, seq_len=8192).forward_flops < 0.01


def test_elementwise_bad_input_raises_error():
    with pytest.raises(scalebook.Error):
        tr.layer_elementwise_flops_per_token(tiny(), seq_len=-1)
    with pytest.raises(scalebook.Error):
        tr.layer_elementwise_flops_per_token(tiny(), seq_len=16, moe=True)
