"""Numbers a figure prints agree with the prose beside it (issue 20)."""
import math

import matplotlib

matplotlib.use("Agg")

from scalebook import hardware, plots  # noqa: E402


def test_the_time_vs_batch_label_names_the_first_compute_bound_whole_batch():
    # Hand derivation: bf16 [B, D] x [D, F] reads 2(BD + DF + BF) bytes and does 2BDF FLOPs, so the
    # times cross where B = 1 / (HBM / peak - 1/D - 1/F); on a TPU v5e with D = 8192, F = 32768
    # that is about 249.4, so the first compute-bound whole batch is 250 (chapter 1's number).
    c = hardware.chip("tpu-v5e")
    d, f = 8192, 32768
    cross = 1 / (c.hbm_bytes_per_s / c.peak_flops_per_s("bf16") - 1 / d - 1 / f)
    first = math.floor(cross) + 1
    fig = plots.time_vs_batch("tpu-v5e", d_model=d, d_ff=f)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert f"compute-bound from B = {first}" in texts and first == 250
