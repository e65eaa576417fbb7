"""scalebook.measure: device matching, result arithmetic, and a quick real measurement."""
import io
import json

import pytest

from scalebook import Error, measure


@pytest.mark.parametrize("kind, name", [
    ("TPU v5 lite", "tpu-v5e"), ("TPU v5e", "tpu-v5e"), ("TPU v5", "tpu-v5p"), ("TPU v5p", "tpu-v5p"),
    ("TPU v4", "tpu-v4p"), ("TPU v6 lite", "tpu-v6e"), ("TPU7x", "tpu-7x"),
    ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-40GB", "a100"),
    ("NVIDIA B200", "b200"), ("NVIDIA GB200", "gb200"),
    ("cpu", None), ("Tesla T4", None), ("NVIDIA L4", None),
])
def test_device_kinds_match_chips_of_the_spec_table(kind, name):
    assert measure.chip_for_device(kind) == name


def test_matmul_result_arithmetic():
    r = measure.MatmulResult(batch=8, d_model=16, d_ff=32, dtype="bf16", seconds=1e-3, spec_flops_per_s=1e12)
    assert r.flops == 2 * 8 * 16 * 32
    assert r.bytes_ == 2 * (8 * 16 + 16 * 32 + 8 * 32)
    assert r.flops_per_s == pytest.approx(r.flops / 1e-3)
    assert r.fraction_of_spec == pytest.approx(r.flops_per_s / 1e12)


def test_copy_result_counts_a_read_and_a_write():
    r = measure.CopyResult(size_bytes=4_000_000, dtype="fp32", seconds=1e-3, spec_bytes_per_s=None)
    assert r.bytes_moved == 8_000_000
    assert r.bytes_per_s == pytest.approx(8e9)
    assert r.intensity_flops_per_byte == pytest.approx(1 / 8)
    assert r.fraction_of_spec is None


@pytest.mark.xla
def test_a_small_measurement_runs_and_reports_sensible_numbers():
    m = measure.run(shapes=[(4, 128, 128), (128, 256, 256)], copy_sizes=(1e6,), repeats=2, progress=False)
    assert m.platform == "cpu" and m.chip is None and m.spec_flops_per_s is None
    assert len(m.matmuls) == 2 and len(m.copies) == 1
    assert all(r.seconds > 0 and r.flops_per_s > 0 for r in m.matmuls)
    assert m.best_bytes_per_s > 0 and m.critical_intensity() > 0
    assert "no spec" in m.summary()
    json.dumps(m.to_dict())
    assert "<table>" in m._repr_html_()


@pytest.mark.xla
def test_progress_goes_only_to_the_stream_it_is_given():
    buf = io.StringIO()
    measure.run(shapes=[(2, 64, 64)], copy_sizes=(), repeats=1, progress=True, progress_stream=buf)
    assert "1/1" in buf.getvalue()
    quiet = io.StringIO()
    measure.run(shapes=[(2, 64, 64)], copy_sizes=(), repeats=1, progress=None, progress_stream=quiet)
    assert quiet.getvalue() == ""  # not a terminal: silent


def test_bad_input_raises_error():
    with pytest.raises(Error):
        measure.run(shapes=[(1, 2)], copy_sizes=(), progress=False)
    with pytest.raises(Error):
        measure.run(shapes=[], copy_sizes=(), progress=False)
    with pytest.raises(Error):
        measure.matmul(0, 8, 8)


@pytest.mark.xla
def test_cli_measure_prints_json(monkeypatch, capsys):
    from scalebook.cli import main

    monkeypatch.setattr(measure, "default_plan",
                        lambda platform: {"shapes": [(2, 64, 64)], "dtypes": ("fp32",), "copy_sizes": (1e5,)})
    assert main(["measure", "--json", "--repeats", "1"]) == 0
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert data["platform"] == "cpu" and len(data["matmuls"]) == 1 and len(data["copies"]) == 1
    assert out.err == ""  # no progress bar on a stderr that is not a terminal


def _fake_cache(tmp_path, entries):
    for i, (level, kind, size) in enumerate(entries):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    return str(tmp_path)


def test_last_level_cache_is_the_largest_data_cache_at_the_highest_level(tmp_path):
    path = _fake_cache(tmp_path, [(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
                                  (3, "Unified", "105M")])
    assert measure.last_level_cache_bytes(path) == 105 * 2**20


def test_last_level_cache_falls_back_when_the_os_says_nothing(tmp_path, monkeypatch):
    import os
    monkeypatch.setattr(os, "sysconf", lambda name: (_ for _ in ()).throw(ValueError(name)))
    assert measure.last_level_cache_bytes(str(tmp_path / "absent")) == measure.FALLBACK_LLC_BYTES


def test_cpu_streams_are_several_times_the_last_level_cache():
    # a 32 MiB L3: 4x = 134 MB and 16x = 537 MB, both above the 128 MB / 512 MB floors
    assert measure.cpu_stream_sizes(32 * 2**20) == (4 * 32 * 2**20, 16 * 32 * 2**20)
    # a small 8 MiB cache: the floors apply
    assert measure.cpu_stream_sizes(8 * 2**20) == (128e6, 512e6)
    # a huge cache: capped at 2 GB
    assert measure.cpu_stream_sizes(1e9) == (2e9, 2e9)


def test_the_default_cpu_plan_streams_past_this_machines_cache():
    plan = measure.default_plan("cpu")
    assert min(plan["copy_sizes"]) >= 4 * measure.last_level_cache_bytes()
