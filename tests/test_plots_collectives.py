"""Each chapter 3 figure function returns a matplotlib Figure (Agg backend)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from scalebook import Error, plots, topology  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_block_owners_of_a_row_sharded_array():
    assert plots.block_owners("I_X, J", {"X": 4, "Y": 2}) == {
        (0, 0): [0, 1], (1, 0): [2, 3], (2, 0): [4, 5], (3, 0): [6, 7]}
    assert plots.block_owners("I_X, J_Y", {"X": 4, "Y": 2})[(1, 1)] == [3]
    assert plots.block_owners("I_XY, J", {"X": 4, "Y": 2})[(5, 0)] == [5]


def test_bad_dims_raise():
    with pytest.raises(Error):
        plots.parse_dims("I_Z, J", {"X": 4})
    with pytest.raises(Error):
        plots.parse_dims("I_X, J_X", {"X": 4})


def test_ring_states_finish_gathered():
    for bidi, steps in ((False, 7), (True, 4)):
        states = plots.ring_states(8, bidi)
        assert len(states) == steps + 1
        assert all(s == set(range(8)) for s in states[-1])


@pytest.mark.parametrize("make", [
    lambda: plots.sharded_array("I_X, J_Y", {"X": 4, "Y": 2}),
    lambda: plots.sharded_arrays(),
    lambda: plots.ring_allgather(4),
    lambda: plots.ring_allgather(6, bidirectional=True),
    lambda: plots.collective_times(topology.slice("tpu-v5e", "16x16")),
    lambda: plots.multi_axis_allgather(topology.slice("tpu-v5p", "8x8x8"), bytes_=1e9),
    lambda: plots.predicted_vs_compiled([
        {"case": "a", "predicted": 0.0, "compiled": 0.0},
        {"case": "b", "predicted": 3e5, "compiled": 3e5, "predicted_ops": "AllGather(X)",
         "compiled_ops": "AllGather(X)"}]),
])
def test_returns_a_figure(make):
    assert isinstance(make(), Figure)


def test_draws_into_a_given_axes():
    fig, ax = plt.subplots()
    assert plots.sharded_array("I, J_X", {"X": 4}, ax=ax) is fig
    assert plots.collective_times(topology.gpu_node("h100"), ax=ax) is fig
