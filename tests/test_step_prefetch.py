"""scalebook.step: FSDP's backward prefetch (PyTorch's BACKWARD_PRE vs BACKWARD_POST, `backward_prefetch`)."""
import pytest

from scalebook import Error, collectives, models, runs, training, transformer
from scalebook.step import fsdp_backward_exposed
from scalebook.strategy import Strategy
from scalebook.topology import for_chips

SMALL = models.Transformer(name="small", layers=8, d_model=1024, heads=16, kv_heads=4, head_dim=64, d_ff=4096,
                           vocab=32000, mlp="gated")


def test_prefetched_gather_and_scatter_hide_together_behind_the_gradient_computation():
    # BACKWARD_PRE: gather 3 ms + scatter 4 ms under 10 ms of compute: nothing waits; under 5 ms: 2 ms waits
    assert fsdp_backward_exposed(gather_seconds=3e-3, scatter_seconds=4e-3, compute_seconds=10e-3,
                                 prefetch=True) == pytest.approx(0.0)
    assert fsdp_backward_exposed(gather_seconds=3e-3, scatter_seconds=4e-3, compute_seconds=5e-3,
                                 prefetch=True) == pytest.approx(2e-3)


def test_gather_after_the_gradients_waits_whole_and_only_the_scatter_hides():
    # BACKWARD_POST: the 3 ms gather is issued after the gradients, so the next layer waits for all of it;
    # the 4 ms scatter runs under the next 10 ms of compute (hidden), or leaves 1 ms over 3 ms of compute
    assert fsdp_backward_exposed(gather_seconds=3e-3, scatter_seconds=4e-3, compute_seconds=10e-3,
                                 prefetch=False) == pytest.approx(3e-3)
    assert fsdp_backward_exposed(gather_seconds=3e-3, scatter_seconds=4e-3, compute_seconds=3e-3,
                                 prefetch=False) == pytest.approx(4e-3)


def _est(**kw):
    return training.estimate(SMALL, strategy=Strategy(fsdp=16, microbatch=2, **kw), seq_len=2048, batch_seqs=64,
                             chip="h100", chips=16)


def test_without_backward_prefetch_every_layer_waits_for_its_gather_in_the_backward_pass():
    # 16 H100s (two nodes): each layer's bf16 gather costs g; at 2 sequences of 2,048 tokens per GPU the
    # backward compute per layer hides gather and scatter with prefetch, so without it the step grows by
    # 8 layers x g per microbatch, 2 microbatches.
    topo = for_chips("h100", 16)
    axes = [a.name for a in topo.axes if a.size > 1]
    p = transformer.params(SMALL)
    layer = (p.total_params - p.embedding_params - p.unembedding_params - SMALL.d_model) / SMALL.layers
    g = collectives.all_gather(topo, axes=axes, bytes_=2 * layer).seconds
    pre, post = _est(), _est(backward_prefetch=False)
    assert pre.microbatches == 2
    assert post.exposed_seconds["fsdp"] - pre.exposed_seconds["fsdp"] == pytest.approx(2 * 8 * g)
    assert post.step_seconds - pre.step_seconds == pytest.approx(2 * 8 * g)


def test_without_a_backward_gather_prefetch_changes_nothing():
    kept = _est(reshard_after_forward=False)
    assert _est(reshard_after_forward=False, backward_prefetch=False).step_seconds == pytest.approx(kept.step_seconds)


def test_backward_prefetch_must_be_a_bool():
    with pytest.raises(Error, match="backward_prefetch"):
        Strategy(fsdp=2, backward_prefetch="post")


def test_strategy_label_names_a_gather_after_the_gradients():
    assert "gather after grads" in Strategy(fsdp=8, backward_prefetch=False).label()
    assert "gather after grads" not in Strategy(fsdp=8).label()


def test_llm_foundry_runs_use_composers_default_backward_post():
    # Composer's set_fsdp_default sets BACKWARD_POST; the benchmark's configs do not override it
    foundry = [r for r in runs.published_runs() if r.source == "mosaicml2024llmfoundry"]
    assert foundry and all(r.backward_prefetch is False for r in foundry)
    assert all(r.strategy_kwargs()["backward_prefetch"] is False for r in foundry)
    assert all("--no-backward-prefetch" in r.cli_args(model_path="m.json") for r in foundry)
    others = [r for r in runs.published_runs() if r.source != "mosaicml2024llmfoundry"]
    assert all(r.backward_prefetch is None for r in others)
