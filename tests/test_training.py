"""scalebook.training and scalebook.strategy: the step model on hand-worked cases, and its rules."""
import math

import pytest
from hypothesis import given, settings, strategies as st

import scalebook
from scalebook import collectives, models, runs, step, topology, training
from scalebook.strategy import Strategy, place

SMALL = models.Transformer(name="small", layers=8, d_model=1024, heads=16, kv_heads=4, d_ff=4096, vocab=32000)
H100 = scalebook.chip("h100")


def _est(strategy, *, chip="h100", chips=None, model=SMALL, seq_len=2048, batch_seqs=64, **kw):
    return training.estimate(model, strategy=strategy, seq_len=seq_len, batch_seqs=batch_seqs, chip=chip,
                             chips=chips or strategy.chips, **kw)


# --- Strategy and placement --------------------------------------------------------------------

def test_strategy_counts_its_chips():
    assert Strategy(dp=2, fsdp=4, tp=8, pp=2, cp=2).chips == 256


@pytest.mark.parametrize("kw", [dict(dp=0), dict(tp=1.5), dict(ep=3, fsdp=4), dict(remat="some"),
                                dict(schedule="zigzag"), dict(zero=3), dict(matmul_dtype="int3"),
                                dict(microbatch=0), dict(ep=4, fsdp=8, dp=1) | dict(fsdp=6, ep=4, dp=2)])
def test_bad_strategy_raises_error(kw):
    with pytest.raises(scalebook.Error):
        Strategy(**kw)


def test_virtual_stages_imply_the_interleaved_schedule():
    assert Strategy(pp=4, virtual_stages=2).schedule == "interleaved"


def test_tensor_parallelism_gets_the_fastest_links_on_a_gpu_cluster():
    pl = place(Strategy(dp=4, tp=8), topology.for_chips("h100", 32))
    assert pl.networks("tp") == ("nvlink",)
    assert pl.networks("dp") == ("infiniband",)


def test_a_degree_larger_than_a_node_spans_nvlink_and_infiniband():
    pl = place(Strategy(fsdp=16), topology.for_chips("h100", 16))
    assert pl.networks("fsdp") == ("nvlink", "infiniband")


def test_part_of_a_torus_axis_runs_at_the_one_way_figure():
    topo = topology.slice("tpu-v5e", "16x16")
    pl = place(Strategy(tp=4, fsdp=64), topo)
    tp_axis = pl.topology.axis(pl.groups["tp"][0])
    assert tp_axis.size == 4 and not tp_axis.wraparound
    assert tp_axis.bytes_per_s == topo.chip.ici_one_way_bytes_per_s


def test_a_whole_torus_axis_keeps_its_wraparound():
    pl = place(Strategy(tp=16, fsdp=16), topology.slice("tpu-v5e", "16x16"))
    assert [pl.topology.axis(a).wraparound for a in pl.groups["tp"]] == [True]


def test_data_parallelism_goes_over_dcn_between_slices():
    pl = place(Strategy(fsdp=256, dp=2), topology.for_chips("tpu-v5e", 512))
    assert pl.networks("dp") == ("dcn",)
    assert pl.networks("fsdp") == ("ici",)


def test_experts_sit_inside_the_data_axes():
    pl = place(Strategy(fsdp=8, ep=4), topology.for_chips("h100", 8))
    assert pl.size("ep") == 4 and pl.size("expert_fsdp") == 2 and pl.size("expert_grad") == 1


def test_explicit_placement_uses_the_named_axes():
    topo = topology.for_mesh("tpu-v5e", {"fsdp": 4, "tp": 2})
    pl = place(Strategy(fsdp=4, tp=2, placement={"fsdp": ("fsdp",), "tp": ("tp",)}), topo)
    assert pl.groups["fsdp"] == ("fsdp",) and pl.groups["tp"] == ("tp",)


def test_placement_must_match_the_chip_count():
    with pytest.raises(scalebook.Error, match="chips"):
        place(Strategy(dp=4), topology.for_chips("h100", 8))


def test_degree_that_does_not_divide_an_axis_is_refused():
    with pytest.raises(scalebook.Error, match="divide"):
        place(Strategy(tp=3, dp=8), topology.for_chips("h100", 24))


