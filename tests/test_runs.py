"""Published training runs (Chapter 6): the data loads, is self-consistent and matches its papers."""
import dataclasses
import math
import re
from pathlib import Path

import pytest

import scalebook
from scalebook import runs, transformer
from scalebook.runs import PublishedRun, published_run, published_runs

IDS = [r.id for r in published_runs()]
BIB = (Path(__file__).resolve().parents[1] / "book" / "references.bib").read_text()
BIB_KEYS = set(re.findall(r"^@\w+\{([^,]+),", BIB, flags=re.M))


def test_there_are_runs_with_unique_ids():
    assert len(IDS) >= 40 and len(set(IDS)) == len(IDS)


def test_runs_span_tpus_and_gpus_dense_and_moe():
    chips = {r.chip for r in published_runs()}
    assert {"tpu-v4p", "tpu-v5e", "tpu-v5p", "a100", "h100"} <= chips
    moe = [r for r in published_runs() if r.model_config().routed_experts > 0]
    assert moe and len(moe) < len(IDS)


@pytest.mark.parametrize("run_id", IDS)
def test_each_model_builds_and_matches_the_published_size(run_id):
    run = published_run(run_id)
    total = transformer.params(run.model_config()).total_params
    assert total == pytest.approx(run.published_params, rel=0.05)


@pytest.mark.parametrize("run_id", IDS)
def test_degrees_multiply_to_the_chip_count(run_id):
    r = published_run(run_id)
    assert r.dp * r.fsdp * r.tp * r.pp * r.cp == r.chips
    assert (r.dp * r.fsdp) % r.ep == 0
    assert r.batch_seqs % (r.dp * r.fsdp) == 0, "whole sequences per data-parallel replica"
    if r.microbatch is not None:
        assert r.batch_seqs // (r.dp * r.fsdp) % r.microbatch == 0


@pytest.mark.parametrize("run_id", IDS)
def test_fields_are_valid_and_cited(run_id):
    r = published_run(run_id)
    assert r.chip in scalebook.chip_names()
    assert r.dtype in ("bf16", "fp8")
    assert r.remat in (None, "none", "selective", "full")
    assert r.zero in (None, 0, 1, 2)
    assert r.source in BIB_KEYS and r.where and r.notes
    assert set(r.inferred) <= {f.name for f in dataclasses.fields(PublishedRun)}
    reported = (r.reported_mfu, r.reported_hfu, r.reported_flops_per_s_per_chip, r.reported_tokens_per_s)
    assert any(x is not None for x in reported), "each run reports a speed"
    for frac in (r.reported_mfu, r.reported_hfu):
        assert frac is None or 0 < frac < 1


def test_not_modelled_runs_are_cited_with_a_reason():
    for n in runs.not_modelled():
        assert n.source in BIB_KEYS and n.reason and n.reported


def test_unknown_id_raises_error_listing_valid_ids():
    with pytest.raises(scalebook.Error, match="palm-540b-tpuv4"):
        published_run("gpt-5-on-abacus")


@pytest.mark.parametrize("run_id", IDS)
def test_cli_args_are_strings_with_chips_and_seq_len(run_id, tmp_path):
    r = published_run(run_id)
    args = r.cli_args(model_path=str(tmp_path / "model.json"))
    assert all(isinstance(a, str) for a in args)
    assert "--chips" in args and "--seq-len" in args and "--batch-seqs" in args
    assert args[args.index("--chips") + 1] == str(r.chips)
    assert args[0] == (r.model if isinstance(r.model, str) else str(tmp_path / "model.json"))


def test_inline_model_needs_a_path_and_round_trips_through_json():
    r = published_run("megatron-1t-a100")
    with pytest.raises(scalebook.Error, match="model_path"):
        r.cli_args()
    assert scalebook.models.Transformer(**r.model_json()) == r.model_config()
    with pytest.raises(scalebook.Error, match="preset"):
        published_run("palm-540b-tpuv4").model_json()


