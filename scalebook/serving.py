"""Serving a workload: the latency/throughput frontier, continuous batching, cost per token,
prefix caching, speculative decoding, disaggregated prefill and decode, and a serving planner.

Chapter 7 derives these from `scalebook.inference` (one deployment at one batch); chapter 8 uses
them to serve LLaMA 3 and an MoE model.

Continuous batching (mean lengths): `batch` sequences decode together; each step finishes
batch / output_len requests on average, whose replacements need their prompts prefilled. With
prefill chunked into the decode steps, each step also prefills batch / output_len prompts (less
the cached prefix) in the same pass over the weights: one roofline of the mixed step,
max(compute of both, memory of both) + collectives (`inference.mixed_step`), not a prefill added
on top of a decode step. The server emits `batch` tokens per pp steps.
"""
from __future__ import annotations

import html
import itertools
from dataclasses import dataclass

from ._readable import Readable
from . import units
from .errors import Error, _show, require_non_negative, require_positive
from .errors import MAX_CHIPS, MAX_COUNT, MAX_TOKENS, require_count as _require_count  # noqa: F401
from .errors import instance as _instance, integer as _integer, number as _number, text as _text
from .errors import model as _as_model
from .hardware import Chip, chip as _chip
from .inference import Deployment, ServingEstimate, StepTime, check_deployment, estimate, max_batch, mixed_step
from .models import Transformer


def frontier(model: Transformer, *, chip: "str | Chip", deployment: Deployment, prompt_len: int, output_len: int,
             batches: "list[int] | None" = None, **efficiency) -> list[ServingEstimate]:
    """Estimates at growing batch (powers of two up to the largest that fits, and that one).

    Per-token latency rises with batch while tokens/s per chip rises faster, until the KV
    cache fills the memory: the latency/throughput frontier of Chapter 7.
    """
    model = _as_model(model)
    _instance("deployment", deployment, Deployment, "make one with inference.Deployment(tp=...)")
    _instance('deployment', deployment, Deployment)
    _integer('prompt_len', prompt_len), _integer('output_len', output_len)
    most = max_batch(model, chip=chip, deployment=deployment, context=prompt_len + output_len, prompt_len=prompt_len)
    if most < 1:
        raise Error(f"{model.name} does not fit on {deployment.chips} {_chip(chip).name} with {deployment.label()}")
    if batches is not None and (not isinstance(batches, (list, tuple)) or not batches):
        raise Error(f"batches must be a non-empty list of batch sizes, got {batches!r}")
    if batches is None:
        batches = sorted({b for b in (2 ** i for i in range(20)) if b <= most} | {most})
    return [estimate(model, chip=chip, deployment=deployment, batch=b, prompt_len=prompt_len, output_len=output_len,
                     **efficiency) for b in batches]


@dataclass(frozen=True)
class Workload(Readable):
    """A server under continuous batching (module docstring), with its cost per token."""

    estimate: ServingEstimate
    prefix_hit_rate: float
    step_seconds: float
    #: Share of the chip-time charged to prefill: p / (p + d), p = the step's prompts each prefilled
    #: on its own, d = the decode step alone (the mixed step overlaps them: a convention for pricing).
    prefill_share: float
    #: The mixed step (decode of the batch plus its share of prefill), one roofline.
    step: "StepTime | None" = None

    @property
    def output_tokens_per_s(self) -> float:
        e = self.estimate
        return e.batch / (self.step_seconds * e.deployment.pp)

    @property
    def input_tokens_per_s(self) -> float:
        e = self.estimate
        return self.output_tokens_per_s * e.prompt_len / e.output_len

    @property
    def requests_per_s(self) -> float:
        return self.output_tokens_per_s / self.estimate.output_len

    @property
    def per_token_latency_seconds(self) -> float:
        return self.step_seconds * self.estimate.deployment.pp

    def usd_per_million(self, usd_per_chip_hour: float) -> tuple[float, float]:
        """(input, output) USD per million tokens: chip-time split by the prefill and decode shares."""
        require_positive(usd_per_chip_hour=usd_per_chip_hour)
        per_s = self.estimate.chips * usd_per_chip_hour / 3600
        return (per_s * self.prefill_share / self.input_tokens_per_s * 1e6,
                per_s * (1 - self.prefill_share) / self.output_tokens_per_s * 1e6)

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"Workload({self.estimate.model_name}, batch {self.estimate.batch}: "
                f"{f(self.per_token_latency_seconds, 's')}/token, {units.fmt_number(self.output_tokens_per_s, 4)} output token/s, "
                f"{self.requests_per_s:.3g} requests/s, prefill {units.fmt_percent(self.prefill_share, 0)} of the time)")