# --- pricing agrees with chapter 3's collectives --------------------------------------------------

TOPOLOGIES = [topology.for_chips("h100", 64), topology.for_chips("tpu-v5p", 128), topology.for_chips("tpu-v5e", 512),
              topology.for_chips("a100", 32), topology.slice("tpu-v5e", "8x16")]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(TOPOLOGIES), st.sampled_from(collectives.KINDS), st.integers(0, 6), st.integers(0, 3),
       st.floats(1e3, 1e10))
def test_vectorised_price_equals_collectives_cost(topo, kind, log_tp, log_cp, v):
    tp, cp = 2 ** log_tp, 2 ** log_cp
    if topo.num_chips % (tp * cp):
        return
    pl = place(Strategy(tp=tp, cp=cp, fsdp=topo.num_chips // (tp * cp)), topo)
    for group in ("tp", "cp", "fsdp"):
        got = float(step.price(kind, step.stack([step.describe(pl, group)]), v)[0])
        want = collectives.cost(kind, pl.topology, axes=pl.groups[group], bytes_=v).seconds if pl.groups[group] else 0.0
        assert got == pytest.approx(want, rel=1e-12, abs=1e-18)


def test_each_parallelism_time_is_the_sum_of_its_collectives():
    moe = models.preset("mixtral-8x7b")
    e = training.estimate(moe, strategy=Strategy(fsdp=8, ep=8, tp=2, pp=2, cp=2, sequence_parallel=True, remat="full"),
                          seq_len=4096, batch_seqs=64, chip="h100", chips=64)
    for kind in ("tp", "fsdp", "dp", "pp", "ep", "cp"):
        total = sum(c.total_seconds for c in e.collectives if c.parallelism == kind)
        assert total == pytest.approx(e.comm_seconds[kind], rel=1e-9), kind


# --- hand-worked cases -------------------------------------------------------------------------

def test_compute_time_is_training_flops_over_chips_and_achieved_peak_with_wave_quantisation():
    e = _est(Strategy(dp=8), efficiency=0.5)
    fl = scalebook.transformer.flops_per_token(SMALL, seq_len=2048)
    flops = 3 * fl.forward_flops * 64 * 2048
    # 16,384 tokens per H100 (132 SMs, 256 x 128 tiles): QKV 1024 -> 1536 is 64 x 12 = 768 tiles in 6
    # waves, out 64 x 8 = 512 in 4, gated up 1024 -> 8192 is 64 x 64 = 4096 in 32, down 512 in 4:
    # every weight matmul uses 32/33 of its waves. Attention's matmuls are charged the flat rate, and a
    # fused kernel's backward pass runs 5 matmuls to the forward's 2 (it recomputes QK^T; Dao 2023,
    # sec. 4.1): 1 + 2.5 forward passes of attention where the flat count has 3.
    share = fl.attention_score_flops / fl.forward_flops
    flat = flops / (8 * H100.peak_flops_per_s("bf16") * 0.5)
    assert e.matmul_seconds == pytest.approx(flat * ((1 - share) * 33 / 32 + share * 3.5 / 3))
    assert e.compute_seconds == pytest.approx(e.matmul_seconds + e.memory_bound_seconds)


def test_memory_bound_work_counts_elementwise_passes_through_hbm():
    e = _est(Strategy(dp=8))
    D, F, N, K, H, L = 1024, 4096, 16, 4, 64, 8
    forward = L * (10 * D + 3 * F + 2 * (N + K) * H)  # elements per token
    tokens = 64 * 2048 / 8
    assert e.memory_bound_seconds == pytest.approx(3 * forward * 2 * tokens / H100.hbm_bytes_per_s)


def test_attention_without_flash_adds_score_traffic_that_grows_with_length():
    # Megatron-LM's unfused attention, per score element: forward QK^T writes S, the softmax reads S
    # and writes P, AV reads P (4); backward AV writes dP and reads P, the softmax reads P and dP and
    # writes dS, QK^T's two gradients read dS (7). N = 16 heads, L = 8 layers, T = 2048, 2 bytes.
    flash = _est(Strategy(dp=8))
    plain = _est(Strategy(dp=8, flash_attention=False))
    tokens = 64 * 2048 / 8
    extra = (4 + 7) * 16 * 8 * 2048 * 2 * tokens / H100.hbm_bytes_per_s
    assert plain.memory_bound_seconds - flash.memory_bound_seconds == pytest.approx(extra)
    # with full remat the forward's 4 come once more
    flash_r = _est(Strategy(dp=8, remat="full"))
    plain_r = _est(Strategy(dp=8, remat="full", flash_attention=False))
    extra_r = (4 + 7 + 4) * 16 * 8 * 2048 * 2 * tokens / H100.hbm_bytes_per_s
    assert plain_r.memory_bound_seconds - flash_r.memory_bound_seconds == pytest.approx(extra_r)


def test_attention_without_flash_computes_the_whole_square():
    # QK^T and AV as batched matmuls over T x T do twice the causal FLOPs, forward and backward
    # (2 x (1 + 2) passes), while the fused kernel does the causal FLOPs with a backward pass of 2.5
    # forwards (it recomputes QK^T: 1 + 2.5 passes). Causal attention FLOPs per token and layer:
    # 2 x 2 x (T / 2) x N H = 2 T N H.
    flash = _est(Strategy(dp=8), efficiency=0.5)
    plain = _est(Strategy(dp=8, flash_attention=False), efficiency=0.5)
    causal = 2 * 2048 * 16 * 64 * 8  # per token, all layers
    extra = (6 - 3.5) * causal * (64 * 2048 / 8) / (H100.peak_flops_per_s("bf16") * 0.5)
    assert plain.matmul_seconds - flash.matmul_seconds == pytest.approx(extra)


def test_data_parallel_allreduce_moves_the_gradients_once():
    e = _est(Strategy(dp=8))
    grads = scalebook.transformer.params(SMALL).total_params * 2
    # One ring AllReduce over the node's NVLink: 2 (N - 1) = 14 steps, 2 V (N - 1) / N bytes per GPU, at
    # NCCL's usable share of the 450 GB/s egress (SM90_NVLINK_BW 20.6 of 25 GB/s per link, tuning.cc/topo.h),
    # with the fastest protocol (step latency, share of that bandwidth): LL, LL128 or Simple.
    usable = 450e9 * 20.6 / 25
    want = min(14 * lat + 2 * grads * 7 / 8 / (usable * share)
               for lat, share in ((0.6e-6, 0.5), (1.9e-6, 0.92), (3.4e-6, 1.0)))
    assert e.comm_seconds["dp"] == pytest.approx(want)


def test_fsdp_gathers_twice_and_scatters_once_per_layer_and_microbatch():
    e = _est(Strategy(fsdp=8, microbatch=2))
    per_layer = [c for c in e.collectives if c.parallelism == "fsdp" and c.per_layer]
    assert [c.kind for c in per_layer] == ["all-gather", "all-gather", "reduce-scatter"]
    assert all(c.count == SMALL.layers * e.microbatches for c in per_layer)
    assert e.microbatches == 4
    p = scalebook.transformer.params(SMALL)
    top = p.embedding_params + p.unembedding_params + SMALL.d_model
    assert per_layer[0].array_bytes == (p.total_params - top) / SMALL.layers * 2
    # the embedding, unembedding and final norm: gathered once forward, scattered once
    once = [c for c in e.collectives if c.parallelism == "fsdp" and not c.per_layer]
    assert [c.kind for c in once] == ["all-gather", "reduce-scatter"]
    assert all(c.count == 4 and c.array_bytes == top * 2 for c in once)


def test_tensor_parallelism_allreduces_activations_four_times_a_layer():
    e = _est(Strategy(tp=8))
    tp = [c for c in e.collectives if c.parallelism == "tp" and c.per_layer]
    assert sum(c.count for c in tp) == 4 * SMALL.layers
    assert tp[0].array_bytes == 64 * 2048 * SMALL.d_model * 2


def test_vocab_parallel_embedding_and_logits_add_five_small_tp_collectives():
    e = _est(Strategy(tp=8))
    vocab = [c for c in e.collectives if c.parallelism == "tp" and not c.per_layer]
    tokens = 64 * 2048
    assert sorted((c.count, c.array_bytes) for c in vocab) == sorted(
        [(1, tokens * SMALL.d_model * 2), (1, tokens * SMALL.d_model * 2), (3, tokens * 4)])


def test_full_remat_adds_two_tp_allreduces_a_layer_and_raises_hfu():
    plain, remat = _est(Strategy(tp=8)), _est(Strategy(tp=8, remat="full"))
    assert sum(c.count for c in remat.collectives) == sum(c.count for c in plain.collectives) + 2 * SMALL.layers
    assert remat.hardware_flops > remat.model_flops == plain.model_flops


def test_sequence_parallelism_splits_activations_and_their_elementwise_work():
    plain, sp = _est(Strategy(tp=8)), _est(Strategy(tp=8, sequence_parallel=True))
    assert sum(c.total_seconds for c in sp.collectives) == pytest.approx(sum(c.total_seconds for c in plain.collectives))
    assert sp.memory.activation_bytes < plain.memory.activation_bytes
    assert sp.memory_bound_seconds < plain.memory_bound_seconds


def test_pipeline_bubble_is_stages_minus_one_over_virtual_stages_slots():
    e = _est(Strategy(pp=4, dp=2, microbatch=1))  # 32 microbatches per replica
    stage = (e.step_seconds - e.bubble_seconds - e.exposed_seconds["dp"] - e.optimizer_seconds) / e.microbatches
    assert e.bubble_seconds == pytest.approx(3 * stage)
    v2 = _est(Strategy(pp=4, dp=2, microbatch=1, virtual_stages=2))
    assert v2.bubble_seconds < e.bubble_seconds


def test_adam_state_is_twelve_bytes_a_parameter_and_zero_one_shards_it():
    p = scalebook.transformer.params(SMALL).total_params
    assert _est(Strategy(dp=8)).memory.optimizer_bytes == pytest.approx(12 * p)
    assert _est(Strategy(dp=8, zero=1)).memory.optimizer_bytes == pytest.approx(12 * p / 8)


def test_mfu_counts_model_flops_and_hfu_counts_recomputation():
    e = _est(Strategy(fsdp=8, remat="full"))
    assert e.mfu == pytest.approx(e.model_flops / (e.step_seconds * 8 * H100.peak_flops_per_s("bf16")))
    assert e.hfu / e.mfu == pytest.approx(e.hardware_flops / e.model_flops)


def test_fp8_matmuls_use_the_fp8_peak_where_the_chip_has_one():
    bf16, fp8 = _est(Strategy(dp=8)), _est(Strategy(dp=8, matmul_dtype="fp8"))
    ratio = H100.peak_flops_per_s("bf16") / H100.peak_flops_per_s("fp8")
    assert fp8.matmul_seconds == pytest.approx(bf16.matmul_seconds * ratio)
    assert _est(Strategy(dp=8, matmul_dtype="fp8"), chip="a100").peak_flops_per_s == scalebook.chip("a100").peak_flops_per_s("bf16")


def test_days_chip_hours_and_cost_follow_the_token_rate():
    e = _est(Strategy(dp=8))
    assert e.days(1e12) == pytest.approx(1e12 / e.tokens_per_s / 86400)
    assert e.chip_hours(1e12) == pytest.approx(e.days(1e12) * 24 * 8)
    assert e.cost_usd(1e12, usd_per_chip_hour=2.0) == pytest.approx(2 * e.chip_hours(1e12))


def test_a_model_too_big_for_one_chip_does_not_fit():
    e = training.estimate(models.preset("llama3-70b"), strategy=Strategy(dp=8), seq_len=4096, batch_seqs=8,
                          chip="h100", chips=8)
    assert not e.fits and e.memory.bytes > 16 * 70e9


@pytest.mark.parametrize("kw, match", [
    (dict(strategy=Strategy(tp=3, dp=2)), "heads"),
    (dict(strategy=Strategy(pp=16)), "layers"),
    (dict(strategy=Strategy(ep=2, dp=2)), "mixture-of-experts"),
    (dict(strategy=Strategy(cp=8), seq_len=2044), "sequence"),
    (dict(strategy=Strategy(dp=8), batch_seqs=12), "split"),
    (dict(strategy=Strategy(dp=2, microbatch=3)), "microbatch"),
    (dict(strategy=Strategy(dp=8), efficiency=1.5), "at most 1"),
])
def test_bad_estimate_input_raises_error(kw, match):
    args = dict(seq_len=2048, batch_seqs=64) | kw
    s = args.pop("strategy")
    with pytest.raises(scalebook.Error, match=match):
        training.estimate(SMALL, strategy=s, chip="h100", chips=s.chips, **args)


def test_a_token_batch_is_rounded_to_whole_sequences():
    e = training.estimate(SMALL, strategy=Strategy(dp=1), seq_len=2048, batch_tokens=4e6, chip="h100", chips=1)
    assert e.batch_tokens == 1953 * 2048


def test_batch_must_be_given_once():
    with pytest.raises(scalebook.Error, match="exactly one"):
        training.estimate(SMALL, strategy=Strategy(dp=8), seq_len=2048, batch_seqs=8, batch_tokens=8 * 2048,
                          chip="h100", chips=8)


# --- properties (Chapter 5's monotonicity claims) ------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["dp", "fsdp"]), st.integers(0, 3), st.integers(0, 2), st.sampled_from(["h100", "tpu-v5p"]))
def test_more_chips_never_raise_compute_time_per_chip(kind, log_a, log_tp, chip):
    base = Strategy(**{kind: 2 ** log_a, "tp": 2 ** log_tp})
    more = base.replace(**{kind: 2 ** (log_a + 1)})
    a, b = _est(base, chip=chip, batch_seqs=128), _est(more, chip=chip, batch_seqs=128)
    assert b.compute_seconds <= a.compute_seconds * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["dp", "fsdp", "tp", "pp", "cp"]), st.integers(0, 2), st.integers(0, 2),
       st.sampled_from(["none", "selective", "full"]), st.booleans())