def test_estimate_kwargs_leave_out_unknowns():
    r = published_run("llama3-405b-h100-8k")
    kw = r.estimate_kwargs()
    assert kw["batch_tokens"] == 2048 * 8192 and kw["chips"] == 8192 and kw["chip"] == "h100"
    s = kw["strategy_kwargs"]
    assert (s["dp"], s["fsdp"], s["tp"], s["pp"], s["cp"], s["matmul_dtype"]) == (1, 64, 8, 16, 1, "bf16")
    assert "microbatch" not in s and "virtual_stages" not in s and "zero" not in s


def test_llama3_8k_runs_use_fsdp_without_activation_checkpointing():
    """Dubey et al. 2024, Section 3.3.2: DP is FSDP; 8K sequences were pre-trained without activation checkpointing."""
    for rid in ("llama3-405b-h100-8k", "llama3-405b-h100-16k"):
        r = published_run(rid)
        assert (r.dp, r.fsdp, r.remat) == (1, r.chips // (r.tp * r.pp * r.cp), "none")
    assert published_run("llama3-405b-h100-16k-128k-ctx").remat is None  # not stated at 128K


# --- roles: fit or validation, chosen by the rule stated in the data's note ---

def test_roles_are_fit_or_validation_and_an_unknown_role_raises():
    assert {r.role for r in published_runs()} == {"fit", "validation"}
    with pytest.raises(scalebook.Error, match="role"):
        dataclasses.replace(published_run("palm-540b-tpuv4"), role="train")


def test_roles_follow_the_stated_rule():
    """Group by (source, chip), sort by (published_params, chips, seq_len, id): every third run from the second fits."""
    groups = {}
    for r in published_runs():
        groups.setdefault((r.source, r.chip), []).append(r)
    for members in groups.values():
        members.sort(key=lambda r: (r.published_params, r.chips, r.seq_len, r.id))
        assert [r.role for r in members] == ["fit" if i % 3 == 1 else "validation" for i in range(len(members))]
    assert "index % 3 == 1" in runs.load("training_runs")["note"]


def test_at_most_a_third_fit_and_every_calibrated_family_has_fit_runs():
    fit = [r for r in published_runs() if r.role == "fit"]
    assert 3 * len(fit) <= len(IDS)
    fit_chips = {r.chip for r in fit}
    assert {"a100", "h100"} <= fit_chips and fit_chips & {"tpu-v4p", "tpu-v5e", "tpu-v5p"}


# --- new sources pinned against their own published figures ---

@pytest.mark.parametrize("run_id", [i for i in IDS if i.startswith("megatron-sp-")])
def test_korthikanti_step_time_reproduces_its_mfu(run_id):
    """Korthikanti et al. 2022, Appendix A: model FLOPs 72 B s l h^2 (1 + s/6h + V/12lh) per step, A100 peak 312 TFLOP/s."""
    r = published_run(run_id)
    m = r.model_config()
    B, s, l, h, V = r.batch_seqs, r.seq_len, m.layers, m.d_model, m.vocab
    flops = 72 * B * s * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h))
    # Step times are given to 10 ms (1.10 s for 22B: +-0.5%), so agreement is to about 0.2 points.
    assert flops / (r.reported_step_seconds * r.chips * 312e12) == pytest.approx(r.reported_mfu, abs=0.002)


@pytest.mark.parametrize("run_id", [i for i in IDS if i.startswith("maxtext-")])
def test_maxtext_tflops_over_peak_is_its_mfu(run_id):
    """MaxText's READMEs quote TFLOP/s per chip and MFU against TPU v5p's 459 and v5e's 197 TFLOP/s."""
    r = published_run(run_id)
    peak = {"tpu-v5p": 459e12, "tpu-v5e": 197e12}[r.chip]
    assert r.reported_flops_per_s_per_chip / peak == pytest.approx(r.reported_mfu, rel=0.005)