def continuous_batching(model: Transformer, *, chip: "str | Chip", deployment: Deployment, batch: "int | str",
                        prompt_len: int, output_len: int, prefix_hit_rate: float = 0.0, **efficiency) -> Workload:
    """Steady-state throughput with prefill chunked into the decode steps (module docstring).

    `prefix_hit_rate` is the fraction of each prompt already in a prefix cache (its prefill
    skipped; its KV cache still read in decode). Each step decodes the batch and prefills
    batch / output_len x (1 - hit rate) prompts in one pass (`inference.mixed_step`).
    """
    model = _as_model(model)
    _instance("deployment", deployment, Deployment, "make one with inference.Deployment(tp=...)")
    require_non_negative(prefix_hit_rate=prefix_hit_rate)
    if prefix_hit_rate >= 1:
        raise Error(f"prefix_hit_rate is a fraction below 1, got {prefix_hit_rate:g}")
    e = estimate(model, chip=chip, deployment=deployment, batch=batch, prompt_len=prompt_len, output_len=output_len,
                 **efficiency)
    # prompts to refill per step; a prefix hit skips that share of each prompt's tokens
    prompts = e.batch / output_len * (1 - prefix_hit_rate)
    step = mixed_step(e, prompts=prompts)
    # chip-time split in proportion to what each part costs on its own: the decode step alone, and
    # the prompts each prefilled alone (the mixed step overlaps them, so any split is a convention)
    pre_alone = prompts / e.deployment.pp * e.prefill.seconds
    dec_alone = e.decode.seconds
    return Workload(estimate=e, prefix_hit_rate=prefix_hit_rate, step_seconds=step.seconds,
                    prefill_share=pre_alone / (pre_alone + dec_alone), step=step)


@dataclass(frozen=True)
class Speculation(Readable):
    """Speculative decoding (Leviathan et al. 2023; Chen et al. 2023) with i.i.d. acceptance."""

    acceptance_rate: float
    draft_tokens: int
    draft_cost_ratio: float
    #: Price of the target step that checks g + 1 tokens, in plain decode steps: about 1 while the
    #: step is memory-bound, more once g + 1 tokens per sequence make it compute-bound
    #: (`verify_cost_ratio` computes it for a deployment and batch).
    verify_cost_ratio: float = 1.0

    def __post_init__(self) -> None:
        require_positive(verify_cost_ratio=self.verify_cost_ratio)
        require_non_negative(acceptance_rate=self.acceptance_rate, draft_cost_ratio=self.draft_cost_ratio)
        if self.acceptance_rate > 1:
            raise Error(f"acceptance_rate is a probability, at most 1; got {self.acceptance_rate:g}")
        _require_count("draft_tokens", self.draft_tokens, maximum=MAX_TOKENS)

    @property
    def tokens_per_round(self) -> float:
        """Expected tokens per verification: (1 - a^(g+1)) / (1 - a)."""
        a, g = self.acceptance_rate, self.draft_tokens
        return g + 1.0 if a == 1 else (1 - a ** (g + 1)) / (1 - a)

    @property
    def round_cost(self) -> float:
        """g draft steps at c each, plus one target step that checks g + 1 tokens (v plain steps:
        about 1 while memory-bound): g c + v target-step units."""
        return self.draft_tokens * self.draft_cost_ratio + self.verify_cost_ratio

    @property
    def speedup(self) -> float:
        return self.tokens_per_round / self.round_cost

    def __repr__(self) -> str:
        return (f"Speculation(acceptance {self.acceptance_rate:g}, {self.draft_tokens} draft tokens at "
                f"{self.draft_cost_ratio:g} of a step: {self.tokens_per_round:.3g} tokens per round, "
                f"speedup {self.speedup:.3g}x)")


