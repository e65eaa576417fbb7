"""Published LLM serving (inference) results: what was served, on what, how it was split, how fast (Chapter 8).

The data, `data/serving_results.json`, holds results whose sources state the chips, the batch, the
prompt and output lengths and a measured latency or throughput: Pope et al. (2022), PaLM 540B and
62B on TPU v4, each phase (prefill, decode) in a low-latency and a high-throughput configuration;
and NVIDIA's TensorRT-LLM 0.9.0 performance tables, Llama 2 7B and 70B, Mistral 7B and Mixtral
8x7B on A100, H100 and H200, static batches timed end to end and first-token latencies. Chapter 8
sets `scalebook.inference`'s estimates beside them.

Each result has a `role`: `fit` (the default constants of its chip family are fitted on it,
`fit_constants`; at most a third of all results) or `validation` (predicted with the fitted
defaults and never fitted on, `validation_report`). The GPU fit set is, for each GPU, the static
batch of 2,048 input and 128 output tokens and the 2,048-token first-token latency of Llama 2 7B,
Llama 2 70B and Mixtral 8x7B, and both first-token latencies (128 and 2,048 tokens) of Mistral 7B:
the per-layer overhead needs short forward passes to be fitted on. Every figure comes
from the source named by `source` (a key of `book/references.bib`) at `where`; `inferred` names the
fields deduced, or computed from other reported figures, rather than stated, and `notes` says from
what. `None` means the source does not say.

How the fields are counted:

- `chips` are the chips of one serving deployment. When `tp` is given, chips = tp x ep x pp, as in
  `scalebook.inference.Deployment` (`ep` splits the routed experts of a mixture of experts, with
  attention data-parallel across the ep groups; `pp` stages split the layers). `tp` is `None`
  when the layout is no tensor-parallel split (Pope et al.'s weight-gathered prefill) or is
  unknown; `cli_args` then passes `--chips` alone.
- `batch` is concurrent sequences; `prompt_len` and `output_len` are tokens per sequence.
  `max_batch` is true when the source ran the largest batch that fits (`--batch max`).
- `phase` is what was timed: `prefill` (the prompts only), `decode` (generation after the
  prompts are in the KV cache) or `end-to-end`.
- `weights` and `kv` are the stored dtypes of the weights and of the KV cache.
- `reported_per_token_latency_seconds`: time per output token of one sequence (one decode
  step); `reported_ttft_seconds`: time to first token; `reported_prefill_seconds`: time to process
  the prompts of the whole batch; `reported_output_tokens_per_s`: generated tokens per second of the
  whole deployment (`..._per_chip`: divided by `chips`); `reported_total_tokens_per_s`: input plus
  output tokens per second; `reported_mfu`: model FLOPs utilization as a fraction of the chip's
  dense bf16 peak (0.76, not 76).
- `published_params`: the model size the source (or the model's paper) states, to check the
  model's count against.
- `role`: `fit` or `validation` (above).

Results on chips scalebook has no fitted efficiency for, or without a fixed shape and an absolute figure, are in
`not_modelled()` with the reason.

Mixtral 8x7B in FP8 on H100 and H200 (checked December 2026), still the worst GPU results. Their
errors have both signs, from -64% (the 128/128 static batch on H200; -60% for both 2,048-token
first-token latencies) to +29% (the 2,048/2,048 batch on H100), so no single missing term explains them:
pricing every weight in bf16 instead of fp8, as if the expert GEMMs had not run in FP8, brings the
128/128 batch on H100 from -53% to -20% but pushes the 2,048/2,048 batch from +29% to +109%. The
precision these rows ran in is also uncertain: the 0.9.0 page they come from lists them as FP8,
while TensorRT-LLM's release notes name FP8 quantization for Mixtral as new in release 0.10.0
(`nvidia2024trtllmrelease`). Taking the twelve H100/H200 Mixtral rows out and refitting pushes the
GPU HBM efficiency to 100%, the edge of the grid, which no chip reaches, so they stay, as they
were published, and are reported with the rest.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Mapping

from ._readable import Readable
from ._data import load
from . import units
from .errors import Error, choose
from .errors import MAX_CHIPS, MAX_COUNT, MAX_TOKENS, require_count as _require_count  # noqa: F401
from .runs import NotModelled, from_entry
from .models import Transformer, from_dict, preset

PHASES = ("prefill", "decode", "end-to-end")
#: Outcome fields, in the order `__repr__` shows them: (field, label, scale, unit).
_REPORTED = (("reported_per_token_latency_seconds", "per token", 1e3, "ms"),
             ("reported_ttft_seconds", "TTFT", 1e3, "ms"),
             ("reported_prefill_seconds", "prefill", 1, "s"),
             ("reported_output_tokens_per_s", "output", 1, "tok/s"),
             ("reported_output_tokens_per_s_per_chip", "", 1, "tok/s/chip"),
             ("reported_total_tokens_per_s", "total", 1, "tok/s"),
             ("reported_mfu", "MFU", 100, "%"))


@dataclass(frozen=True)
class PublishedServing(Readable):
    """One published serving result (see the module docstring for how each field is counted).

    `model` is a `scalebook.models` preset name or a read-only mapping of `Transformer` fields.
    """

    id: str
    model: str | Mapping[str, object] = field(hash=False)
    chip: str
    chips: int
    tp: int | None
    ep: int | None
    pp: int | None
    batch: int | None
    prompt_len: int
    output_len: int
    weights: str
    kv: str | None
    phase: str
    max_batch: bool
    reported_per_token_latency_seconds: float | None
    reported_ttft_seconds: float | None
    reported_output_tokens_per_s: float | None
    reported_output_tokens_per_s_per_chip: float | None
    reported_total_tokens_per_s: float | None
    reported_prefill_seconds: float | None
    reported_mfu: float | None
    published_params: float
    source: str
    where: str
    inferred: tuple[str, ...]
    notes: str
    role: str = "validation"

    @property
    def family(self) -> str:
        """The chip family whose default efficiencies this result fits or tests: "tpu" or "gpu"."""
        from .hardware import chip

        return "tpu" if chip(self.chip).is_tpu else "gpu"

    def deployment(self):
        """The published layout as an `inference.Deployment` (tp = chips when the source gives no tp)."""
        from .inference import Deployment

        return Deployment(tp=self.tp or self.chips, ep=self.ep or 1, pp=self.pp or 1, weights=self.weights,
                          kv=self.kv or "bf16")

    @property
    def model_name(self) -> str:
        """The preset name, or the inline model's `name`."""
        return self.model if isinstance(self.model, str) else str(self.model.get("name", "custom"))

    def model_config(self) -> Transformer:
        """The result's model: the named preset, or a `Transformer` from the inline fields (`models.from_dict`)."""
        return preset(self.model) if isinstance(self.model, str) else from_dict(dict(self.model))

    def model_json(self) -> dict:
        """The inline model's fields, to write to the JSON file `cli_args` points at.

        Raises `Error` for a preset, which the command takes by name.
        """
        if isinstance(self.model, str):
            raise Error(f"result {self.id!r} uses the preset {self.model!r}; pass its name, not a JSON file")
        return dict(self.model)

    def cli_args(self, model_path: str | None = None) -> list[str]:
        """Arguments of `scalebook serve-estimate` for this result (unknown fields left out).

        `--tp` (with `--ep`, `--pp` where known) when the source gives a tensor-parallel degree,
        else `--chips`; `--batch max` when the batch is unknown and the source ran the largest
        batch that fits. An inline model needs `model_path`, where the caller wrote `model_json()`.
        """
        if isinstance(self.model, str):
            model = self.model
        elif model_path is None:
            raise Error(f"result {self.id!r} has an inline model; write result.model_json() to a file and "
                        "pass its path as model_path")
        else:
            model = str(model_path)
        args = [model, "--chip", self.chip]
        if self.tp is not None:
            args += ["--tp", str(self.tp)]
            args += [arg for name in ("ep", "pp") if getattr(self, name) is not None
                     for arg in (f"--{name}", str(getattr(self, name)))]
        else:
            args += ["--chips", str(self.chips)]
        if self.batch is not None:
            args += ["--batch", str(self.batch)]
        elif self.max_batch:
            args += ["--batch", "max"]
        args += ["--prompt-len", str(self.prompt_len), "--output-len", str(self.output_len),
                 "--weights", self.weights]
        if self.kv is not None:
            args += ["--kv", self.kv]
        return args

    def __repr__(self) -> str:
        layout = " ".join(f"{name}={getattr(self, name)}" for name in ("tp", "ep", "pp")
                          if getattr(self, name) not in (None, 1))
        batch = "max" if self.batch is None and self.max_batch else self.batch
        reported = ", ".join(f"{label} {units.fmt_number(getattr(self, name) * scale, 4)} {unit}".replace(" %", "%").strip()
                             for name, label, scale, unit in _REPORTED if getattr(self, name) is not None)
        return (f"PublishedServing({self.id!r}: {self.model_name} on {self.chips} {self.chip}"
                f"{', ' + layout if layout else ''}, {self.weights} weights, {self.phase} of batch {batch}, "
                f"{self.prompt_len} in / {self.output_len} out; {reported}; {self.source})")


