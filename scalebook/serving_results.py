"""Published LLM serving (inference) results: what was served, on what, how it was split, how fast (Chapter 8).

The data, `data/serving_results.json`, holds results whose sources state the chips, the batch, the
prompt and output lengths and a measured latency or throughput: so far Pope et al. (2022), PaLM
540B and 62B on TPU v4, each phase (prefill, decode) in a low-latency and a high-throughput
configuration. Chapter 8 sets `scalebook.inference`'s estimates beside them. Every figure comes
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
- `published_params`: the model size the source states, to check the model's count against.

Results on chips scalebook has no fitted efficiency for, or without a fixed shape and an absolute figure, are in
`not_modelled()` with the reason.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Mapping

from ._data import load
from .errors import Error, choose
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
class PublishedServing:
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
        reported = ", ".join(f"{label} {getattr(self, name) * scale:.4g} {unit}".replace(" %", "%").strip()
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
