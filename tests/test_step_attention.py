"""scalebook.step: unfused attention (QK^T, softmax, dropout, AV as separate kernels) and dropout."""
import pytest

import scalebook
from scalebook import Error, models, runs, training
from scalebook.step import attention_matmul_factor, score_elements
from scalebook.strategy import Strategy

SMALL = models.Transformer(name="small", layers=8, d_model=1024, heads=16, kv_heads=4, d_ff=4096, vocab=32000)
H100 = scalebook.chip("h100")


def _est(strategy, **kw):
    return training.estimate(SMALL, strategy=strategy, seq_len=2048, batch_seqs=64, chip="h100",
                             chips=strategy.chips, **kw)


def test_score_reads_and_writes_per_pass():
    # forward: QK^T writes S, softmax reads S and writes P, AV reads P = 4; backward: AV writes dP and
    # reads P, softmax reads P and dP and writes dS, dQ and dK each read dS = 7
    assert score_elements(remat_forwards=0, dropout=False, dtype_bytes=2) == pytest.approx(4 + 7)
    assert score_elements(remat_forwards=1, dropout=False, dtype_bytes=2) == pytest.approx(4 + 7 + 4)
    # dropout: read P, write P' and a 1-byte mask (half a bf16 element) forward; read dP' and the mask,
    # write dP backward; once more in the recomputed forward
    assert score_elements(remat_forwards=0, dropout=True, dtype_bytes=2) == pytest.approx(6.5 + 9.5)
    assert score_elements(remat_forwards=1, dropout=True, dtype_bytes=2) == pytest.approx(6.5 + 9.5 + 6.5)


def test_unfused_attention_does_the_square_fused_the_triangle():
    assert attention_matmul_factor(True) == 1.0
    assert attention_matmul_factor(False) == 2.0
    with pytest.raises(Error, match="flash_attention"):
        attention_matmul_factor("no")


def test_dropout_adds_a_pass_over_unfused_scores_each_way():
    # N = 16 heads, L = 8 layers, T = 2048, 16,384 tokens per GPU, bf16: (2.5 + 2.5) score elements more
    plain = _est(Strategy(dp=8, flash_attention=False))
    drop = _est(Strategy(dp=8, flash_attention=False, dropout=True))
    extra = (2.5 + 2.5) * 16 * 8 * 2048 * 2 * (64 * 2048 / 8) / H100.hbm_bytes_per_s
    assert drop.memory_bound_seconds - plain.memory_bound_seconds == pytest.approx(extra)


def test_fused_attention_pays_nothing_for_dropout_in_time_but_saves_the_residual_masks():
    # with FlashAttention the probabilities' dropout is inside the kernel; the two residual-stream
    # masks (1 byte per element of D, after attention and after the MLP) are saved per layer
    flash = _est(Strategy(dp=8))
    drop = _est(Strategy(dp=8, dropout=True))
    assert drop.step_seconds == pytest.approx(flash.step_seconds)
    tokens = 64 * 2048 / 8
    assert drop.memory.activation_bytes - flash.memory.activation_bytes == pytest.approx(2 * 1024 * 8 * tokens)


def test_dropout_must_be_a_bool_and_shows_in_the_label():
    with pytest.raises(Error, match="dropout"):
        Strategy(dp=2, dropout=1)
    assert "dropout" in Strategy(dp=2, dropout=True).label()
    assert "dropout" not in Strategy(dp=2).label()


def test_megatron_runs_record_dropout_and_others_leave_it_unstated():
    # Megatron-LM's defaults (--attention-dropout, --hidden-dropout 0.1); Korthikanti et al. count the masks
    rs = runs.published_runs()
    megatron = [r for r in rs if r.source in ("narayanan2021megatron", "korthikanti2022activation")]
    assert megatron and all(r.dropout is True for r in megatron)
    assert all("--dropout" in r.cli_args(model_path="m.json") for r in megatron)
    assert all(r.dropout is None for r in rs if r not in megatron)
