"""Collectives written by hand in `jax.shard_map`: rings of `jax.lax.ppermute` (chapter 10).

Chapter 3 prices AllGather, ReduceScatter and AllReduce on a ring; this module builds them,
one neighbour-to-neighbour send at a time, and checks them against `jax.lax.all_gather`,
`jax.lax.psum_scatter` and `jax.lax.psum`. It also builds two *collective matmuls* that start
multiplying before the communication is over (Wang et al. 2023; Austin et al. 2025, part 10).

The ring. N devices on one mesh axis, device d (`jax.lax.axis_index`) next to d - 1 and d + 1
(mod N). An array of V bytes is cut into N blocks of V/N. One `ppermute` step moves one block
per device one hop; on a one-way ring AllGather needs N - 1 steps. A *bidirectional* ring sends
one block each way per step, so it finishes in k = ceil((N - 1)/2) steps: k blocks arrive from
the left and m = N - 1 - k from the right (`ring_split`). Every device sends V(N - 1)/N bytes in
all either way; what changes is how many link directions carry them at once.

    one-way ring:  T = (N - 1) (V/N) / W_1         (W_1: one direction of one link)
    both ways:     T = ceil((N - 1)/2) (V/N) / W_1  =  V / W  for even N  (W = 2 W_1)

The second is chapter 3's large-N form for a torus axis with a wraparound: AllGather =
ReduceScatter = V/W, AllReduce = 2V/W (a ReduceScatter, then an AllGather of its result);
`collectives.cost` keeps the exact V (N - 1)/(N W), reached by splitting the opposite chip's
block between the two directions, which these whole-block rings do not.
Without a wraparound the ring's closing edge crosses the whole line, sharing every link with
the other direction, so going both ways buys nothing (`ring_cost`).

Collective matmuls (global shapes, X the ring's mesh axis):

- `allgather_matmul`: A[I_X, J] @ B[J, K_X] -> C[I, K_X]. Instead of gathering A and then
  multiplying, each device multiplies the block of A it holds by its B while passing that block
  on: N block matmuls of 2 (I/N) J (K/N) FLOPs, N - 1 sends of (I/N) J elements.
- `matmul_reducescatter`: A[I, J_X] @ B[J_X, K] -> C[I_X, K]. Each device computes its partial
  sum of one block of C's rows at a time and adds it to a running sum travelling round the ring:
  N block matmuls of 2 (I/N)(J/N) K FLOPs, N - 1 sends of (I/N) K elements.

A block's matmul does not wait for the send of the same step, so XLA may run them together;
overlap hides the sends when a block's matmul takes longer than its send (`collective_matmul_cost`,
`hiding_width`). On CPU the simulated devices share the same cores and copy through memory, so
timings there say nothing about a TPU (chapter 10 measures ratios only).

jax is imported inside the functions: `import scalebook` never loads it. The device-level
functions (`ring_all_gather`, ...) run inside `jax.shard_map`; `build` wraps them (or the
library collectives) for a mesh, `compiled_collectives` reads the collectives XLA compiled
(`xla.collectives_in_hlo`), and `ring_steps` / `ring_holdings` list the schedule for figures.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ._readable import Readable
from . import units
from .errors import Error, choose, require_non_negative, require_positive
from .errors import integer as _integer, text as _text

#: The collectives built here (HLO names, as `scalebook.collectives.KINDS`).
COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce")
#: The collective matmuls built here.
MATMULS = ("allgather-matmul", "matmul-reducescatter")
KINDS = COLLECTIVES + MATMULS
#: How `build` implements a kind: "ring" (by hand with ppermute), "library" (the jax.lax
#: collective inside shard_map; for a matmul, gather then multiply or multiply then scatter),
#: "xla" (matmuls only: plain `jnp.dot` under `jax.jit` with shardings, the compiler's choice).
IMPLS = ("ring", "library", "xla")


# ------------------------------------------------------------------ the schedule (pure Python)


def ring_split(n: int, bidirectional: bool = True) -> tuple[int, int]:
    """(k, m): blocks that reach a device from its left and from its right neighbour.

    One-way: (N - 1, 0). Both ways: k = ceil((N - 1)/2), m = N - 1 - k, so a ring AllGather or
    ReduceScatter takes k steps instead of N - 1 (for N = 8: 4 instead of 7).
    """
    require_positive(n=n)
    n = int(n)
    if not isinstance(bidirectional, bool):
        raise Error(f"bidirectional must be True or False, got {bidirectional!r}")
    k = math.ceil((n - 1) / 2) if bidirectional else n - 1
    return k, n - 1 - k


@dataclass(frozen=True)
class Transfer(Readable):
    """One block sent one hop in one step of a ring collective.

    `direction` +1: to the right neighbour (d -> d + 1 mod N), -1: to the left. `block` is the
    index of the block (AllGather: the shard; ReduceScatter: the block of the result whose
    running sum travels). `contributions`: how many devices' parts that block carries (1 for an
    AllGather).
    """

    step: int
    src: int
    dst: int
    block: int
    direction: int
    contributions: int = 1

    def __repr__(self) -> str:
        arrow = "->" if self.direction > 0 else "<-"
        return f"Transfer(step {self.step}: {self.src} {arrow} {self.dst}, block {self.block}" + (
            f", sum of {self.contributions})" if self.contributions > 1 else ")")


def _kind(kind: str) -> str:
    from .collectives import canonical_kind

    key = _text("kind", kind).strip().lower().replace("_", "-")
    if key in MATMULS:
        return key
    k = canonical_kind(kind)
    return choose("ring kind", k, KINDS)


def ring_steps(kind: str, n: int, *, bidirectional: bool = True) -> list[list[Transfer]]:
    """Every send of a ring collective over `n` devices, step by step (what the code below does).

    AllGather (and `allgather-matmul`), step s = 1..k: device d sends block (d - s + 1) mod N to
    d + 1 (its own at s = 1, then the one it received); for s <= m also block (d + s - 1) mod N
    to d - 1. ReduceScatter (and `matmul-reducescatter`): the running sum of block t moving right
    starts k hops to its left, at device t - k, and gains one device's part per hop, so at step s
    device d sends the sum for block (d + k - s + 1) mod N to d + 1; the one moving left starts
    at t + m and at step s device d sends block (d - m + s - 1) mod N to d - 1. AllReduce: the
    ReduceScatter's steps, then the AllGather's.
    """
    kind = _kind(kind)
    require_positive(n=n)
    n = int(n)
    k, m = ring_split(n, bidirectional)
    if kind in ("all-gather", "allgather-matmul"):
        steps = []
        for s in range(1, k + 1):
            row = [Transfer(s, d, (d + 1) % n, (d - s + 1) % n, +1) for d in range(n)]
            if s <= m:
                row += [Transfer(s, d, (d - 1) % n, (d + s - 1) % n, -1) for d in range(n)]
            steps.append(row)
        return steps
    if kind in ("reduce-scatter", "matmul-reducescatter"):
        steps = []
        for s in range(1, k + 1):
            row = [Transfer(s, d, (d + 1) % n, (d + k - s + 1) % n, +1, s) for d in range(n)]
            if s <= m:
                row += [Transfer(s, d, (d - 1) % n, (d - m + s - 1) % n, -1, s) for d in range(n)]
            steps.append(row)
        return steps
    rs = ring_steps("reduce-scatter", n, bidirectional=bidirectional)
    ag = ring_steps("all-gather", n, bidirectional=bidirectional)
    return rs + [[Transfer(t.step + len(rs), t.src, t.dst, t.block, t.direction, n) for t in row] for row in ag]


def ring_holdings(kind: str, n: int, *, bidirectional: bool = True) -> list[list[list[int]]]:
    """What each device holds before the first step and after each step: one N x N table per
    state, row = device, column = block.

    AllGather: 1 where the device holds that block, else 0. ReduceScatter: how many devices'
    parts the sum the device holds for that block contains (1 everywhere at the start, its own
    input; N on the diagonal at the end). Replays `ring_steps`, checking that every device sends
    only what it holds.
    """
    kind = _kind(kind)
    if kind not in ("all-gather", "reduce-scatter"):
        raise Error(f"ring_holdings draws 'all-gather' or 'reduce-scatter', not {kind!r}")
    require_positive(n=n)
    n = int(n)
    if kind == "all-gather":
        held = [[{t} if t == d else set() for t in range(n)] for d in range(n)]
    else:  # the devices whose parts are summed in what device d holds for block t
        held = [[{d} for t in range(n)] for d in range(n)]
    states = [[[len(c) for c in r] for r in held]]
    for row in ring_steps(kind, n, bidirectional=bidirectional):
        new = [[set(c) for c in r] for r in held]
        for t in row:
            carried = held[t.src][t.block]
            if len(carried) != t.contributions:
                raise Error(f"{t!r} sends what its device does not hold")  # pragma: no cover
            new[t.dst][t.block] |= carried
        held = new
        states.append([[len(c) for c in r] for r in held])
    return states


# ------------------------------------------------------------------ costs on a topology (pure Python)


@dataclass(frozen=True)
class RingCost(Readable):
    """Time of a ring collective written with ppermute on one ICI torus axis or NVLink domain.

    `steps`: ppermute rounds; `permutes`: collective-permute ops (one per direction per round);
    `block_bytes` V/N; `link_blocks`: blocks through the busiest direction of a link over the
    whole collective (one per step with a wraparound; without one the ring's closing edge runs
    back along the line, so a bidirectional ring's closing edges share links with the other
    direction and every link direction carries N - 1 blocks, as one way; on an NVLink domain,
    where `wraparound` is True because the switches close the ring, a GPU's sends share its
    bandwidth, so N - 1 blocks either way); `hops_per_step`: 1 with a wraparound, N - 1 without. Bandwidth time = link_blocks x V/N / W_1, latency time = steps x
    hops x hop latency; `seconds` is the larger, the original book's max convention (what
    `collectives.CollectiveCost.max_convention_seconds` keeps; chapter 3), and
    `bandwidth_seconds + latency_seconds` the additive time `collectives.cost` uses.
    """

    kind: str
    n: int
    bidirectional: bool
    wraparound: bool
    array_bytes: float
    steps: int
    permutes: int
    block_bytes: float
    bytes_per_device: float
    link_blocks: int
    hops_per_step: int
    bandwidth_seconds: float
    latency_seconds: float

    @property
    def seconds(self) -> float:
        return max(self.bandwidth_seconds, self.latency_seconds)

    def __repr__(self) -> str:
        f = units.format_quantity
        way = "both ways" if self.bidirectional else "one way"
        return (f"RingCost({self.kind}, ring of {self.n} {way}: {self.steps} steps, {self.permutes} permutes of "
                f"{f(self.block_bytes, 'B')}, {f(self.seconds, 's')})")


def _ring_axis(topology: Any, axis: str):
    from .topology import Topology

    if not isinstance(topology, Topology):
        raise Error("topology must be a scalebook.topology.Topology, e.g. topology.slice('tpu-v5e', '16x16')")
    a = topology.axis(axis)
    if a.network not in ("ici", "nvlink"):
        raise Error(f"a ppermute ring is priced on a TPU ICI axis or an NVLink domain; axis {axis!r} is {a.link}")
    return a


def ring_cost(kind: str, topology: Any, *, axis: str, bytes_: float, bidirectional: bool = True,
              hop_latency_seconds: "float | None" = None) -> RingCost:
    """Time of `ring_all_gather` / `ring_reduce_scatter` / `ring_all_reduce` of V = `bytes_` on
    `axis` of `topology` (see `RingCost` and the module docstring).

    With a wraparound and both directions this is chapter 3's large-N form (V/W, 2V/W): the
    opposite chip's block travels whole one way, N/(N - 1) times `collectives.cost`, which splits
    it between the two directions; one way it is 2 (N - 1)/N times V/W.

    On an NVLink domain every GPU reaches every other through the switches, so the ring closes
    in one crossing (`wraparound` is True, one hop per step), but a GPU's sends to its two
    neighbours share its NVLink bandwidth W_1 (`Axis.one_way_bytes_per_s`): both ways halves the
    steps, not the bytes' time, which is (N - 1) V/N / W_1 either way (per round).
    """
    kind = _kind(kind)
    if kind not in COLLECTIVES:
        raise Error(f"ring_cost prices {', '.join(COLLECTIVES)}; for matmuls use collective_matmul_cost")
    a = _ring_axis(topology, axis)
    require_non_negative(bytes_=bytes_)
    n = a.size
    lat = topology.hop_latency_seconds if hop_latency_seconds is None else hop_latency_seconds
    k, m = ring_split(n, bidirectional)
    rounds = 2 if kind == "all-reduce" else 1
    block = float(bytes_) / n
    switched = a.network == "nvlink"  # any GPU to any other in one crossing; sends share the GPU's W_1
    wraps = a.wraparound or switched
    link_blocks = rounds * (k if a.wraparound and not switched else k + m)
    hops = 1 if wraps else max(n - 1, 1)
    steps = rounds * k
    one_way = a.one_way_bytes_per_s
    return RingCost(kind=kind, n=n, bidirectional=bidirectional, wraparound=wraps, array_bytes=float(bytes_),
                    steps=steps, permutes=rounds * (k + m), block_bytes=block,
                    bytes_per_device=rounds * (n - 1) * block, link_blocks=link_blocks, hops_per_step=hops,
                    bandwidth_seconds=link_blocks * block / one_way if n > 1 else 0.0,
                    latency_seconds=steps * hops * lat if n > 1 else 0.0)


@dataclass(frozen=True)
class CollectiveMatmulCost(Readable):
    """Predicted time of a collective matmul on one ICI torus axis or NVLink domain, with and without overlap.

    Per round of the ring, a send takes `round_comm_seconds` (the `ring_cost` step); a block's
    matmul `block_compute_seconds` (its FLOPs at the chip's peak). `arrivals[r]`: blocks the
    device multiplies while round r + 1 is on the wire (`arrivals[0]` its own, or its first
    parts), so overlapped = sum_r max(comm, arrivals[r-1] x block) + arrivals[-1] x block;
    sequential = rounds x comm + N x block (gather, then multiply; or multiply, then scatter).
    """

    kind: str
    n: int
    bidirectional: bool
    flops_per_device: float
    block_compute_seconds: float
    round_comm_seconds: float
    arrivals: tuple[int, ...]
    overlapped_seconds: float
    sequential_seconds: float

    @property
    def compute_seconds(self) -> float:
        return self.n * self.block_compute_seconds

    @property
    def comm_seconds(self) -> float:
        return (len(self.arrivals) - 1) * self.round_comm_seconds

    @property
    def exposed_comm_seconds(self) -> float:
        """What overlap leaves of the communication: overlapped time minus the matmuls."""
        return self.overlapped_seconds - self.compute_seconds

    @property
    def speedup(self) -> float:
        return self.sequential_seconds / self.overlapped_seconds

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"CollectiveMatmulCost({self.kind} over {self.n}: block matmul {f(self.block_compute_seconds, 's')}, "
                f"send {f(self.round_comm_seconds, 's')}; overlapped {f(self.overlapped_seconds, 's')}, "
                f"sequential {f(self.sequential_seconds, 's')})")


def _matmul_dims(dims: Mapping[str, int], n: int) -> tuple[int, int, int]:
    try:
        i, j, k = int(dims["I"]), int(dims["J"]), int(dims["K"])
    except (KeyError, TypeError):
        raise Error(f"dims must give I, J and K, e.g. dict(I=8192, J=8192, K=8192); got {dims!r}") from None
    require_positive(I=i, J=j, K=k)
    return i, j, k


def collective_matmul_cost(kind: str, topology: Any, *, axis: str, dims: Mapping[str, int], dtype: str = "bf16",
                           bidirectional: bool = False,
                           hop_latency_seconds: "float | None" = None) -> CollectiveMatmulCost:
    """Overlapped and sequential time of `allgather_matmul` or `matmul_reducescatter` (module doc).

    `dims`: the global I, J, K of A[I, J] @ B[J, K]. The chip's peak in `dtype` sets the compute;
    a round's send is one `ring_cost` step of the block that travels: A's (I/N) x J rows for the
    AllGather variant, C's (I/N) x K running sum for the ReduceScatter one.
    """
    kind = _kind(kind)
    if kind not in MATMULS:
        raise Error(f"collective_matmul_cost prices {', '.join(MATMULS)}; for collectives use ring_cost")
    a = _ring_axis(topology, axis)
    n = a.size
    i, j, k_ = _matmul_dims(dims, n)
    beta = units.dtype_bytes(dtype)
    peak = topology.chip.peak_flops_per_s(dtype)
    flops = 2 * i * j * k_ / n
    block_flops = flops / n
    sent = (i / n) * j * beta if kind == "allgather-matmul" else (i / n) * k_ * beta
    step = ring_cost("all-gather", topology, axis=axis, bytes_=sent * n, bidirectional=bidirectional,
                     hop_latency_seconds=hop_latency_seconds)
    comm = step.seconds / step.steps if step.steps else 0.0
    kk, m = ring_split(n, bidirectional)
    if kind == "allgather-matmul":
        arrivals = [1] + [2 if r <= m else 1 for r in range(1, kk + 1)]
    else:
        # the first parts of each running sum, then one part per direction per round (the
        # leftward sum adds none at its last round: the rightward one holds the device's part)
        arrivals = [2 if m else 1] + [1 + (1 if r < m else 0) for r in range(1, kk + 1)]
    assert sum(arrivals) == n
    block = block_flops / peak
    overlapped = sum(max(comm, arrivals[r - 1] * block) for r in range(1, len(arrivals))) + arrivals[-1] * block
    sequential = kk * comm + n * block
    return CollectiveMatmulCost(kind=kind, n=n, bidirectional=bidirectional, flops_per_device=flops,
                                block_compute_seconds=block, round_comm_seconds=comm, arrivals=tuple(arrivals),
                                overlapped_seconds=overlapped, sequential_seconds=sequential)


def hiding_width(topology: Any, *, axis: str, dtype: str = "bf16", bidirectional: bool = False) -> float:
    """Per-device width above which a collective matmul's block matmul outlasts its send.

    AllGather variant: a block's matmul takes 2 (I/N) J (K/N) / C, its send (I/N) J beta / W_1
    (one way) or two blocks per round both ways: hidden when K/N >= beta C / (2 W_1), or
    beta C / (4 W_1) = beta C / (2 W) both ways. The ReduceScatter variant gives the same bound on
    J/N. For bf16 (beta = 2) on a wraparound axis: C/W, chapter 5's tensor-parallel rule. Bandwidth
    terms only (large blocks). On an NVLink domain both ways gains nothing: beta C / (2 W_1).
    """
    a = _ring_axis(topology, axis)
    beta = units.dtype_bytes(dtype)
    peak = topology.chip.peak_flops_per_s(dtype)
    # both ways doubles the bytes per round only where the two directions are separate links (a
    # torus axis with a wraparound); on NVLink a GPU's two sends share its bandwidth
    per_round = 2 if (bidirectional and a.network == "ici" and a.wraparound and a.size > 2) else 1
    return beta * peak / (2 * per_round * a.one_way_bytes_per_s)


# ------------------------------------------------------------------ device-level functions (in shard_map)


def _axis(axis_name: str) -> tuple[int, Any]:
    import jax

    return int(jax.lax.axis_size(axis_name)), jax.lax.axis_index(axis_name)


def _shift(n: int, by: int) -> list[tuple[int, int]]:
    return [(i, (i + by) % n) for i in range(n)]


def _gather_apply(x, axis_name: str, bidirectional: bool, init, use: Callable):
    """Pass this device's block round the ring (`ring_steps('all-gather')`), calling
    `acc = use(acc, block, t)` on every block t it sees, its own first."""
    import jax

    n, d = _axis(axis_name)
    k, m = ring_split(n, bidirectional)
    acc = use(init, x, d)
    right = left = x
    for s in range(1, k + 1):
        right = jax.lax.ppermute(right, axis_name, _shift(n, +1))  # block d - s, from the left
        if s <= m:
            left = jax.lax.ppermute(left, axis_name, _shift(n, -1))  # block d + s, from the right
        acc = use(acc, right, (d - s) % n)
        if s <= m:
            acc = use(acc, left, (d + s) % n)
    return acc


def _reduce_apply(part: Callable, axis_name: str, bidirectional: bool):
    """Sum over the ring of `part(t)` (this device's part of block t) for t = this device's
    block (`ring_steps('reduce-scatter')`): running sums travel and gain a part per hop."""
    import jax

    n, d = _axis(axis_name)
    k, m = ring_split(n, bidirectional)
    right = part((d + k) % n)
    for s in range(1, k + 1):
        right = jax.lax.ppermute(right, axis_name, _shift(n, +1)) + part((d + k - s) % n)
    if m:
        left = part((d - m) % n)
        for s in range(1, m + 1):
            left = jax.lax.ppermute(left, axis_name, _shift(n, -1))
            if s < m:
                left = left + part((d - m + s) % n)
        right = right + left
    return right


def _rows(x, t, size: int):
    import jax

    return jax.lax.dynamic_slice_in_dim(x, t * size, size, axis=0)


def _put_rows(out, block, t):
    import jax

    return jax.lax.dynamic_update_slice_in_dim(out, block, t * block.shape[0], axis=0)


def ring_all_gather(x, axis_name: str, *, bidirectional: bool = True):
    """Inside shard_map: this device's block x [b, ...] -> the blocks of all N devices [N b, ...],
    in device order along dimension 0 (= `jax.lax.all_gather(x, axis_name, tiled=True)`).

    N - 1 ppermutes of b rows, in k = ceil((N - 1)/2) rounds both ways (N - 1 one way): chapter
    3's AllGather, V/W on a wraparound axis.
    """
    import jax.numpy as jnp

    n, _ = _axis(axis_name)
    out = jnp.zeros((n * x.shape[0],) + tuple(x.shape[1:]), x.dtype)
    return _gather_apply(x, axis_name, bidirectional, out, _put_rows)


def ring_reduce_scatter(x, axis_name: str, *, bidirectional: bool = True):
    """Inside shard_map: this device's full-size part x [N b, ...] -> block d of the sum over the
    devices, [b, ...] (= `jax.lax.psum_scatter(x, axis_name, scatter_dimension=0, tiled=True)`).

    N - 1 ppermutes of b rows, each followed by an add: chapter 3's ReduceScatter, V/W.
    """
    n, _ = _axis(axis_name)
    if x.shape[0] % n:
        raise Error(f"dimension 0 of the array ({x.shape[0]}) is not divisible by the {n} devices of {axis_name!r}")
    b = x.shape[0] // n
    return _reduce_apply(lambda t: _rows(x, t, b), axis_name, bidirectional)


def ring_all_reduce(x, axis_name: str, *, bidirectional: bool = True):
    """Inside shard_map: this device's part x [N b, ...] -> the sum over the devices, everywhere
    (= `jax.lax.psum(x, axis_name)`): `ring_reduce_scatter`, then `ring_all_gather` of the
    result. 2 (N - 1) ppermutes: chapter 3's AllReduce, 2V/W.
    """
    return ring_all_gather(ring_reduce_scatter(x, axis_name, bidirectional=bidirectional), axis_name,
                           bidirectional=bidirectional)


def allgather_matmul(a, b, axis_name: str, *, bidirectional: bool = False):
    """Inside shard_map: A[I_X, J] @ B[J, K_X] -> C[I, K_X] with the gather of A overlapped.

    a: this device's rows of A [I/N, J]; b: its columns of B [J, K/N]. Each block of A is
    multiplied by b as soon as it arrives, and passed on at the same time (`ring_steps`); the
    result [I, K/N] equals `jax.lax.all_gather(a, axis_name, tiled=True) @ b`. No AllGather in
    the HLO: N - 1 collective-permutes of (I/N) J elements.
    """
    import jax.numpy as jnp

    n, _ = _axis(axis_name)
    rows = a.shape[0]
    out = jnp.zeros((n * rows, b.shape[1]), jnp.result_type(a.dtype, b.dtype))
    return _gather_apply(a, axis_name, bidirectional, out, lambda c, blk, t: _put_rows(c, blk @ b, t))


def matmul_reducescatter(a, b, axis_name: str, *, bidirectional: bool = False):
    """Inside shard_map: A[I, J_X] @ B[J_X, K] -> C[I_X, K] with the ReduceScatter overlapped.

    a: this device's columns of A [I, J/N]; b: its rows of B [J/N, K]. Each step computes this
    device's partial product for one block of C's rows and adds it to the running sum passing
    through; the result [I/N, K] equals `jax.lax.psum_scatter(a @ b, axis_name, tiled=True)`.
    N - 1 collective-permutes of (I/N) K elements, no AllReduce or ReduceScatter in the HLO.
    """
    n, _ = _axis(axis_name)
    if a.shape[0] % n:
        raise Error(f"I ({a.shape[0]}) is not divisible by the {n} devices of {axis_name!r}")
    rows = a.shape[0] // n
    return _reduce_apply(lambda t: _rows(a, t, rows) @ b, axis_name, bidirectional)


# ------------------------------------------------------------------ whole programs on a mesh


def _library(kind: str, axis_name: str):
    import jax

    if kind == "all-gather":
        return lambda x: jax.lax.all_gather(x, axis_name, tiled=True)
    if kind == "reduce-scatter":
        return lambda x: jax.lax.psum_scatter(x, axis_name, scatter_dimension=0, tiled=True)
    if kind == "all-reduce":
        return lambda x: jax.lax.psum(x, axis_name)
    if kind == "allgather-matmul":
        return lambda a, b: jax.lax.all_gather(a, axis_name, tiled=True) @ b
    return lambda a, b: jax.lax.psum_scatter(a @ b, axis_name, scatter_dimension=0, tiled=True)


_RING = {"all-gather": ring_all_gather, "reduce-scatter": ring_reduce_scatter, "all-reduce": ring_all_reduce,
         "allgather-matmul": allgather_matmul, "matmul-reducescatter": matmul_reducescatter}


def specs(kind: str, axis: str) -> tuple[tuple, Any]:
    """(in_specs, out_spec) of `build`'s global arrays, as PartitionSpecs over mesh axis `axis`.

    all-gather: x [M, ...] sharded on dim 0 -> replicated. reduce-scatter / all-reduce: x
    [N, M, ...], device d's part in x[d] -> [M, ...] sharded on dim 0 / replicated.
    allgather-matmul: A [I, J] rows sharded, B [J, K] columns sharded -> C [I, K] columns sharded.
    matmul-reducescatter: A columns, B rows sharded -> C rows sharded.
    """
    from jax.sharding import PartitionSpec as P

    kind = _kind(kind)
    return {"all-gather": ((P(axis),), P()),
            "reduce-scatter": ((P(axis),), P(axis)),
            "all-reduce": ((P(axis),), P()),
            "allgather-matmul": ((P(axis, None), P(None, axis)), P(None, axis)),
            "matmul-reducescatter": ((P(None, axis), P(axis, None)), P(axis, None))}[kind]


def build(kind: str, mesh: Any, *, axis: str, impl: str = "ring", bidirectional: bool = True):
    """A jitted program on `mesh` that runs collective `kind` over mesh axis `axis` (see `specs`
    for the global shapes). `impl`: "ring" (the hand-written ring), "library" (the jax.lax
    collective in shard_map), "xla" (matmuls only: `jnp.dot` with shardings; XLA chooses).

    shard_map's type check (`check_vma`) stays on wherever it can pass: everywhere except the
    programs that return a replicated result (`out_specs=P()`) built from values typed as varying
    over `axis` (the rings' AllGather and AllReduce, and `jax.lax.all_gather`, whose result JAX
    types as varying). The checker cannot prove that those leave every device with the same
    array, so they run with `check_vma=False`, and the tests compare every device's copy.
    """
    import jax
    from jax.sharding import NamedSharding

    kind = _kind(kind)
    choose("implementation", impl, IMPLS)
    if axis not in mesh.axis_names:
        raise Error(f"mesh axis {axis!r} is not in the mesh; valid: {', '.join(mesh.axis_names)}")
    ins, out = specs(kind, axis)
    if impl == "xla":
        if kind not in MATMULS:
            raise Error(f"impl='xla' builds the plain sharded matmuls ({', '.join(MATMULS)}), not {kind!r}")
        return jax.jit(lambda a, b: a @ b, in_shardings=tuple(NamedSharding(mesh, s) for s in ins),
                       out_shardings=NamedSharding(mesh, out))
    if impl == "ring":
        ring = _RING[kind]
        body = (lambda *xs: ring(*xs, axis, bidirectional=bidirectional))
    else:
        body = _library(kind, axis)
    if kind in ("reduce-scatter", "all-reduce"):
        inner = body
        body = lambda x: inner(x[0])  # noqa: E731  device d's part: x[d] of the stacked parts
    unprovable = kind in ("all-gather", "all-reduce") and (impl == "ring" or kind == "all-gather")
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=ins, out_specs=out, check_vma=not unprovable))


def global_shapes(kind: str, shape: Sequence[int], n: int) -> tuple[tuple[int, ...], ...]:
    """The global input shapes `build` takes for a kind. `shape`: for a collective, the array of
    V bytes (the gathered output, or one device's full-size part); for a matmul, (I, J, K)."""
    kind = _kind(kind)
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise Error(f"shape must be a sequence of sizes such as (1024, 512), got {shape!r}")
    shape = tuple(_integer("shape entry", s) for s in shape)
    n = _integer("n", n)
    if kind in MATMULS:
        if len(shape) != 3:
            raise Error(f"a matmul's shape is (I, J, K); got {shape}")
        i, j, k = shape
        return ((i, j), (j, k))
    if kind == "all-gather":
        return (shape,)
    return ((n,) + shape,)


def _check_divides(kind: str, shape: Sequence[int], n: int) -> None:
    if kind in ("all-gather", "reduce-scatter", "all-reduce"):
        if shape[0] % n:
            raise Error(f"dimension 0 ({shape[0]}) must be divisible by the axis size {n}")
    else:
        i, j, k = shape
        split = {"allgather-matmul": (("I", i), ("K", k)), "matmul-reducescatter": (("I", i), ("J", j))}[kind]
        for name, size in split:
            if size % n:
                raise Error(f"{name} = {size} must be divisible by the axis size {n}")


def random_inputs(kind: str, mesh: Any, *, axis: str, shape: Sequence[int], dtype: str = "float32", seed: int = 0):
    """Random normal global inputs for `build(kind, mesh, axis=axis)`, placed with its shardings."""
    import jax
    import numpy as np
    from jax.sharding import NamedSharding

    kind = _kind(kind)
    n = mesh.shape[axis]
    _check_divides(kind, shape, n)
    rng = np.random.default_rng(seed)
    ins, _ = specs(kind, axis)
    return tuple(jax.device_put(rng.standard_normal(s).astype(dtype), NamedSharding(mesh, p))
                 for s, p in zip(global_shapes(kind, shape, n), ins))


def hlo(kind: str, *, mesh_shape: Mapping[str, int], axis: str, shape: Sequence[int], impl: str = "ring",
        bidirectional: bool = True, dtype: str = "float32") -> str:
    """Optimized HLO text of `build(kind, ...)` compiled for `shape` (nothing runs)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    from . import xla

    kind = _kind(kind)
    mesh = xla.mesh(dict(mesh_shape))
    n = mesh.shape[axis] if axis in mesh.shape else 0
    if not n:
        raise Error(f"mesh axis {axis!r} is not in {dict(mesh_shape)}")
    _check_divides(kind, shape, n)
    ins, _ = specs(kind, axis)
    args = [jax.ShapeDtypeStruct(s, jnp.dtype(dtype), sharding=NamedSharding(mesh, p))
            for s, p in zip(global_shapes(kind, shape, n), ins)]
    f = build(kind, mesh, axis=axis, impl=impl, bidirectional=bidirectional)
    return f.lower(*args).compile().as_text()


def compiled_collectives(kind: str, *, mesh_shape: Mapping[str, int], axis: str, shape: Sequence[int],
                         impl: str = "ring", bidirectional: bool = True, dtype: str = "float32") -> tuple:
    """The collectives XLA compiled for `build(kind, ...)`: `xla.HloCollective`s in program order.

    A ring shows only collective-permutes (V = the whole array, V/N sent per device each); the
    library shows one all-gather, all-reduce (CPU's form of a reduce-scatter) ...
    """
    from . import xla

    return xla.collectives_in_hlo(hlo(kind, mesh_shape=mesh_shape, axis=axis, shape=shape, impl=impl,
                                      bidirectional=bidirectional, dtype=dtype), dict(mesh_shape))


def permute_shifts(hlo_text: str, mesh_shape: Mapping[str, int], axis: str) -> tuple[int, ...]:
    """For each collective-permute in `hlo_text`, in program order, how far it moves data along
    `axis`: +1 (to the right neighbour), -1 (to the left), or another shift mod N.

    Raises `Error` if a permute's pairs do not all move by the same shift along `axis` alone.
    """
    import numpy as np

    names, sizes = list(mesh_shape), list(mesh_shape.values())
    if axis not in mesh_shape:
        raise Error(f"mesh axis {axis!r} is not in {dict(mesh_shape)}")
    i, n = names.index(axis), mesh_shape[axis]
    out = []
    for line in hlo_text.splitlines():
        if not re.search(r"collective-permute(-start)?\(", line):
            continue
        pairs = re.findall(r"\{(\d+),(\d+)\}", re.search(r"source_target_pairs=(\{.*?\}\})", line).group(1))
        shifts = set()
        for a, b in pairs:
            ca, cb = np.unravel_index(int(a), sizes), np.unravel_index(int(b), sizes)
            if any(ca[j] != cb[j] for j in range(len(names)) if j != i):
                raise Error(f"a collective-permute moves data across axes other than {axis!r}: {line.strip()[:120]}")
            shifts.add(int((cb[i] - ca[i]) % n))
        if len(shifts) != 1:
            raise Error(f"a collective-permute mixes shifts {sorted(shifts)}")
        s = shifts.pop()
        out.append(s - n if s > n // 2 else s)
    return tuple(out)
