"""Answer keys of chapter 1's problems (exercises/01-rooflines.md): rooflines on one or two chips.

Each key is computed by `scalebook.roofline` from the named inputs of its problem; the tests in
tests/test_exercises_ch01.py check each one against a hand derivation from the spec figures.
"""
from __future__ import annotations

from ... import hardware, roofline, units
from ..problem import problem

_TWO = "off by a factor of 2: 2 FLOPs per multiply-add, or 2 bytes per bf16 number?"


@problem("1.1", title="Reading every weight once", unit="ms", chip="h100", params=13e9, dtype="bf16",
         slips={2: _TWO})
def weights_stream_ms(chip, params, dtype):
    r = roofline.op(chip, flops=0, hbm_bytes=params * units.dtype_bytes(dtype))
    return r.memory_seconds * 1e3


@problem("1.2", title="HBM for a smaller critical batch", unit="TB/s", chip="h200", dtype="bf16", batch=128,
         slips={2: _TWO})
def hbm_for_critical_batch(chip, dtype, batch):
    """Large-D, F limit: the critical batch is peak / HBM bandwidth, so bandwidth = peak / batch."""
    return hardware.chip(chip).peak_flops_per_s(dtype) / batch / 1e12


@problem("1.3", title="A projection on a TPU v6e", unit="us", chip="tpu-v6e", batch=512, d_model=4096,
         d_ff=14336, dtype="bf16", slips={2: _TWO})
def projection_us(chip, batch, d_model, d_ff, dtype):
    return roofline.matmul(chip, batch=batch, d_model=d_model, d_ff=d_ff, dtype=dtype).lower_seconds * 1e6


@problem("1.4", title="int8 weights on a TPU v5p", unit="%", chip="tpu-v5p", dtype="bf16",
         weight_dtype="int8", batch=64,
         slips={2: "off by a factor of 2: int8 weights halve the bytes, but the matmul still runs at the bf16 peak"})
def int8_weights_v5p(chip, dtype, weight_dtype, batch):
    """Large-D, F limit: memory-bound below the critical batch, at batch / critical batch of peak."""
    return 100 * min(1.0, batch / roofline.critical_batch(chip, dtype, weight_dtype))


@problem("1.5", title="fp8 on both sides across an NVL72 rack", unit="token", chip="b200", dtype="fp8",
         chips=72, n_chips=72,
         slips={2: "off by a factor of 2: fp8 x fp8 halves the bytes and doubles the peak; did you change only one?"})
def fp8_b200(chip, dtype, n_chips):
    """Large-D, F limit: each chip needs its critical batch, fp8 peak / (2 x HBM bandwidth);
    data parallelism over `n_chips` multiplies it."""
    return n_chips * roofline.critical_batch(chip, dtype)


@problem("1.6", title="The link a split v5p matmul needs", unit="GB/s", chip="tpu-v5p", dtype="bf16",
         d_model=4096,
         slips={2: "off by a factor of 2: each chip does half the FLOPs, and the partial sum crosses "
                   "one link in one direction (one-way bandwidth)"})
def split_link_for_d_model(chip, dtype, d_model):
    # Per chip: compute 2 B (D/2) F / peak = B D F / peak; send the [B, F] partial sum, B F b
    # bytes (b per element), over one link in one direction at W bytes/s: B F b / W.
    # Equal when D = b peak / W, whatever B and F are; so W = b peak / D (2 peak / D in bf16).
    return units.dtype_bytes(dtype) * hardware.chip(chip).peak_flops_per_s(dtype) / d_model / 1e9


@problem("1.7", title="What overlap buys", unit="ms", chip="tpu-v5e", flops=3.0e12, hbm_bytes=12e9,
         comm_bytes=0.9e9)
def overlap_savings_ms(chip, flops, hbm_bytes, comm_bytes):
    r = roofline.op(chip, flops=flops, hbm_bytes=hbm_bytes, comm_bytes=comm_bytes, comm_link="ici")
    return (r.upper_seconds - r.lower_seconds) * 1e3


@problem("1.8", title="A residual add", unit="us", chip="tpu-v6e", rows=4096, cols=8192, dtype="bf16",
         slips={1.5: "off by 1.5x: an add reads two tensors and writes a third, three tensors in all"})