def verify_cost_ratio(model: Transformer, *, chip: "str | Chip", deployment: Deployment, batch: int,
                      prompt_len: int, output_len: int, draft_tokens: int, **efficiency) -> float:
    """How many plain decode steps the target's verification of g + 1 tokens per sequence costs.

    The verify step reads the same weights and cache as a decode step but does (g + 1) x the
    FLOPs (and moves (g + 1) x the activations), so its time is max(compute x (g + 1), memory) plus
    the collectives at (g + 1) x the tokens (`inference.verify_step`): about 1 while decode is
    memory-bound at this batch, up to g + 1 once it is compute-bound (Chapter 7).
    """
    model = _as_model(model)
    _instance("deployment", deployment, Deployment, "make one with inference.Deployment(tp=...)")
    from .inference import verify_step

    _positive = draft_tokens
    _positive = _require_count("draft_tokens", _positive, maximum=MAX_TOKENS)
    e = estimate(model, chip=chip, deployment=deployment, batch=batch, prompt_len=prompt_len,
                 output_len=output_len, **efficiency)
    return verify_step(e, tokens=draft_tokens + 1).seconds / e.decode.seconds


def speculative_decoding(*, acceptance_rate: float, draft_tokens: int, draft_cost_ratio: float,
                         verify_cost_ratio: float = 1.0) -> Speculation:
    """Expected speedup of speculative decoding (Chapter 7); see `Speculation`.

    `verify_cost_ratio` (default 1: a memory-bound step) prices the target's check of g + 1
    tokens; take it from `verify_cost_ratio(...)` for a deployment at a batch.
    """
    require_positive(verify_cost_ratio=verify_cost_ratio)
    require_non_negative(acceptance_rate=acceptance_rate, draft_cost_ratio=draft_cost_ratio)
    if acceptance_rate > 1:
        raise Error(f"acceptance_rate is a probability, at most 1; got {acceptance_rate:g}")
    draft_tokens = _require_count("draft_tokens", draft_tokens, maximum=MAX_TOKENS)
    return Speculation(acceptance_rate=acceptance_rate, draft_tokens=draft_tokens, draft_cost_ratio=draft_cost_ratio,
                       verify_cost_ratio=verify_cost_ratio)


def speculative_speedup(model: Transformer, *, chip: "str | Chip", deployment: Deployment, batch: int,
                        prompt_len: int, output_len: int, acceptance_rate: float, draft_tokens: int,
                        draft_cost_ratio: float, **efficiency) -> Speculation:
    """Speculative decoding on a deployment at a batch: `speculative_decoding` with the verify step
    priced by `verify_cost_ratio` for that batch (Chapter 7).

    The draft's cost stays `draft_cost_ratio` of a plain target step at every batch, and its own
    weights and cache are left out of memory: both flatter speculation at large batch.
    """
    v = verify_cost_ratio(model, chip=chip, deployment=deployment, batch=batch, prompt_len=prompt_len,
                          output_len=output_len, draft_tokens=draft_tokens, **efficiency)
    return speculative_decoding(acceptance_rate=acceptance_rate, draft_tokens=draft_tokens,
                                draft_cost_ratio=draft_cost_ratio, verify_cost_ratio=v)


