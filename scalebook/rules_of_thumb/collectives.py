"""The original book's collective times (part 3 of Austin and others, 2025), beside the exact forms of chapter 3.

The original prices collectives on a TPU axis in the large-N limit, without the (N-1)/N factor,
with W the *bidirectional* rate of one axis (2 W_1, both links of a chip on a wrapped axis), and
takes a collective to be either bandwidth- or latency-bound: T = max(T_bandwidth, T_latency).
The package keeps (N-1)/N and adds the two terms (`scalebook.collectives`); chapter 3 shows both.

- AllGather = ReduceScatter ~ V / W        exact: V (N-1) / (N W)      (`collectives.ring`)
- AllReduce ~ 2 V / W                      exact: 2 V (N-1) / (N W)    (`collectives.ring`)
- AllToAll ~ V / (4 W) on one ring         exact: `collectives.ring_all_to_all`
- max form: max(V-term, hops x latency)    exact: the sum (`CollectiveCost.seconds`)
"""
from __future__ import annotations

from ..collectives import canonical_kind
from ..errors import Error, require_non_negative, require_positive

#: Bandwidth multiple of V / W per collective in the original's large-N form.
_FACTOR = {"all-gather": 1.0, "reduce-scatter": 1.0, "all-reduce": 2.0, "all-to-all": 0.25}


def large_n_seconds(kind: str, *, bytes_: float, bidirectional_bytes_per_s: float) -> float:
    """The original's large-N bandwidth time of a collective over one ring axis (chapter 3).

    V / W for AllGather and ReduceScatter, 2 V / W for AllReduce, V / (4 W) for AllToAll, with
    W the bidirectional rate of the axis (twice one link one way). It approximates
    `collectives.ring(kind, ..., bidirectional=True).bandwidth_seconds`, which carries (N-1)/N
    (and `collectives.ring_all_to_all` for AllToAll, exactly V / (4W) for an even ring).
    """
    k = canonical_kind(kind)
    if k not in _FACTOR:
        raise Error(f"kind must be one of {', '.join(_FACTOR)}, got {kind!r}")
    require_non_negative(bytes_=bytes_)
    require_positive(bidirectional_bytes_per_s=bidirectional_bytes_per_s)
    return _FACTOR[k] * float(bytes_) / bidirectional_bytes_per_s


def max_form_seconds(*, bandwidth_seconds: float, latency_seconds: float) -> float:
    """The original's convention: a collective is bandwidth- or latency-bound, T = max of the two.

    The package adds them (T = latency + bandwidth, NCCL's cost model); the max form is lower by
    the smaller term, at most a factor of 2 when the two are equal (chapter 3).
    """
    require_non_negative(bandwidth_seconds=bandwidth_seconds, latency_seconds=latency_seconds)
    return max(float(bandwidth_seconds), float(latency_seconds))
