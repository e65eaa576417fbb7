"""scalebook.interactive: every value an interactive figure shows is the package's, on the site
(the grid embedded in the page) and live (ipywidgets), pinned against hand derivations from the
chips' published figures. The browser pass of tools/browser_check.py operates the controls."""
from __future__ import annotations

import json
import re
from html import escape as html_escape

import pytest

pytest.importorskip("altair")
pytest.importorskip("ipywidgets")

from scalebook import Error, hardware, interactive, roofline  # noqa: E402
from scalebook.interactive import _site  # noqa: E402
from scalebook.interactive._figure import Control, InteractiveFigure  # noqa: E402

#: The budget of data one interactive figure adds to its page (spec, grid, fallback picture).
PAGE_BUDGET_BYTES = 300_000

# TPU v5e, bf16 (Google Cloud's v5e page, as in scalebook/data): 197 TFLOP/s, 820 GB/s of HBM.
V5E_PEAK, V5E_HBM = 197e12, 820e9


@pytest.fixture(scope="module")
def fig():
    return interactive.roofline()


def _readout_row(rows):
    (row,) = [r for r in rows if r["kind"] == "readout"]
    return row


# ------------------------------------------------------------------ chapter 1: the roofline
def test_roofline_matmul_below_the_critical_batch_is_memory_bound_by_hand(fig):
    """[128, 8192] x [8192, 8192] in bf16 on a v5e: 2BDF FLOPs over 2(BD + DF + BF) bytes is
    128 x 8192 / 8448 = 124 FLOP/B, under the 197e12 / 820e9 = 240 FLOP/B corner, so it runs at
    124 x 820 GB/s = 102 TFLOP/s, 52% of peak."""
    intensity = 128 * 8192 / (2 * 128 + 8192)
    attained = intensity * V5E_HBM
    text = fig.readout(chip="tpu-v5e", dtype="bf16", batch=128)
    assert text == (f"TPU v5e, bf16, batch 128: intensity {intensity:.0f} FLOP/B, corner {V5E_PEAK / V5E_HBM:.0f} FLOP/B\n"
                    f"memory-bound: {attained / 1e12:.0f} TFLOP/s, {100 * attained / V5E_PEAK:.0f}% of peak "
                    f"(critical batch {V5E_PEAK / V5E_HBM:.0f})")
    row = _readout_row(fig.rows(chip="tpu-v5e", dtype="bf16", batch=128))
    assert row["bound"] == "memory"
    assert row["x"] == pytest.approx(intensity, rel=1e-3)
    assert row["tflops"] == pytest.approx(attained / 1e12, rel=1e-3)


def test_roofline_bound_changes_between_batch_128_and_256_on_a_v5e(fig):
    """At B = 256 the intensity is 256 x 8192 / 8704 = 241 FLOP/B, just past the 240 corner:
    compute-bound at the full 197 TFLOP/s (what the caption asks the reader to find)."""
    assert 256 * 8192 / (2 * 256 + 8192) > V5E_PEAK / V5E_HBM > 128 * 8192 / (2 * 128 + 8192)
    row = _readout_row(fig.rows(chip="tpu-v5e", dtype="bf16", batch=256))
    assert row["bound"] == "compute"
    assert row["tflops"] == pytest.approx(V5E_PEAK / 1e12)
    assert "compute-bound: 197 TFLOP/s, 100% of peak" in row["text"]


def test_roofline_roof_is_bandwidth_times_intensity_then_the_peak(fig):
    rows = [r for r in fig.rows(chip="tpu-v5e", dtype="bf16", batch=64) if r["kind"] == "roof"]
    assert [r["x"] for r in rows] == pytest.approx([0.5, V5E_PEAK / V5E_HBM, 2e4], rel=1e-3)
    assert [r["tflops"] for r in rows] == pytest.approx([0.5 * V5E_HBM / 1e12, 197, 197], rel=1e-3)
    assert all("batch" not in r for r in rows)  # the roof does not depend on the batch


@pytest.mark.parametrize("chip,dtype,batch", [("h100", "fp8", 512), ("tpu-v6e", "int8", 2048),
                                              ("a100", "bf16", 1), ("tpu-7x", "fp8", 8192)])
def test_roofline_grid_equals_direct_package_calls(fig, chip, dtype, batch):
    mm = roofline.matmul(chip, batch=batch, d_model=8192, d_ff=8192, dtype=dtype)
    (row,) = [r for r in fig.grid() if r["kind"] == "readout" and (r["chip"], r["dtype"], r["batch"]) == (chip, dtype, batch)]
    assert row["x"] == pytest.approx(mm.intensity_flops_per_byte, rel=1e-3)
    assert row["tflops"] == pytest.approx(mm.flops / mm.lower_seconds / 1e12, rel=1e-3)
    assert row["bound"] == mm.bound
    assert f"critical batch {roofline.critical_batch(chip, dtype):,.0f}" in row["text"]


def test_roofline_grid_has_one_readout_per_setting_and_one_roof_per_chip_and_dtype(fig):
    grid = fig.grid()
    n_chips, n_dtypes, n_batches = len(hardware.chip_names()), 3, 14
    assert sum(r["kind"] == "readout" for r in grid) == n_chips * n_dtypes * n_batches
    assert sum(r["kind"] == "roof" for r in grid) == n_chips * n_dtypes * 3


def test_roofline_readout_has_no_e_notation_or_long_floats(fig):
    for row in fig.grid():
        if row["kind"] == "readout":
            assert not re.search(r"\de[+-]?\d|\d\.\d{3,}", row["text"]), row["text"]


# ------------------------------------------------------------------ the site version
@pytest.mark.parametrize("name", sorted(interactive.figures()))
def test_each_figure_fits_its_page_budget(name):
    size = _site.embedded_bytes(interactive.figures()[name])
    assert size < PAGE_BUDGET_BYTES, f"{name}: {size} bytes embedded"


def test_site_spec_embeds_the_grid_and_binds_one_input_per_control(fig):
    spec = fig.site_chart().to_dict()
    assert spec["data"]["values"] == json.loads(json.dumps(fig.chart_rows(fig.grid())))  # once, shared by the layers
    assert all("data" not in layer for layer in spec["layer"])
    params = {p["name"]: p for p in spec["params"]}
    assert params["chip"]["bind"]["input"] == "select" and params["chip"]["value"] == "tpu-v5e"
    assert params["batch"]["bind"]["input"] == "range"
    assert params["batch"]["bind"]["max"] == 13 and params["batch"]["value"] == 6  # 2**6 = 64
    assert spec["description"] == fig.alt


def test_site_html_loads_only_the_sites_own_scripts(fig):
    html = fig.site_html()
    assert 'data-scalebook-figure="roofline"' in html
    assert not re.search(r"<script[^>]+src=", html)  # loaded from data-content_root + _static/vega
    for script in _site.SCRIPTS:
        assert script in html
    assert '<img class="sb-fallback" src="data:image/png;base64,' in html
    assert "</script" not in _site.spec_json(fig).lower()


def test_chart_data_leaves_out_the_readout_text_which_the_page_prints(fig):
    rows = fig.chart_rows(fig.grid())
    assert not any("text" in r for r in rows if r["kind"] == "readout")
    assert any(r["kind"] == "readout" for r in rows)  # the point it marks stays


def test_site_readouts_cover_every_setting_keyed_by_control_positions(fig):
    table = json.loads(re.search(r'class="sb-readouts">(.*?)</script>', fig.site_html()).group(1))
    assert [c["name"] for c in table["controls"]] == ["chip", "dtype", "batch"]
    assert len(table["texts"]) == len(fig.settings())
    chip = fig.control("chip").values.index("h200")
    dtype = fig.control("dtype").values.index("fp8")
    assert table["texts"][f"{chip},{dtype},9"] == fig.readout(chip="h200", dtype="fp8", batch=512)


def test_site_html_prints_the_default_readout_line_by_line(fig):
    first, second = fig.readout(**fig.default_setting).split("\n")
    assert f'aria-live="polite">{html_escape(first)}<br>{html_escape(second)}</p>' in fig.site_html()


def test_filter_keeps_exactly_one_settings_rows(fig):
    """The site's filter (datum.F == null || datum.F == param, for every control) evaluated here
    on the grid picks the rows of one setting, no more."""
    setting = {"chip": "h200", "dtype": "fp8", "batch": 512}
    params = {"chip": "h200", "dtype": "fp8", "batch": 9}  # the slider holds the position
    kept = [r for r in fig.grid()
            if all(r.get(c.field) is None or r[c.field] == params[c.name] for c in fig.controls)]
    assert sorted(map(json.dumps, kept)) == sorted(map(json.dumps, fig.rows(**setting)))


# ------------------------------------------------------------------ the live version
def test_live_matches_the_grid_at_a_grid_setting(fig):
    live = fig.live()
    live.set(chip="b200", dtype="int8", batch=1024)
    grid = [r for r in fig.grid() if r.get("chip") == "b200" and r.get("dtype") == "int8"
            and r.get("batch") in (None, 1024)]
    assert sorted(map(json.dumps, live.rows)) == sorted(map(json.dumps, grid))
    assert live.readout == fig.readout(chip="b200", dtype="int8", batch=1024)


def test_live_takes_a_batch_off_the_grid(fig):
    """Batch 300 on an H100 in fp8 (1 byte per element): 2BDF / (BD + DF + BF) = 559 FLOP/B,
    under the H100's fp8 corner (peak over HBM bandwidth, 588 FLOP/B with the package's figures):
    memory-bound, at a batch off the powers-of-two grid."""
    live = fig.live()
    live.set(chip="h100", dtype="fp8", batch=300)
    intensity = 2 * 300 * 8192 / (2 * 300 + 8192)
    row = _readout_row(live.rows)
    assert row["x"] == pytest.approx(intensity, rel=1e-3)
    assert intensity < roofline.critical_intensity("h100", "fp8")
    assert row["bound"] == "memory"
    assert row["batch"] == 300 and row["batch_i"] == -1


def test_live_controls_call_the_package_when_moved(fig):
    live = fig.live()
    live.controls["chip"].value = "tpu-v6e"
    assert live.readout == fig.readout(chip="tpu-v6e", dtype="bf16", batch=64)


