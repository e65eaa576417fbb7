"""xla.tiled_bytes: padding to TPU memory tiles, against hand counts and the published examples."""
import pytest

from scalebook import Error, xla


def test_the_original_books_example_pads_3x5_to_4x6_with_2x2_tiles():
    # Austin et al. 2025, part 9: f32[3,5] with T(2,2) is padded to [4,6], about 1.6x the memory.
    t = xla.tiled_bytes((3, 5), "float32", tile=(2, 2))
    assert t.padded_shape == (4, 6)
    assert (t.logical_bytes, t.padded_bytes) == (3 * 5 * 4, 4 * 6 * 4)
    assert t.overhead == pytest.approx(1.6)


def test_singleton_last_dimensions_cost_a_whole_tile_each():
    # JAX's Pallas TPU guide: an 8x128x1x1 array is padded to 8x128x8x128, 1024 times the work.
    t = xla.tiled_bytes((8, 128, 1, 1), "float32")
    assert t.tile == (8, 128)
    assert t.padded_shape == (8, 128, 8, 128)
    assert t.overhead == pytest.approx(1024)


def test_whole_tiles_are_not_padded():
    t = xla.tiled_bytes((4, 16, 256), "float32")
    assert t.padded_bytes == t.logical_bytes == 4 * 16 * 256 * 4


def test_narrow_dtypes_pack_rows_into_32_bit_words():
    # bf16 packs 2 rows per 32-bit word (T(8,128)(2,1)): a 16 x 128 tile; 1-byte types 32 x 128.
    assert xla.tiled_bytes((100, 100), "bf16").tile == (16, 128)
    assert xla.tiled_bytes((100, 100), "int8").tile == (32, 128)
    # bf16[100, 100]: rows 100 -> 112 (7 x 16), cols 100 -> 128; 2 bytes each.
    t = xla.tiled_bytes((100, 100), "bf16")
    assert t.padded_shape == (112, 128) and t.padded_bytes == 112 * 128 * 2


def test_a_kv_projection_shard_with_few_heads_wastes_most_of_its_tiles():
    # Chapter 9's f32[64,2,32] shard (2 heads of 32 on this device): [2, 32] -> [8, 128], 16x.
    t = xla.tiled_bytes((64, 2, 32), "float32")
    assert t.padded_shape == (64, 8, 128)
    assert t.padded_bytes == 64 * 8 * 128 * 4 and t.overhead == pytest.approx(16)


def test_a_vector_is_one_row():
    t = xla.tiled_bytes((1000,), "float32")
    assert t.padded_shape == (8, 1024)


@pytest.mark.parametrize("shape, tile, words", [
    ((0, 4), None, ">= 1"), ((), None, "non-empty"), ("8x128", None, "sequence"), ((8, 8), (8,), "two sizes"),
    ((8, 8), (0, 128), "tile entry"),
])
def test_bad_input_is_refused_with_what_is_valid(shape, tile, words):
    with pytest.raises(Error, match=words):
        xla.tiled_bytes(shape, "float32", tile=tile)
