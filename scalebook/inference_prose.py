"""Sentences of chapters 7 and 8 (and chapter 1's compiler check) that depend on a computed outcome,
written for every outcome.

A chapter that glues "Only A, B can meet it; for C the floor is too slow" reads wrong when every
chip passes ("for none the floor is too slow"). Each function here takes the computed values and
returns the sentence (or phrase) that is true for them: an empty list, a full one, a partial one;
a gain, a loss, no change. The chapters glue the result; `tests/test_inference_prose.py` renders
each branch. Numbers are rounded as the book prints them (whole percent, counts without
decimals), and a change that rounds to 0% is called no change rather than `"0%"` or `"-0%"`.
"""
from __future__ import annotations

from typing import Sequence

from .errors import MAX_CHIPS, Error
from .errors import MAX_CHIPS, MAX_COUNT, MAX_TOKENS, require_count as _require_count  # noqa: F401
from .errors import number as _number, require_count as _count, require_non_negative as _require_non_negative
from .errors import require_positive as _require_positive, text as _text


def _names(name: str, value: object) -> list:
    """`value` as a list of names (strings); anything else raises `Error` naming `name`."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise Error(f"{name} must be a list of names (strings), got {type(value).__name__}")
    return list(value)


def _numbers(name: str, value: object) -> list:
    """`value` as a list of finite numbers; anything else raises `Error` naming `name`."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise Error(f"{name} must be a list of numbers, got {type(value).__name__}")
    return [_number(name, v) for v in value]


def _mapping(name: str, value: object) -> dict:
    if not isinstance(value, dict):
        raise Error(f"{name} must be a dict, got {type(value).__name__}")
    return value


def listing(names: Sequence[str]) -> str:
    """'A', 'A and B', 'A, B and C'."""
    names = _names("names", names)
    if not names:
        raise Error("names must hold at least one name; the caller writes the empty case itself")
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


def _pct(x: float) -> int:
    return round(100 * abs(x))


def tight_target(met: Sequence[str], missed: Sequence[str], target: str) -> str:
    """Chapter 8: which chips can meet a tighter per-token latency target at all."""
    met, missed, target = _names("met", met), _names("missed", missed), _text("target", target)
    if not met and not missed:
        raise Error("tight_target needs at least one chip in met or missed")
    head = f"Tighten the promise to {target} per token"
    why = "the weight floor plus the collectives is already too slow, at any batch and any tp the planner may use"
    if not missed:
        return (f"{head} and every chip still meets it ({listing(met)}): the planner may give up "
                "batch, and so tokens per chip, to get there, but no chip is ruled out")
    if not met:
        return f"{head} and no chip meets it: for {listing(missed)} {why}"
    return f"{head} and the field narrows. Only {listing(met)} can meet it; for {listing(missed)} {why}"


def relative_change(new: float, old: float, what: str = "the cost") -> str:
    """'lowers the cost by 12%', 'raises the cost by 5%', or 'leaves the cost unchanged' (rounds to 0%)."""
    _number("new", new), _number("old", old), _text("what", what)
    if old <= 0:
        raise Error(f"old must be positive, got {old!r}")
    r = new / old - 1
    if _pct(r) == 0:
        return f"leaves {what} unchanged (within 1%)"
    return f"{'lowers' if r < 0 else 'raises'} {what} by {_pct(r)}%"


def pays(cost_new: float, cost_old: float, option: str) -> str:
    """'int4 pays: it cuts the cost by 34%', 'int4 does not pay: it costs 8% more', or a tie."""
    _require_non_negative(cost_new=cost_new, cost_old=cost_old), _text("option", option)
    if cost_old <= 0:
        raise Error(f"cost_old must be positive, got {cost_old!r}")
    r = cost_new / cost_old - 1
    if _pct(r) == 0:
        return f"{option} makes no difference to the cost (within 1%)"
    if r < 0:
        return f"{option} pays: it cuts the cost by {_pct(r)}%"
    return f"{option} does not pay: it costs {_pct(r)}% more"


