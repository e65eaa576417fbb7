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