def test_live_in_a_kernel_matches_the_grid(fig):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from scalebook import interactive\n"
        "live = interactive.roofline().live()\n"
        "live.set(chip='tpu-v5p', dtype='bf16', batch=512)\n"
        "display(live)\n"
        "print(repr(live.readout))")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert printed.strip() == repr(fig.readout(chip="tpu-v5p", dtype="bf16", batch=512))
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)


# ------------------------------------------------------------------ bad input
def test_unknown_control_names_the_valid_ones(fig):
    with pytest.raises(Error, match=r"no control \['tokens'\].*chip"):
        fig.rows(tokens=4)


def test_unknown_chip_is_the_packages_error(fig):
    with pytest.raises(Error, match="chip"):
        fig.rows(chip="tpu-v99")


@pytest.mark.parametrize("kwargs,match", [
    ({"name": "bad name", "label": "x", "values": (1,)}, "identifier"),
    ({"name": "n", "label": "n", "values": ()}, "at least one value"),
    ({"name": "n", "label": "n", "values": (1, 2), "kind": "knob"}, "valid kinds"),
    ({"name": "n", "label": "n", "values": (1, 2), "default": 3}, "default 3"),
    ({"name": "kind", "label": "kind", "values": (1, 2)}, "a field every row has"),
])
def test_control_rejects_bad_definitions(kwargs, match):
    with pytest.raises(Error, match=match):
        Control(**kwargs)


def test_site_build_env_selects_the_site_version(monkeypatch, fig):
    monkeypatch.setenv(interactive.SITE_ENV, "1")
    bundle = fig._repr_mimebundle_()
    assert "text/html" in bundle and "sb-interactive" in bundle["text/html"]
    assert isinstance(fig, InteractiveFigure)


# ------------------------------------------------------------------ chapter 3: a collective's time
@pytest.fixture(scope="module")
def coll_fig():
    return interactive.collective()


def _coll_row(fig, **setting):
    return _readout_row(fig.rows(**setting))


def test_collective_allreduce_on_a_v5e_ring_by_hand(coll_fig):
    """AllReduce of 1 MB over X of a v5e 16x16 (X wraps around: W = 2 x 45 GB/s one way):
    bandwidth 2V(N-1)/(NW) = 2 x 1e6 x 15/16 / 90e9 = 20.8 us; latency 2 x N/2 = 16 hops of
    1 us; 36.8 us in all, bandwidth-bound."""
    w = 2 * hardware.chip("tpu-v5e").ici_one_way_bytes_per_s
    bandwidth = 2 * 1e6 * 15 / 16 / w
    assert w == 90e9 and bandwidth == pytest.approx(20.83e-6, rel=1e-3)
    row = _coll_row(coll_fig, collective="all-reduce", topology="v5e-16x16", axes="X", bytes_=10 ** 6)
    assert row["us"] == pytest.approx((bandwidth + 16e-6) * 1e6, rel=1e-3)
    assert row["regime"] == "bandwidth"
    assert row["text"] == ("AllReduce of 1 MB over X of TPU v5e 16x16 (N = 16): 36.8 µs\n"
                           "bandwidth-bound: bandwidth 20.8 µs + latency 16 µs (16 steps)")


def test_collective_allgather_in_an_h100_node_by_hand(coll_fig):
    """AllGather of 1 GB over 8 H100s behind NVSwitch: V(N-1)/(N W) with W = 450 GB/s x 0.824
    (NCCL's usable share) = 2.36 ms, plus 7 ring steps of 3.4 us (NCCL's Simple protocol, the
    fastest for an array this large)."""
    from scalebook import topology

    axis = topology.gpu_node("h100").axis("X")
    assert (axis.bytes_per_s, axis.bandwidth_efficiency, axis.latency_seconds) == (450e9, 0.824, 3.4e-6)
    want = 1e9 * 7 / 8 / (450e9 * 0.824) + 7 * 3.4e-6
    row = _coll_row(coll_fig, collective="all-gather", topology="h100-node", axes="X", bytes_=10 ** 9)
    assert row["us"] == pytest.approx(want * 1e6, rel=1e-3)
    assert row["text"].endswith("(7 steps, NCCL Simple)")


def test_collective_small_arrays_are_latency_bound_and_large_ones_bandwidth_bound(coll_fig):
    small = _coll_row(coll_fig, collective="all-gather", topology="v5e-16x16", axes="X", bytes_=10 ** 3)
    large = _coll_row(coll_fig, collective="all-gather", topology="v5e-16x16", axes="X", bytes_=10 ** 10)
    assert (small["regime"], large["regime"]) == ("latency", "bandwidth")


def test_collective_more_axes_shrink_the_bandwidth_term(coll_fig):
    """Chapter 3: over k equal wrapped axes of a v5p 8x8x8 an AllGather's bandwidth term is
    V(N-1)/(N k W): with N = 8, 64, 512 that is 7/8, 63/128, 511/1536 of V/W."""
    curves = {axes: {r["x"]: r["bw_us"] for r in coll_fig.rows(collective="all-gather", topology="v5p-8x8x8",
                                                              axes=axes, bytes_=10 ** 9) if r["kind"] == "curve"}
              for axes in ("X", "XY", "XYZ")}
    ratios = [curves[a][10 ** 10] / curves["X"][10 ** 10] for a in ("XY", "XYZ")]
    assert ratios == pytest.approx([(63 / 128) / (7 / 8), (511 / 1536) / (7 / 8)], rel=1e-3)


def test_collective_missing_axis_says_which_axes_exist(coll_fig):
    rows = coll_fig.rows(collective="all-gather", topology="h100-node", axes="XY", bytes_=10 ** 6)
    assert [r["kind"] for r in rows] == ["readout"]
    assert rows[0]["text"] == "H100 node (8 GPUs) has no axis Y: its axes are X; pick fewer axes"


@pytest.mark.parametrize("setting", [
    dict(collective="reduce-scatter", topology="h100-4-nodes", axes="XY", bytes_=3 * 10 ** 7),
    dict(collective="all-to-all", topology="v5p-8x8x8", axes="XYZ", bytes_=10 ** 5),
    dict(collective="all-reduce", topology="v5e-16x16", axes="XY", bytes_=3 * 10 ** 9),
])
def test_collective_grid_equals_direct_package_calls(coll_fig, setting):
    from scalebook import collectives
    from scalebook.interactive.collectives import TOPOLOGIES

    t = TOPOLOGIES[setting["topology"]][1]()
    c = collectives.cost(setting["collective"], t, axes=tuple(setting["axes"]), bytes_=setting["bytes_"])
    (row,) = [r for r in coll_fig.grid() if r["kind"] == "readout"
              and all(r.get(k) == v for k, v in setting.items())]
    assert row["us"] == pytest.approx(c.seconds * 1e6, rel=1e-3)
    assert row["regime"] == c.regime
    curve = [r for r in coll_fig.grid() if r["kind"] == "curve" and r.get("bytes_") is None
             and all(r.get(k) == setting[k] for k in ("collective", "topology", "axes"))]
    assert len(curve) == len(coll_fig.control("bytes_").values)
    for r in curve:
        assert r["us"] == pytest.approx(collectives.cost(setting["collective"], t, axes=tuple(setting["axes"]),
                                                         bytes_=r["x"]).seconds * 1e6, rel=1e-3)


def test_collective_readouts_have_no_e_notation(coll_fig):
    for row in coll_fig.grid():
        if row["kind"] == "readout":
            assert not re.search(r"\de[+-]?\d", row["text"]), row["text"]


def test_collective_live_takes_any_size(coll_fig):
    live = coll_fig.live()
    live.set(collective="all-reduce", topology="v5e-16x16", axes="X", bytes_=123_456_789.0)
    from scalebook import collectives, topology

    c = collectives.all_reduce(topology.slice("tpu-v5e", "16x16"), axes="X", bytes_=123_456_789.0)
    assert _readout_row(live.rows)["us"] == pytest.approx(c.seconds * 1e6, rel=1e-3)


