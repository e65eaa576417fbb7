"""scalebook.sharding: the notation, the four cases of chapter 3, errors."""
import pytest
from hypothesis import given, strategies as st

from scalebook import Error, sharding

MESH = {"X": 4, "Y": 2}
DIMS = {"I": 1024, "J": 2048, "K": 512}


def plan(spec, **kw):
    return sharding.plan(spec, mesh=kw.pop("mesh", MESH), dims=kw.pop("dims", DIMS), chip=kw.pop("chip", "tpu-v5e"), **kw)


def kinds(p):
    return [(s.kind, s.operand, s.axes) for s in p.collectives]


def test_parser_reads_operands_dimensions_and_axes():
    s = sharding.parse("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]")
    assert (s.lhs.name, s.lhs.dims, s.lhs.axes) == ("A", ("I", "J"), (("X",), ()))
    assert s.rhs.axes == ((), ("Y",))
    assert s.out.dims == ("I", "K")
    assert s.contracting == ("J",)


def test_parser_reads_several_axes_on_one_dimension_in_order():
    assert sharding.parse("A[I_YX, J] @ B[J, K]").lhs.axes[0] == ("Y", "X")


def test_parser_reads_multi_letter_axes_in_braces():
    s = sharding.parse("W[D, F_{model}] @ V[F_{model}, E]")
    assert s.lhs.axes == ((), ("model",))


def test_output_is_optional_and_prints_back():
    s = sharding.parse("A[I_X,J]@B[J,K_Y]")
    assert s.out is None
    assert str(s) == "A[I_X, J] @ B[J, K_Y]"


@pytest.mark.parametrize("spec, token", [
    ("A[I_X, J] B[J, K]", "joined by '@'"),
    ("A[I_, J] @ B[J, K]", "'I_'"),
    ("A[I_X, J @ B[J, K]", "A\\[I_X, J"),
    ("A[I_X, 3J] @ B[J, K]", "'3J'"),
    ("A[I_XX, J] @ B[J, K]", "I_XX"),
    ("A[I_X, J_X] @ B[J, K]", "'X'"),
    ("A[I, J] @ B[J, K] -> C[I, Q]", "'Q'"),
    ("A[I, J] @ B[J, K] -> C[I, J, K]", "'J'"),
    ("A[I, J] @ B[J, K] -> C[I]", "'K'"),
    ("A[I, J] @ B[J, K] -> C[I, K] -> D[I]", "'->'"),
])
def test_bad_notation_raises_error_naming_the_token(spec, token):
    with pytest.raises(Error, match=token):
        sharding.parse(spec)


def test_unknown_mesh_axis_is_named():
    with pytest.raises(Error, match="'Z'"):
        plan("A[I_Z, J] @ B[J, K]")


def test_axis_that_does_not_divide_a_dimension_is_refused():
    with pytest.raises(Error, match="I = 1022"):
        plan("A[I_X, J] @ B[J, K]", dims={"I": 1022, "J": 2048, "K": 512})


def test_format_axes_refuses_a_bool_naming_axes():
    with pytest.raises(Error, match="axes must be a tuple"):
        sharding.format_axes(True)


def test_format_operand_refuses_a_string_for_a_dimension_s_axes():
    # 'XY' would be ambiguous (two axes X and Y, or one axis XY?): a tuple says which
    with pytest.raises(Error, match=r"sharding\['I'\]"):
        sharding.format_operand("A", ("I", "J"), {"I": "XY"})


def test_validate_refuses_a_spec_that_is_not_a_matmul_spec():
    with pytest.raises(Error, match="spec must be a MatmulSpec"):
        sharding.validate(None, MESH, DIMS)


def test_validate_refuses_a_fractional_mesh_size_naming_the_axis():
    with pytest.raises(Error, match="mesh axis 'X'"):
        sharding.validate(sharding.parse("A[I_X, J] @ B[J, K]"), {"X": 2.5}, DIMS)


def test_missing_dimension_size_is_named():
    with pytest.raises(Error, match="'K'"):
        plan("A[I_X, J] @ B[J, K]", dims={"I": 1024, "J": 2048})


def test_case_1_unsharded_contracting_dim_needs_no_communication():
    p = plan("A[I_X, J] @ B[J, K_Y]")
    assert p.cases == (1,)
    assert p.collectives == ()
    assert str(p.spec.out) == "C[I_X, K_Y]"


def test_case_1_local_matmul_does_one_devices_share_of_the_flops():
    p = plan("A[I_X, J] @ B[J, K_Y]")
    assert p.compute_seconds > 0
    assert p.steps[0].flops == pytest.approx(2 * 1024 * 2048 * 512 / 8)


def test_case_2_allgathers_the_sharded_operand_first():
    p = plan("A[I, J_X] @ B[J, K]")
    assert p.cases == (2,)
    assert kinds(p) == [("all-gather", "A", ("X",))]
    ag = p.collectives[0]
    assert ag.array_bytes == 1024 * 2048 * 2  # the whole of A, gathered
    assert ag.bytes_per_device == pytest.approx(ag.array_bytes * 3 / 4)
    # 4x2 v5e slice: no wraparound, so one way at 45 GB/s, and 3 hops of 1 us added (chapter 3's additive form)
    assert ag.seconds == pytest.approx(ag.array_bytes * 3 / 4 / 4.5e10 + 3 * 1e-6)


def test_case_2_alternative_slices_the_other_operand_and_allreduces():
    p = plan("A[I_Y, J_X] @ B[J, K]", dims={"I": 64, "J": 4096, "K": 64})
    assert kinds(p) == [("all-gather", "A", ("X",))]
    assert [kinds(a) for a in p.alternatives] == [[("all-reduce", "C", ("X",))]]
    assert p.cheapest is p.alternatives[0]  # C is smaller than A: reducing C moves fewer bytes