def test_maxtext_model_sizes_follow_the_global_parameter_scale():
    """pyconfig.get_individual_scales: scale 128 = 2^7 doubles heads and MLP 3 times, embedding 2, layers 2."""
    m = published_run("maxtext-128b-v5p-1x128").model_config()
    assert (m.heads, m.d_ff, m.d_model, m.layers) == (8 * 8, 8192 * 8, 2560 * 4, 16 * 4)


@pytest.mark.parametrize("run_id", [i for i in IDS if i.startswith("mpt-")])
def test_mpt_tokens_per_second_reproduce_its_mfu(run_id):
    """llm-foundry's MFU (its README): (6 N + 12 L d T) FLOPs per token x tokens/s over GPUs x peak.

    The peak is Composer's per-GPU table, which collect_results.py looks up as 'a100' and 'h100-sxm':
    312 and 989.4 TFLOP/s (bf16) reproduce every row's MFU to 0.5%.
    """
    r = published_run(run_id)
    m = r.model_config()
    per_token = 6 * r.published_params + 12 * m.layers * m.d_model * r.seq_len
    peak = {"a100": 312e12, "h100": 989.4e12}[r.chip]
    assert r.reported_tokens_per_s * per_token / (r.chips * peak) == pytest.approx(r.reported_mfu, rel=0.005)


@pytest.mark.parametrize("run_id", [i for i in IDS if i.startswith("torchtitan-")])
def test_torchtitan_tokens_per_second_reproduce_its_mfu(run_id):
    """torchtitan's MFU: (6 N + 12 l h q t) FLOPs per token (N with the embedding) x tokens/s per GPU over 312 TFLOP/s."""
    r = published_run(run_id)
    m = r.model_config()
    per_token = 6 * transformer.params(m).total_params + 12 * m.layers * m.heads * m.head_dim * r.seq_len
    assert r.reported_tokens_per_s / r.chips * per_token / 312e12 == pytest.approx(r.reported_mfu, rel=0.01)


def test_palm_throughput_reproduces_its_mfu():
    """PaLM counts 6N + 12 L H Q T FLOPs per token (heads x head dim, sequence length)."""
    r = published_run("palm-540b-tpuv4")
    m = r.model_config()
    per_token = 6 * r.published_params + 12 * m.layers * m.heads * m.head_dim * r.seq_len
    peak = 275e12  # TPU v4 bf16 (Jouppi et al. 2023)
    assert per_token * r.reported_tokens_per_s / (r.chips * peak) == pytest.approx(r.reported_mfu, abs=0.001)


@pytest.mark.parametrize("run_id", [i for i in IDS if i.startswith("mt-nlg")])
def test_mt_nlg_step_time_reproduces_its_tflops_with_recompute(run_id):
    """Megatron's count with full recompute: 96 B s l h^2 (1 + s / 6h + V / 16 l h) per step."""
    r = published_run(run_id)
    m = r.model_config()
    B, s, l, h, V = r.batch_seqs, r.seq_len, m.layers, m.d_model, m.vocab
    flops = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    rate = flops / r.reported_step_seconds / r.chips
    assert rate == pytest.approx(r.reported_flops_per_s_per_chip, rel=0.01)
    assert r.reported_flops_include_recompute


def test_megatron_percent_of_peak_matches_its_tflops():
    """Narayanan et al. quote % of the A100's 312 TFLOP/s peak beside each TFLOP/s figure."""
    for r in published_runs():
        if r.source == "narayanan2021megatron" and r.reported_hfu is not None:
            assert r.reported_flops_per_s_per_chip / 312e12 == pytest.approx(r.reported_hfu, abs=0.006)