def test_memory_per_chip_never_rises_when_a_degree_grows(kind, log_a, log_b, remat, sp):
    base = dict(fsdp=2 ** log_a, tp=2 ** log_b, remat=remat, sequence_parallel=sp, zero=1, microbatch=1)
    grown = dict(base)
    grown[kind] = grown.get(kind, 1) * 2
    a, b = _est(Strategy(**base), batch_seqs=64), _est(Strategy(**grown), batch_seqs=64)
    assert b.memory.bytes <= a.memory.bytes * (1 + 1e-12)


# --- thresholds --------------------------------------------------------------------------------

@pytest.mark.parametrize("strategy, chip, chips", [(Strategy(fsdp=64), "tpu-v5p", 64),
                                                   (Strategy(dp=64), "h100", 64),
                                                   (Strategy(fsdp=32, tp=8), "h100", 256),
                                                   (Strategy(fsdp=16, tp=4, tp_overlap=True), "tpu-v5p", 64)])
def test_estimate_turns_compute_bound_at_the_critical_batch(strategy, chip, chips):
    model = models.preset("llama3-8b")
    seq = 128
    b_star = training.critical_batch_per_chip(model, strategy=strategy, seq_len=seq, chip=chip, chips=chips)
    per_seq = seq / chips * strategy.data  # tokens per chip that one sequence per replica adds

    def exposed(factor):
        per_replica = (math.floor if factor < 1 else math.ceil)(b_star * factor / per_seq)
        seqs = max(1, per_replica) * strategy.data
        e = training.estimate(model, strategy=strategy, seq_len=seq, batch_seqs=seqs, chip=chip, chips=chips)
        # the first gather of a microbatch (layer 0 and the embedding tables) has nothing before it
        first = sum(c.seconds for c in e.collectives if c.parallelism == "fsdp" and c.kind == "all-gather"
                    and ("before the forward" in c.purpose or "embedding" in c.purpose)) * e.microbatches
        return e.exposed_seconds["fsdp"] - first + e.exposed_seconds["dp"]

    assert exposed(0.9) > 1e-12
    assert exposed(1.1) == pytest.approx(0, abs=1e-12)