def gap_over_batches(gaps: Sequence[float], batches: Sequence[int]) -> str:
    """Chapter 8: how far a rule's memory time sits above the package's over a sweep of batches.

    Reports the largest gap and where it occurs, and the smallest, instead of one number "at every
    batch" (which is true only when they agree to the printed digit).
    """
    gaps = _numbers("gaps", gaps)
    if isinstance(batches, str) or not isinstance(batches, (list, tuple)):
        raise Error(f"batches must be a list of batch sizes, got {type(batches).__name__}")
    batches = [_count("batches", b, maximum=10**15) for b in batches]
    if len(gaps) != len(batches) or not gaps:
        raise Error("gaps and batches must be non-empty and of equal length")
    hi = max(range(len(gaps)), key=lambda i: gaps[i])
    lo = min(range(len(gaps)), key=lambda i: gaps[i])
    a, b = round(100 * gaps[hi], 1), round(100 * gaps[lo], 1)
    if a == b:
        return f"{a:.1f}% above the package's at every batch of the table"
    if b <= 0 < a:
        return (f"up to {a:.1f}% above the package's (at batch {batches[hi]}) and "
                f"{abs(b):.1f}% below it at batch {batches[lo]}")
    return (f"between {b:.1f}% (at batch {batches[lo]}) and {a:.1f}% (at batch {batches[hi]}) "
            "above the package's")


def speculation_under_load(speedup_small: float, speedup_large: float, large_batch: int) -> str:
    """Chapter 7: what is left of speculative decoding's speedup at a large batch."""
    _require_positive(speedup_small=speedup_small, speedup_large=speedup_large)
    _count("large_batch", large_batch)
    head = f"At batch {large_batch:,}"
    if speedup_large < 0.995:
        return (f"{head} it turns into a slowdown: {speedup_large:.2f}, since the verify step now costs "
                f"more than the tokens it saves. Speculation is a tool for latency at small and moderate "
                "batches; a loaded server should switch it off")
    if speedup_large < 1.005:
        return f"{head} it is gone: {speedup_large:.2f}, the verify step costs what the extra tokens save"
    if speedup_large < 0.9 * speedup_small:
        return (f"{head} it shrinks to {speedup_large:.2f}: still a gain, but the verify step's extra FLOPs "
                "and collectives now eat part of it")
    return (f"{head} it is still {speedup_large:.2f}: the step is bound by the reads of the KV caches, "
            "so the extra FLOPs of the verify step still hide under them, and speculation pays under "
            "load as well as for a lone user")


def bound_cases(bounds: "dict[str, str]") -> str:
    """Chapter 8: which of the frontier's cases are compute-, memory- or communication-bound at their
    largest batch (`StepTime.bound` of each)."""
    _mapping("bounds", bounds)
    if not bounds:
        raise Error("bounds must hold at least one case")
    by = {k: [name for name, b in bounds.items() if b == k] for k in ("compute", "memory", "communication")}
    unknown = set(bounds.values()) - set(by)
    if unknown:
        raise Error(f"bounds must be 'compute', 'memory' or 'communication', got {sorted(unknown)}")
    n, comp = len(bounds), by["compute"]
    if len(comp) == n:
        return ("Every case is compute-bound at full batch: the matmul FLOPs of the batch outgrow the "
                "reads before memory runs out")
    if not comp:
        head = "None of the cases is compute-bound at full batch"
        if by["memory"] and not by["communication"]:
            return head + ": the cache reads grow with the batch as fast as the FLOPs do"
        return head + f": {listing([f'{len(by[k])} {k}-bound' for k in ('memory', 'communication') if by[k]])}"
    verb = "is" if len(comp) == 1 else "are"
    head = f"Only {listing(comp)} {verb} compute-bound at full batch; "
    kinds = [k for k in ("memory", "communication") if by[k]]
    if len(kinds) == 1:
        m = len(by[kinds[0]])
        return head + (f"the other case stays {kinds[0]}-bound" if m == 1 else f"the other {m} stay {kinds[0]}-bound")
    return head + f"of the other {n - len(comp)}, {listing([f'{len(by[k])} {k}-bound' for k in kinds])}"


def plan_reasons(pp: int) -> str:
    """Chapter 7: why the planner's best layout looks as it does, with or without a pipeline."""
    _count("pp", pp, maximum=MAX_CHIPS)
    pp = _require_count("pp", pp, maximum=MAX_CHIPS)
    if pp == 1:
        return ("quantisation to cut the bytes, as large a batch as memory and the latency target allow, "
                "and no more chips per "
                "replica than the memory and the latency need")
    return ("quantisation to cut the bytes and as large a batch as memory and the latency target allow; "
            "and a pipeline of "
            f"{pp} stages, because at this batch the caches are most of what a step reads, so re-reading the "
            "weights once per micro-batch costs little, while the extra stages add memory for caches "
            "without adding tensor-parallel collectives")


