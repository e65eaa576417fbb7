"""scalebook.step: FSDP that keeps gathered weights from forward to backward (`reshard_after_forward`)."""
import pytest

from scalebook import Error, collectives, models, training, transformer
from scalebook.strategy import Strategy
from scalebook.topology import for_chips

SMALL = models.Transformer(name="small", layers=8, d_model=1024, heads=16, kv_heads=4, head_dim=64, d_ff=4096,
                           vocab=32000, mlp="gated")


def _est(**kw):
    return training.estimate(SMALL, strategy=Strategy(fsdp=16, microbatch=2, **kw), seq_len=2048, batch_seqs=64,
                             chip="h100", chips=16)


def test_fsdp_traffic_is_one_gather_and_one_scatter_per_layer_and_microbatch_without_resharding():
    # Per microbatch: each of the 8 layers gathered once (bf16) and its gradients reduce-scattered
    # once (bf16), plus the embedding tables gathered and scattered once; 2 microbatches per replica.
    topo = for_chips("h100", 16)
    axes = [a.name for a in topo.axes if a.size > 1]
    p = transformer.params(SMALL)
    top = p.embedding_params + p.unembedding_params + SMALL.d_model
    layer = (p.total_params - top) / SMALL.layers
    g = collectives.all_gather(topo, axes=axes, bytes_=2 * layer).seconds
    r = collectives.reduce_scatter(topo, axes=axes, bytes_=2 * layer).seconds
    tg = collectives.all_gather(topo, axes=axes, bytes_=2 * top).seconds
    tr = collectives.reduce_scatter(topo, axes=axes, bytes_=2 * top).seconds
    kept = _est(reshard_after_forward=False)
    assert kept.microbatches == 2
    assert kept.comm_seconds["fsdp"] == pytest.approx(2 * (8 * (g + r) + tg + tr))
    assert _est().comm_seconds["fsdp"] == pytest.approx(2 * (8 * (2 * g + r) + tg + tr))


def test_kept_weights_hold_every_layer_of_the_stage_gathered():
    # two layers' bf16 weights in flight when resharding; all 8 when kept
    p = transformer.params(SMALL)
    layer = (p.total_params - p.embedding_params - p.unembedding_params - SMALL.d_model) / SMALL.layers
    assert _est().memory.gathered_weights_bytes == pytest.approx(2 * 2 * layer)
    assert _est(reshard_after_forward=False).memory.gathered_weights_bytes == pytest.approx(8 * 2 * layer)


def test_reshard_after_forward_must_be_a_bool():
    with pytest.raises(Error, match="reshard_after_forward"):
        Strategy(fsdp=2, reshard_after_forward="no")