def test_rule_of_thumb_is_peak_over_bandwidth_for_bf16():
    # TPU v5p: 459 TFLOP/s bf16; ICI 90 GB/s each way per link, 180 GB/s both ways: 459e12 / 180e9
    assert training.rule_of_thumb_batch_per_chip("tpu-v5p", link="ici") == pytest.approx(2550)
    assert training.rule_of_thumb_batch_per_chip("tpu-v5p", link="ici", tp=4) == pytest.approx(2550 / 4)


def test_exact_critical_batch_approaches_the_rule_for_a_large_fsdp_group():
    model = models.preset("llama3-70b")
    exact = training.critical_batch_per_chip(model, strategy=Strategy(fsdp=2048), seq_len=2048, chip="tpu-v5p",
                                             chips=2048, efficiency=1.0)
    rule = training.rule_of_thumb_batch_per_chip("tpu-v5p", link="ici")
    # The rule uses one axis' W; the exact model gathers over all three torus axes at once.
    three_axes = rule / 3
    assert exact == pytest.approx(three_axes, rel=0.1)


def test_max_tp_degree_grows_with_width_and_matches_the_hand_formula():
    c = scalebook.chip("h100")
    m = models.Transformer(name="std", layers=4, d_model=8192, heads=64, d_ff=4 * 8192, vocab=1000, mlp="plain")
    hand = 6 * (12 * 8192 ** 2 + 2 * 8192) * c.ici_one_way_bytes_per_s / (8 * 8192 * 2 * c.peak_flops_per_s("bf16"))
    assert training.max_tp_degree(m, chip=c) == pytest.approx(hand, rel=1e-6)
    wider = m.replace(d_model=16384, heads=128, d_ff=4 * 16384)
    assert training.max_tp_degree(wider, chip=c) > training.max_tp_degree(m, chip=c)


