"""Chapter 3's interactive collective: the time of AllGather, ReduceScatter, AllReduce or AllToAll
against the array size V, on a chosen topology and set of mesh axes.

Every value is `scalebook.collectives.cost(kind, topology, axes=..., bytes_=V)`: the additive
time latency + bandwidth (chapter 3), drawn as a log-log curve over V with its bandwidth term
alone beside it (where the two part is where the collective turns from latency- to
bandwidth-bound), and a point and readout at the chosen V (time, regime, both terms, steps, and
the NCCL protocol on GPUs). Topologies are the package's: published TPU slices
(`topology.slice`), an 8-GPU H100 node and four of them (`topology.gpu_node`, `gpu_cluster`).
A group of axes the topology lacks gets a readout naming the axes it has, and no curve.
"""
from __future__ import annotations

from .. import collectives as coll, topology as topo, units
from ..errors import Error
from ._figure import InteractiveFigure, select, slider

KINDS = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all")
#: name -> (label, how the package builds it)
TOPOLOGIES = {
    "v5e-16x16": ("TPU v5e 16x16", lambda: topo.slice("tpu-v5e", "16x16")),
    "v5p-8x8x8": ("TPU v5p 8x8x8", lambda: topo.slice("tpu-v5p", "8x8x8")),
    "h100-node": ("H100 node (8 GPUs)", lambda: topo.gpu_node("h100")),
    "h100-4-nodes": ("4 H100 nodes", lambda: topo.gpu_cluster("h100", nodes=4)),
}
AXES = ("X", "XY", "XYZ")
#: Array sizes V on the slider and along the curve: 1 kB to 10 GB, steps of 1, 3, 10.
SIZES = tuple(m * 10 ** e for e in range(3, 10) for m in (1, 3)) + (10 ** 10,)


def _pos(value: float) -> float:
    """A position on a log axis, to 4 significant digits (what a 460-pixel axis can show)."""
    v = float(f"{value:.4g}")
    return int(v) if v.is_integer() else v


def _time(seconds: float) -> str:
    """`units.format_quantity` of a time, and "under 1 ns" below it (no e-notation in a readout)."""
    return units.format_quantity(seconds, "s") if seconds >= 1e-9 else "under 1 ns"


def compute(collective: str, topology: str, axes: str, bytes_: float) -> list[dict]:
    """The curve of `collective` over `axes` of `topology` at every size of the grid, and the point and
    readout at `bytes_`, all from `collectives.cost`."""
    kind = collective
    label, build = TOPOLOGIES[topology]
    t = build()
    f = units.format_quantity
    try:
        at = coll.cost(kind, t, axes=tuple(axes), bytes_=bytes_)
    except Error:
        have = [a.name for a in t.axes]
        missing = [a for a in axes if a not in have]
        if not missing:
            raise
        return [{"kind": "readout", "text": f"{label} has no axis {', '.join(missing)}: "
                 f"its axes are {', '.join(have)}; pick fewer axes", "on": ("topology", "axes", "bytes_")}]
    on = ("collective", "topology", "axes")
    curve = []
    for v in SIZES:
        c = coll.cost(kind, t, axes=tuple(axes), bytes_=v)
        curve.append({"kind": "curve", "x": v, "us": _pos(c.seconds * 1e6), "bw_us": _pos(c.bandwidth_seconds * 1e6),
                      "on": on})
    where = f"{'+'.join(axes)} of {label}" if len(axes) > 1 else f"{axes} of {label}"
    protocol = "" if t.chip.is_tpu else f", NCCL {at.protocol}"
    text = (f"{coll.label(kind)} of {f(bytes_, 'B')} over {where} (N = {at.group_size}): {_time(at.seconds)}\n"
            f"{at.regime}-bound: bandwidth {_time(at.bandwidth_seconds)} + latency {_time(at.latency_seconds)} "
            f"({at.hops} steps{protocol})")
    return curve + [{"kind": "readout", "x": bytes_, "us": _pos(at.seconds * 1e6), "regime": at.regime, "text": text}]


def chart(rows: list[dict], filters: bool):
    """Log-log time against V (line), its bandwidth term (dashed), the chosen V (point) (the page prints the readout)."""
    import altair as alt

    base = alt.Chart(alt.Data(values=rows))
    where = FIGURE.filter_expression if filters else (lambda extra="": extra)
    x = alt.X("x:Q", scale=alt.Scale(type="log", domain=[SIZES[0], SIZES[-1]]), title="array size V (bytes)",
              axis=alt.Axis(format="~s"))
    y = alt.Y("us:Q", scale=alt.Scale(type="log", domain=[0.1, 1e6]), title="time (µs)")
    curves = base.transform_filter(where("datum.kind == 'curve'"))
    total = curves.mark_line(color="#0072b2", clip=True, aria=False).encode(x=x, y=y)
    bandwidth = curves.mark_line(color="#999999", strokeDash=[4, 3], clip=True, aria=False).encode(
        x=x, y=alt.Y("bw_us:Q", scale=alt.Scale(type="log", domain=[0.1, 1e6])))
    readout_rows = base.transform_filter(where("datum.kind == 'readout'"))
    point = readout_rows.transform_filter("isValid(datum.us)").mark_point(
        filled=True, size=120, clip=True).encode(
        x=x, y=y,
        color=alt.Color("regime:N", scale=alt.Scale(domain=["latency", "bandwidth"], range=["#d55e00", "#0072b2"]),
                        title="regime"),
        shape=alt.Shape("regime:N", scale=alt.Scale(domain=["latency", "bandwidth"], range=["triangle-up", "circle"]),
                        title="regime"),
        description=alt.Description("text:N"))
    return alt.layer(total, bandwidth, point).properties(width=460, height=300)


def static(collective: str, topology: str, axes: str, bytes_: float):
    """The static picture of one setting (the site's fallback): `scalebook.plots.collective_times`."""
    from .. import plots

    return plots.collective_times(TOPOLOGIES[topology][1](), axes=tuple(axes))


FIGURE = InteractiveFigure(
    name="collective",
    title="A collective's time against the array size",
    controls=(
        select("collective", "collective", KINDS, [coll.label(k) for k in KINDS], default="all-reduce"),
        select("topology", "topology", tuple(TOPOLOGIES), [v[0] for v in TOPOLOGIES.values()]),
        select("axes", "axes", AXES, ["X", "X and Y", "X, Y and Z"]),
        slider("bytes_", "array size", SIZES, default=1e6, live_range=(1, 1e12), integer=False),
    ),
    compute=compute,
    chart=chart,
    caption=("Slide the array size from small to large and watch the time stay flat while the latency of "
             "the collective's steps dominates, then rise along the dashed bandwidth line once the bytes "
             "dominate. Add axes on a TPU slice to see the bandwidth term shrink (more links per chip), and "
             "compare an H100 node with four nodes (X over NVLink inside a node, Y over InfiniBand between nodes), "
             "where the steps across InfiniBand cost far more."),
    alt=("Log-log plot of the chosen collective's time against array size on the chosen topology and axes: "
         "a solid curve for the total time, flat at small sizes (latency) and rising at large ones, a dashed "
         "curve for its bandwidth term, and a point at the chosen size with a readout of time, regime, both "
         "terms and the number of steps."),
    static=static,
)


def figure() -> InteractiveFigure:
    """Chapter 3's interactive collective (collective, topology, axes, array size)."""
    return FIGURE
