"""Sharded-matmul plans pinned by hand, written to kill mutants `make mutate` found surviving.

Mesh X = 4, Y = 2 on a TPU v5e slice, bf16 (2 bytes), I = 1024, J = 2048, K = 512 unless a test
says otherwise. Sizes: A[I, J] = 4 MiB (4194304 B), B[J, K] = 2 MiB, C[I, K] = 1 MiB. An
AllGather over N devices sends V (N-1)/N per device, an AllReduce 2 V (N-1)/N (chapter 3); a
local slice moves nothing. A v5e does 197 TFLOP/s in bf16, 394 TOP/s in int8, and reads HBM at
820 GB/s; an ICI link carries 45 GB/s one way, and the 4x2 slice has no wraparound.
"""
import pytest

from scalebook import collectives, sharding

MESH = {"X": 4, "Y": 2}
DIMS = {"I": 1024, "J": 2048, "K": 512}
MiB = 2**20


def plan(spec, **kw):
    return sharding.plan(spec, mesh=kw.pop("mesh", MESH), dims=kw.pop("dims", DIMS), chip="tpu-v5e", **kw)


def rows(p):
    """Each step as (kind, operand, axes, before, after, V, sent per device); the matmul's before is its equation."""
    return [(s.kind, s.operand, "".join(s.axes), s.before, s.after, s.array_bytes, s.bytes_per_device)
            for s in p.steps]


def test_both_operands_cut_j_differently_gather_both_or_align_one_to_the_other():
    # A cuts J by X, B by Y: gather both (book), or gather B and slice it by X (then AllReduce C
    # over X), or gather A and slice it by Y (then AllReduce C over Y).
    p = plan("A[I, J_X] @ B[J_Y, K]")
    assert p.cases == (2,)
    assert p.strategy == "gather both along J"
    assert rows(p)[:2] == [
        ("all-gather", "A", "X", "A[I, J_X]", "A[I, J]", 4 * MiB, 4 * MiB * 3 / 4),
        ("all-gather", "B", "Y", "B[J_Y, K]", "B[J, K]", 2 * MiB, 2 * MiB * 1 / 2),
    ]
    assert [a.strategy for a in p.alternatives] == ["align B along J; AllReduce C over X",
                                                    "align A along J; AllReduce C over Y"]
    align_b, align_a = p.alternatives
    assert rows(align_b) == [
        ("all-gather", "B", "Y", "B[J_Y, K]", "B[J, K]", 2 * MiB, 1 * MiB),
        ("slice", "B", "X", "B[J, K]", "B[J_X, K]", 0, 0),
        ("matmul", "C", "", "A[I, J_X] @ B[J_X, K] -> C[I, K]", "C[I, K]", 0, (1024 * 512 + 512 * 512 + 1024 * 512) * 2),
        ("all-reduce", "C", "X", "C[I, K] (partial)", "C[I, K]", 1 * MiB, 2 * MiB * 3 / 4),
    ]
    assert rows(align_a)[1] == ("slice", "A", "Y", "A[I, J]", "A[I, J_Y]", 0, 0)
    assert rows(align_a)[3] == ("all-reduce", "C", "Y", "C[I, K] (partial)", "C[I, K]", 1 * MiB, 2 * MiB * 1 / 2)


def test_a_slice_costs_nothing_and_a_collective_does_no_flops():
    p = plan("A[I, J_X] @ B[J_Y, K]").alternatives[0]
    sl = p.steps[1]
    assert (sl.array_bytes, sl.bytes_per_device, sl.flops, sl.seconds) == (0, 0, 0, 0)
    ag = p.steps[0]
    assert ag.flops == 0
    assert isinstance(ag.detail, collectives.CollectiveCost)
    assert (ag.detail.kind, ag.detail.bytes_per_device, ag.detail.seconds) == ("all-gather", 1 * MiB, ag.seconds)


def test_j_cut_in_one_operand_gathers_it_or_slices_the_other():
    p = plan("A[I, J_X] @ B[J, K]")
    assert p.strategy == "gather A along J"
    assert [a.strategy for a in p.alternatives] == ["slice B along J; AllReduce C over X"]
    assert rows(p.alternatives[0])[0] == ("slice", "B", "X", "B[J, K]", "B[J_X, K]", 0, 0)