def test_case_3_allreduces_the_partial_sums():
    p = plan("A[I, J_X] @ B[J_X, K]")
    assert p.cases == (3,)
    assert kinds(p) == [("all-reduce", "C", ("X",))]
    assert p.collectives[0].array_bytes == 1024 * 512 * 2


def test_case_3_reduce_scatters_when_the_output_is_sharded_along_the_axis():
    p = plan("A[I, J_X] @ B[J_X, K] -> C[I, K_X]")
    assert kinds(p) == [("reduce-scatter", "C", ("X",))]
    assert p.comm_seconds == pytest.approx(plan("A[I, J_X] @ B[J_X, K]").comm_seconds / 2)


def test_case_4_gathers_the_smaller_operand():
    p = plan("A[I_X, J] @ B[J, K_X]")
    assert p.cases == (4,)
    assert kinds(p) == [("all-gather", "B", ("X",))]
    assert str(p.spec.out) == "C[I_X, K]"


def test_requested_output_sharding_on_free_axes_is_a_local_slice():
    p = plan("A[I, J] @ B[J, K] -> C[I_X, K_Y]")
    assert p.collectives == ()
    assert [s.kind for s in p.steps] == ["slice", "slice", "matmul"]


def test_plan_seconds_add_the_steps():
    p = plan("A[I, J_X] @ B[J, K]")
    assert p.seconds == pytest.approx(sum(s.seconds for s in p.steps))
    assert p.overlapped_seconds == max(p.comm_seconds, p.compute_seconds)


def test_plan_on_gpus_prices_collectives_over_nvlink():
    p = plan("A[I, J_X] @ B[J, K]", chip="h100", mesh={"X": 8})
    ag = p.collectives[0]
    # NCCL's fastest protocol (tuning.cc; latency per step, bandwidth share) over the usable 20.6 of 25 GB/s
    # per NVLink 4 link (topo.h): 7 steps + 7/8 of A through each GPU's 450 GB/s egress
    sent, usable = 1024 * 2048 * 2 * 7 / 8, 450e9 * 20.6 / 25
    by_protocol = {"LL": 7 * 0.6e-6 + sent / (usable * 0.5), "LL128": 7 * 1.9e-6 + sent / (usable * 0.92),
                   "Simple": 7 * 3.4e-6 + sent / usable}
    assert ag.seconds == pytest.approx(min(by_protocol.values()))  # LL here: 4.2 + 19.8 us


def test_plan_reprs_show_steps_and_total():
    p = plan("A[I, J_X] @ B[J, K]")
    assert "AllGather_X A[I, J_X] -> A[I, J]" in repr(p)
    assert "total" in repr(p)
    assert "<table>" in p._repr_html_()


AXES = st.sampled_from([(), ("X",), ("Y",), ("X", "Y"), ("Y", "X")])


def _fmt(d, ax):
    return d + ("_" + "".join(ax) if ax else "")


@st.composite
def specs(draw):
    def operand(name, d1, d2):
        a1 = draw(AXES)
        a2 = draw(AXES.filter(lambda a: not set(a) & set(a1)))
        return f"{name}[{_fmt(d1, a1)}, {_fmt(d2, a2)}]"

    return f"{operand('A', 'I', 'J')} @ {operand('B', 'J', 'K')} -> {operand('C', 'I', 'K')}"


@given(specs())
def test_every_plan_ends_in_the_requested_output_and_never_costs_negative_time(spec):
    p = plan(spec, dims={"I": 64, "J": 128, "K": 32})
    assert str(p.spec.out) == spec.split("->")[1].strip()
    assert all(s.seconds >= 0 for s in p.steps)
    assert p.cheapest.comm_array_bytes <= p.comm_array_bytes


@given(st.text(max_size=30))
def test_any_string_parses_or_raises_scalebook_error(text):
    try:
        spec = sharding.parse(text)
    except Error:
        return
    assert spec.lhs.dims and spec.rhs.dims


def test_cli_prints_the_plan_and_its_time(capsys):
    from scalebook import cli

    assert cli.main(["shard-matmul", "A[I, J_X] @ B[J_X, K]", "--mesh", "X=4,Y=2", "--dims", "I=1024,J=2048,K=512",
                     "--chip", "tpu-v5e"]) == 0
    out = capsys.readouterr().out
    assert "AllReduce_X" in out and "total" in out


def test_cli_bad_spec_exits_2_naming_the_token(capsys):
    from scalebook import cli

    assert cli.main(["shard-matmul", "A[I_Q, J] @ B[J, K]", "--mesh", "X=4", "--dims", "I=8,J=8,K=8",
                     "--chip", "tpu-v5e"]) == 2
    assert "'Q'" in capsys.readouterr().err


def test_layout_of_a_row_sharded_array_on_a_4x2_mesh():
    lay = sharding.layout("A[I_X, J]", mesh={"X": 4, "Y": 2}, dims={"I": 256, "J": 512}, dtype="fp32")
    assert lay.local_shape == (64, 512)
    assert (lay.shards, lay.replication) == (4, 2)  # Y is not named: two copies of each block
    assert lay.bytes_per_device == 64 * 512 * 4
    assert lay.total_bytes == 2 * 256 * 512 * 4


def test_local_shape_splits_a_dimension_over_two_axes():
    assert sharding.local_shape("W[D_XZ, F]", mesh={"X": 4, "Y": 2, "Z": 2}, dims={"D": 64, "F": 8}) == (8, 8)


def test_layout_refuses_an_axis_that_does_not_divide():
    with pytest.raises(Error, match="do not divide"):
        sharding.layout("A[I_X, J]", mesh={"X": 3}, dims={"I": 256, "J": 4})