# ------------------------------------------------------------------ make bench: page weight
def _weight_module():
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "tools" / "site" / "weight.py"
    spec = importlib.util.spec_from_file_location("site_weight_interactive", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_an_interactive_page_weighs_the_vega_scripts_it_loads(tmp_path):
    weight = _weight_module()
    (tmp_path / "_static" / "vega").mkdir(parents=True)
    (tmp_path / "_static" / "vega" / "vega.min.js").write_bytes(b"x" * 700)
    (tmp_path / "_static" / "vega" / "vega.LICENSE").write_bytes(b"x" * 5)
    figure = '<figure class="sb-interactive" data-scalebook-figure="roofline">data</figure>'
    (tmp_path / "with.html").write_text(f"<p>a</p>{figure}")
    (tmp_path / "without.html").write_text("<p>b</p>")
    (tmp_path / "index.html").write_text("<p>home</p>")
    assert weight.page_bytes(tmp_path / "with.html", tmp_path) == len(f"<p>a</p>{figure}") + 700
    assert weight.page_bytes(tmp_path / "without.html", tmp_path) == len("<p>b</p>")
    assert weight.interactive_figures(tmp_path / "with.html") == {"roofline": len(figure)}
    report = weight.report(tmp_path)
    assert "with.html: roofline 0 kB" in report and "without.html:" not in report


# ------------------------------------------------------------------ chapter 5: a training step
@pytest.fixture(scope="module")
def step_fig():
    return interactive.training_step()


def _params_70b() -> float:
    from scalebook import models, transformer

    return transformer.params(models.preset("llama3-70b")).total_params


@pytest.mark.parametrize("data,tp,divisor", [("dp", 1, 1), ("zero1", 1, 256), ("fsdp", 1, 256), ("fsdp", 4, 256),
                                             ("dp", 8, 8)])
def test_training_optimizer_memory_by_hand(step_fig, data, tp, divisor):
    """Adam's two fp32 moments and an fp32 master copy: 12 bytes per parameter, held whole by
    plain DP (split only by TP), and split over all 256 chips by ZeRO-1 and FSDP."""
    row = _readout_row(step_fig.rows(data=data, tp=tp, remat="none", microbatch="whole", batch_tokens=2 ** 21))
    assert row["GB optimizer"] == pytest.approx(12 * _params_70b() / divisor / 1e9, rel=5e-3)


def test_training_strategy_of_a_setting_uses_every_chip():
    from scalebook.interactive.training import strategy
    from scalebook.strategy import Strategy

    assert strategy("zero2", 4, "selective", "1") == Strategy(dp=64, zero=2, tp=4, sequence_parallel=True,
                                                              remat="selective", microbatch=1)
    assert strategy("fsdp", 1, "none", "whole") == Strategy(fsdp=256)


@pytest.mark.parametrize("setting", [
    dict(data="fsdp", tp=8, remat="selective", microbatch="whole", batch_tokens=2 ** 22),
    dict(data="zero1", tp=2, remat="full", microbatch="1", batch_tokens=2 ** 20),
])
def test_training_grid_equals_direct_package_calls(step_fig, setting):
    from scalebook import training
    from scalebook.interactive.training import strategy

    e = training.estimate("llama3-70b", strategy=strategy(setting["data"], setting["tp"], setting["remat"],
                                                          setting["microbatch"]),
                          seq_len=4096, batch_tokens=setting["batch_tokens"], chip="h100", chips=256)
    (row,) = [r for r in step_fig.grid() if all(r.get(k) == v for k, v in setting.items())]
    assert sum(v for k, v in row.items() if k.startswith("GB ")) == pytest.approx(sum(e.memory.parts().values()) / 1e9, rel=1e-2)
    assert sum(v for k, v in row.items() if k.startswith("time ")) == pytest.approx(e.step_seconds, rel=1e-2)
    assert f"MFU {100 * e.mfu:.0f}%" in row["text"]
    assert ("(fits)" in row["text"]) == e.fits


def test_training_fits_and_does_not_fit_both_occur(step_fig):
    """The figure's point: some settings fit in an H100's 80 GB and some do not."""
    texts = [r["text"] for r in step_fig.grid()]
    assert any("(fits)" in t for t in texts) and any("(does not fit)" in t for t in texts)


def test_training_chart_gives_every_part_a_number(step_fig):
    spec = step_fig.site_chart().to_dict()
    parts = {k for r in spec["data"]["values"] for k in r if k.startswith(("GB ", "time "))}
    assert all(set(r) >= parts for r in spec["data"]["values"])


# ------------------------------------------------------------------ chapter 7: the frontier
@pytest.fixture(scope="module")
def frontier_fig():
    return interactive.frontier()


def test_frontier_throughput_per_chip_is_batch_over_latency_over_chips(frontier_fig):
    """Each step emits one token per sequence: B tokens every per-token latency, over tp chips."""
    row = _readout_row(frontier_fig.rows(weights="bf16", kv="bf16", tp=8, batch=64))
    latency_s = row["x"] / 1e3
    assert row["tps"] == pytest.approx(64 / latency_s / 8, rel=2e-3)


def test_frontier_readout_equals_a_direct_estimate(frontier_fig):
    from scalebook import inference

    e = inference.estimate("llama3-70b", chip="h100", deployment=inference.Deployment(tp=4, weights="fp8", kv="bf16"),
                           batch=128, prompt_len=2048, output_len=512)
    row = _readout_row(frontier_fig.rows(weights="fp8", kv="bf16", tp=4, batch=128))
    assert row["x"] == pytest.approx(1e3 * e.per_token_latency_seconds, rel=1e-3)
    assert row["tps"] == pytest.approx(e.output_tokens_per_s_per_chip, rel=1e-3)


def test_frontier_a_batch_past_the_largest_that_fits_says_so(frontier_fig):
    from scalebook import inference, models

    most = inference.max_batch(models.preset("llama3-70b"), chip="h100", deployment=inference.Deployment(tp=8),
                               context=2048 + 512, prompt_len=2048)
    assert 512 < most < 1024
    rows = frontier_fig.rows(weights="bf16", kv="bf16", tp=8, batch=1024)
    assert _readout_row(rows)["text"].endswith(f"does not fit\nthe largest batch that fits is {most:,} "
                                               "(prompt 2,048 + output 512 tokens)")
    assert "x" not in _readout_row(rows)  # no point drawn
    assert max(r["tps"] for r in rows if r["kind"] == "curve") == pytest.approx(
        _readout_row(frontier_fig.rows(weights="bf16", kv="bf16", tp=8, batch=512))["tps"], rel=0.2)


def test_frontier_fp8_weights_lower_the_latency_floor_and_fp8_cache_raises_the_batch(frontier_fig):
    """Chapter 7: fp8 weights halve the weight reads (the curve moves left, less than 2x: the
    fixed time per layer stays); an fp8 cache halves the cache bytes per sequence, so more fit."""
    b1 = {w: _readout_row(frontier_fig.rows(weights=w, kv="bf16", tp=8, batch=1))["x"] for w in ("bf16", "fp8")}
    assert b1["bf16"] / 2 < b1["fp8"] < b1["bf16"]

    def most(kv):
        text = _readout_row(frontier_fig.rows(weights="bf16", kv=kv, tp=8, batch=1))["text"]
        return int(re.search(r"largest batch that fits: ([\d,]+)", text).group(1).replace(",", ""))

    assert most("fp8") > 1.5 * most("bf16")


@pytest.mark.parametrize("name", sorted(interactive.figures()))
def test_each_static_fallback_passes_the_figure_check(name):
    """The picture shown with scripts off is checked like every figure of the book
    (`scalebook.plots._style.text_problems`: no text on text, none across a frame)."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from scalebook.plots import _style

    fig = interactive.figures()[name]
    drawn = fig.static(**fig.default_setting)
    try:
        assert _style.text_problems(drawn) == []
    finally:
        plt.close(drawn)


# ------------------------------------------------------------------ chapters 2 and 2b: chips side by side
@pytest.fixture(scope="module")
def chips_fig():
    return interactive.chips()


def _bars(fig, **setting):
    return {r["chip"]: r for r in fig.rows(**setting) if r["kind"] == "bar"}


def test_chips_hbm_critical_intensity_in_bf16_by_hand(chips_fig):
    """TPU v5e: 197 TFLOP/s over 820 GB/s = 240.2 FLOP/B (chapter 1's critical intensity)."""
    bars = _bars(chips_fig, quantity="hbm_intensity", dtype="bf16")
    assert bars["TPU v5e"]["value"] == pytest.approx(V5E_PEAK / V5E_HBM, rel=1e-3)
    assert bars["TPU v5e"]["label"] == "240 FLOP/B"
    assert len(bars) == len(hardware.chips())  # every chip has a bf16 peak


def test_chips_fp8_critical_intensity_over_nvlink_by_hand(chips_fig):
    """H100 (NVIDIA's datasheet, as in scalebook/data): 2,000 TFLOP/s dense fp8 over 450 GB/s of
    NVLink egress (900 GB/s both ways, halved) = 4,444 FLOP/B; a TPU v5e has no fp8 peak: no bar."""
    bars = _bars(chips_fig, quantity="ici_intensity", dtype="fp8")
    assert bars["H100"]["value"] == pytest.approx(2000e12 / 450e9, rel=1e-3)
    assert "TPU v5e" not in bars
    text = chips_fig.readout(quantity="ici_intensity", dtype="fp8")
    assert "no fp8 matmul peak (no bar): " in text and "TPU v5e" in text.split("no bar")[1]


def test_chips_bandwidths_do_not_depend_on_the_dtype(chips_fig):
    """HBM and W are a chip's, not a dtype's: the bars are kept once for every dtype, and the v5e's
    HBM bar is 820 GB/s."""
    grid_bars = [r for r in chips_fig.grid() if r["kind"] == "bar" and r["quantity"] == "hbm"]
    assert len(grid_bars) == len(hardware.chips()) and all("dtype" not in r for r in grid_bars)
    assert _bars(chips_fig, quantity="hbm", dtype="fp8")["TPU v5e"]["value"] == pytest.approx(V5E_HBM / 1e9)


@pytest.mark.parametrize("quantity", ["peak", "hbm", "ici", "hbm_intensity", "ici_intensity"])
def test_chips_grid_equals_direct_package_calls(chips_fig, quantity):
    scale = {"peak": 1e12, "hbm": 1e9, "ici": 1e9}.get(quantity, 1.0)
    for c in hardware.chips():
        direct = {"peak": lambda: c.peak_flops_per_s("int8"),
                  "hbm": lambda: roofline.link_bytes_per_s(c, "hbm"),
                  "ici": lambda: roofline.link_bytes_per_s(c, "ici"),
                  "hbm_intensity": lambda: roofline.critical_intensity(c, "int8", "hbm"),
                  "ici_intensity": lambda: roofline.critical_intensity(c, "int8", "ici")}[quantity]
        bar = _bars(chips_fig, quantity=quantity, dtype="int8").get(c.display_name)
        if quantity in ("hbm", "ici") or "int8" in c.flops_per_s:
            assert bar["value"] == pytest.approx(direct() / scale, rel=1e-3)
        else:
            assert bar is None


def test_chips_readout_names_highest_lowest_and_ties(chips_fig):
    """bf16 peaks: GB200 2.5 PFLOP/s over TPU v5e 197 TFLOP/s = 12.7x; HBM: B200 and GB200 tie at
    8 TB/s, and both are named."""
    assert chips_fig.readout(quantity="peak", dtype="bf16").endswith(
        "highest GB200 (NVL72) 2.5 PFLOP/s, lowest TPU v5e 197 TFLOP/s (12.7x)")
    assert "highest B200 and GB200 (NVL72) 8 TB/s" in chips_fig.readout(quantity="hbm", dtype="bf16")


def test_chips_readout_when_no_chip_or_one_chip_has_the_dtype(chips_fig, monkeypatch):
    from scalebook.interactive import accelerators as module

    assert chips_fig.compute(quantity="peak", dtype="int4")[-1]["text"].endswith(
        "no chip in the table has a matmul peak in int4")
    monkeypatch.setattr(module.hardware, "chips", lambda: [hardware.chip("b200"), hardware.chip("h100")])
    text = module.compute(quantity="peak", dtype="fp4")[-1]["text"]
    assert text.endswith("only B200 has a matmul peak in fp4: 9 PFLOP/s\nno fp4 matmul peak (no bar): H100")


def test_chips_every_chip_shown_equal(chips_fig, monkeypatch):
    from scalebook.interactive import accelerators as module

    monkeypatch.setattr(module.hardware, "chips", lambda: [hardware.chip("h100"), hardware.chip("h200")])
    assert module.compute(quantity="ici", dtype="bf16")[-1]["text"].endswith("every chip shown: 450 GB/s")


def test_chips_unknown_quantity_names_the_valid_ones(chips_fig):
    with pytest.raises(Error, match=r"quantity 'flops'.*hbm_intensity"):
        chips_fig.compute(quantity="flops", dtype="bf16")


def test_chips_live_matches_the_grid(chips_fig):
    live = chips_fig.live()
    live.set(quantity="peak", dtype="fp8")
    grid = [r for r in chips_fig.grid() if r["quantity"] == "peak" and r.get("dtype") in (None, "fp8")]
    assert sorted(map(json.dumps, live.rows)) == sorted(map(json.dumps, grid))


# ------------------------------------------------------------------ chapter 4: a model by part
# LLaMA-3 70B (Meta's config, as in scalebook/data): L = 80, D = 8192, F = 28672, N = 64 query
# heads, K = 8 KV heads of H = 128, vocabulary 128256, untied embeddings, gated MLP.
L70, D70, F70, NQ70, K70, H70, V70 = 80, 8192, 28672, 64, 8, 128, 128256
ATTN70 = L70 * (2 * D70 * NQ70 * H70 + 2 * D70 * K70 * H70)  # Q and O, K and V
MLP70 = L70 * 3 * D70 * F70
TOTAL70 = ATTN70 + MLP70 + 2 * V70 * D70 + (2 * L70 + 1) * D70  # + embedding, unembedding, norms


@pytest.fixture(scope="module")
def anatomy_fig():
    return interactive.model_anatomy()


def _part_bars(fig, **setting):
    return {r["part"]: r for r in fig.rows(**setting) if r["kind"] == "bar"}


def test_anatomy_llama3_70b_parameters_by_hand(anatomy_fig):
    bars = _part_bars(anatomy_fig, preset="llama3-70b", measure="params", seq_len=1024)
    assert bars["attention"]["value"] == pytest.approx(ATTN70 / 1e9, rel=1e-3)
    assert bars["MLP"]["value"] == pytest.approx(MLP70 / 1e9, rel=1e-3)
    assert anatomy_fig.readout(preset="llama3-70b", measure="params", seq_len=1024).endswith(
        f"total {TOTAL70 / 1e9:.1f}B; largest part MLP, {100 * MLP70 / TOTAL70:.1f}%")


def test_anatomy_attention_scores_at_128k_by_hand(anatomy_fig):
    """Causal scores: QK^T and AV over T/2 keys on average, 2 (T/2) N (2H) FLOPs per token per
    layer; at T = 131072 that is 171.8 GFLOP per token, the largest part of the forward pass."""
    scores = L70 * 2 * (131072 / 2) * NQ70 * 2 * H70
    bars = _part_bars(anatomy_fig, preset="llama3-70b", measure="flops", seq_len=131072)
    assert bars["attention scores"]["value"] == pytest.approx(scores / 1e9, rel=1e-3)
    forward = scores + 2 * (ATTN70 + MLP70) + 2 * D70 * V70
    assert anatomy_fig.readout(preset="llama3-70b", measure="flops", seq_len=131072).endswith(
        f"largest part attention scores, {100 * scores / forward:.1f}%")


def test_anatomy_training_state_is_16_bytes_per_parameter(anatomy_fig):
    """bf16 weights (2 B) and gradients (2 B), fp32 Adam moments and master copy (12 B)."""
    bars = _part_bars(anatomy_fig, preset="llama3-70b", measure="memory", seq_len=8192)
    assert bars["parameters"]["value"] == pytest.approx(2 * TOTAL70 / 1e9, rel=1e-3)
    assert bars["optimizer (Adam, fp32 master)"]["value"] == pytest.approx(12 * TOTAL70 / 1e9, rel=1e-3)


def test_anatomy_grid_equals_direct_package_calls(anatomy_fig):
    from scalebook import models, transformer

    for preset in ("llama3-8b", "deepseek-v3"):
        m = models.preset(preset)
        act = transformer.activation_memory(m, batch=1, seq_len=32768, policy="none", flash_attention=True).bytes
        bars = _part_bars(anatomy_fig, preset=preset, measure="memory", seq_len=32768)
        assert bars["activations (1 sequence)"]["value"] == pytest.approx(act / 1e9, rel=1e-3)
        flops = transformer.flops_per_token(m, seq_len=32768).parts()
        assert {k: r["value"] for k, r in _part_bars(anatomy_fig, preset=preset, measure="flops", seq_len=32768).items()} \
            == pytest.approx({k: v / 1e9 for k, v in flops.items()}, rel=1e-3)


def test_anatomy_moe_readout_gives_active_parameters_and_dense_does_not(anatomy_fig):
    assert "active per token" in anatomy_fig.readout(preset="deepseek-v3", measure="params", seq_len=1024)
    assert "active per token" not in anatomy_fig.readout(preset="llama3-70b", measure="params", seq_len=1024)


def test_anatomy_ties_name_every_largest_part(monkeypatch):
    from scalebook.interactive import transformers as module

    monkeypatch.setattr(module, "_parts", lambda model, measure, seq_len: {"a": 2.0, "b": 2.0, "c": 1.0})
    assert module.compute("llama3-8b", "memory", 1024)[-1]["text"].endswith("largest part a and b, 40.0% each")


def test_anatomy_parameters_are_kept_once_for_every_sequence_length(anatomy_fig):
    params = [r for r in anatomy_fig.grid() if r["kind"] == "bar" and r["measure"] == "params"
              and r["preset"] == "llama3-70b"]
    assert len(params) == len(_part_bars(anatomy_fig, preset="llama3-70b", measure="params", seq_len=1024))
    assert all("seq_len" not in r for r in params)


def test_anatomy_unknown_measure_names_the_valid_ones(anatomy_fig):
    with pytest.raises(Error, match=r"measure 'bytes'.*params"):
        anatomy_fig.compute(preset="llama3-8b", measure="bytes", seq_len=1024)


def test_anatomy_live_takes_a_length_off_the_grid(anatomy_fig):
    live = anatomy_fig.live()
    live.set(preset="llama3-70b", measure="flops", seq_len=10000)
    assert live.readout == anatomy_fig.readout(preset="llama3-70b", measure="flops", seq_len=10000)
    assert "at 10,000 tokens" in live.readout


# ------------------------------------------------------------------ chapter 8: cost under a latency target
@pytest.fixture(scope="module")
def cost_fig():
    return interactive.serving_cost()


def _cost_bars(fig, target_ms):
    return {r["chip"]: r for r in fig.rows(target_ms=target_ms) if r["kind"] == "bar"}


def test_cost_is_price_times_chips_over_tokens_per_hour_by_hand(cost_fig):
    """A decode step emits one token per sequence: batch / latency tokens/s on `chips` chips at
    the data's on-demand price (TPU v5p 4.2 USD per chip-hour): USD per million output tokens =
    chips x price / 3600 / (batch / latency) x 1e6."""
    from scalebook.interactive import costs

    e = costs.best("tpu-v5p", 50)
    assert e.per_token_latency_seconds <= 0.050
    by_hand = e.chips * 4.2 / 3600 / (e.batch / e.per_token_latency_seconds) * 1e6
    assert _cost_bars(cost_fig, 50)["TPU v5p"]["usd"] == pytest.approx(by_hand, rel=2e-3)


@pytest.mark.parametrize("target_ms", [15, 100])
def test_cost_configuration_is_the_planners_best_within_the_target(cost_fig, target_ms):
    from scalebook import serving, training
    from scalebook.interactive import costs

    for chip in costs.priced_chips():
        plan = serving.plan_serving("llama3-70b", chip=chip, latency_target_s=target_ms / 1e3, prompt_len=2048,
                                    output_len=512, top=1)
        bar = _cost_bars(cost_fig, target_ms).get(hardware.chip(chip).display_name)
        if not plan.best:
            assert bar is None
            continue
        assert bar["usd"] == pytest.approx(plan.best[0].usd_per_million_output_tokens(
            training.price_per_chip_hour(chip)), rel=1e-3)


def test_cost_chips_shown_are_those_with_a_price_in_the_data():
    from scalebook.interactive import costs

    assert costs.priced_chips() == ("tpu-v5e", "tpu-v5p", "h100")  # 1.2, 4.2 and 10.8 USD per chip-hour


def test_cost_a_target_some_chip_cannot_meet_is_named(cost_fig):
    """At 15 ms per token no H100 layout of up to 256 chips meets the target in the package's model."""
    assert "H100" not in _cost_bars(cost_fig, 15)
    assert cost_fig.readout(target_ms=15).endswith("\ncannot meet it: H100")
    assert "cannot meet" not in cost_fig.readout(target_ms=50)


def test_cost_readout_when_no_chip_or_one_chip_meets_the_target(cost_fig, monkeypatch):
    from scalebook.interactive import costs

    assert cost_fig.compute(target_ms=1)[-1]["text"].endswith(
        "no priced chip meets it in any configuration the planner tries\ncannot meet it: TPU v5e, TPU v5p, H100")
    monkeypatch.setattr(costs, "priced_chips", lambda: ("tpu-v5p", "h100"))
    text = costs.compute(target_ms=15)[-1]["text"]
    assert "\nonly TPU v5p meets it: $" in text and text.endswith("\ncannot meet it: H100")


def test_cost_looser_targets_never_cost_more(cost_fig):
    targets = cost_fig.control("target_ms").values
    for chip in ("TPU v5e", "TPU v5p", "H100"):
        usd = [_cost_bars(cost_fig, t)[chip]["usd"] for t in targets if chip in _cost_bars(cost_fig, t)]
        assert usd == sorted(usd, reverse=True)


def test_cost_bad_target_names_the_argument(cost_fig):
    with pytest.raises(Error, match="target_ms"):
        cost_fig.compute(target_ms=-5)


def test_cost_live_takes_a_target_off_the_grid(cost_fig):
    live = cost_fig.live()
    live.set(target_ms=42)
    assert live.readout == cost_fig.readout(target_ms=42) and "at most 42 ms" in live.readout


@pytest.mark.parametrize("name, setting", [
    ("chips", {"quantity": "peak", "dtype": "int8"}),
    ("model-anatomy", {"preset": "mixtral-8x7b", "measure": "params", "seq_len": 4096}),
    ("serving-cost", {"target_ms": 30}),
])
def test_new_figures_live_in_a_kernel_match_the_grid(name, setting):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from scalebook import interactive\n"
        f"live = interactive.figures()[{name!r}].live()\n"
        f"live.set(**{setting!r})\n"
        "display(live)\n"
        "print(repr(live.readout))")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert printed.strip() == repr(interactive.figures()[name].readout(**setting))
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)