def speculation_break_even_batch(model: Transformer, *, chip: "str | Chip", deployment: Deployment,
                                 prompt_len: int, output_len: int, acceptance_rate: float, draft_tokens: int,
                                 draft_cost_ratio: float, **efficiency) -> "int | None":
    """The largest batch at which speculative decoding still pays (speedup above 1); above it the
    verify step of g + 1 tokens per sequence costs more than the tokens it yields (Chapter 7).

    The speedup (1 - a^(g+1)) / (1 - a) / (g c + v(B)) falls as the batch B grows because v(B), the
    verify step over a plain step (`verify_cost_ratio`), climbs from about 1 (memory-bound: the
    same weights and cache reads) towards g + 1 (compute-bound, and collectives carrying g + 1
    tokens per sequence). Returns 0 when speculation does not pay even at batch 1, and None when it
    still pays at the largest batch that fits (`inference.max_batch`), so that no break-even
    exists. Found by bisection on the batch, which assumes the speedup falls with the batch.
    """
    model = _as_model(model)
    _instance("deployment", deployment, Deployment, "make one with inference.Deployment(tp=...)")
    kw = dict(chip=chip, deployment=deployment, prompt_len=prompt_len, output_len=output_len,
              acceptance_rate=acceptance_rate, draft_tokens=draft_tokens, draft_cost_ratio=draft_cost_ratio,
              **efficiency)
    pays = lambda b: speculative_speedup(model, batch=b, **kw).speedup > 1
    top = estimate(model, chip=chip, deployment=deployment, batch=1, prompt_len=prompt_len, output_len=output_len,
                   **efficiency).max_batch
    if top < 1:
        raise Error(f"{model.name} does not fit on this deployment: not even one sequence of "
                    f"{prompt_len + output_len} tokens")
    if not pays(1):
        return 0
    if pays(top):
        return None
    lo, hi = 1, top  # pays at lo, not at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if pays(mid) else (lo, mid)
    return lo


@dataclass(frozen=True)
class Disaggregation(Readable):
    """Separate prefill and decode servers: how many prefill chips each decode chip needs."""

    prefill: ServingEstimate
    decode: ServingEstimate
    prefill_chip_seconds_per_request: float
    decode_chip_seconds_per_request: float

    @property
    def prefill_chips_per_decode_chip(self) -> float:
        return self.prefill_chip_seconds_per_request / self.decode_chip_seconds_per_request

    def __repr__(self) -> str:
        return (f"Disaggregation({self.prefill.model_name}: {self.prefill_chips_per_decode_chip:.3g} prefill chips "
                f"per decode chip; prefill {self.prefill.deployment.label()}, decode {self.decode.deployment.label()} "
                f"at batch {self.decode.batch})")


def disaggregation(model: Transformer, *, chip: "str | Chip", prefill: Deployment, decode: Deployment,
                   batch: "int | str", prompt_len: int, output_len: int, **efficiency) -> Disaggregation:
    """Prefill chips per decode chip for a workload (Chapter 7).

    A request costs prefill chips x prefill seconds on the prefill side and decode chips x
    output_len x per-token latency / batch on the decode side; their ratio sizes the two pools.
    """
    model = _as_model(model)
    _instance("prefill", prefill, Deployment, "make one with inference.Deployment(tp=...)")
    _instance("decode", decode, Deployment, "make one with inference.Deployment(tp=...)")
    p = estimate(model, chip=chip, deployment=prefill, batch=1, prompt_len=prompt_len, output_len=output_len,
                 **efficiency)
    d = estimate(model, chip=chip, deployment=decode, batch=batch, prompt_len=prompt_len, output_len=output_len,
                 **efficiency)
    return Disaggregation(prefill=p, decode=d, prefill_chip_seconds_per_request=p.chips * p.prefill_seconds,
                          decode_chip_seconds_per_request=d.chips * output_len * d.per_token_latency_seconds / d.batch)


