"""Chapter 10's interactive ring: AllGather, ReduceScatter or AllReduce written with `ppermute`,
stepped through one send at a time.

What each device holds after a step is `scalebook.jax_collectives.ring_holdings` (a device x block
table: AllGather, 1 where the device holds the block; ReduceScatter, how many devices' parts the
sum it holds for that block contains), and the sends of a step are `jax_collectives.ring_steps`,
the schedule the chapter's `ring_all_gather`, `ring_reduce_scatter` and `ring_all_reduce` run.
An AllReduce is the ReduceScatter's steps and then the AllGather's (`ring_steps("all-reduce")`);
`ring_holdings` draws the two halves only, so here the AllReduce's table is the ReduceScatter's
until that half ends, and then, for every block a device has received in the AllGather half (or
reduced itself), the full sum of N parts: a cell not yet reached keeps the partial sum it held.

The readout counts the bytes a device has sent so far from the same schedule (every send is one
block of V/N bytes), and prices the steps so far on one axis of a TPU v5p slice with a
wraparound of N chips (`AXES`), with `jax_collectives.ring_cost` for V = 64 MB. On such an axis
every step moves one block over each direction of each link it uses and crosses one hop, so each
step takes the same time, the whole collective's time over its number of steps; the time shown
is the additive one, bytes' time plus hops' latency (chapter 3), not `RingCost.seconds` (the
original's max of the two).

Site data. The slider runs to the longest schedule of the grid (an AllReduce one way round 8
devices: 14 steps). A cell's value holds over a run of steps, so a cell is one row with the first
and last step it holds (`s0`, `s1`), for all positions of the slider, and the chart keeps the rows
whose run contains the slider's step (`datum.s0 <= after && after <= datum.s1`, a filter on
positions, no arithmetic of the model); the sends of a step are rows with s0 = s1. The readout
is the page's (one text per setting, printed above the chart), so its row depends on no control
here. Past the last step the table stays at the end state and the readout says when it ended.
"""
from __future__ import annotations

import functools
import numbers

from .. import collectives as coll, jax_collectives as jc, topology as topo, units
from ..errors import Error, choose
from ._figure import InteractiveFigure, select, slider

KINDS = ("all-gather", "reduce-scatter", "all-reduce")
DEVICES = (4, 8)
WAYS = ("both", "one")
#: The slider's positions: 0 (before the first step) to the longest schedule of the grid.
STEPS = tuple(range(2 * (max(DEVICES) - 1) + 1))
#: The array size V the readout prices.
ARRAY_BYTES = 64e6
#: The TPU v5p slice whose X axis, with a wraparound, prices a ring of N chips (N = 6 has none).
AXES = {4: "4x4x4", 8: "8x8x8", 12: "12x4x4", 16: "16x4x4"}
CHIP = "tpu-v5p"


def _check(collective: str, devices: int, ways: str) -> tuple[str, int, bool]:
    kind = choose("collective", collective, KINDS)
    if isinstance(devices, bool) or not isinstance(devices, numbers.Integral) or not 2 <= devices <= 16:
        raise Error(f"devices must be a whole number of devices from 2 to 16, got {devices!r}")
    both = choose("ways", ways, WAYS) == "both"
    return kind, int(devices), both


def schedule(collective: str, devices: int, ways: str) -> tuple[tuple, tuple]:
    """(states, steps): the device x block table before the first step and after each step, and the
    sends of each step (`ring_steps`), for the figure (see the module docstring for AllReduce)."""
    kind, n, both = _check(collective, devices, ways)
    return _schedule(kind, n, both)


def _after(after: int) -> int:
    if isinstance(after, bool) or not isinstance(after, numbers.Integral) or not 0 <= after <= 10_000:
        raise Error(f"after must be a step number from 0 to 10,000, got {after!r}")
    return int(after)


@functools.lru_cache(maxsize=None)
def _schedule(kind: str, n: int, both: bool) -> tuple[tuple, tuple]:
    steps = tuple(tuple(row) for row in jc.ring_steps(kind, n, bidirectional=both))
    if kind != "all-reduce":
        states = jc.ring_holdings(kind, n, bidirectional=both)
    else:
        rs = jc.ring_holdings("reduce-scatter", n, bidirectional=both)
        ag = jc.ring_holdings("all-gather", n, bidirectional=both)
        end = rs[-1]
        states = rs + [[[n if held[d][t] else end[d][t] for t in range(n)] for d in range(n)] for held in ag[1:]]
    return tuple(tuple(tuple(r) for r in s) for s in states), steps