# ================================================================== helper interactive3: chapters 6 and 11
# ------------------------------------------------------------------ chapter 6: the planner's front
# Peaks (dense bf16, as in scalebook/data): TPU v5p 459 TFLOP/s (Google Cloud's v5p page), H100 SXM
# 990 TFLOP/s (NVIDIA's H100 datasheet); HBM 95 GiB and 80 GB.
V5P_PEAK, H100_PEAK = 459e12, 990e12
PLAN_T, PLAN_BATCH, PLAN_TOKENS = 8192, 2 ** 24, 15e12


@pytest.fixture(scope="module")
def plan_fig():
    return interactive.plan_front()


def _plan_points(fig, **setting):
    return [r for r in fig.rows(**setting) if r["kind"] == "point"]


def _plan_best(fig, **setting):
    (best,) = [r for r in _plan_points(fig, **setting) if r["best"]]
    return best


def _forward_flops_per_token_70b(seq_len):
    """Matmul FLOPs of one token's forward pass: 2 per weight of the layers and the output layer
    (the embedding lookup is free), plus causal attention scores over seq_len / 2 keys on
    average, QK^T and AV: 2 (T/2) N_q (2H) per layer."""
    return 2 * (ATTN70 + MLP70) + 2 * D70 * V70 + L70 * 2 * (seq_len / 2) * NQ70 * 2 * H70