# --- planner ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ServingPlan(Readable):
    """What `plan_serving` found: the best throughput per chip within the latency target, and
    the frontier (per-token latency against tokens/s per chip) over every configuration tried."""

    model_name: str
    chip_name: str
    latency_target_seconds: float
    considered: int
    meeting_target: int
    best: tuple[ServingEstimate, ...]
    frontier: tuple[ServingEstimate, ...]

    def rows(self, which: str = "best") -> list[dict]:
        f = units.format_quantity
        items = self.best if which == "best" else self.frontier
        return [{"rank": i + 1, "deployment": e.deployment.label(), "chips": e.chips, "batch": e.batch,
                 "latency/token": f(e.per_token_latency_seconds, "s"), "tokens/s/chip": units.fmt_number(e.output_tokens_per_s_per_chip, 4),
                 "TTFT": f(e.ttft_seconds, "s"), "memory/chip": f(e.memory.bytes, "B")} for i, e in enumerate(items)]

    def __repr__(self) -> str:
        head = (f"ServingPlan({self.model_name} on {self.chip_name}, <= {units.format_quantity(self.latency_target_seconds, 's')}"
                f" per token: {self.meeting_target} of {self.considered} configurations meet it)")
        return "\n".join([head] + [f"  {r['rank']}. {r['deployment']} on {r['chips']} chips, batch {r['batch']}: "
                                   f"{r['latency/token']}/token, {r['tokens/s/chip']} token/s/chip" for r in self.rows()])

    def _repr_html_(self) -> str:
        rows = self.rows()
        if not rows:
            return f"<p>{html.escape(str(self))}</p>"
        th = "".join(f"<th>{c}</th>" for c in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{v}</td>" for v in r.values()) + "</tr>" for r in rows)
        cap = html.escape(str(self).splitlines()[0])
        return f"<table><caption>{cap}</caption><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _layouts(model: Transformer, c: Chip, max_chips: int) -> list[tuple[int, int, int]]:
    """(tp, ep, pp) to try: tp dividing the heads and width, within one NVLink domain or pod axis
    or across up to 4 of them; ep for a MoE; pp of 1, 2 or 4 stages."""
    fast = c.nvlink_domain if not c.is_tpu else 16
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64, 72, 144, 288) if t <= 4 * fast and t <= max_chips
           and (t <= fast or t % fast == 0) and (model.d_ff or model.expert_d_ff) % t == 0]
    eps = [e for e in (1, 2, 4, 8, 16, 32, 64) if model.is_moe and model.routed_experts % e == 0] or [1]
    pps = [p for p in (1, 2, 4) if p <= model.layers]
    return [(t, e, p) for t in tps for e in eps for p in pps if t * e * p <= max_chips]


def _formats(c: Chip, weights: "tuple[str, ...]") -> tuple[str, ...]:
    """Weight dtypes worth trying: fp8 only where the chip computes in fp8 (else it is int8's twin)."""
    out = tuple(w for w in weights if not (w in ("fp8", "fp4") and "fp8" not in c.flops_per_s and "int8" in weights))
    return out or weights


def _batches_up_to_target(model: Transformer, chip: Chip, deployment: Deployment, front: list[ServingEstimate],
                          target_s: float, prompt_len: int, output_len: int, efficiency: dict) -> list[ServingEstimate]:
    """Estimates bisecting the batch between the largest tried batch that meets the latency target
    and the next tried one, which misses it: the last one returned is the largest batch that meets it.

    Per-token latency does not fall as the batch grows (every term of the step grows with it), so
    bisection on the integer batch finds the boundary in log2(gap) estimates.
    """
    meets = [e.batch for e in front if e.per_token_latency_seconds <= target_s]
    if not meets:
        return []
    lo = max(meets)
    above = [e.batch for e in front if e.batch > lo]
    if not above:
        return []  # the largest batch that fits meets the target
    hi, found = min(above), []
    while hi - lo > 1:
        mid = (lo + hi) // 2
        e = estimate(model, chip=chip, deployment=deployment, batch=mid, prompt_len=prompt_len, output_len=output_len,
                     **efficiency)
        if e.per_token_latency_seconds <= target_s:
            lo = mid
            found.append(e)
        else:
            hi = mid
    return found


def plan_serving(model: Transformer, *, chip: "str | Chip", latency_target_s: float, prompt_len: int, output_len: int,
                 weights: "tuple[str, ...]" = ("bf16", "fp8", "int8"), kv: "tuple[str, ...]" = ("bf16", "fp8"),
                 max_chips: int = 256, top: int = 5, **efficiency) -> ServingPlan:
    """The configuration (chips, sharding, batch, quantisation) with the best output tokens/s per
    chip whose per-token latency meets `latency_target_s`, and the frontier (Chapters 7, 8).

    Tries tp (within a node or pod axis, or across up to four) x ep (MoE) x pp (1, 2, 4) x weight
    and KV dtypes x batch (powers of two up to the largest that fits, and that one; then, for each
    layout, the batches that bisect the gap where the latency target is crossed, so the largest batch
    that meets it is among those tried). fp8 weights are tried only
    on chips with fp8 matmuls (elsewhere they store and run like int8). Layouts the chips cannot
    form are skipped.
    """
    require_positive(latency_target_s=latency_target_s)
    return plan_serving_for_targets(model, chip=chip, latency_targets_s=(latency_target_s,), prompt_len=prompt_len,
                                    output_len=output_len, weights=weights, kv=kv, max_chips=max_chips, top=top,
                                    **efficiency)[0]