def _result(entry: dict) -> PublishedServing:
    return from_entry(PublishedServing, entry)


@functools.lru_cache(maxsize=None)
def published_serving() -> tuple[PublishedServing, ...]:
    """Every modelled result in `data/serving_results.json`, in file order."""
    return tuple(_result(e) for e in load("serving_results")["results"])


def result_ids() -> list[str]:
    """Ids accepted by `published_serving_result`."""
    return [r.id for r in published_serving()]


def published_serving_result(id: str) -> PublishedServing:
    """The result with this id; an unknown id raises `Error` listing the valid ones.

    >>> published_serving_result("palm-540b-tpuv4-decode-low-latency").batch
    64
    """
    choose("published serving result", id, result_ids())
    return next(r for r in published_serving() if r.id == id)


@functools.lru_cache(maxsize=None)
def not_modelled() -> tuple[NotModelled, ...]:
    """Published results left out (unmodelled chip, no fixed shape, or only relative figures), each with its reason."""
    names = [f.name for f in dataclasses.fields(NotModelled)]
    return tuple(NotModelled(**{k: e[k] for k in names}) for e in load("serving_results")["not_modelled"])


# --- predictions, fit and validation ----------------------------------------------------------

ROLES = ("fit", "validation")


@dataclass(frozen=True)
class Prediction:
    """`inference.estimate` beside one published result, compared in seconds.

    `metric` names what is compared: "per-token latency" (a decode step), "prefill of the batch",
    "time to first token" (the prefill that yields it), or "static batch end to end" (a throughput
    turned into the time of the whole batch: batch x output_len / (tokens/s per chip x chips)).
    `error` = predicted / reported - 1.
    """

    id: str
    source: str
    family: str
    role: str
    metric: str
    reported_seconds: float
    predicted_seconds: float
    bound: str
    estimate: object = field(repr=False, compare=False)

    @property
    def error(self) -> float:
        return self.predicted_seconds / self.reported_seconds - 1

    @property
    def implied_hbm_fraction(self) -> float:
        """The fraction of peak HBM bandwidth the reported time needs for the bytes the model says
        were read (weights and caches): above 1, the reported figure beats the model's roofline,
        so the model counts bytes the run did not read (or the figure is not what it says)."""
        e = self.estimate
        if self.metric == "static batch end to end":
            bytes_ = (e.prefill_batch or e.prefill).bytes_read * e.deployment.pp \
                + (e.output_len - 1) * e.decode.bytes_read * e.deployment.pp
        elif self.metric == "per-token latency":
            bytes_ = e.decode.bytes_read * e.deployment.pp
        else:
            bytes_ = (e.prefill_batch or e.prefill).bytes_read * e.deployment.pp
        return bytes_ / self.reported_seconds / e.chip.hbm_bytes_per_s

    def reason(self) -> str:
        """What the model's step is limited by, for a reader judging the error (not a diagnosis)."""
        e = self.estimate
        if self.metric == "static batch end to end":
            pre, dec = e.prefill_batch_seconds, (e.output_len - 1) * e.per_token_latency_seconds
            step = e.decode
            part = (f"prefill {units.fmt_percent(pre / (pre + dec), 0)} of the predicted time, decode steps "
                    f"{step.bound}-bound at batch {e.batch}")
        else:
            step = e.decode if self.metric == "per-token latency" else (e.prefill_batch or e.prefill)
            part = f"{self.metric} {step.bound}-bound"
        comm = step.tp_seconds + step.ep_seconds + step.pp_seconds
        share = comm / step.seconds if step.seconds else 0.0
        fixed = step.overhead_seconds / step.seconds if step.seconds else 0.0
        slow = "slower" if self.error > 0 else "faster"
        why = f"the {self.family.upper()} family's constants do not follow this shape"
        if self.implied_hbm_fraction > 0.9:
            why = (f"the reported time needs {units.fmt_percent(self.implied_hbm_fraction, 0)} of peak HBM bandwidth for the "
                   "bytes the model counts")
        return (f"predicted {abs(100 * self.error):.0f}% {slow} than reported; {part}; collectives "
                f"{units.fmt_percent(share, 0)} and the fixed per-layer cost {units.fmt_percent(fixed, 0)} of the step; {why}")