@functools.lru_cache(maxsize=None)
def _cells(collective: str, devices: int, ways: str) -> tuple[tuple[int, int, int, int, int], ...]:
    """(device, block, value, s0, s1): the cell's value from step s0 to step s1 inclusive (the last
    run of a cell lasts to the slider's end). AllGather leaves out the cells a device does not hold."""
    states, _ = schedule(collective, devices, ways)
    last = len(states) - 1
    cells = []
    for d in range(devices):
        for t in range(devices):
            start = 0
            for s in range(1, last + 2):
                if s > last or states[s][d][t] != states[start][d][t]:
                    end = s - 1 if s <= last else max(STEPS[-1], last)
                    if states[start][d][t]:
                        cells.append((d, t, states[start][d][t], start, end))
                    start = s
    return tuple(cells)


def _label(kind: str) -> str:
    return coll.label(kind)


def _price(kind: str, n: int, both: bool):
    """`ring_cost` of V = ARRAY_BYTES on the X axis of the v5p slice with a wraparound of n chips, or None."""
    if n not in AXES:
        return None
    return jc.ring_cost(kind, topo.slice(CHIP, AXES[n]), axis="X", bytes_=ARRAY_BYTES, bidirectional=both)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def readout(collective: str, devices: int, ways: str, after: int) -> str:
    """The readout of a setting (see `compute`): the step and what is sent in it, what device 0 has
    sent so far, and the time so far."""
    kind, n, both = _check(collective, devices, ways)
    after = _after(after)
    states, steps = schedule(collective, devices, ways)
    total = len(steps)
    done = min(after, total)
    lines = [f"{_label(kind)}, {n} devices, {'both ways' if both else 'one way'}: "]
    if after == 0:
        lines[0] += f"before the first of {_plural(total, 'step')}"
        lines.append("each device holds its own block" if kind == "all-gather"
                     else "each device holds its full-size part: one part of every block's sum")
    elif after <= total:
        row = steps[after - 1]
        phase = ""
        if kind == "all-reduce":
            phase = " (ReduceScatter half)" if after <= total // 2 else " (AllGather half)"
        lines[0] += f"step {after} of {total}{phase}"
        left = [t for t in row if t.direction < 0 and t.src == 0]
        (right,) = [t for t in row if t.direction > 0 and t.src == 0]
        lines.append("every device sends one block right" + (" and one left" if left else ""))
        parts = f" (a sum of {right.contributions} parts)" if right.contributions > 1 else ""
        eg = f"device 0 sends block {right.block}{parts} to device {right.dst}"
        if left:
            eg += f" and block {left[0].block} to device {left[0].dst}"
        lines.append(eg)
    else:
        lines[0] += f"after step {after}, finished at step {total}"
        lines.append({"all-gather": "every device holds every block",
                      "reduce-scatter": "device d holds the sum of all parts of block d",
                      "all-reduce": "every device holds the sum of all parts of every block"}[kind])
    sent = sum(1 for row in steps[:done] for t in row if t.src == 0)
    f = units.format_quantity
    lines.append(f"device 0 has sent {_plural(sent, 'block')} of V/{n} = {f(sent * ARRAY_BYTES / n, 'B')} "
                 f"(V = {f(ARRAY_BYTES, 'B')})" if sent else "device 0 has sent nothing yet")
    cost = _price(kind, n, both)
    if cost is not None:
        whole = cost.bandwidth_seconds + cost.latency_seconds
        so_far = f(whole * done / total, "s") if done else "0 s"
        lines.append(f"on a TPU v5p axis of {n} chips with a wraparound: {so_far} of {f(whole, 's')}")
    else:
        lines.append(f"(no TPU v5p slice has an axis of {n} chips with a wraparound to price it on)")
    return "\n".join(lines)


def compute(collective: str, devices: int, ways: str, after: int) -> list[dict]:
    """The cells of the table after step `after` (each with the run of steps it holds), the sends of
    that step (an outline on the receiving cell, with the sender), and the readout."""
    kind, n, both = _check(collective, devices, ways)
    after = _after(after)
    states, steps = schedule(collective, devices, ways)
    total = len(steps)
    on = ("collective", "devices", "ways")
    rows = [{"kind": "cell", "d": d, "b": t, "v": v, "full": 1 if kind == "all-gather" else round(v / n, 3),
             "s0": a, "s1": b, "on": on}
            for d, t, v, a, b in _cells(kind, n, "both" if both else "one") if a <= after <= b]
    rows += [{"kind": "bg", "d": d, "b": t, "on": ("devices",)} for d in range(n) for t in range(n)]
    if 1 <= after <= total:
        for t in steps[after - 1]:
            arrow = "↓" if t.direction > 0 else "↑"
            rows.append({"kind": "send", "d": t.dst, "b": t.block, "src": t.src, "mark": f"{arrow}{t.src}",
                         "s0": after, "s1": after, "on": on})
    rows.append({"kind": "readout", "text": readout(kind, n, "both" if both else "one", after), "on": ()})
    return rows