def plan_serving_for_targets(model: Transformer, *, chip: "str | Chip", latency_targets_s: "tuple[float, ...]",
                             prompt_len: int, output_len: int,
                             weights: "tuple[str, ...]" = ("bf16", "fp8", "int8"), kv: "tuple[str, ...]" = ("bf16", "fp8"),
                             max_chips: int = 256, top: int = 5, **efficiency) -> "tuple[ServingPlan, ...]":
    """`plan_serving` for several latency targets at once, one plan per target, in order: each
    layout's batches up to the largest that fits are priced once and shared, and each target adds
    only its own bisection (chapter 8's interactive cost figure asks eight targets)."""
    model = _as_model(model)
    c = _chip(chip)
    if isinstance(latency_targets_s, (str, bytes)) or not isinstance(latency_targets_s, (tuple, list)) \
            or not latency_targets_s:
        raise Error(f"latency_targets_s must be a non-empty tuple of seconds, got {_show(latency_targets_s)}")
    for target in latency_targets_s:
        require_positive(latency_target_s=target)
    _integer("max_chips", max_chips), _integer("top", top)
    for name, dtypes in (("weights", weights), ("kv", kv)):
        if isinstance(dtypes, str) or not isinstance(dtypes, (tuple, list)) or not dtypes:
            raise Error(f"{name} must be a non-empty tuple of dtype names such as ('bf16', 'fp8'), got {_show(dtypes)}")
        for dtype in dtypes:
            units.canonical_dtype(dtype, name)
    _require_count("prompt_len", prompt_len, maximum=MAX_TOKENS), _require_count("output_len", output_len, maximum=MAX_TOKENS)
    for name, dtypes in (("weights", weights), ("kv", kv)):
        if not isinstance(dtypes, (tuple, list)) or not all(isinstance(x, str) for x in dtypes):
            raise Error(f"{name} must be a tuple of dtype names such as ('bf16', 'fp8'), got {dtypes!r}")
    fronts: list[tuple[Deployment, list[ServingEstimate]]] = []
    for (tp, ep, pp), w, k in itertools.product(_layouts(model, c, max_chips), _formats(c, weights), kv):
        d = Deployment(tp=tp, ep=ep, pp=pp, weights=w, kv=k)
        try:
            check_deployment(model, d)
            fronts.append((d, frontier(model, chip=c, deployment=d, prompt_len=prompt_len, output_len=output_len,
                                       **efficiency)))
        except Error:
            continue
    if not fronts:
        raise Error(f"no layout of up to {max_chips} {c.name} chips holds {model.name} with a "
                    f"{prompt_len + output_len}-token context")
    return tuple(_plan_for(model, c, fronts, float(target), prompt_len, output_len, top, efficiency)
                 for target in latency_targets_s)


def _plan_for(model: Transformer, c: Chip, fronts: "list[tuple[Deployment, list[ServingEstimate]]]", target: float,
              prompt_len: int, output_len: int, top: int, efficiency: dict) -> ServingPlan:
    """One target's plan from the layouts' batch frontiers, each refined where the target cuts it."""
    tried: list[ServingEstimate] = []
    for d, front in fronts:
        tried.extend(front)
        tried.extend(_batches_up_to_target(model, c, d, front, target, prompt_len, output_len, efficiency))
    ok = [e for e in tried if e.per_token_latency_seconds <= target]
    best = sorted(ok, key=lambda e: (-e.output_tokens_per_s_per_chip, e.per_token_latency_seconds))[:top]
    front_, best_rate = [], -1.0
    for e in sorted(tried, key=lambda e: (e.per_token_latency_seconds, -e.output_tokens_per_s_per_chip)):
        if e.output_tokens_per_s_per_chip > best_rate:
            front_.append(e)
            best_rate = e.output_tokens_per_s_per_chip
    return ServingPlan(model_name=model.name, chip_name=c.name, latency_target_seconds=target,
                       considered=len(tried), meeting_target=len(ok), best=tuple(best), frontier=tuple(front_))