def predict(result: PublishedServing, **efficiency) -> Prediction | None:
    """The estimate of one result beside what it reported (`Prediction`), or None when it reports
    nothing the model predicts. `efficiency` (bandwidth_efficiency, compute_efficiency,
    layer_overhead_seconds) defaults to the chip family's fitted values."""
    from . import inference as inf

    if not isinstance(result, PublishedServing):
        raise Error(f"result must be a PublishedServing (from scalebook.serving_results), got {type(result).__name__}")
    r = result
    batch = r.batch if r.batch is not None else "max"
    e = inf.estimate(r.model_config(), chip=r.chip, deployment=r.deployment(), batch=batch, prompt_len=r.prompt_len,
                     output_len=r.output_len, **efficiency)
    if r.reported_per_token_latency_seconds is not None:
        m, rep, pred, bound = ("per-token latency", r.reported_per_token_latency_seconds, e.per_token_latency_seconds,
                               e.decode.bound)
    elif r.phase == "end-to-end" and r.reported_output_tokens_per_s_per_chip is not None and r.batch:
        m, rep, pred, bound = ("static batch end to end",
                               r.batch * r.output_len / (r.reported_output_tokens_per_s_per_chip * r.chips),
                               e.end_to_end_seconds, e.decode.bound)
    elif r.reported_output_tokens_per_s is not None and r.batch:
        m, rep, pred, bound = ("per-token latency", r.batch / r.reported_output_tokens_per_s,
                               e.per_token_latency_seconds, e.decode.bound)
    elif r.reported_prefill_seconds is not None:
        step = e.prefill_batch or e.prefill
        m, rep, pred, bound = "prefill of the batch", r.reported_prefill_seconds, e.prefill_batch_seconds, step.bound
    elif r.reported_ttft_seconds is not None:
        m, rep, pred, bound = "time to first token", r.reported_ttft_seconds, e.ttft_seconds, e.prefill.bound
    else:
        return None
    return Prediction(id=r.id, source=r.source, family=r.family, role=r.role, metric=m, reported_seconds=rep,
                      predicted_seconds=pred, bound=bound, estimate=e)