def test_a_free_conflict_on_the_second_mesh_axis_is_still_resolved():
    # X shards nothing free in both operands; Y shards I in A and K in B. B (2 MiB / 2 = 1 MiB per
    # device) is smaller than A (2 MiB per device): gather B over Y.
    p = plan("A[I_Y, J] @ B[J, K_Y]")
    assert p.cases == (4,)
    assert rows(p)[0] == ("all-gather", "B", "Y", "B[J, K_Y]", "B[J, K]", 2 * MiB, 1 * MiB)
    assert str(p.spec.out) == "C[I_Y, K]"


def test_a_free_conflict_between_equal_blocks_gathers_b():
    # I = K = 512: A[I_X, J] and B[J, K_X] both hold 128 x 2048 x 2 B = 512 KiB per device.
    p = plan("A[I_X, J] @ B[J, K_X]", dims={"I": 512, "J": 2048, "K": 512})
    assert rows(p)[0] == ("all-gather", "B", "X", "B[J, K_X]", "B[J, K]", 2 * MiB, 2 * MiB * 3 / 4)
    assert [a.strategy for a in p.alternatives] == ["gather A along I (case 4); gather C along K",
                                                    "gather A along I (case 4); gather B along K for the output"]


def test_an_output_that_wants_fewer_axes_is_gathered_after_the_matmul_or_before_it():
    # C[I, K] replicated, A[I_X, J_Y]: gather A's J first (case 2); then I_X must go, either by
    # gathering C over X after the matmul (book: C is 1 MiB / 4 per device) or A before it.
    p = plan("A[I_X, J_Y] @ B[J, K] -> C[I, K]")
    assert p.strategy == "gather A along J; gather C along I"
    assert [s.kind for s in p.steps] == ["all-gather", "matmul", "all-gather"]
    assert rows(p)[2] == ("all-gather", "C", "X", "C[I_X, K]", "C[I, K]", 1 * MiB, 1 * MiB * 3 / 4)
    assert [a.strategy for a in p.alternatives] == [
        "slice B along J; gather C along I; AllReduce C over Y",
        "gather A along J; gather A along I for the output",
        "slice B along J; gather A along I for the output; AllReduce C over Y",
    ]
    reduce_then_gather = p.alternatives[0]
    assert [s.kind for s in reduce_then_gather.steps] == ["slice", "matmul", "all-reduce", "all-gather"]
    assert rows(reduce_then_gather)[2][5:] == (MiB / 4, 2 * MiB / 4 * 1 / 2)  # C[I_X, K] is 256 KiB


def test_an_output_with_its_own_name_and_order_is_reduced_under_that_name():
    p = plan("A[I, J_X] @ B[J_X, K] -> D[K, I]")
    assert p.strategy == "AllReduce D over X"
    assert rows(p) == [
        ("matmul", "D", "", "A[I, J_X] @ B[J_X, K] -> D[K, I]", "D[K, I]", 0, (1024 * 512 + 512 * 512 + 512 * 1024) * 2),
        ("all-reduce", "D", "X", "D[K, I] (partial)", "D[K, I]", 1 * MiB, 2 * MiB * 3 / 4),
    ]


@pytest.mark.parametrize("dtype, peak", [("fp32", 197e12), ("bf16", 197e12), ("int8", 394e12)])
def test_the_matmul_runs_at_the_peak_of_its_dtype_fp32_at_bf16s(dtype, peak):
    # 4096^3: 2 x 4096^3 = 137 GFLOP against at most 3 x 4096^2 x 4 B = 201 MB of HBM: compute-bound
    p = plan("A[I, J] @ B[J, K]", mesh={"X": 4}, dims={"I": 4096, "J": 4096, "K": 4096}, dtype=dtype)
    assert p.compute_seconds == pytest.approx(2 * 4096**3 / peak, rel=1e-9)


def test_a_layout_s_block_is_whole_elements():
    lay = sharding.layout("A[I_X, J]", mesh=MESH, dims={"I": 256, "J": 512})
    assert lay.array == "A[I_X, J]"
    assert lay.local_shape == (64, 512) and all(type(n) is int for n in lay.local_shape)


def test_a_spec_with_an_output_prints_back_whole():
    assert str(sharding.parse("A[I_X,J]@B[J,K_Y]->C[I_X,K_Y]")) == "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]"