def _step_filter() -> str:
    return "(datum.s0 == null || (datum.s0 <= after && after <= datum.s1))"


def chart(rows: list[dict], filters: bool):
    """A device x block grid: cells coloured by block, shaded by how many parts they sum (AllGather:
    held or not); the cells that receive a block in this step outlined, with an arrow and the
    sender. (The page prints the readout above the chart.)"""
    import altair as alt

    base = alt.Chart(alt.Data(values=rows))
    if filters:
        def where(extra=""):
            return FIGURE.filter_expression(" && ".join(p for p in (_step_filter(), extra) if p))
    else:
        def where(extra=""):
            return extra
    n = max(DEVICES)
    x = alt.X("b:O", title="block", scale=alt.Scale(paddingInner=0.05), axis=alt.Axis(labelAngle=0))
    y = alt.Y("d:O", title="device", scale=alt.Scale(paddingInner=0.05))
    bg = base.transform_filter(where("datum.kind == 'bg'")).mark_rect(
        fill="white", stroke="#bbbbbb", strokeWidth=0.6, aria=False).encode(x=x, y=y)
    cells = base.transform_filter(where("datum.kind == 'cell'")).mark_rect(stroke="#bbbbbb", strokeWidth=0.6).encode(
        x=x, y=y,
        color=alt.Color("b:N", scale=alt.Scale(scheme="tableau10"), legend=None),
        opacity=alt.Opacity("full:Q", scale=alt.Scale(domain=[0, 1], range=[0.1, 0.9]), legend=None),
        tooltip=[alt.Tooltip("d:O", title="device"), alt.Tooltip("b:O", title="block"),
                 alt.Tooltip("v:Q", title="parts summed")])
    counts = base.transform_filter(where("datum.kind == 'cell' && datum.collective != 'all-gather'")).mark_text(
        fontSize=11, aria=False).encode(x=x, y=y, text="v:Q")
    sends = base.transform_filter(where("datum.kind == 'send'"))
    outline = sends.mark_rect(fill=None, stroke="black", strokeWidth=2.5).encode(
        x=x, y=y, tooltip=[alt.Tooltip("src:O", title="from device"), alt.Tooltip("d:O", title="to device"),
                           alt.Tooltip("b:O", title="block")],
        description=alt.Description("mark:N"))
    marks = sends.mark_text(fontSize=9, align="left", baseline="top", dx=-13, dy=-13, aria=False).encode(
        x=x, y=y, text="mark:N")
    size = 34 * n
    return alt.layer(bg, cells, counts, outline, marks).properties(width=size, height=size)


def static(collective: str, devices: int, ways: str, after: int):
    """The static picture of one setting (the site's fallback): `plots.ring_collective_steps`, every
    step of the collective (AllReduce: its two halves, one row each)."""
    from .. import plots

    kinds = ("reduce-scatter", "all-gather") if collective == "all-reduce" else (collective,)
    return plots.ring_collective_steps(devices, bidirectional=ways == "both", kinds=kinds)


FIGURE = InteractiveFigure(
    name="ring",
    title="A ring collective, step by step",
    controls=(
        select("collective", "collective", KINDS, [coll.label(k) for k in KINDS]),
        select("devices", "devices", DEVICES),
        select("ways", "ring", WAYS, ["both ways", "one way"]),
        slider("after", "after step", STEPS, default=1),
    ),
    compute=compute,
    chart=chart,
    caption=("Move the step slider to watch the blocks travel: each step, every device passes one block to its "
             "right neighbour (down the grid, arrow ↓ with the sender's number) and, going both ways, one to its "
             "left (↑). Switch from both ways to one way and the same collective takes N - 1 steps instead of "
             "N/2 (for even N); "
             "switch to ReduceScatter and the number in a cell counts the devices whose parts the sum holds, "
             "reaching N on the diagonal at the end. The readout counts what device 0 has sent and what the "
             "steps so far take on a TPU v5p axis."),
    alt=("Grid of devices (rows) by blocks (columns) after the chosen step of a ring AllGather, ReduceScatter "
         "or AllReduce built from ppermute: filled cells are blocks a device holds, shaded by how many devices' "
         "parts a sum contains; cells that receive a block in this step are outlined with an arrow and the "
         "sender's number; a readout describes the step, the blocks device 0 has sent and the time so far."),
    static=static,
)


def figure() -> InteractiveFigure:
    """Chapter 10's ring collective stepped through (collective, devices, ways, step)."""
    return FIGURE