def results_with_role(role: str, family: str | None = None) -> tuple[PublishedServing, ...]:
    """The results marked `role` ("fit" or "validation"), of one chip family ("tpu", "gpu") or all."""
    choose("role", role, list(ROLES))
    if family is not None:
        choose("family", family, ["tpu", "gpu"])
    return tuple(r for r in published_serving() if r.role == role and (family is None or r.family == family))


@dataclass(frozen=True)
class ServingConstants(Readable):
    """The constants of one chip family's serving model (`inference.estimate`'s defaults):
    fractions of peak HBM bandwidth and of peak matmul FLOP/s, and fixed seconds per layer of every
    forward pass (a prefill pass or a decode step)."""

    bandwidth_efficiency: float
    compute_efficiency: float
    layer_overhead_seconds: float

    def __repr__(self) -> str:
        return (f"ServingConstants(HBM {units.fmt_percent(self.bandwidth_efficiency, 0)}, matmul {units.fmt_percent(self.compute_efficiency, 0)}, "
                f"{1e6 * self.layer_overhead_seconds:.0f} us per layer)")


def _terms(p: Prediction) -> list[tuple[float, object]]:
    """The steps whose times add up to `p.predicted_seconds`, each with how many times it runs."""
    e, pp = p.estimate, p.estimate.deployment.pp
    if p.metric == "static batch end to end":
        return [(pp, e.prefill_batch or e.prefill), ((e.output_len - 1) * pp, e.decode)]
    if p.metric == "per-token latency":
        return [(pp, e.decode)]
    if p.metric == "prefill of the batch":
        return [(pp, e.prefill_batch or e.prefill)]
    return [(pp, e.prefill)]