@pytest.mark.parametrize("chip,peak", [("tpu-v5p", V5P_PEAK), ("h100", H100_PEAK)])
def test_plan_best_mfu_and_days_by_hand(plan_fig, chip, peak):
    """LLaMA-3 70B on 4096 chips: a step of 2^24 tokens does 3 x forward FLOPs per token (forward
    and a backward of twice the forward); MFU is that over 4096 x peak x the step time, and the
    run is 15e12 / 2^24 steps of that time."""
    from scalebook.interactive import planning

    b = planning.front("llama3-70b", chip, 4096, PLAN_BATCH).best[0]
    flops = 3 * _forward_flops_per_token_70b(PLAN_T) * PLAN_BATCH
    mfu = flops / (4096 * peak * b.step_seconds)
    days = PLAN_TOKENS / PLAN_BATCH * b.step_seconds / 86400
    best = _plan_best(plan_fig, model="llama3-70b", chip=chip, chips=4096)
    assert best["mfu"] == round(100 * mfu)
    assert best["days"] == pytest.approx(days, rel=1e-3)
    assert best["gb"] == pytest.approx(b.memory.bytes / 1e9, rel=1e-3)
    assert f"MFU {100 * mfu:.0f}%" in plan_fig.readout(model="llama3-70b", chip=chip, chips=4096)
    assert f"{days:,.0f} days for 15T tokens" in plan_fig.readout(model="llama3-70b", chip=chip, chips=4096)


@pytest.mark.parametrize("chip,hbm_gb", [("tpu-v5p", 95 * 2 ** 30 / 1e9), ("h100", 80)])
def test_plan_hbm_line_is_the_chips_hbm_and_every_plan_is_under_it(plan_fig, chip, hbm_gb):
    rows = plan_fig.rows(model="llama3-405b", chip=chip, chips=1024)
    (hbm,) = [r for r in rows if r["kind"] == "hbm"]
    assert hbm["gb"] == pytest.approx(hbm_gb, rel=1e-3)
    assert all(p["gb"] <= hbm["gb"] for p in rows if p["kind"] == "point")


def test_plan_points_are_a_pareto_front_with_the_fastest_marked(plan_fig):
    """On a front, more memory buys less time: sorted by memory, the days never rise (rounded to 4
    digits, neighbours may tie), no two plans hold the same memory, and the marked plan is the
    fastest (the rightmost, lowest point)."""
    for chip in ("tpu-v5p", "h100"):
        pts = sorted(_plan_points(plan_fig, model="llama3-8b", chip=chip, chips=16384), key=lambda p: p["gb"])
        days = [p["days"] for p in pts]
        assert days == sorted(days, reverse=True) and days[0] > days[-1]
        assert len({p["gb"] for p in pts}) == len(pts)
        assert pts[-1]["best"] and sum(p["best"] for p in pts) == 1


@pytest.mark.parametrize("setting", [dict(model="llama3-8b", chip="h100", chips=1024),
                                     dict(model="llama3-405b", chip="tpu-v5p", chips=16384)])
def test_plan_grid_equals_direct_package_calls(plan_fig, setting):
    from scalebook import planner

    p = planner.plan(setting["model"], chip=setting["chip"], chips=setting["chips"], batch_tokens=PLAN_BATCH,
                     seq_len=PLAN_T, top=1)
    grid = [r for r in plan_fig.grid() if r["kind"] == "point"
            and all(r[k] == v for k, v in setting.items())]
    assert [r["plan"] for r in grid] == [e.strategy.label() for e in p.pareto]
    assert [r["days"] for r in grid] == pytest.approx([e.days(PLAN_TOKENS) for e in p.pareto], rel=1e-3)
    assert [r["gb"] for r in grid] == pytest.approx([e.memory.bytes / 1e9 for e in p.pareto], rel=1e-3)
    assert grid[0]["plan"] == p.best[0].strategy.label() and grid[0]["best"]
    assert f"{p.fitting:,} of {p.considered:,} strategies fit" in plan_fig.readout(**setting)


def test_plan_caption_claims_hold_on_the_grid(plan_fig):
    """What the caption tells the reader to try: more chips, fewer days; on H100 the fastest plan
    has plain DP beside FSDP; 405B on H100 needs pipeline stages."""
    from scalebook.interactive import planning

    for model in planning.MODELS:
        for chip in planning.CHIPS:
            days = [_plan_best(plan_fig, model=model, chip=chip, chips=n)["days"] for n in planning.CHIP_COUNTS]
            assert days == sorted(days, reverse=True)
            for n in planning.CHIP_COUNTS:
                s = planning.front(model, chip, n, PLAN_BATCH).best[0].strategy
                if chip == "h100":
                    assert s.dp > 1 and s.fsdp * s.dp > 1
                    assert s.pp > 1 or model != "llama3-405b"


def test_plan_a_budget_with_no_fitting_plan_says_why(plan_fig):
    """405B's 16 bytes of training state per parameter, 6.5 TB, cannot fit on 8 H100s of 80 GB."""
    assert 16 * 405e9 > 8 * 80e9
    rows = plan_fig.compute(model="llama3-405b", chip="h100", chips=8)
    assert [r["kind"] for r in rows] == ["hbm", "readout"]
    assert "\nno plan: no strategy fits" in rows[-1]["text"]


def test_plan_readout_has_no_e_notation_or_long_floats(plan_fig):
    for row in plan_fig.grid():
        if row["kind"] == "readout":
            assert not re.search(r"\de[+-]?\d|\d\.\d{4,}", row["text"]), row["text"]


def test_plan_hbm_is_kept_once_per_chip(plan_fig):
    hbm = [r for r in plan_fig.grid() if r["kind"] == "hbm"]
    assert sorted(r["chip"] for r in hbm) == ["h100", "tpu-v5p"]
    assert all("model" not in r and "chips" not in r for r in hbm)


def test_plan_live_matches_the_grid(plan_fig):
    live = plan_fig.live()
    live.set(model="llama3-405b", chip="h100", chips=4096)
    grid = [r for r in plan_fig.grid() if r.get("chip") == "h100" and r.get("model") in (None, "llama3-405b")
            and r.get("chips") in (None, 4096)]
    assert sorted(map(json.dumps, live.rows)) == sorted(map(json.dumps, grid))
    assert live.readout == plan_fig.readout(model="llama3-405b", chip="h100", chips=4096)


# ------------------------------------------------------------------ chapter 11: the cheat sheet for one chip
# As in scalebook/data: H100 SXM (NVIDIA's datasheet; the book's rounded tables) 990 TFLOP/s dense
# bf16, 80 GB of HBM at 3.4 TB/s, 450 GB/s of NVLink per GPU, 8 GPUs and 8 x 400 Gb/s (400 GB/s) of
# InfiniBand per node, 10.80 USD per GPU-hour; TPU v5e (Google Cloud's v5e page) 197 TFLOP/s bf16,
# 394 TOPS int8, 16 GB of HBM at 820 GB/s, 45 GB/s one way per ICI link (90 GB/s both ways).
H100_HBM_BW, H100_NVLINK, H100_IB_PER_GPU = 3.4e12, 450e9, 400e9 / 8
V5E_INT8, V5E_LINK_1 = 394e12, 45e9
P70_BF16 = 2 * TOTAL70


@pytest.fixture(scope="module")
def cheat_fig():
    return interactive.cheat_sheet()


def _sheet(fig, **setting):
    return {r["i"]: r["value"] for r in fig.rows(**setting) if r["kind"] == "rule"}