def speculation_break_even(batch: "int | None") -> str:
    """Chapter 7: `serving.speculation_break_even_batch` in words (None: pays at every batch that fits;
    0: pays at none)."""
    if batch is None:
        return "speculation still pays at the largest batch that fits"
    if isinstance(batch, bool) or not isinstance(batch, int) or not 0 <= batch <= 10**15:
        raise Error(f"batch must be None or an integer >= 0 (at most 10**15), got {batch!r:.60}")
    if batch == 0:
        return "speculation does not pay even at batch 1"
    return f"speculation pays up to a batch of {batch:,} and costs time above it"


def signed_percent(x: float) -> str:
    """A relative error as the book prints it: '+10%', '-9%', or 'within 1%' when it rounds to zero."""
    _number("x", x)
    p = round(100 * x)
    return "within 1%" if p == 0 else f"{p:+d}%".replace("-", "\u2212")


def goal_sentence(median: float, goal: float, gpu_median: float, tpu_median: float) -> str:
    """Chapter 8: the validation median against the book's goal, with the family that misses it."""
    _require_non_negative(median=median, goal=goal, gpu_median=gpu_median, tpu_median=tpu_median)
    g = round(100 * goal)
    if median > goal:
        return f"That is short of what this book aims for, a median within {g}%"
    missing = [name for name, m in (("GPUs", gpu_median), ("TPUs", tpu_median)) if m > goal]
    if not missing:
        return f"That meets what this book aims for, a median within {g}%, on both families"
    return (f"That meets what this book aims for, a median within {g}%, overall but not on "
            f"{listing(missing)} alone")


def error_directions(errors: Sequence[float]) -> str:
    """'all 6 too slow, by 12% on average', 'all too fast', or '4 of 6 too slow and 2 too fast (mean +17%)'.

    A positive error is a prediction slower than the report (predicted / reported - 1 > 0)."""
    errors = _numbers("errors", errors)
    if not errors:
        raise Error("errors must hold at least one error")
    n = len(errors)
    slow = sum(e > 0 for e in errors)
    mean = sum(errors) / n
    if slow == n:
        return f"all {n} come out too slow, by {round(100 * mean)}% on average"
    if slow == 0:
        return f"all {n} come out too fast, by {round(100 * -mean)}% on average"
    verb = "comes" if slow == 1 else "come"
    return f"{slow} of {n} {verb} out too slow and {n - slow} too fast (on average {signed_percent(mean)})"


def firmer_ground(subset_median: float, family_median: float) -> str:
    """Chapter 8: whether a subset of results is predicted better than its family as a whole."""
    _require_non_negative(subset_median=subset_median, family_median=family_median)
    if round(100 * subset_median) < round(100 * family_median):
        return "the model is on firmer ground"
    if round(100 * subset_median) == round(100 * family_median):
        return "the model does no better than on the rest"
    return "the model does worse than on the rest"


def deviation(measured: float, reference: float, what: str, digits: int = 2) -> str:
    """Chapter 1: how far a count sits from the formula it is checked against, at `digits` decimals
    of a percent: 'matches {what} (to within 0.01%)', 'is 0.07% above {what}', 'is 1.20% below {what}'.

    A gap that rounds to zero is called a match rather than printed as `'0.00%'` or `'-0.00%'`."""
    _require_non_negative(measured=measured), _require_positive(reference=reference), _text("what", what)
    if isinstance(digits, int) and digits > 6:
        raise Error(f"digits must be at most 6, got {digits!r:.60}")
    if reference <= 0:
        raise Error(f"reference must be positive, got {reference!r}")
    if isinstance(digits, bool) or not isinstance(digits, int) or digits < 0:
        raise Error(f"digits must be an integer >= 0, got {digits!r}")
    r = 100 * (measured / reference - 1)
    if round(abs(r), digits) == 0:
        return f"matches {what} (to within {10 ** -digits:.{digits}f}%)"
    return f"is {abs(r):.{digits}f}% {'above' if r > 0 else 'below'} {what}"