def _unit_terms(r: PublishedServing):
    """(reported seconds, array of [runs, compute s, memory s, collective s, layers of the stage]) of
    one result, its compute and memory times at 100% efficiency: predicted seconds at constants
    (bw, ce, lo) = sum runs x (max(compute / ce, memory / bw) + collectives + lo x layers)."""
    import numpy as np

    p = predict(r, bandwidth_efficiency=1.0, compute_efficiency=1.0, layer_overhead_seconds=0.0)
    stage = p.estimate.model.layers / p.estimate.deployment.pp
    rows = [(n, st.compute_seconds, st.memory_seconds, st.tp_seconds + st.ep_seconds + st.pp_seconds, stage)
            for n, st in _terms(p)]
    return p.reported_seconds, np.array(rows, dtype=float)


def _grid_loss(terms, bw, ce, lo):
    import numpy as np

    loss = 0.0
    for reported, t in terms:
        n, c, m, comm, layers = (t[:, i].reshape(-1, 1, 1, 1) for i in range(5))
        predicted = (n * (np.maximum(c / ce, m / bw) + comm + lo * layers)).sum(axis=0)
        loss = loss + np.log(predicted / reported) ** 2
    return loss


def fit_constants(family: str) -> ServingConstants:
    """The serving constants of a chip family fitted on its `fit` results only (`ServingConstants`).

    One set for the whole family, never one per result: the (bandwidth, compute, per-layer
    overhead) that minimises the sum of squared log errors, sum (ln(predicted / reported))^2, over
    the family's fit results, on a grid: efficiencies 0.05-1 in steps of 0.01, the overhead 0-500 us
    in steps of 5 us, then 1 us around the best.
    """
    import numpy as np

    choose("family", family, ["tpu", "gpu"])
    fit = results_with_role("fit", family)
    if not fit:
        raise Error(f"no results marked fit for chip family {family!r}")
    terms = [_unit_terms(r) for r in fit]
    eff = np.round(np.arange(5, 101) / 100, 2)
    bw, ce = eff.reshape(-1, 1, 1), eff.reshape(1, -1, 1)

    def best(lo_grid):
        loss = _grid_loss(terms, bw, ce, lo_grid.reshape(1, 1, -1))
        i, j, k = np.unravel_index(np.argmin(loss), loss.shape)
        return float(eff[i]), float(eff[j]), float(lo_grid[k])

    _, _, lo0 = best(np.arange(0, 501, 5) * 1e-6)
    fine = np.arange(max(0, round(lo0 * 1e6) - 5), round(lo0 * 1e6) + 6) * 1e-6
    b, c, lo = best(fine)
    return ServingConstants(bandwidth_efficiency=b, compute_efficiency=c, layer_overhead_seconds=round(lo, 7))