def test_megatron_zero3_series_is_the_published_one():
    """Narayanan et al. 2021, Table 2: ZeRO-3 on 174.6B at batch 1,536 falls from 144 to 44 TFLOP/s per GPU as
    GPUs double from 384 to 1,536 (microbatch 4, 2, 1), while PTD-P holds 153 to 141."""
    def tflops(kind, n):
        return published_run(f"megatron-{kind}-175b-a100-{n}").reported_flops_per_s_per_chip / 1e12
    assert [tflops("zero3", n) for n in (384, 768, 1536)] == [144, 88, 44]
    assert [tflops("ptdp", n) for n in (384, 768, 1536)] == [153, 149, 141]
    r = published_run("megatron-zero3-175b-a100-1536")
    assert (r.fsdp, r.tp, r.pp, r.microbatch, r.batch_seqs // r.chips) == (1536, 1, 1, 1, 1)


def test_repr_names_the_run():
    text = repr(published_run("bloom-176b-a100"))
    assert "bloom-176b" in text and "384" in text and "156" in text


def test_megatron_throughput_follows_its_flop_formula():
    from scalebook import runs
    r = runs.published_run("megatron-1t-a100")
    l, h, s, v = 128, 25600, 2048, 51200
    assert r.reported_tokens_per_s_per_chip() == pytest.approx(
        163e12 / (96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))))


def test_palm_throughput_is_its_reported_tokens_per_second_per_chip():
    from scalebook import runs
    r = runs.published_run("palm-540b-tpuv4")
    assert r.reported_tokens_per_s_per_chip() == pytest.approx(238.3e3 / 6144)


@pytest.mark.parametrize("run_id", [i for i in IDS if i.startswith("nemotron4-")])
def test_nemotron_step_time_reproduces_its_throughput_and_mfu(run_id):
    """dgxc-benchmarking README_340b.md: tokens/s = 4,096 x GBS / step; MFU = GBS x 1.01e16 FLOPs / step / GPUs / 989 TFLOP/s."""
    r = published_run(run_id)
    assert r.seq_len * r.batch_seqs / r.reported_step_seconds == pytest.approx(r.reported_tokens_per_s, rel=0.002)
    assert r.batch_seqs * 1.01e16 / r.reported_step_seconds / r.chips / 989e12 == pytest.approx(r.reported_mfu, abs=0.0005)


@pytest.mark.parametrize("run_id", [i for i in IDS if i.startswith("megascale-")])
def test_megascale_iteration_time_reproduces_its_throughput(run_id):
    """MegaScale Table 2: tokens/s = batch x 2,048 / iteration time (to the table's rounding)."""
    r = published_run(run_id)
    assert r.batch_seqs * r.seq_len / r.reported_step_seconds == pytest.approx(r.reported_tokens_per_s, rel=0.005)


def test_runs_with_role_split_the_table():
    fit, val = runs.runs_with_role("fit"), runs.runs_with_role("validation")
    assert len(fit) + len(val) == len(IDS) and all(r.role == "fit" for r in fit)
    with pytest.raises(scalebook.Error, match="validation"):
        runs.runs_with_role("test")


# LLM Foundry's H100 benchmark table (scripts/train/benchmarking/README.md at commit 5e85bd62d),
# column "Throughput (T/s/GPU)" as published, rounded down there to whole tokens.
LLMFOUNDRY_H100_TOKENS_PER_GPU = {
    "mpt-70b-h100-512": 1007, "mpt-70b-h100-128": 1058, "mpt-30b-h100-256": 2148, "mpt-13b-h100-512": 4952,
    "mpt-13b-h100-128": 5080, "mpt-7b-h100-512": 9670, "mpt-7b-h100-128": 10475, "mpt-3b-h100-512": 21664,
    "mpt-1b-h100-128": 44123, "mpt-30b-h100-8-seq8k": 1384, "mpt-13b-h100-8-seq32k": 1976,
    "mpt-7b-h100-8": 10643, "mpt-7b-h100-8-seq64k": 1956, "mpt-1b-h100-8": 45455, "mpt-760m-h100-8": 63147,
}


@pytest.mark.parametrize("rid, per_gpu", sorted(LLMFOUNDRY_H100_TOKENS_PER_GPU.items()))
def test_llm_foundry_h100_rows_reproduce_the_published_tokens_per_gpu(rid, per_gpu):
    run = runs.published_run(rid)
    assert run.chip == "h100" and run.dtype == "bf16"  # the table is 'H100 80GB BF16' (amp_bf16)
    assert math.floor(run.reported_tokens_per_s_per_chip()) == per_gpu