def test_cheat_sheet_h100_bf16_by_hand(cheat_fig):
    v = _sheet(cheat_fig, chip="h100", dtype="bf16")
    assert v[0] == f"{H100_PEAK / H100_HBM_BW:,.0f} FLOP/B"                     # C / W_hbm
    assert v[1] == f"{H100_PEAK / H100_HBM_BW / 2:,.0f} tokens"                 # int8 weights: half
    assert v[2] == f"{2 * H100_PEAK / H100_NVLINK:,.0f}"                        # 2 C / W_1
    assert v[3] == f"{80e9 / H100_HBM_BW * 1e3:.1f} ms"                          # HBM / its bandwidth
    assert v[4] == f"{-(-P70_BF16 // 80e9):.0f}"                                 # ceil(2P / HBM)
    assert v[7] == f"{H100_PEAK / H100_NVLINK:,.0f} tokens"                      # C / W over NVLink
    assert v[8] == f"{H100_PEAK / H100_IB_PER_GPU:,.0f} tokens"                  # C / W over InfiniBand
    assert v[10] == f"{2 * 2 / 9 * H100_PEAK / H100_NVLINK:,.0f}"                # (2 beta / 9) C / W
    assert v[11] == f"{K70 / NQ70 * 2 * H100_PEAK / H100_NVLINK:,.0f} tokens"    # beta (K / N_q) C / W
    assert v[12] == f"{H100_PEAK / H100_HBM_BW:,.0f}"                            # decode B* = C / W_hbm
    assert v[14] == f"{2 * H100_PEAK / (2 * H100_NVLINK):,.0f}"                  # beta C / (2 W_1), NVLink
    assert v[15] == "$10.80"


def test_cheat_sheet_v5e_int8_by_hand(cheat_fig):
    """int8 doubles the v5e's peak and halves the bytes per element: the critical intensity
    doubles (480 FLOP/B), the split-matmul and hiding widths do not move, and int8 weights halve
    the decode batch."""
    v = _sheet(cheat_fig, chip="tpu-v5e", dtype="int8")
    assert v[0] == f"{V5E_INT8 / V5E_HBM:,.0f} FLOP/B"
    assert v[2] == f"{1 * V5E_INT8 / V5E_LINK_1:,.0f}"                  # beta C / W_1, beta = 1
    assert v[12] == f"{V5E_PEAK / V5E_HBM / 2:,.0f}"                    # bf16 arithmetic, 1-byte weights
    assert v[14] == f"{1 * V5E_INT8 / (4 * V5E_LINK_1):,.0f}"           # a wraparound ring both ways
    assert v[4] == f"{-(-P70_BF16 // 16e9):.0f}"
    assert v[7] == f"{V5E_PEAK / (2 * V5E_LINK_1):,.0f} tokens"         # C / W, W both ways


def test_cheat_sheet_rows_are_the_chapters_on_its_four_chips():
    """The fast axes of chapter 11's table: a 16x16 v5e slice, a 4x4x4 v5p cube, an NVLink node."""
    from scalebook import topology
    from scalebook.interactive import cheatsheet

    assert cheatsheet.fast_axis("tpu-v5e") == topology.slice("tpu-v5e", "16x16")
    assert cheatsheet.fast_axis("tpu-v5p") == topology.slice("tpu-v5p", "4x4x4")
    assert cheatsheet.fast_axis("h100") == topology.gpu_node("h100")
    assert cheatsheet.links("b200") == ("nvlink", "infiniband") and cheatsheet.links("tpu-v5p") == ("ici", "dcn")


@pytest.mark.parametrize("chip", ["tpu-v5p", "b200", "gb200"])
def test_cheat_sheet_grid_equals_direct_package_calls(cheat_fig, chip):
    from scalebook import collectives, inference, jax_collectives, topology, training

    grid = {r["i"]: r["value"] for r in cheat_fig.grid()
            if r["kind"] == "rule" and r["chip"] == chip and r.get("dtype") in (None, "fp8")}
    c = hardware.chip(chip)
    topo = topology.slice(chip, "4x4x4") if c.is_tpu else topology.gpu_node(chip)
    ax = topo.axes[0].name
    fast = "ici" if c.is_tpu else "nvlink"
    assert grid[5] == f"{collectives.all_gather(topo, axes=ax, bytes_=1e9).seconds * 1e3:.3g} ms"
    assert grid[9] == f"{training.max_tp_degree('llama3-70b', chip=chip):.1f}"
    assert grid[12] == f"{inference.critical_decode_batch(chip, weights='fp8'):,.0f}"
    if "fp8" in c.flops_per_s:
        assert grid[14] == f"{jax_collectives.hiding_width(topo, axis=ax, dtype='fp8', bidirectional=True):,.0f}"
    else:
        assert grid[0] == grid[2] == grid[14] == "—"
    assert grid[7] == f"{training.rule_of_thumb_batch_per_chip(chip, link=fast):,.0f} tokens"


def test_cheat_sheet_covers_every_chip_and_keeps_dtype_free_rows_once(cheat_fig):
    from scalebook.interactive import cheatsheet

    assert cheatsheet.sheet_chips() == (tuple(hardware.chip_names()), ())
    assert "Every chip in the package's spec data has a sheet." in cheat_fig.caption
    rows = [r for r in cheat_fig.grid() if r["kind"] == "rule"]
    n_chips, n_dtypes = len(hardware.chip_names()), len(cheatsheet.DTYPES)
    by_dtype = sum(r.by_dtype for r in cheatsheet.RULES)
    assert by_dtype == 4
    assert len(rows) == n_chips * (len(cheatsheet.RULES) - by_dtype + n_dtypes * by_dtype)


def test_cheat_sheet_caption_left_out_branch(monkeypatch):
    from scalebook.interactive import cheatsheet

    monkeypatch.setattr(cheatsheet, "sheet_chips", lambda: (("h100",), (("a100", "no DCN figure"),)))
    assert cheatsheet._caption().endswith(" Left out: A100 (no DCN figure).")


def test_cheat_sheet_readout_for_each_kind_of_blank(cheat_fig):
    """No blank (H100 in bf16), a dtype without a peak (v5e in fp8), no price (v4p in bf16), both."""
    assert cheat_fig.readout(chip="h100", dtype="bf16") == (
        "H100, bf16 matmuls (fast axis: the 8 GPUs of an NVLink domain; slow network: InfiniBand)")
    assert cheat_fig.readout(chip="tpu-v5e", dtype="fp8").endswith(
        "16x16 slice; slow network: DCN)\n—: no fp8 matmul peak for the TPU v5e in the spec data")
    assert cheat_fig.readout(chip="tpu-v4p", dtype="bf16").endswith(
        "\n—: no on-demand price for the TPU v4p in the spec data")
    assert cheat_fig.readout(chip="tpu-v4p", dtype="fp8").count("\n—: ") == 2


def test_cheat_sheet_caption_claims_hold(cheat_fig):
    """The critical intensity follows the peak in the dtype; the hiding widths barely move (within
    5%) on most chips, and not on a chip whose int8 peak equals its bf16 one (v4p)."""
    from scalebook import roofline

    steady = 0
    for chip in hardware.chip_names():
        c = hardware.chip(chip)
        if "int8" not in c.flops_per_s:
            continue
        assert roofline.critical_intensity(chip, "int8") / roofline.critical_intensity(chip) == pytest.approx(
            c.flops_per_s["int8"] / c.flops_per_s["bf16"])
        bf, i8 = (float(_sheet(cheat_fig, chip=chip, dtype=d)[14].replace(",", "")) for d in ("bf16", "int8"))
        steady += abs(i8 / bf - 1) < 0.05
    assert steady > len(hardware.chip_names()) / 2
    assert _sheet(cheat_fig, chip="tpu-v4p", dtype="int8")[14] != _sheet(cheat_fig, chip="tpu-v4p", dtype="bf16")[14]


def test_cheat_sheet_values_are_readable(cheat_fig):
    for row in cheat_fig.grid():
        text = row["value"] if row["kind"] == "rule" else row["text"]
        assert not re.search(r"\de[+-]?\d|\d\.\d{4,}|^0\.0%|-0%", text), text


def test_cheat_sheet_bad_dtype_names_the_valid_ones(cheat_fig):
    with pytest.raises(Error, match=r"dtype 'fp4'.*bf16"):
        cheat_fig.compute(chip="b200", dtype="fp4")


def test_cheat_sheet_live_matches_the_grid(cheat_fig):
    live = cheat_fig.live()
    live.set(chip="tpu-7x", dtype="int8")
    grid = [r for r in cheat_fig.grid() if r.get("chip") == "tpu-7x" and r.get("dtype") in (None, "int8")]
    assert sorted(map(json.dumps, live.rows)) == sorted(map(json.dumps, grid))


@pytest.mark.parametrize("name, setting", [
    ("plan-front", {"model": "llama3-8b", "chip": "h100", "chips": 16384}),
    ("cheat-sheet", {"chip": "b200", "dtype": "fp8"}),
])
def test_plan_and_cheat_live_in_a_kernel_match_the_grid(name, setting):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from scalebook import interactive\n"
        f"live = interactive.figures()[{name!r}].live()\n"
        f"live.set(**{setting!r})\n"
        "display(live)\n"
        "print(repr(live.readout))")]
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert printed.strip() == repr(interactive.figures()[name].readout(**setting))
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)


@pytest.mark.parametrize("kwargs,match", [({"chips": 0}, "chips"), ({"chips": 4.0}, "chips"),
                                          ({"batch_tokens": -1}, "batch_tokens"), ({"chip": "tpu-v9"}, "tpu-v9")])
def test_plan_bad_input_names_the_argument(plan_fig, kwargs, match):
    with pytest.raises(Error, match=match):
        plan_fig.compute(**{"model": "llama3-8b", "chip": "h100", "chips": 1024, **kwargs})


# ================================================================== helper interactive4: chapters 9 and 10
# ------------------------------------------------------------------ chapter 10: a ring stepped through
# (helper interactive4) TPU v5p, as in scalebook/data: 90 GB/s one way per ICI link (Austin et al.,
# part 2), 1 µs per hop (the package's assumed ICI hop latency).
V5P_ONE_WAY, HOP = 90e9, 1e-6


@pytest.fixture(scope="module")
def ring_fig():
    return interactive.ring()


def _table(rows, n):
    """The device x block table the cell rows of one setting draw (0 where no cell is drawn)."""
    table = [[0] * n for _ in range(n)]
    for r in rows:
        if r["kind"] == "cell":
            assert table[r["d"]][r["b"]] == 0, "two cells drawn in one place"
            table[r["d"]][r["b"]] = r["v"]
    return table