def fit_efficiencies(family: str) -> tuple[float, float]:
    """(bandwidth, compute) efficiency of `fit_constants(family)` (fitted together with its per-layer overhead)."""
    k = fit_constants(family)
    return k.bandwidth_efficiency, k.compute_efficiency


def _stats(errors: "list[float]") -> tuple[float, float, float]:
    import statistics

    a = [abs(x) for x in errors]
    return statistics.median(a), statistics.fmean(a), max(a)


@dataclass(frozen=True)
class ErrorStats(Readable):
    """Absolute relative errors of a group of validation results: |predicted / reported - 1|."""

    count: int
    median: float
    mean: float
    max: float

    def __repr__(self) -> str:
        return f"{self.count} results: median {units.fmt_percent(self.median, 1)}, mean {units.fmt_percent(self.mean, 1)}, max {units.fmt_percent(self.max, 1)}"


def _group(preds) -> ErrorStats:
    med, mean, mx = _stats([p.error for p in preds])
    return ErrorStats(count=len(preds), median=med, mean=mean, max=mx)


@dataclass(frozen=True)
class ValidationReport(Readable):
    """Every `validation` result predicted with the fitted defaults (Chapter 8): errors overall, by
    chip family and by source, and the worst results with what limits the model's step."""

    fit_count: int
    validation_count: int
    overall: ErrorStats
    by_family: Mapping[str, ErrorStats]
    by_source: Mapping[str, ErrorStats]
    by_metric: Mapping[str, ErrorStats]
    predictions: tuple[Prediction, ...] = field(repr=False)
    worst: tuple[Prediction, ...] = field(repr=False)

    def __repr__(self) -> str:
        lines = [f"ValidationReport({self.validation_count} validation results, fitted on {self.fit_count}):",
                 f"  overall    {self.overall!r}"]
        lines += [f"  {k:<10} {v!r}" for k, v in self.by_family.items()]
        lines += [f"  {k:<10} {v!r}" for k, v in self.by_source.items()]
        lines += [f"  {k}: {v!r}" for k, v in self.by_metric.items()]
        lines += ["  worst:"] + [f"    {p.id}: {p.reason()}" for p in self.worst]
        return "\n".join(lines)


def validation_report(*, worst: int = 5, **efficiency) -> ValidationReport:
    """Predict every `validation` result with the fitted defaults (or `efficiency`) and summarise.

    Fit results are left out of every statistic: they measure the fit, not the model.
    """
    worst = _require_count("worst", worst, minimum=0, maximum=10**4)
    preds = tuple(p for p in (predict(r, **efficiency) for r in results_with_role("validation")) if p is not None)
    if not preds:
        raise Error("no validation result reports a figure the model predicts")
    group = lambda key: {k: _group([p for p in preds if key(p) == k]) for k in dict.fromkeys(key(p) for p in preds)}
    return ValidationReport(fit_count=len(results_with_role("fit")), validation_count=len(preds),
                            overall=_group(preds), by_family=group(lambda p: p.family),
                            by_source=group(lambda p: p.source), by_metric=group(lambda p: p.metric),
                            predictions=preds,
                            worst=tuple(sorted(preds, key=lambda p: -abs(p.error))[:worst]))