def residual_add_us(chip, rows, cols, dtype):
    n = rows * cols
    r = roofline.op(chip, flops=n, hbm_bytes=3 * n * units.dtype_bytes(dtype))
    return r.lower_seconds * 1e6


@problem("1.9", title="A dot product on an A100", unit="FLOP/s", chip="a100", length=5e8, dtype="fp32",
         slips={2: "off by a factor of 2: a dot product does a multiply and an add per element"})
def dot_product_flops_per_s(chip, length, dtype):
    b = units.dtype_bytes(dtype)
    intensity = roofline.arithmetic_intensity(2 * length, 2 * length * b)
    return intensity * hardware.chip(chip).hbm_bytes_per_s


@problem("1.10", title="Global batch of a data-parallel run", unit="token", chip="tpu-v5e", chips=256,
         dtype="bf16", n_chips=256)
def global_batch(chip, dtype, n_chips):
    return n_chips * roofline.critical_batch(chip, dtype)


@problem("1.11", title="A squared norm on the vector units", unit="%", chip="h100", length=2e8, dtype="fp32",
         vector_peak_flops_per_s=hardware.chip("h100").micro.vector_flops_per_s,
         slips={hardware.chip("h100").micro.vector_flops_per_s / hardware.chip("h100").peak_flops_per_s("bf16"): "that is the share of the tensor cores' bf16 peak: a squared norm runs on the CUDA cores"})
def dot_vector_utilization_pct(chip, length, dtype, vector_peak_flops_per_s):
    # The squared norm sum(x_i^2) has no matrix to multiply: it runs on the CUDA cores, so its
    # utilization is measured against their peak. 2N FLOPs over N b bytes (one vector read),
    # memory-bound at any vector peak.
    r = roofline.op(chip, flops=2 * length, hbm_bytes=length * units.dtype_bytes(dtype),
                    peak_flops_per_s=vector_peak_flops_per_s)
    return 100 * r.utilization


@problem("1.12", title="The same kernel on a newer TPU", unit="%", old_chip="tpu-v5e", new_chip="tpu-v6e",
         intensity=400.0)
def newer_chip_fraction_pct(old_chip, new_chip, intensity):
    # Compute-bound on the old chip (400 > 240) says nothing about the new one: compare the
    # kernel's intensity with the new chip's critical intensity; below it, the kernel reaches
    # intensity / critical of the peak.
    return 100 * min(1.0, intensity / roofline.critical_intensity(new_chip))


@problem("1.13", title="A square matmul on an H100", unit="us", chip="h100", size=4096, dtype="bf16",
         slips={2: _TWO})
def square_matmul_us(chip, size, dtype):
    # Intensity of a square bf16 matmul is about size / 3 = 1365 FLOP/B, above the H100's 291:
    # compute-bound, so the time is 2 n^3 / peak.
    return roofline.matmul(chip, batch=size, d_model=size, d_ff=size, dtype=dtype).lower_seconds * 1e6


@problem("1.14", title="The first compute-bound batch of a real projection", unit="token", rel_tol=0.0,
         chip="h100", d_model=4096, d_ff=14336, dtype="bf16",
         hint="count the activation and output bytes too, and answer a whole number of tokens")
def first_compute_bound_batch(chip, d_model, d_ff, dtype):
    # The limit rule B* = peak / bandwidth ignores the B D and B F bytes; with them the matmul
    # crosses over at the smallest whole B with 2 B D F / peak >= 2 (B D + D F + B F) / bandwidth.
    b = 1
    while roofline.matmul(chip, batch=b, d_model=d_model, d_ff=d_ff, dtype=dtype).bound != "compute":
        b += 1
    return b


@problem("1.15", title="Exchange over compute for two H100s", unit="", chip="h100", batch=1024, d_model=8192,
         d_ff=28672, dtype="bf16",
         slips={2: "off by a factor of 2: each chip does half the FLOPs, and each partial sum crosses the "
                   "link one way"})
def split_comm_over_compute(chip, batch, d_model, d_ff, dtype):
    # Split along D: per chip 2 B (D/2) F FLOPs, then the [B, F] partial sum goes one way over
    # NVLink. The ratio is 2 peak / (W D), whatever B and F.
    r = roofline.split_matmul(chip, batch=batch, d_model=d_model, d_ff=d_ff, dtype=dtype)
    return r.comm_seconds / r.compute_seconds