def test_link_names_are_checked_against_the_chip():
    with pytest.raises(scalebook.Error, match="nvlink"):
        training.link_bytes_per_s("h100", "ici")
    with pytest.raises(scalebook.Error, match="valid"):
        training.link_bytes_per_s("tpu-v5p", "ethernet")


# --- calibration -----------------------------------------------------------------------------------

def test_fit_efficiency_reproduces_its_target():
    # The tiny model on 64 H100s (FSDP8 x TP8, one 2048-token sequence per replica-chip group) is bound by
    # collective latency: its MFU stays below 20% even at full matmul efficiency, so the target is 15%.
    s = Strategy(fsdp=8, tp=8)
    eff = training.fit_efficiency(SMALL, target=0.15, metric="mfu", strategy=s, seq_len=2048, batch_seqs=64,
                                  chip="h100", chips=64)
    assert _est(s, chips=64, efficiency=eff).mfu == pytest.approx(0.15, rel=1e-6)


def test_fit_efficiency_refuses_a_target_communication_cannot_reach():
    with pytest.raises(scalebook.Error, match="communication"):
        training.fit_efficiency(SMALL, target=0.5, metric="mfu", strategy=Strategy(fsdp=8, tp=8), seq_len=2048,
                                batch_seqs=64, chip="h100", chips=64)


