"""XLA cross-check: matmul FLOPs and bytes from roofline against compiled cost_analysis()."""
import pytest

from scalebook import roofline, xla

xla.use_cpu_devices(8)
pytestmark = pytest.mark.xla

SHAPES = [(128, 512, 256), (8, 1024, 1024), (512, 256, 2048), (64, 4096, 128)]


def _compiled(b, d, f, dtype, out=None):
    import jax.numpy as jnp

    a, w = xla.shapes((b, d), (d, f), dtype=dtype)
    fn = (lambda a, w: jnp.matmul(a, w, preferred_element_type=jnp.dtype(out))) if out else (lambda a, w: a @ w)
    return xla.cost(fn, a, w)


@pytest.mark.parametrize("b, d, f", SHAPES)
def test_f32_matmul_flops_and_bytes_match_xla(b, d, f):
    c = _compiled(b, d, f, "float32")
    assert c.flops == pytest.approx(roofline.matmul_flops(b, d, f), rel=0.02)
    assert c.bytes_accessed == pytest.approx(roofline.matmul_bytes(b, d, f, dtype="fp32"), rel=0.02)


@pytest.mark.parametrize("b, d, f", SHAPES)
def test_int8_matmul_with_int32_output_matches_xla(b, d, f):
    c = _compiled(b, d, f, "int8", out="int32")
    if xla.jax_version() >= (0, 8, 1):  # an int8 dot: 1 byte per input element, 4 per output
        assert c.flops == pytest.approx(roofline.matmul_flops(b, d, f), rel=0.02)
        assert c.bytes_accessed == pytest.approx(
            roofline.matmul_bytes(b, d, f, dtype="int8", out_dtype="int32"), rel=0.02)
    else:
        # jax 0.8.0 and older first widen both inputs to int32 with convert ops (one FLOP per
        # element; read 1 byte, write 4), then the int32 dot reads 4 bytes per input element.
        inputs = b * d + d * f
        assert c.flops == pytest.approx(roofline.matmul_flops(b, d, f) + inputs, rel=0.02)
        assert c.bytes_accessed == pytest.approx(inputs * (1 + 4) + inputs * 4 + b * f * 4, rel=0.02)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("b, d, f", SHAPES)
def test_half_precision_matmul_on_cpu_matches_the_upcast_program(dtype, b, d, f):
    """CPU XLA has no bf16/fp16 dot: it converts both inputs to f32, multiplies, converts back.

    Each convert counts one FLOP per element and reads 2 bytes, writes 4 (or the reverse);
    the f32 dot then moves 4 bytes per element. So the compiled program costs 2BDF plus one
    FLOP per converted element, and 10 bytes per element instead of the 2 a TPU would move.
    """
    c = _compiled(b, d, f, dtype)
    elements = b * d + d * f + b * f
    assert c.flops == pytest.approx(roofline.matmul_flops(b, d, f) + elements, rel=0.02)
    assert c.bytes_accessed == pytest.approx(5 * roofline.matmul_bytes(b, d, f, dtype="bf16"), rel=0.02)


def test_jax_version_reads_the_installed_release_as_integers(monkeypatch):
    import jax

    for text, want in [("0.10.2", (0, 10, 2)), ("0.9.0.1", (0, 9, 0, 1)), ("0.11.0.dev20270101", (0, 11, 0)),
                       ("0.10.2rc1", (0, 10, 2))]:
        monkeypatch.setattr(jax, "__version__", text)
        assert xla.jax_version() == want
