"""Search every parallelism strategy for a training run and rank them (Chapters 5 and 6).

`plan` enumerates the ways to factor the chip count into tp x cp x pp x fsdp x dp (and ep for a
mixture of experts), with microbatch sizes, remat policies and pipeline interleaving; prices them
all at once with the vectorised step model (`scalebook.step`), drops those that do not fit in
memory, and returns the fastest few plus the Pareto front of step time against memory. Each
winner's `TrainingEstimate` is built from its row of that one evaluation by the code that builds
`training.estimate`'s (`training._from_row`), so a plan's numbers are estimate's to the last bit
(tests/test_planner_speedup.py).

Speed (issue 18: LLaMA 3 405B on 16,384 chips in well under a second, `make bench`): the search
orders the topology's axes once and lays each candidate's groups without building a placement,
describes each distinct group once, and lets `step.price` price once each class of rows that
share degrees and microbatch (they differ only in remat or TP overlap, which move no other
bytes; `step.REPEATS`).

What it searches (and why the ranges end where they do):

- tp: divisors of the chips that split the heads, kv heads and MLP width, up to 64;
- cp: 1 to 32, dividing the sequence; pp: 1 to 64 stages, at most one layer each, with
  1, 2 or 4 virtual stages (interleaved schedule) when pp > 1;
- fsdp x dp: every split of what is left; ep: divisors of the experts inside fsdp x dp;
- microbatch: powers of two up to the replica's batch (at most 6 sizes, the largest kept);
- remat: none, selective, full; sequence parallelism on whenever tp > 1 (same traffic, less
  memory); ZeRO-1 on the dp part (same traffic, less memory);
- tp_overlap: off and on whenever tp > 1 and the TP group stays on ICI or NVLink (TP collectives
  on the critical path, or overlapped with the matmuls at a compute slowdown,
  `training.tp_overlap_slowdown`): software choices both, so the planner says which pays.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from ._readable import Readable
from . import step, units
from .errors import Error
from .errors import MAX_CHIPS, MAX_COUNT, MAX_TOKENS, require_count as _require_count  # noqa: F401
from .errors import instance as _instance, integer as _integer, number as _number, text as _text
from .errors import model as _as_model
from .hardware import Chip
from .models import Transformer
from .strategy import GROUPS, POLICY_NAMES, Placement, Strategy, _group_axes, _ordered, _placement
from .topology import Topology
from .training import TrainingEstimate, _batch, _from_row, _resolve_topology, setting

MAX_TP, MAX_CP, MAX_PP = 64, 32, 64


def _divisors(n: int, limit: int | None = None) -> list[int]:
    """Divisors of n up to `limit` (default n), ascending; found in pairs (d, n / d) with d <= sqrt(n)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    top = limit or n
    return [d for d in sorted(set(small + [n // d for d in small])) if d <= top]


def _tp_ok(model: Transformer, tp: int) -> bool:
    width = model.d_ff or model.expert_d_ff
    k = model.kv_heads
    return model.heads % tp == 0 and width % tp == 0 and (tp % k == 0 if tp > k else k % tp == 0)


def _micro_options(replica: int) -> list[int]:
    powers = [m for m in (2 ** i for i in range(20)) if m <= replica and replica % m == 0]
    return powers[-6:] if powers else [1]


def candidates(model: Transformer, *, chips: int, seqs: int, seq_len: int,
               remat: "tuple[str, ...]" = POLICY_NAMES) -> "Candidates":
    """Every strategy `plan` considers, before memory and speed are checked, as columns."""
    model = _as_model(model)
    _integer('chips', chips), _integer('seqs', seqs), _integer('seq_len', seq_len)
    if (not isinstance(remat, (tuple, list)) or not remat or not all(isinstance(r, str) for r in remat)
            or not set(remat) <= set(POLICY_NAMES)):
        raise Error(f'remat must be a non-empty tuple of policy names, got {remat!r:.60}; valid: {", ".join(POLICY_NAMES)}')
    keys: list[tuple[int, ...]] = []  # (tp, cp, fsdp, dp, pp, ep)
    blocks: list[np.ndarray] = []  # rows (key index, virtual stages, microbatch), one block per (tp, cp, pp)
    for tp in (t for t in _divisors(chips, MAX_TP) if _tp_ok(model, t)):
        for cp in (c for c in _divisors(chips // tp, MAX_CP) if seq_len % c == 0):
            for pp in _divisors(chips // (tp * cp), min(MAX_PP, model.layers)):
                data = chips // (tp * cp * pp)
                if seqs % data:
                    continue
                micro = _micro_options(seqs // data)
                vs = [v for v in (1, 2, 4) if pp > 1 and pp * v <= model.layers] or [1]
                start = len(keys)
                splits = _divisors(data)
                for fsdp in splits:
                    eps = [e for e in splits if model.routed_experts % e == 0
                           and (fsdp % e == 0 or e % fsdp == 0)] if model.is_moe else [1]
                    keys.extend((tp, cp, fsdp, data // fsdp, pp, ep) for ep in eps)
                # each key of the block, with every (virtual stages, microbatch) pair in turn
                pairs = np.array([(v, mb) for v in vs for mb in micro], dtype=np.int64).reshape(-1, 2)
                index = np.repeat(np.arange(start, len(keys), dtype=np.int64), len(pairs))
                blocks.append(np.column_stack([index, np.tile(pairs, (len(keys) - start, 1))]))
    remat_idx = [POLICY_NAMES.index(r) for r in remat]
    base = np.concatenate(blocks) if blocks else np.zeros((0, 3), dtype=np.int64)
    pol = np.tile(np.array(remat_idx, dtype=np.int64), len(base))
    base = np.repeat(base, len(remat_idx), axis=0)
    tps = np.array([k[0] for k in keys], dtype=np.int64).reshape(-1)[base[:, 0]] if len(base) else base[:, 0]
    twice = tps > 1  # with tensor parallelism, try both TP overlap settings
    base = np.concatenate([base, base[twice]])
    pol = np.concatenate([pol, pol[twice]])
    overlap = np.concatenate([np.zeros(len(twice), dtype=np.int64), np.ones(int(twice.sum()), dtype=np.int64)])
    return Candidates(keys=keys, key=base[:, 0], virtual_stages=base[:, 1], microbatch=base[:, 2],
                      remat=pol, tp_overlap=overlap)


@dataclass(frozen=True)
class Candidates:
    """Strategies as columns: `keys[key[i]]` = (tp, cp, fsdp, dp, pp, ep) of row i."""

    keys: list
    key: np.ndarray
    virtual_stages: np.ndarray
    microbatch: np.ndarray
    remat: np.ndarray
    tp_overlap: "np.ndarray | None" = None  # 0/1 per row; None: all off

    def __len__(self) -> int:
        return len(self.key)

    def arrays(self) -> dict[str, np.ndarray]:
        k = np.array(self.keys, dtype=np.int64).reshape(-1, 6)[self.key]
        tp = k[:, 0]
        dp = k[:, 3]
        v = self.virtual_stages
        sched = np.where(v > 1, step.SCHEDULE_INDEX["interleaved"], step.SCHEDULE_INDEX["1f1b"])
        return dict(tp=tp, cp=k[:, 1], fsdp=k[:, 2], dp=dp, pp=k[:, 4], ep=k[:, 5], virtual_stages=v,
                    microbatch=self.microbatch, remat=self.remat, sp=(tp > 1).astype(int),
                    zero=(dp > 1).astype(int), schedule=sched,
                    tp_overlap=np.zeros_like(tp) if self.tp_overlap is None else self.tp_overlap)

    def strategy(self, i: int) -> Strategy:
        tp, cp, fsdp, dp, pp, ep = self.keys[self.key[i]]
        v = int(self.virtual_stages[i])
        return Strategy(dp=dp, fsdp=fsdp, tp=tp, pp=pp, ep=ep, cp=cp, virtual_stages=v,
                        microbatch=int(self.microbatch[i]), remat=POLICY_NAMES[int(self.remat[i])],
                        sequence_parallel=tp > 1, zero=1 if dp > 1 else 0,
                        tp_overlap=self.tp_overlap is not None and bool(self.tp_overlap[i]))


@dataclass(frozen=True)
class TrainingPlan(Readable):
    """What `plan` found: the fastest strategies that fit, and the time-memory Pareto front."""

    model_name: str
    chip_name: str
    chips: int
    batch_tokens: float
    seq_len: int
    considered: int
    fitting: int
    best: tuple[TrainingEstimate, ...]
    pareto: tuple[TrainingEstimate, ...]

    def rows(self, which: str = "best") -> list[dict]:
        """One plain dict per strategy (for tables and the CLI)."""
        items = self.best if which == "best" else self.pareto
        f = units.format_quantity
        return [{"rank": i + 1, "strategy": e.strategy.label(), "step": f(e.step_seconds, "s"),
                 "MFU": f"{units.fmt_percent(e.mfu, 1)}", "memory/chip": f(e.memory.bytes, "B"),
                 "tokens/s/chip": units.fmt_number(e.tokens_per_s_per_chip, 4)} for i, e in enumerate(items)]

    def __repr__(self) -> str:
        head = (f"TrainingPlan({self.model_name} on {self.chips} {self.chip_name}, {units.fmt_count(self.batch_tokens)} tokens x "
                f"T={self.seq_len}: {self.fitting} of {self.considered} strategies fit)")
        lines = [head] + [f"  {r['rank']}. {r['strategy']}: step {r['step']}, MFU {r['MFU']}, {r['memory/chip']}"
                          for r in self.rows()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = self.rows()
        if not rows:
            return f"<p>{self.__repr__()}</p>"
        cols = list(rows[0])
        th = "".join(f"<th>{c}</th>" for c in cols)
        body = "".join("<tr>" + "".join(f"<td>{r[c]}</td>" for c in cols) + "</tr>" for r in rows)
        cap = (f"{self.model_name} on {self.chips} {self.chip_name}: the fastest of {self.fitting} fitting "
               f"strategies ({self.considered} considered)")
        return f"<table><caption>{cap}</caption><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def evaluate_all(model: Transformer, cands: Candidates, *, topology: Topology, batch_tokens: float,
                 seq_len: int, efficiency: float | None = None) -> dict[str, np.ndarray]:
    """`step.evaluate` on every candidate at once (one placement per distinct set of degrees)."""
    return _evaluate_all(model, cands, topology=topology, batch_tokens=batch_tokens, seq_len=seq_len,
                         efficiency=efficiency)[1]


def _evaluate_all(model: Transformer, cands: Candidates, *, topology: Topology, batch_tokens: float,
                  seq_len: int, efficiency: float | None = None
                  ) -> "tuple[step.Setting, dict[str, np.ndarray], Callable[[int], Placement]]":
    """`evaluate_all`, with the setting it priced under and the placement of a key (index in `cands.keys`)."""
    model = _as_model(model)
    if not len(cands):
        raise Error("no strategy to evaluate")
    st = setting(model, topology=topology, strategy=Strategy(), batch_tokens=batch_tokens, seq_len=seq_len,
                 efficiency=efficiency)
    per_key: dict[str, list[int]] = {g: [] for g in GROUPS}
    described: dict[tuple, int] = {}  # a group's axis names -> its row in `distinct`
    distinct: list[dict[str, float]] = []
    placeable = np.ones(len(cands.keys), dtype=bool)
    laid: list[dict] = []  # each key's groups' axes
    ordered = _ordered(topology)  # the topology's axes, fastest first, once for every placement
    fallback = None
    for i, (tp, cp, fsdp, dp, pp, ep) in enumerate(cands.keys):
        try:
            lists = _group_axes((tp, cp, fsdp, dp, pp), ep, ordered)
        except Error:  # degrees that do not divide the topology's axes: not a candidate
            placeable[i] = False
            lists = fallback = fallback or _group_axes((1, 1, 1, topology.num_chips, 1), 1, ordered)
        laid.append(lists)
        for g in GROUPS:
            # many placements share a group's axes: describe each distinct group once. Every
            # placement cuts its axes from `topology` by one rule, so an axis name always means
            # the same axis (and the hop latency is the topology's): the names identify the group.
            axes = lists[g]
            names = tuple(a.name for a in axes)
            row = described.get(names)
            if row is None:
                row = described[names] = len(distinct)
                distinct.append(step._describe(axes, topology.hop_latency_seconds))
            per_key[g].append(row)
    table = step.stack(distinct)
    # Rows that share degrees and microbatch (they differ in remat or TP overlap) move the same
    # bytes over the same groups: `step.price` prices each such class once (`step.REPEATS`).
    code = cands.key.astype(np.int64) * (int(cands.microbatch.max()) + 1) + cands.microbatch
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    groups = {}
    for g, ix in per_key.items():
        rows = np.asarray(ix)[cands.key]  # each candidate's row of `table`
        fields = {k: col[rows[first]] for k, col in table.items()}
        groups[g] = _Gathered(table, rows, {step.REPEATS: (first, inverse.reshape(-1), fields)})
    arr = cands.arrays()
    r = step.evaluate(st, arr, groups)
    # TP overlap where the TP group reaches InfiniBand or DCN changes nothing (`scalebook.step`):
    # keep only the plain twin of such a row
    no_effect = (arr["tp_overlap"] > 0) & (step._network(groups["tp"]) == step.NETWORKS.index("dcn"))
    r["valid"] = r["valid"] & placeable[cands.key] & ~no_effect
    return st, r, lambda key: _placement(laid[key], topology)


class _Gathered(Mapping):
    """A group's fields for every candidate (`table[k][rows]`), each gathered when first read:
    with `step.REPEATS` set, `step.price` reads the classes' rows only, so most fields never are."""

    def __init__(self, table: "dict[str, np.ndarray]", rows: np.ndarray, extra: "dict[str, object]") -> None:
        self._table, self._rows, self._got = table, rows, dict(extra)

    def __getitem__(self, k: str):
        if k not in self._got:
            self._got[k] = self._table[k][self._rows]
        return self._got[k]

    def __iter__(self):
        return iter([*self._table, *(k for k in self._got if k not in self._table)])

    def __len__(self) -> int:
        return len(self._table) + sum(k not in self._table for k in self._got)


def _pareto(times: np.ndarray, mems: np.ndarray, order: "np.ndarray | None" = None) -> list[int]:
    """Indices of the time-memory Pareto front, fastest first; `order`: np.lexsort((mems, times)) if known."""
    order = np.lexsort((mems, times)) if order is None else order
    m = mems[order]
    # on the front: less memory than every strategy at least as fast (those before it in order)
    before = np.concatenate(([math.inf], np.minimum.accumulate(m)[:-1]))
    return [int(i) for i in order[m < before]]


def plan(model: Transformer, *, seq_len: int, batch_tokens: float | None = None, batch_seqs: int | None = None,
         chip: "str | Chip | None" = None, chips: int | None = None, topology: Topology | None = None,
         top: int = 5, efficiency: float | None = None, remat: "tuple[str, ...]" = POLICY_NAMES) -> TrainingPlan:
    """The fastest strategies for training `model` on these chips, and the time-memory Pareto front.

    Raises `Error` if no strategy fits (the message says the smallest memory any needed).
    """
    model = _as_model(model)
    if not isinstance(model, Transformer):
        raise Error(f"model must be a scalebook.models.Transformer, got {type(model).__name__}")
    top = _require_count("top", top, maximum=10**4)
    seq_len = _require_count("seq_len", seq_len, maximum=MAX_TOKENS)
    topo = _resolve_topology(chip, chips, topology)
    tokens = _batch(batch_tokens, batch_seqs, seq_len)
    cands = candidates(model, chips=topo.num_chips, seqs=round(tokens / seq_len), seq_len=seq_len, remat=remat)
    if not len(cands):
        raise Error(f"no strategy splits a batch of {round(tokens / seq_len)} sequences over {topo.num_chips} chips; "
                    "use a batch with more sequences or fewer chips")
    st, r, placement = _evaluate_all(model, cands, topology=topo, batch_tokens=tokens, seq_len=seq_len,
                                      efficiency=efficiency)
    ok = r["valid"] & (r["memory"] <= topo.chip.hbm_bytes)
    if not ok.any():
        least = float(np.min(np.where(r["valid"], r["memory"], np.inf)))
        raise Error(f"no strategy fits {model.name} in {units.format_quantity(topo.chip.hbm_bytes, 'B')} per chip on "
                    f"{topo.num_chips} {topo.chip.name}; the leanest needs {units.format_quantity(least, 'B')}: "
                    "use more chips or a smaller batch per chip")
    idx = np.flatnonzero(ok)
    times, mems = r["step"][idx], r["memory"][idx]
    order = np.lexsort((mems, times))  # fastest first, then leanest
    best = idx[order[:top]]
    front = idx[_pareto(times, mems, order)]
    # Each winner's TrainingEstimate is built from its row of the search, as `estimate` builds it
    # from its own one-row evaluation (`training._from_row`): the same numbers, without pricing it again.
    built: dict[int, TrainingEstimate] = {}

    def again(i: int) -> TrainingEstimate:
        if i not in built:
            built[i] = _from_row(model, st, cands.strategy(i), placement(int(cands.key[i])), r, i)
        return built[i]

    return TrainingPlan(model_name=model.name, chip_name=topo.chip.name, chips=topo.num_chips, batch_tokens=tokens,
                        seq_len=seq_len, considered=len(cands), fitting=int(ok.sum()),
                        best=tuple(again(int(i)) for i in best), pareto=tuple(again(int(i)) for i in front))