# family, a chip that takes its constant, and which fit runs belong to it
FAMILIES = [("tpu", "tpu-v5p", lambda chip: scalebook.chip(chip).is_tpu),
            ("gpu", "b200", lambda chip: not scalebook.chip(chip).is_tpu),
            ("ampere", "a100", lambda chip: chip == "a100"),
            ("hopper", "h100", lambda chip: chip in ("h100", "h200"))]


@pytest.mark.parametrize("family, chip, member", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_default_efficiency_is_the_refit_on_the_fit_runs_only(family, chip, member):
    """If the step model changes, run tools/fit_efficiency.py to refit the defaults."""
    from scalebook._data import load

    stored = load("training_efficiency")[family]
    fit_ids = [r.id for r in runs.published_runs() if r.role == "fit" and member(r.chip)]
    assert stored["fitted_on"] == fit_ids  # every fit run of the family, and no validation run
    assert [r.id for r in training.fit_runs(family)] == fit_ids
    assert training.refit_default_efficiency(family) == pytest.approx(training.default_efficiency(chip), abs=1e-3)


def test_a_gpu_takes_its_generations_efficiency_and_one_without_fit_runs_the_gpu_one():
    # Ampere: A100; Hopper: H100 and H200 (nvidiahopperwp, nvidiah200); Blackwell has no fit run
    assert training.efficiency_families() == ("tpu", "gpu", "ampere", "hopper")
    family = {c.name: training.efficiency_family(c) for c in scalebook.chips()}
    assert family == {"tpu-v4p": "tpu", "tpu-v5e": "tpu", "tpu-v5p": "tpu", "tpu-v6e": "tpu", "tpu-7x": "tpu",
                      "a100": "ampere", "h100": "hopper", "h200": "hopper", "b200": "gpu", "gb200": "gpu"}
    assert training.default_efficiency("h200") == training.default_efficiency("h100")
    assert training.default_efficiency("gb200") == training.default_efficiency("b200")


def test_fit_runs_of_an_unknown_family_name_the_valid_ones():
    with pytest.raises(scalebook.Error, match="valid: tpu, gpu, ampere, hopper"):
        training.fit_runs("blackwell")


def test_validation_report_reads_the_fit_runs_the_defaults_were_fitted_on():
    # training_efficiency.json lists the fit runs under `fitted_on`; its older `run` field names a run that is
    # 'validation' now and must not be taken for an anchor, nor H100 runs for unfitted (the GPU fit has some).
    from scalebook import published

    assert published.anchored_validation_runs() == ()
    h100_run = next(r for r in runs.published_runs() if r.chip == "h100" and r.role == "validation")
    assert not any("fitted on" in s for s in published.simplifications(h100_run))


def test_every_published_run_can_be_estimated():
    for run in runs.published_runs():
        kw = run.estimate_kwargs()
        e = training.estimate(run.model_config(), strategy=Strategy(**kw.pop("strategy_kwargs")), **kw)
        assert 0 < e.mfu < 1, run.id


def test_estimate_reprs_are_readable():
    e = _est(Strategy(fsdp=8))
    assert f"MFU {100 * e.mfu:.1f}%" in repr(e) and "FSDP8" in repr(e) and "(fits)" in repr(e)
    assert "<table>" in e._repr_html_() and "of 80 GB" in repr(e.memory)  # an H100 holds 80 GB
    assert e.to_dict()["step_seconds"] == e.step_seconds and math.isfinite(e.step_seconds)


def test_pipeline_bubble_fraction_matches_estimate():
    e = _est(Strategy(pp=4, dp=2, microbatch=1, virtual_stages=2))
    assert training.pipeline_bubble_fraction(pp=4, microbatches=e.microbatches, virtual_stages=2) == pytest.approx(
        e.bubble_seconds / (e.step_seconds - e.exposed_seconds["dp"] - e.optimizer_seconds))


def test_expert_and_context_thresholds_follow_the_chapter_formulas():
    # H100: 990 TFLOP/s bf16 (dense) over NVLink's 450 GB/s one way is 2200 FLOP/B
    assert training.min_expert_width("h100", link="nvlink") == pytest.approx(4 / 9 * 2200)
    m = models.preset("llama3-70b")  # 8 kv heads for 64 query heads
    # causal, load-balanced chunks: half a block of FLOPs per ring step, so twice the full-block bound
    assert training.min_context_chunk(m, chip="h100", link="nvlink") == pytest.approx(2 * 8 / 64 * 2200)


def test_a_group_sharing_a_node_needs_proportionally_less_batch_over_infiniband():
    one = training.rule_of_thumb_batch_per_chip("h100", link="infiniband")
    assert training.rule_of_thumb_batch_per_chip("h100", link="infiniband", chips_sharing=8) == pytest.approx(one / 8)


# --- the critical batch is per microbatch, and is where `estimate` hides FSDP (LLaMA-3 8B, 64 H100s) ---

def _l8_fsdp64(tokens_per_chip, *, seq=64, microbatch=None):
    strategy = Strategy(fsdp=64, microbatch=microbatch)
    return training.estimate(models.preset("llama3-8b"), strategy=strategy, seq_len=seq,
                             batch_tokens=tokens_per_chip * 64, chip="h100", chips=64)


def _l8_layer_collectives(e):
    """By hand: one LLaMA-3 8B layer holds 2 x 4096^2 (q, o) + 2 x 4096 x 1024 (k, v) + 3 x 4096 x 14336
    (gated MLP) + 2 x 4096 (norms) = 218,112,000 parameters, 436,224,000 bytes in bf16; the
    embedding and unembedding 2 x 128,256 x 4096 and the final norm 4096. Each priced by
    `collectives.cost` over the estimate's FSDP axes."""
    layer = 2 * (2 * 4096 ** 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096)
    top = 2 * (2 * 128256 * 4096 + 4096)
    axes = e.placement.groups["fsdp"]
    assert axes == ("X", "Y")  # NVLink in the node, InfiniBand across the 8 nodes
    g = collectives.cost("all-gather", e.topology, axes=axes, bytes_=layer).seconds
    s = collectives.cost("reduce-scatter", e.topology, axes=axes, bytes_=layer).seconds
    g_top = collectives.cost("all-gather", e.topology, axes=axes, bytes_=top).seconds
    return g, s, g_top


def test_below_the_critical_batch_fsdp_is_exposed_by_the_hand_derived_amount():
    # 10% below B*, one microbatch: in each of the L = 32 layers the forward pass hides the next
    # gather behind c/3 / L of compute, the backward pass a gather and a reduce-scatter behind
    # 2c/3 / L (remat none: backward twice the forward's matmul and elementwise work); the first
    # gather (layer 0 and the embedding tables) is always exposed.
    b_star = training.critical_batch_per_chip(models.preset("llama3-8b"), strategy=Strategy(fsdp=64), seq_len=64,
                                              chip="h100", chips=64)
    e = _l8_fsdp64(64 * math.floor(0.9 * b_star / 64))
    g, s, g_top = _l8_layer_collectives(e)
    c, L = e.compute_seconds, 32
    windows = g + g_top + L * max(0.0, g - c / 3 / L) + L * max(0.0, g + s - 2 * c / 3 / L)
    # and no step is shorter than the InfiniBand's busy time, 3 L g + 2 g_top (every gather and
    # scatter crosses it): the excess over compute + windows + optimizer is FSDP's too
    busy = 3 * L * g + 2 * g_top
    by_hand = max(windows, busy - c - e.optimizer_seconds)
    assert e.exposed_seconds["fsdp"] == pytest.approx(by_hand, rel=1e-6)
    assert e.exposed_seconds["fsdp"] > g + g_top  # more than the first gather is exposed


def test_above_the_critical_batch_only_the_first_gather_is_exposed():
    b_star = training.critical_batch_per_chip(models.preset("llama3-8b"), strategy=Strategy(fsdp=64), seq_len=64,
                                              chip="h100", chips=64)
    e = _l8_fsdp64(64 * math.ceil(1.1 * b_star / 64))
    g, s, g_top = _l8_layer_collectives(e)
    assert e.exposed_seconds["fsdp"] == pytest.approx(g + g_top, rel=1e-6)
    assert e.exposed_seconds["dp"] == 0


def test_the_critical_batch_counts_tokens_per_microbatch():
    # FSDP gathers every layer again for every microbatch, so a step of two microbatches of 1.1 B*
    # each hides its traffic (only each microbatch's first gather shows), while a step of the same
    # size cut into four microbatches of 0.55 B* exposes more than that in each.
    b_star = training.critical_batch_per_chip(models.preset("llama3-8b"), strategy=Strategy(fsdp=64), seq_len=64,
                                              chip="h100", chips=64)
    per_micro = 128 * math.ceil(1.1 * b_star / 128)  # an even number of 64-token sequences
    two = _l8_fsdp64(2 * per_micro, microbatch=per_micro // 64)
    g, s, g_top = _l8_layer_collectives(two)
    assert two.microbatches == 2
    assert two.exposed_seconds["fsdp"] == pytest.approx(2 * (g + g_top), rel=1e-6)
    four = _l8_fsdp64(2 * per_micro, microbatch=per_micro // 128)
    assert four.microbatches == 4
    assert four.exposed_seconds["fsdp"] > 4 * (g + g_top) * (1 + 1e-6)
