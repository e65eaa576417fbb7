"""Chapter 10's figures: each function draws and returns a Figure (Agg backend)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from scalebook import Error, jax_collectives as jc, plots, topology  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _cost(bidirectional=True):
    return jc.collective_matmul_cost("allgather-matmul", topology.slice("tpu-v5e", "16x16"), axis="X",
                                     dims=dict(I=8192, J=8192, K=16 * 4096), bidirectional=bidirectional)


RATIOS = [dict(label="AllGather", measured=2.0, predicted=1.0), dict(label="matmul", measured=0.7, predicted=0.6)]


class _Run:  # the parts of a jax_training.TrainingRun that training_collective_rows reads
    def __init__(self, arrays):
        self.arrays = arrays


class _Est:
    def __init__(self, collectives):
        self.collectives = collectives


def _fake_step():
    from types import SimpleNamespace as NS

    arrays = [NS(op=0, kind="all-gather", axes=("fsdp",), phase="forward", array_bytes=100.0),
              NS(op=1, kind="all-gather", axes=("fsdp",), phase="forward", array_bytes=50.0),
              NS(op=2, kind="all-reduce", axes=("fsdp",), phase="backward", array_bytes=80.0),
              NS(op=2, kind="all-reduce", axes=("fsdp",), phase="backward", array_bytes=70.0),
              NS(op=3, kind="all-reduce", axes=("tp",), phase="forward", array_bytes=4.0)]
    est = [NS(kind="all-gather", axes=("fsdp",), purpose="weights gathered before the forward pass", count=1,
              array_bytes=150.0),
           NS(kind="reduce-scatter", axes=("fsdp",), purpose="weight gradients reduce-scattered", count=3,
              array_bytes=50.0)]
    return _Run(arrays), _Est(est)


def test_training_rows_meet_the_cpu_form_of_each_prediction():
    rows = plots.training_collective_rows(*_fake_step())
    by = {r["label"]: r for r in rows}
    ag = by["fsdp: AllGather, forward"]
    assert (ag["compiled_bytes"], ag["predicted_bytes"], ag["compiled_ops"], ag["predicted_ops"]) == (150, 150, 2, 1)
    rs = by["fsdp: ReduceScatter (CPU: AllReduce), backward"]
    assert (rs["compiled_bytes"], rs["predicted_bytes"], rs["compiled_ops"], rs["compiled_arrays"]) == (150, 150, 1, 2)
    assert by["tp: AllReduce, forward (not predicted)"]["predicted_bytes"] == 0


@pytest.mark.parametrize("make", [
    lambda ax: plots.collective_matmul_timeline(_cost(), ax=ax),
    lambda ax: plots.time_ratios(RATIOS, ax=ax),
    lambda ax: plots.training_collectives(plots.training_collective_rows(*_fake_step()), ax=ax),
])
def test_draws_into_a_given_axes_or_a_new_figure(make):
    assert isinstance(make(None), Figure)
    fig, ax = plt.subplots()
    assert make(ax) is fig


@pytest.mark.parametrize("n, bidirectional", [(4, True), (4, False), (8, True), (2, True)])
def test_ring_steps_figure_has_a_panel_per_state(n, bidirectional):
    fig = plots.ring_collective_steps(n, bidirectional=bidirectional)
    k, _ = jc.ring_split(n, bidirectional)
    assert isinstance(fig, Figure) and len(fig.axes) == 2 * (k + 1)


def test_one_way_timeline_and_bad_inputs():
    assert isinstance(plots.collective_matmul_timeline(_cost(bidirectional=False)), Figure)
    with pytest.raises(Error):
        plots.ring_collective_steps(1)
    with pytest.raises(Error):
        plots.ring_collective_steps(4, kinds=())
    with pytest.raises(Error):
        plots.time_ratios([])
    with pytest.raises(Error):
        plots.time_ratios([dict(label="x", measured=0, predicted=1)])
    with pytest.raises(Error):
        plots.training_collectives([])
    with pytest.raises(Error):
        plots.collective_matmul_timeline(object())
