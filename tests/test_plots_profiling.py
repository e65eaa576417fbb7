"""Chapter 9's figures, drawn from a synthetic trace (no jax needed)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from scalebook import Error, plots  # noqa: E402
from scalebook.profile import parse_trace  # noqa: E402


def _op(name, device, ts, dur, run):
    return {"ph": "X", "tid": device, "ts": ts, "dur": dur, "name": name,
            "args": {"hlo_op": name, "hlo_module": "jit_f", "device_ordinal": str(device), "run_id": str(run)}}


@pytest.fixture(scope="module")
def prof():
    ev = []
    for run, t0 in ((1, 0), (2, 2000)):
        for d in range(4):
            ev += [_op("dot_fusion", d, t0 + 10 * d, 500, run), _op("exp_fusion", d, t0 + 600, 200, run),
                   _op("all-gather.1", d, t0 + 800, 300 + 50 * d, run), _op("all-reduce.2", d, t0 + 1200, 400, run)]
            ev.append({"ph": "X", "tid": d, "ts": t0 + 1210, "dur": 200, "name": "Rendezvous"})
    return parse_trace({"traceEvents": ev})


CALLS = {
    "profile_timeline": lambda p: {"profile": p},
    "profile_breakdown": lambda p: {"profile": p},
    "predicted_vs_measured": lambda p: {"points": [("a", 1e-3, 2e-3), ("b", 1e-2, 8e-3)]},
}


def test_timelines_side_by_side_share_one_legend(prof):
    fig = plots.profile_timelines({"first": prof, "second": prof}, step=0)
    assert [ax.get_title() for ax in fig.axes] == ["first", "second"] and len(fig.legends) == 1
    plt.close(fig)
    fig, axs = plt.subplots(1, 2)
    assert plots.profile_timelines({"a": prof, "b": prof}, axes_list=axs) is fig
    plt.close(fig)
    with pytest.raises(Error):
        plots.profile_timelines({})
    with pytest.raises(Error, match="axes"):
        plots.profile_timelines({"a": prof}, axes_list=axs)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_returns_a_figure(name, prof):
    fig = getattr(plots, name)(**CALLS[name](prof))
    assert isinstance(fig, matplotlib.figure.Figure)
    plt.close(fig)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_draws_into_a_given_axes(name, prof):
    fig, ax = plt.subplots()
    assert getattr(plots, name)(**CALLS[name](prof), ax=ax) is fig
    plt.close(fig)


def test_timeline_of_a_chosen_step_and_devices(prof):
    fig = plots.profile_timeline(prof, step=0, devices=[1, 3])
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["device 1", "device 3"]
    plt.close(fig)


def test_bad_input_is_an_error(prof):
    with pytest.raises(Error):
        plots.profile_timeline("not a profile")
    with pytest.raises(Error, match="step"):
        plots.profile_timeline(prof, step=7)
    with pytest.raises(Error, match="devices"):
        plots.profile_timeline(prof, devices=[9])
    with pytest.raises(Error):
        plots.profile_breakdown(None)
    with pytest.raises(Error):
        plots.predicted_vs_measured([])
    with pytest.raises(Error):
        plots.predicted_vs_measured([("a", 0.0, 1.0)])
    with pytest.raises(Error, match="band"):
        plots.predicted_vs_measured([("a", 1.0, 1.0)], band=1.0)
