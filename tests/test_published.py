"""The training validation report (Chapter 6): it scores every validation run and nothing else."""
import dataclasses
import re
from pathlib import Path

import pytest

import scalebook
from scalebook import published, runs

BIB = (Path(__file__).resolve().parents[1] / "book" / "references.bib").read_text()
BIB_KEYS = set(re.findall(r"^@\w+\{([^,]+),", BIB, flags=re.M))


@pytest.fixture(scope="module")
def report():
    return published.training_report(worst=5)


def test_report_covers_every_validation_run_and_no_fit_run(report):
    validation = {r.id for r in runs.published_runs() if r.role == "validation"}
    assert {r.id for r in report.rows} == validation
    assert report.validation_count == len(validation)
    assert report.fit_count == sum(r.role == "fit" for r in runs.published_runs())


def test_unscored_rows_are_only_runs_without_a_convertible_speed_or_a_failed_estimate(report):
    for row in report.unscored:
        assert row.failure or runs.published_run(row.id).reported_tokens_per_s_per_chip() is None


def test_breakdowns_count_every_scored_row_once(report):
    n = len(report.scored)
    assert report.overall.count == n
    assert sum(s.count for s in report.by_chip_family.values()) == n
    assert sum(s.count for s in report.by_source.values()) == n
    assert {"tpu", "a100", "h100"} <= set(report.by_chip_family)


def test_error_is_predicted_over_reported_minus_one(report):
    row = report.scored[0]
    assert row.error == pytest.approx(row.predicted_tokens_per_s_per_chip / row.reported_tokens_per_s_per_chip - 1)


def test_worst_rows_are_the_largest_errors_with_a_reason(report):
    assert len(report.worst) == 5
    largest = sorted((abs(r.error) for r in report.scored), reverse=True)[:5]
    assert [abs(r.error) for r in report.worst] == pytest.approx(largest)
    assert report.overall.max_abs_error == pytest.approx(largest[0])
    assert all(r.reason for r in report.worst)


def test_summary_of_three_errors_by_hand():
    """|errors| 0.1, 0.2, 0.4: median 0.2, mean 0.7/3, max 0.4."""
    s = published.summarize([0.1, -0.2, 0.4])
    assert (s.count, s.median_abs_error, s.max_abs_error) == (3, pytest.approx(0.2), pytest.approx(0.4))
    assert s.mean_abs_error == pytest.approx(0.7 / 3)


def test_summary_of_nothing_raises():
    with pytest.raises(scalebook.Error, match="at least one"):
        published.summarize([])


def test_chip_family_groups_tpu_generations_and_names_gpus():
    assert published.chip_family("tpu-v5e") == published.chip_family("tpu-v4p") == "tpu"
    assert published.chip_family("h100") == "h100"


def test_two_slice_maxtext_run_names_the_unpriced_dcn_hop():
    reasons = published.simplifications(runs.published_run("maxtext-32b-v5p-2x64"))
    assert any("data-center network" in r for r in reasons)
    assert not any("data-center network" in r for r in published.simplifications(runs.published_run("maxtext-32b-v5p-1x64")))


def test_llama3_runs_keep_gathered_weights_as_the_paper_states_so_no_regather_is_named():
    # Dubey et al. 2024, sec. 3.3.2: weights are not resharded after the forward pass
    run = runs.published_run("llama3-405b-h100-8k")
    assert run.reshard_after_forward is False
    assert not any("gathers them twice" in r for r in published.simplifications(run))
    regather = dataclasses.replace(run, reshard_after_forward=None)
    assert any("gathers them twice for every pipeline microbatch" in r for r in published.simplifications(regather))


def test_report_reads_as_text_and_html(report):
    text = repr(report)
    assert "median" in text and "worst" in text and report.worst[0].id in text
    html = report._repr_html_()
    assert html.count("<table>") == 2 and "chip family tpu" in html


def test_worst_count_must_be_a_whole_number():
    with pytest.raises(scalebook.Error, match="worst"):
        published.training_report(worst=-1)


def test_every_run_and_left_out_run_cites_a_bib_key():
    assert {r.source for r in runs.published_runs()} <= BIB_KEYS
    assert {n.source for n in runs.not_modelled()} <= BIB_KEYS


def test_moe_run_names_its_experts():
    reasons = published.simplifications(runs.published_run("gpt-oss-120b-h100-64"))
    assert any("128 experts, 4 per token" in r for r in reasons)


def test_zero3_at_one_sequence_per_gpu_names_the_small_batch():
    """Narayanan et al. 2021 Table 2: 1,536 GPUs, batch 1,536 sequences of 2,048 tokens: 2,048 tokens per replica."""
    reasons = published.simplifications(runs.published_run("megatron-zero3-175b-a100-1536"))
    assert any("over 1536 chips at 2048 tokens per replica" in r for r in reasons)
    assert not any("tokens per replica" in r for r in published.simplifications(runs.published_run("mpt-70b-h100-512")))


def test_report_names_validation_runs_the_constants_were_fitted_on(report):
    """data/training_efficiency.json names the runs each family was fitted on (`fitted_on`, else its anchor
    `run`); any of them marked validation is listed."""
    from scalebook._data import load

    anchors = {i for e in load("training_efficiency").values() if isinstance(e, dict) and ("fitted_on" in e or "run" in e)
               for i in (e.get("fitted_on") or [e["run"]])}
    expected = sorted(a for a in anchors if a in runs.run_ids() and runs.published_run(a).role == "validation")
    assert list(report.anchored) == expected
    if expected:
        assert expected[0] in repr(report)


def test_llm_foundry_h100_rows_name_their_software_stack():
    # LLM Foundry's H100 benchmarks ran PyTorch FSDP with Triton FlashAttention (submit_benchmarks.py
    # at commit 5e85bd62d); the model has one GPU constant for every software stack
    assert any("software stack" in r for r in published.simplifications(runs.published_run("mpt-70b-h100-512")))
    assert not any("software stack" in r for r in published.simplifications(runs.published_run("mpt-13b-a100-8")))
    assert not any("software stack" in r for r in published.simplifications(runs.published_run("nemotron4-340b-h100-512")))