def test_a_plan_prints_every_step_with_its_units():
    # gather A: 3 MiB sent at 45 GB/s = 69.9 us + 3 hops x 1 us = 72.9 us; matmul 2.15 GFLOP at
    # 197 TFLOP/s = 10.9 us (its 7.34 MB of HBM take 8.95 us); alternative: slice B, matmul 0.537
    # GFLOP over 2.62 MB of HBM = 3.20 us, AllReduce 1.5 MiB at 45 GB/s = 34.95 us + 2 x 3 hops x
    # 1 us = 40.95 us: 44.1 us.
    assert repr(plan("A[I, J_X] @ B[J, K]")) == (
        "Plan A[I, J_X] @ B[J, K] -> C[I, K] on tpu-v5e mesh X=4,Y=2, bf16 (case 2: gather A along J)\n"
        "  1. AllGather_X A[I, J_X] -> A[I, J]: V=4.19 MB, 3.15 MB sent per device  [72.9 µs]\n"
        "  2. matmul A[I, J] @ B[J, K] -> C[I, K]: 2.15 GFLOP, 7.34 MB HBM per device  [10.9 µs]\n"
        "  total 83.8 µs (comm 72.9 µs, compute 10.9 µs; 72.9 µs if overlapped)\n"
        "  alternative: slice B along J; AllReduce C over X: 44.1 µs, 1.57 MB sent per device")


def test_a_plan_s_table_has_a_row_per_step_and_its_alternatives():
    assert plan("A[I, J_X] @ B[J, K]")._repr_html_() == (
        "<table><caption><code>A[I, J_X] @ B[J, K] -> C[I, K]</code> on tpu-v5e X=4,Y=2, bf16: case 2, "
        "gather A along J; total <b>83.8 µs</b></caption>"
        "<tr><th>#</th><th>step</th><th>axes</th><th>sharding</th><th>V</th><th>sent per device</th><th>time</th></tr>"
        "<tr><td>1</td><td>AllGather</td><td>X</td><td><code>A[I, J_X] &rarr; A[I, J]</code></td>"
        "<td>4.19 MB</td><td>3.15 MB</td><td>72.9 µs</td></tr>"
        "<tr><td>2</td><td>matmul</td><td></td><td><code>A[I, J] @ B[J, K] -> C[I, K]</code></td>"
        "<td></td><td></td><td>10.9 µs</td></tr></table>"
        "<p>Alternatives:</p><ul><li>slice B along J; AllReduce C over X: 44.1 µs, 1.57 MB sent per device</li></ul>")


def test_a_plan_of_several_cases_and_axes_names_them_all():
    p = plan("A[I, J_XY] @ B[J_X, K]")
    text = repr(p)
    assert "(case 2+3:" in text and "mesh X=4,Y=2" in text
    assert "case 2+3," in p._repr_html_()
    assert "<p>Alternatives:</p>" not in plan("A[I_X, J] @ B[J, K_Y]")._repr_html_()


def test_a_slice_step_and_a_two_axis_collective_describe_themselves():
    p = plan("A[I, J] @ B[J, K] -> C[I_XY, K]")
    assert p.steps[0].describe() == "slice A[I, J] -> A[I_X, J] locally along X"
    g = plan("A[I, J_XY] @ B[J, K]").steps[0]
    assert g.describe().startswith("AllGather_XY A[I, J_XY] -> A[I, J]: V=4.19 MB, ")
    # 7/8 of 4 MiB over one link per axis, two axes at 45 GB/s each: 3.67 MB / 90 GB/s = 40.8 us,
    # plus (4 - 1) + (2 - 1) hops of 1 us (no wraparound on a 4x2 slice): 44.8 us
    assert repr(g) == f"Step({g.describe()}, 44.8 µs)"


def test_partial_sums_reduce_scattered_onto_the_output_s_axis():
    p = plan("A[I, J_X] @ B[J_X, K] -> C[I, K_X]")
    assert p.strategy == "ReduceScatter C onto K"
    rs = p.steps[1]
    assert rows(p)[1] == ("reduce-scatter", "C", "X", "C[I, K] (partial)", "C[I, K_X]", 1 * MiB, 1 * MiB * 3 / 4)
    assert rs.flops == 0 and rs.detail.kind == "reduce-scatter" and rs.detail.bytes_per_device == rs.bytes_per_device
    ar = plan("A[I, J_X] @ B[J_X, K]").steps[1]
    assert ar.flops == 0 and ar.detail.kind == "all-reduce" and ar.detail.bytes_per_device == 2 * MiB * 3 / 4