def test_ring_allgather_of_4_both_ways_after_step_1_by_hand(ring_fig):
    """Both ways round 4 devices, k = ceil(3/2) = 2 steps. In step 1 every device sends its own
    block to both neighbours, so device d then holds blocks d - 1, d and d + 1 (mod 4); device 0
    has sent 2 blocks of V/4 = 16 MB; a step takes 16 MB / 90 GB/s + 1 µs = 179 µs, of 358 µs."""
    rows = ring_fig.rows(collective="all-gather", devices=4, ways="both", after=1)
    held = [{(d - 1) % 4, d, (d + 1) % 4} for d in range(4)]
    assert _table(rows, 4) == [[1 if t in held[d] else 0 for t in range(4)] for d in range(4)]
    sends = sorted((r["src"], r["d"], r["b"]) for r in rows if r["kind"] == "send")
    assert sends == sorted([(d, (d + 1) % 4, d) for d in range(4)] + [(d, (d - 1) % 4, d) for d in range(4)])
    step = 16e6 / V5P_ONE_WAY + HOP
    text = ring_fig.readout(collective="all-gather", devices=4, ways="both", after=1)
    assert text.splitlines() == [
        "AllGather, 4 devices, both ways: step 1 of 2",
        "every device sends one block right and one left",
        "device 0 sends block 0 to device 1 and block 0 to device 3",
        "device 0 has sent 2 blocks of V/4 = 32 MB (V = 64 MB)",
        f"on a TPU v5p axis of 4 chips with a wraparound: {step * 1e6:.0f} µs of {2 * step * 1e6:.0f} µs"]


def test_ring_reducescatter_of_8_both_ways_at_the_last_step_by_hand(ring_fig):
    """Both ways round 8 devices: k = 4 steps right, m = 3 left. The sum of block t moving right
    starts at device t - 4 and gains a part per hop, so device t - j keeps a sum of 5 - j parts
    (j = 1..4); the one moving left starts at t + 3, so t + 1 keeps 3 and t + 2 keeps 2 parts,
    t + 3 its own 1; device t ends with all 8. Only the right-moving sums move in step 4 (4 > m),
    each of 4 parts, arriving on the diagonal. Device 0 has sent 4 + 3 = 7 blocks of V/8."""
    rows = ring_fig.rows(collective="reduce-scatter", devices=8, ways="both", after=4)
    by_offset = {0: 8, 1: 3, 2: 2, 3: 1, 4: 1, 5: 2, 6: 3, 7: 4}  # offset (d - t) mod 8 -> parts
    assert _table(rows, 8) == [[by_offset[(d - t) % 8] for t in range(8)] for d in range(8)]
    sends = [r for r in rows if r["kind"] == "send"]
    assert sorted((r["src"], r["d"], r["b"]) for r in sends) == [(d, (d + 1) % 8, (d + 1) % 8) for d in range(8)]
    assert all(r["mark"] == f"↓{r['src']}" for r in sends)
    step = 8e6 / V5P_ONE_WAY + HOP
    lines = ring_fig.readout(collective="reduce-scatter", devices=8, ways="both", after=4).splitlines()
    assert lines[0] == "ReduceScatter, 8 devices, both ways: step 4 of 4"
    assert lines[1] == "every device sends one block right"
    assert lines[2] == "device 0 sends block 1 (a sum of 4 parts) to device 1"
    assert lines[3] == "device 0 has sent 7 blocks of V/8 = 56 MB (V = 64 MB)"
    assert lines[4].endswith(f"{4 * step * 1e6:.0f} µs of {4 * step * 1e6:.0f} µs")


def test_ring_allreduce_one_way_is_a_reducescatter_then_an_allgather(ring_fig):
    """One way round 4 devices: 3 ReduceScatter steps, then 3 AllGather steps of full sums. The sum
    of block t starts at device t + 1 (t - 3 mod 4) and gains a part per hop, so after step 3
    device t + 1 keeps 1 part, t + 2 keeps 2, t + 3 keeps 3 and t has all 4; after step 6 every
    cell holds all 4. Device 0 has sent 6 blocks of V/4 = 96 MB, in 6 steps of
    16 MB / 90 GB/s + 1 µs = 178.8 µs: 1.07 ms."""
    by_offset = {0: 4, 1: 1, 2: 2, 3: 3}  # offset (d - t) mod 4 -> parts
    assert _table(ring_fig.rows(collective="all-reduce", devices=4, ways="one", after=3), 4) == \
        [[by_offset[(d - t) % 4] for t in range(4)] for d in range(4)]
    assert all(v == 4 for row in _table(ring_fig.rows(collective="all-reduce", devices=4, ways="one", after=6), 4)
               for v in row)
    step = 16e6 / V5P_ONE_WAY + HOP
    lines = ring_fig.readout(collective="all-reduce", devices=4, ways="one", after=6).splitlines()
    assert lines[0] == "AllReduce, 4 devices, one way: step 6 of 6 (AllGather half)"
    assert lines[3] == "device 0 has sent 6 blocks of V/4 = 96 MB (V = 64 MB)"
    assert f"{6 * step * 1e3:.2f}" == "1.07"
    assert lines[4].endswith("1.07 ms of 1.07 ms")
    first = ring_fig.readout(collective="all-reduce", devices=4, ways="one", after=1).splitlines()[0]
    assert first == "AllReduce, 4 devices, one way: step 1 of 6 (ReduceScatter half)"


def test_ring_before_the_first_step_each_device_holds_its_own(ring_fig):
    ag = ring_fig.rows(collective="all-gather", devices=8, ways="one", after=0)
    assert _table(ag, 8) == [[int(d == t) for t in range(8)] for d in range(8)]
    assert not [r for r in ag if r["kind"] == "send"]
    assert ring_fig.readout(collective="all-gather", devices=8, ways="one", after=0).splitlines()[1:] == [
        "each device holds its own block", "device 0 has sent nothing yet",
        "on a TPU v5p axis of 8 chips with a wraparound: 0 s of 629 µs"]  # 7 x (8 MB / 90 GB/s + 1 µs)
    rs = ring_fig.rows(collective="reduce-scatter", devices=8, ways="one", after=0)
    assert _table(rs, 8) == [[1] * 8 for _ in range(8)]


def test_ring_past_the_last_step_keeps_the_end_state_and_says_when_it_ended(ring_fig):
    end = ring_fig.rows(collective="all-gather", devices=4, ways="both", after=2)
    later = ring_fig.rows(collective="all-gather", devices=4, ways="both", after=9)
    assert _table(later, 4) == _table(end, 4) == [[1] * 4 for _ in range(4)]
    assert not [r for r in later if r["kind"] == "send"]
    lines = ring_fig.readout(collective="all-gather", devices=4, ways="both", after=9).splitlines()
    assert lines[:2] == ["AllGather, 4 devices, both ways: after step 9, finished at step 2",
                         "every device holds every block"]
    assert ring_fig.readout(collective="reduce-scatter", devices=4, ways="both", after=9).splitlines()[1] == \
        "device d holds the sum of all parts of block d"
    assert ring_fig.readout(collective="all-reduce", devices=4, ways="both", after=9).splitlines()[1] == \
        "every device holds the sum of all parts of every block"


def test_ring_a_ring_no_v5p_slice_has_says_so(ring_fig):
    """N = 6: no published v5p slice has an axis of 6 chips (the live version takes it anyway)."""
    text = ring_fig.readout(collective="all-gather", devices=6, ways="both", after=1)
    assert text.splitlines()[-1] == "(no TPU v5p slice has an axis of 6 chips with a wraparound to price it on)"


