"""The gpt-oss-120b rows as their sources run them (issue 18, Megatron Bridge 25.11), pinned by hand.

Each test states what the performance scripts at commit 00b7660be of NVIDIA-NeMo/Megatron-Bridge
set (bib key nvidia2025megatronbridge) and checks the data row and the step model against
arithmetic done here, not against the package's own output.
"""
import pytest

from scalebook import runs, training
from scalebook.training import Strategy

H100_ID, B200_ID = "gpt-oss-120b-h100-64", "gpt-oss-120b-b200-64"
D, K_ROUTED, LAYERS, T = 2880, 4, 36, 4096  # openai/gpt-oss ModelConfig


def _estimate(run):
    kw = run.estimate_kwargs()
    return training.estimate(run.model_config(), strategy=Strategy(**kw.pop("strategy_kwargs")), **kw)


def test_b200_row_spreads_the_experts_over_all_64_gpus_as_its_preset_does():
    # GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_BASE_CONFIG: expert_model_parallel_size 64,
    # micro_batch_size 4; GBS 512 on 64 GPUs at MBS 4 is 2 microbatches (the table's GA 2).
    run = runs.published_run(B200_ID)
    assert (run.ep, run.dp, run.microbatch) == (64, 64, 4)
    assert run.batch_seqs == 4 * 64 * 2
    assert "ep" in run.inferred


def test_h100_row_runs_one_sequence_per_microbatch_as_its_preset_does():
    # The H100 preset keeps the base micro_batch_size 1: GBS 512 over DP 16 is 32 microbatches.
    run = runs.published_run(H100_ID)
    assert (run.microbatch, run.dp, run.pp) == (1, 16, 4)
    assert _estimate(run).microbatches == 512 // (1 * 16)


@pytest.mark.parametrize("run_id", [H100_ID, B200_ID])
def test_nothing_is_recomputed_and_attention_is_fused(run_id):
    # recompute_modules without recompute_granularity recomputes nothing in Megatron-Core;
    # TE 2.9 with cuDNN 9.13.1 runs the learnable-softmax, windowed attention in FusedAttention.
    run = runs.published_run(run_id)
    assert run.remat == "none" and run.flash_attention is True
    assert {"remat", "flash_attention"} <= set(run.inferred)


def test_b200_alltoall_sends_seven_eighths_of_its_routed_copies_over_infiniband():
    # Per GPU and microbatch: 4 x 4,096 tokens, 4 routed copies of 2,880 bf16 elements each,
    # 377,487,360 bytes; 56 of the 64 destinations are in other nodes, reached through the GPU's
    # own 400 Gb/s (50 GB/s) InfiniBand rail.
    sent = 4 * T * K_ROUTED * D * 2
    assert sent == 377_487_360
    by_hand = sent * 56 / 64 / 50e9
    est = _estimate(runs.published_run(B200_ID))
    (ep,) = [c for c in est.collectives if c.parallelism == "ep"]
    assert ep.kind == "all-to-all"
    assert ep.seconds == pytest.approx(by_hand, rel=0.01)
    # dispatch and combine, forward and backward: 4 per MoE layer, 36 layers, 2 microbatches
    assert ep.count == 4 * LAYERS * 2