def test_a_plan_with_nothing_to_move_says_so():
    assert plan("A[I_X, J] @ B[J, K_Y]").strategy == "local matmul, no communication"


def test_an_output_axis_freed_by_a_gather_is_sliced_after_the_matmul():
    alt = plan("A[I_Y, J] @ B[J, K_Y]").alternatives[0]
    assert rows(alt)[2:] == [("all-gather", "C", "Y", "C[I, K_Y]", "C[I, K]", 1 * MiB, 1 * MiB / 2),
                             ("slice", "C", "Y", "C[I, K]", "C[I_Y, K]", 0, 0)]


def test_alternatives_describe_the_same_matmul_on_the_same_mesh():
    p = plan("A[I, J_X] @ B[J_Y, K]")
    for a in p.alternatives:
        assert (str(a.spec), a.mesh, a.dims, a.chip, a.dtype, a.cases) == (str(p.spec), MESH, DIMS, "tpu-v5e", "bf16", (2,))


def test_a_parsed_spec_plans_like_its_string():
    spec = "A[I, J_X] @ B[J, K]"
    assert rows(plan(sharding.parse(spec))) == rows(plan(spec))


def test_a_dimension_of_one_and_one_of_two_to_the_53_are_valid():
    assert sharding.local_shape("A[I, J]", mesh={"X": 1}, dims={"I": 1, "J": 2**53}) == (1, 2**53)


def test_an_unknown_axis_in_the_output_is_named():
    with pytest.raises(sharding.Error, match="'Z'"):
        plan("A[I, J] @ B[J, K] -> C[I_Z, K]")


def test_two_axes_print_together_in_a_strategy_a_table_and_a_step():
    # A and B both cut J by X then Y: the partial sums are AllReduced over all 8 devices at once
    assert plan("A[I, J_XY] @ B[J_XY, K]").strategy == "AllReduce C over XY"
    assert "<td>1</td><td>AllGather</td><td>XY</td>" in plan("A[I, J_XY] @ B[J, K]")._repr_html_()


def test_a_table_lists_each_alternative_once_and_ends_without_them_when_there_are_none():
    html = plan("A[I, J_X] @ B[J_Y, K]")._repr_html_()
    assert html.count("<li>") == 2 and "sent per device</li><li>align A along J" in html
    assert plan("A[I_X, J] @ B[J, K_Y]")._repr_html_().endswith("</table>")


def test_the_matmul_step_keeps_its_roofline():
    mm = plan("A[I_X, J] @ B[J, K_Y]").steps[0]
    assert mm.kind == "matmul" and mm.detail.flops == mm.flops == 2 * 1024 * 2048 * 512 / 8


def test_multi_letter_axes_read_with_spaces_and_print_back_in_braces():
    s = sharding.parse("W[D_{data, model}, F] @ V[F, E_{expert}]")
    assert s.lhs.axes == (("data", "model"), ()) and s.rhs.axes == ((), ("expert",))
    assert str(s) == "W[D_{data,model}, F] @ V[F, E_{expert}]"


def test_a_slice_over_two_axes_names_both():
    (alt,) = plan("A[I, J_XY] @ B[J, K]").alternatives
    assert alt.steps[0].describe() == "slice B[J, K] -> B[J_XY, K] locally along XY"


def test_a_topology_passed_in_prices_the_collectives():
    from scalebook import topology

    # an 8-GPU NVLink node carries X = 8 at 450 GB/s x NCCL's usable 20.6 / 25: gathering A sends 7/8 of
    # 4 MiB; for so small an array NCCL's LL protocol is the fastest (tuning.cc): 7 steps x 0.6 us, at
    # half the bandwidth, 19.8 + 4.2 = 24.0 us (LL128: 10.8 + 13.3; Simple: 9.9 + 23.8)
    p = plan("A[I, J_X] @ B[J, K]", mesh={"X": 8}, topology=topology.gpu_node("h100"))
    assert p.collectives[0].seconds == pytest.approx(4 * MiB * 7 / 8 / (450e9 * 20.6 / 25 * 0.5) + 7 * 0.6e-6, rel=1e-9)