@pytest.mark.parametrize("collective", ["all-gather", "reduce-scatter", "all-reduce"])
@pytest.mark.parametrize("devices, ways", [(4, "both"), (8, "one")])
def test_ring_table_equals_ring_holdings_at_every_step(ring_fig, collective, devices, ways):
    from scalebook import jax_collectives as jc

    kinds = ["reduce-scatter", "all-gather"] if collective == "all-reduce" else [collective]
    states = [s for i, k in enumerate(kinds)
              for s in jc.ring_holdings(k, devices, bidirectional=ways == "both")[(1 if i else 0):]]
    steps = jc.ring_steps(collective, devices, bidirectional=ways == "both")
    assert len(states) == len(steps) + 1
    for after, state in enumerate(states):
        table = _table(ring_fig.rows(collective=collective, devices=devices, ways=ways, after=after), devices)
        if collective == "all-reduce" and after > len(steps) // 2:  # gathered sums hold all N parts
            state = [[devices if v else states[len(steps) // 2][d][t] for t, v in enumerate(r)]
                     for d, r in enumerate(state)]
        assert table == state, after


def test_ring_every_step_of_every_setting_has_its_own_readout(ring_fig):
    """What the browser check needs: moving the step slider always changes the readout."""
    for s in ring_fig.settings():
        if s["after"]:
            before = dict(s, after=s["after"] - 1)
            assert ring_fig.readout(**s) != ring_fig.readout(**before), s


def test_ring_site_filter_keeps_exactly_one_settings_rows(ring_fig):
    """The site keeps a row when the controls' filter passes and the slider's step lies in the
    row's run s0..s1 (evaluated here on the grid)."""
    setting = {"collective": "reduce-scatter", "devices": 8, "ways": "one", "after": 5}
    marks = ring_fig.chart_rows(ring_fig.grid())
    kept = [r for r in marks
            if all(r.get(c.field) is None or r[c.field] == setting[c.name] for c in ring_fig.controls)
            and (r.get("s0") is None or r["s0"] <= setting["after"] <= r["s1"])]
    assert sorted(map(json.dumps, kept)) == sorted(map(json.dumps, ring_fig.chart_rows(ring_fig.rows(**setting))))
    assert ring_fig.readouts()["1,1,1,5"] == ring_fig.readout(**setting)  # the page prints it above the chart
    expr = ring_fig.site_chart().to_dict()
    assert "datum.s0 <= after && after <= datum.s1" in json.dumps(expr)


def test_ring_bad_input_names_the_argument(ring_fig):
    with pytest.raises(Error, match="devices"):
        ring_fig.rows(devices=1)
    with pytest.raises(Error, match="collective"):
        ring_fig.rows(collective="all-to-all")
    with pytest.raises(Error, match="ways"):
        ring_fig.rows(ways="sideways")
    with pytest.raises(Error, match="after"):
        ring_fig.rows(after=-1)


def test_ring_live_matches_the_grid_and_takes_6_devices(ring_fig):
    live = ring_fig.live()
    live.set(collective="all-reduce", devices=8, ways="both", after=6)
    assert live.readout == ring_fig.readout(collective="all-reduce", devices=8, ways="both", after=6)
    assert sorted(map(json.dumps, live.rows)) == sorted(map(json.dumps, ring_fig.rows(
        collective="all-reduce", devices=8, ways="both", after=6)))
    assert len(_table(ring_fig.rows(devices=6, after=3), 6)) == 6


def test_ring_end_state_is_what_the_chapters_rings_compute_on_8_cpu_devices(ring_fig):
    """Run `jax_collectives.ring_all_gather` and `ring_reduce_scatter` (both ways) on 8 simulated
    CPU devices. AllGather: device d's block is filled with d + 1 into a zero buffer, so a block is
    held where it is non-zero. ReduceScatter: device d's part of every block is 2**d, so the sum a
    device ends with has a 1 bit for each device whose part it holds. Both must equal the figure's
    table after the last step."""
    jax = pytest.importorskip("jax")
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P

    from scalebook import jax_collectives as jc, xla

    xla.use_cpu_devices(8)
    mesh = xla.mesh({"X": 8})
    rows = NamedSharding(mesh, P("X"))
    x = jax.device_put(jax.numpy.repeat(jax.numpy.arange(1.0, 9.0), 2).reshape(8 * 2, 1), rows)  # device d: d + 1
    ag = jax.jit(jax.shard_map(lambda b: jc.ring_all_gather(b, "X"), mesh=mesh, in_specs=P("X"),
                               out_specs=P("X"), check_vma=False))(x)
    copies = np.asarray(ag).reshape(8, 8, 2)  # device, block, rows
    held = [[int((copies[d, t] != 0).all()) for t in range(8)] for d in range(8)]
    assert held == _table(ring_fig.rows(collective="all-gather", devices=8, ways="both", after=4), 8)

    parts = jax.device_put(jax.numpy.concatenate([jax.numpy.full((8, 1), 2.0 ** d) for d in range(8)]), rows)
    rs = jax.jit(jax.shard_map(lambda p: jc.ring_reduce_scatter(p, "X"), mesh=mesh, in_specs=P("X"),
                               out_specs=P("X")))(parts)
    sums = np.asarray(rs).reshape(8).astype(int)
    table = _table(ring_fig.rows(collective="reduce-scatter", devices=8, ways="both", after=4), 8)
    assert [bin(s).count("1") for s in sums] == [table[d][d] for d in range(8)] == [8] * 8


# ------------------------------------------------------------------ chapter 9: a recorded profile
# (helper interactive4) The trace is package data (scalebook/data/ch9_trace.json.gz), recorded by
# timelines.record(); these tests read it with the package's own reader and check what the figure
# embeds against it, and facts of the recorded program anyone can check by hand.
@pytest.fixture(scope="module")
def timeline_fig():
    return interactive.timeline()


@pytest.fixture(scope="module")
def recorded_trace():
    from scalebook import profile
    from scalebook.interactive import timelines

    from importlib import resources
    with resources.as_file(resources.files("scalebook").joinpath("data", timelines.TRACE_FILE)) as p:
        return profile.read_trace(p, hlo=timelines.hlo_text())


def _op_rows(rows):
    return [r for r in rows if r["kind"] == "op"]


def test_timeline_trace_is_the_training_step_on_8_devices(recorded_trace):
    """The chapter's step: module jit_step, 8 devices, 2 traced steps, every device running the
    same ops once per step (the chapter's first check of a profile), with AllGathers (FSDP) and
    AllReduces (TP) among them."""
    from scalebook.interactive import timelines

    assert recorded_trace.module == "jit_step"
    assert recorded_trace.devices == tuple(range(8))
    assert recorded_trace.steps == timelines.STEPS == 2
    first = recorded_trace.names(step=0, device=0)
    assert all(recorded_trace.names(step=s, device=d) == first for s in range(2) for d in range(8))
    kinds = {n.split(".")[0] for n in first if n.startswith(("all-gather", "all-reduce"))}
    assert kinds == {"all-gather", "all-reduce"}
    meta = timelines.recorded()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", meta["recorded"]) and meta["jax"] and "timelines.record()" in meta["command"]


def test_timeline_caption_gathers_first_then_allreduces_to_the_end(recorded_trace):
    """What the caption asks the reader to find: in each step every AllGather has ended within
    the first 30% of the step, and the AllReduces run on into its last 10%."""
    for step in range(recorded_trace.steps):
        start, end = recorded_trace.step_window(step)
        ag = recorded_trace.ops(step=step, category="all-gather")
        ar = recorded_trace.ops(step=step, category="all-reduce")
        assert max(e.end for e in ag) - start < 0.3 * (end - start)
        assert max(e.end for e in ar) - start > 0.9 * (end - start)


def test_timeline_rows_are_read_traces_events(timeline_fig, recorded_trace):
    """Every op execution of a step is one bar: device, start from the step's first op and
    duration, to 0.1 µs, and the name and category read_trace gives it."""
    names = {r["i"]: r for r in timeline_fig.rows(step=1, category="all") if r["kind"] == "name"}
    for step in range(2):
        rows = _op_rows(timeline_fig.rows(step=step, category="all"))
        events = recorded_trace.ops(step=step)
        start, _ = recorded_trace.step_window(step)
        assert len(rows) == len(events) == 8 * len(recorded_trace.names(step=step, device=0))
        for r, e in zip(rows, events):
            assert (r["d"], names[r["i"]]["n"], names[r["i"]]["c"]) == (e.device, e.name, e.category)
            assert r["t"] == pytest.approx((e.start - start) * 1e6, abs=0.051)
            assert r["w"] == pytest.approx(e.duration * 1e6, abs=0.051)


def test_timeline_site_embeds_the_same_rows_as_csv(timeline_fig):
    """The op layer's CSV, parsed back, is the grid's op rows (both steps, once each)."""
    spec = timeline_fig.site_chart().to_dict()
    assert spec["data"]["format"]["type"] == "csv"
    csv = spec["data"]["values"]
    head, *lines = csv.split("\n")
    assert head == "d,t,w,i,step"
    parsed = [dict(zip(head.split(","), map(float, line.split(",")))) for line in lines]
    grid = _op_rows(timeline_fig.grid())
    assert [(p["d"], p["t"], p["w"], p["i"], p["step"]) for p in parsed] == \
        [(r["d"], r["t"], r["w"], r["i"], r["step"]) for r in grid]
    assert "zoom" in json.dumps(spec) and '"bind": "scales"' in json.dumps(spec)


def test_timeline_category_filter_keeps_that_groups_ops(timeline_fig, recorded_trace):
    """Collectives only: the AllGathers and AllReduces; the site filter on the grid keeps exactly
    the rows the package computes for that setting."""
    rows = timeline_fig.rows(step=0, category="collective")
    names = {r["i"]: r for r in rows if r["kind"] == "name"}
    ops = _op_rows(rows)
    assert ops and {names[r["i"]]["c"] for r in ops} == {"all-gather", "all-reduce"}
    assert len(ops) == sum(1 for e in recorded_trace.ops(step=0) if e.category in ("all-gather", "all-reduce"))
    setting = {"step": 0, "category": "collective"}
    marks = timeline_fig.chart_rows(timeline_fig.grid())
    by_i = {r["i"]: r for r in marks if r["kind"] == "name"}
    kept = [r for r in marks
            if all(r.get(c.field) is None or r[c.field] == setting[c.name] for c in timeline_fig.controls)
            and (r["kind"] != "op" or by_i[r["i"]]["g"] == "collective")]
    assert sorted(map(json.dumps, kept)) == sorted(map(json.dumps, timeline_fig.chart_rows(rows)))
    assert timeline_fig.readouts()["0,3"] == timeline_fig.readout(**setting)  # printed above the chart


def test_timeline_readout_totals_add_up_to_the_window(timeline_fig, recorded_trace):
    """Each device's matmul + fusion + collective + other + idle is the step's window (to the
    0.1 ms the readout prints, five terms: within 0.25 ms)."""
    for step in range(2):
        lines = timeline_fig.readout(step=step, category="all").splitlines()
        window_ms = recorded_trace.step_seconds[step] * 1e3
        assert lines[0].startswith(f"step {step + 1} of 2 of jit_step on 8 simulated devices: ")
        device_lines = lines[2:]
        assert len(device_lines) == 8
        for d, line in enumerate(device_lines):
            label, numbers = line.split(": ")
            assert label == f"device {d}"
            assert sum(map(float, numbers.split(", "))) == pytest.approx(window_ms, abs=0.25)


def test_timeline_readout_counts_the_bars_shown(timeline_fig):
    for category in ("all", "matmul", "fusion", "collective", "other"):
        bars = len(_op_rows(timeline_fig.rows(step=1, category=category)))
        assert f"({bars:,} bars)" in timeline_fig.readout(step=1, category=category)
    readouts = {timeline_fig.readout(**s) for s in timeline_fig.settings()}
    assert len(readouts) == len(timeline_fig.settings())  # every control move changes what is shown


def test_timeline_bad_input_names_the_argument(timeline_fig):
    with pytest.raises(Error, match="step"):
        timeline_fig.rows(step=2)
    with pytest.raises(Error, match="category"):
        timeline_fig.rows(category="kernels")


def test_timeline_live_matches_the_grid(timeline_fig):
    live = timeline_fig.live()
    live.set(step=1, category="matmul")
    assert live.readout == timeline_fig.readout(step=1, category="matmul")
    assert sorted(map(json.dumps, live.rows)) == sorted(map(json.dumps, timeline_fig.rows(step=1, category="matmul")))


@pytest.mark.parametrize("name, setting", [
    ("ring", {"collective": "reduce-scatter", "devices": 8, "ways": "one", "after": 5}),
    ("timeline", {"step": 1, "category": "collective"}),
])
def test_ring_and_timeline_live_in_a_kernel_match_the_grid(name, setting):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from scalebook import interactive\n"
        f"live = interactive.figures()[{name!r}].live()\n"
        f"live.set(**{setting!r})\n"
        "display(live)\n"
        "print(repr(live.readout))")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert printed.strip() == repr(interactive.figures()[name].readout(**setting))
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
