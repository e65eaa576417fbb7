"""Published LLM training runs: what was trained, on what, how it was split, and how fast (Chapter 6).

The data, `data/training_runs.json`, holds runs whose papers or vendor pages state the chips, the
parallel layout and a measured speed: PaLM 540B on TPU v4; MaxText's 16B-1T configs on TPU v5e and
v5p; Megatron-LM's weak-scaling GPT models, its ZeRO-3 comparison and its selective-recompute runs,
MT-NLG 530B and BLOOM 176B on A100; torchtitan's Llama 3 8B/70B on A100; MosaicML's MPT benchmarks
on A100 and H100; Llama 3 405B on H100; gpt-oss-120b (MoE) on H100 and B200. Chapter 6 sets
`scalebook.training`'s estimates beside them and `scalebook.published` reports the errors. Every
figure comes from the document named by `source` (a key of `book/references.bib`) at `where`;
`inferred` names the fields deduced rather than stated, and `notes` says from what. `None` means
the source does not say.

Each run has a `role`: `"fit"` runs may be used to tune the model's constants, `"validation"` runs
only test it. The roles follow the rule stated in the data's note (per source and chip, every third
run in order of size, starting from the second), so at most a third of the runs are fitted.

How the fields are counted:

- Parallel degrees multiply to the chip count: dp x fsdp x tp x pp x cp = chips. `ep` (expert
  parallelism) splits experts within the dp x fsdp replicas, so it divides dp x fsdp.
- `batch_seqs` is the global batch in sequences of `seq_len` tokens; `microbatch` is sequences
  per microbatch per data-parallel replica.
- `zero` is the ZeRO stage (0, 1, 2) of the plain data-parallel axis `dp`; `fsdp` > 1 means
  stage 3 over that axis.
- `reported_mfu` and `reported_hfu` are fractions (0.462, not 46.2) of the chip's dense peak;
  HFU counts recomputed FLOPs, MFU does not. `reported_flops_per_s_per_chip` is the paper's own
  per-chip rate, which counts recomputation when `reported_flops_include_recompute` is true.
  `reported_tokens_per_s` is for the whole run, `reported_step_seconds` one optimizer step.

Runs on chips scalebook has no fitted efficiency for, or whose layout is not published, are in
`not_modelled()` with the reason.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ._readable import Readable
from ._data import load
from . import units
from .errors import Error, choose
from .models import Transformer, preset

#: Strategy fields passed to `scalebook.training`, in `estimate_kwargs()["strategy_kwargs"]`.
_STRATEGY_FIELDS = ("dp", "fsdp", "tp", "pp", "virtual_stages", "ep", "cp", "sequence_parallel",
                    "microbatch", "remat", "zero", "flash_attention", "reshard_after_forward",
                    "backward_prefetch", "dropout", "attention_kernel")
#: What a run is for: `fit` runs may tune the model's constants, `validation` runs only test it.
ROLES = ("fit", "validation")
#: Integer flags of `scalebook train-estimate`, in the order of its contract.
_CLI_INT_FLAGS = ("dp", "fsdp", "tp", "pp", "virtual_stages", "ep", "cp")


@dataclass(frozen=True)
class PublishedRun(Readable):
    """One published training run (see the module docstring for how each field is counted).

    `model` is a `scalebook.models` preset name or a read-only mapping of `Transformer` fields.
    """

    id: str
    model: str | Mapping[str, object] = field(hash=False)
    chip: str
    chips: int
    dp: int
    fsdp: int
    tp: int
    pp: int
    virtual_stages: int | None
    ep: int
    cp: int
    sequence_parallel: bool | None
    microbatch: int | None
    batch_seqs: int
    seq_len: int
    dtype: str
    remat: str | None
    flash_attention: bool | None
    zero: int | None
    reported_mfu: float | None
    reported_hfu: float | None
    reported_flops_per_s_per_chip: float | None
    reported_flops_include_recompute: bool | None
    reported_tokens_per_s: float | None
    reported_step_seconds: float | None
    published_params: float
    source: str
    where: str
    inferred: tuple[str, ...]
    notes: str
    role: str = "validation"
    #: FSDP keeps gathered weights from forward to backward when False (`Strategy`); None: not stated.
    reshard_after_forward: bool | None = None
    #: FSDP issues the next layer's gather before a layer's gradient computation (True) or after it
    #: (False: PyTorch FSDP's BACKWARD_POST), as the run's framework sets it; None: not stated (before).
    backward_prefetch: bool | None = None
    #: Trained with dropout (`Strategy.dropout`) as the source states or its framework defaults; None: not stated.
    dropout: bool | None = None
    #: The fused attention kernel the run's framework ran (`Strategy.attention_kernel`); None: not
    #: stated ('native', a kernel written for the chip).
    attention_kernel: str | None = None

    def __post_init__(self):
        if self.role not in ROLES:
            raise Error(f"run {self.id!r}: role must be one of {', '.join(ROLES)}, got {self.role!r}")

    @property
    def model_name(self) -> str:
        """The preset name, or the inline model's `name`."""
        return self.model if isinstance(self.model, str) else str(self.model["name"])

    @property
    def batch_tokens(self) -> int:
        """Global batch in tokens: batch_seqs x seq_len."""
        return self.batch_seqs * self.seq_len

    def throughput_basis(self) -> str | None:
        """Which reported figure `reported_tokens_per_s_per_chip` converts, in the same order."""
        if self.reported_tokens_per_s:
            return "tokens/s"
        if self.reported_step_seconds:
            return "step time"
        if self.reported_flops_per_s_per_chip and self.reported_flops_include_recompute:
            return "TFLOP/s, Megatron count"
        if self.reported_mfu:
            return "MFU"
        return None

    def reported_tokens_per_s_per_chip(self) -> float | None:
        """Training tokens per second per chip, from whatever the source reports.

        Tokens/s or step time directly; otherwise FLOP/s per chip counted with Megatron-LM's formula
        (Narayanan et al. 2021: 96 l h^2 (1 + s / 6h + V / 16 l h) FLOPs per token, a full
        recomputation included), which Megatron, MT-NLG and BLOOM use; otherwise the reported MFU
        against the chip's bf16 peak at 3 x forward FLOPs per token (attention included, as PaLM and
        Llama 3 count MFU). None if the source gives none of these.
        """
        if self.reported_tokens_per_s:
            return self.reported_tokens_per_s / self.chips
        if self.reported_step_seconds:
            return self.batch_tokens / self.reported_step_seconds / self.chips
        if self.reported_flops_per_s_per_chip and self.reported_flops_include_recompute:
            m = self.model_config()
            l, h, s, v = m.layers, m.d_model, self.seq_len, m.vocab
            per_token = 96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))
            return self.reported_flops_per_s_per_chip / per_token
        if self.reported_mfu:  # model FLOPs as chapter 4 counts them: 3 x forward, attention included
            from . import hardware, transformer

            per_token = 3 * transformer.flops_per_token(self.model_config(), seq_len=self.seq_len).forward_flops
            return self.reported_mfu * hardware.chip(self.chip).peak_flops_per_s("bf16") / per_token
        return None

    def model_config(self) -> Transformer:
        """The run's model: the named preset, or a `Transformer` built from the inline fields."""
        return preset(self.model) if isinstance(self.model, str) else Transformer(**self.model)

    def model_json(self) -> dict:
        """The inline model's `Transformer` fields, to write to the JSON file `cli_args` points at.

        Raises `Error` for a preset, which the command takes by name.
        """
        if isinstance(self.model, str):
            raise Error(f"run {self.id!r} uses the preset {self.model!r}; pass its name, not a JSON file")
        return dict(self.model)

    def strategy_kwargs(self) -> dict:
        """Parallel degrees, microbatch, remat, ZeRO stage and matmul dtype; unknown fields left out."""
        kw = {name: getattr(self, name) for name in _STRATEGY_FIELDS if getattr(self, name) is not None}
        kw["matmul_dtype"] = self.dtype
        return kw

    def estimate_kwargs(self) -> dict:
        """Keyword arguments for a training-time estimate: chip, chips, batch_tokens, seq_len, strategy_kwargs."""
        return dict(chip=self.chip, chips=self.chips, batch_tokens=self.batch_tokens, seq_len=self.seq_len,
                    strategy_kwargs=self.strategy_kwargs())

    def cli_args(self, model_path: str | None = None) -> list[str]:
        """Arguments of `scalebook train-estimate` for this run (unknown fields left out).

        An inline model needs `model_path`, where the caller wrote `model_json()`.
        """
        if isinstance(self.model, str):
            model = self.model
        elif model_path is None:
            raise Error(f"run {self.id!r} has an inline model; write run.model_json() to a file and "
                        "pass its path as model_path")
        else:
            model = str(model_path)
        args = [model, "--chip", self.chip, "--chips", str(self.chips)]
        for name in _CLI_INT_FLAGS:
            value = getattr(self, name)
            if value is not None:
                args += [f"--{name.replace('_', '-')}", str(value)]
        if self.sequence_parallel:
            args.append("--sequence-parallel")
        if self.flash_attention is False:
            args.append("--no-flash-attention")
        if self.reshard_after_forward is False:
            args.append("--no-reshard-after-forward")
        if self.backward_prefetch is False:
            args.append("--no-backward-prefetch")
        if self.dropout:
            args.append("--dropout")
        if self.attention_kernel is not None:
            args += ["--attention-kernel", self.attention_kernel]
        if self.microbatch is not None:
            args += ["--microbatch", str(self.microbatch)]
        args += ["--batch-seqs", str(self.batch_seqs), "--seq-len", str(self.seq_len), "--dtype", self.dtype]
        if self.remat is not None:
            args += ["--remat", self.remat]
        if self.zero is not None:
            args += ["--zero", str(self.zero)]
        return args

    def __repr__(self) -> str:
        layout = " ".join(f"{name}={getattr(self, name)}" for name in ("dp", "fsdp", "tp", "pp", "ep", "cp")
                          if getattr(self, name) not in (None, 1))
        reported = [f"MFU {units.fmt_percent(self.reported_mfu, 1)}" if self.reported_mfu else "",
                    f"HFU {units.fmt_percent(self.reported_hfu, 1)}" if self.reported_hfu else "",
                    f"{self.reported_flops_per_s_per_chip / 1e12:g} TFLOP/s/chip"
                    if self.reported_flops_per_s_per_chip else ""]
        return (f"PublishedRun({self.id!r}: {self.model_name} on {self.chips} {self.chip}, {layout or 'dp=1'}, "
                f"batch {self.batch_seqs} x {self.seq_len}, {', '.join(r for r in reported if r)}; {self.source}; "
                f"{self.role})")


@dataclass(frozen=True)
class NotModelled:
    """A published run left out of `published_runs()`, with what it reports and why it is left out."""

    id: str
    source: str
    where: str
    reason: str
    reported: str


def from_entry(cls, entry: dict):
    """An instance of the dataclass `cls` from one JSON entry: an inline model becomes a read-only
    mapping and `inferred` a tuple (shared with `scalebook.serving_results`)."""
    model = entry["model"] if isinstance(entry["model"], str) else MappingProxyType(dict(entry["model"]))
    return cls(**{**entry, "model": model, "inferred": tuple(entry["inferred"])})


def _run(entry: dict) -> PublishedRun:
    return from_entry(PublishedRun, entry)


@functools.lru_cache(maxsize=None)
def published_runs() -> tuple[PublishedRun, ...]:
    """Every modelled run in `data/training_runs.json`, in file order."""
    return tuple(_run(e) for e in load("training_runs")["runs"])


def runs_with_role(role: str) -> tuple[PublishedRun, ...]:
    """The runs whose `role` is `role` ('fit' or 'validation'), in file order; another role raises `Error`.

    >>> {r.role for r in runs_with_role("fit")}
    {'fit'}
    """
    choose("role", role, list(ROLES))
    return tuple(r for r in published_runs() if r.role == role)


def run_ids() -> list[str]:
    """Ids accepted by `published_run`."""
    return [r.id for r in published_runs()]


def published_run(id: str) -> PublishedRun:
    """The run with this id; an unknown id raises `Error` listing the valid ones.

    >>> published_run("palm-540b-tpuv4").chips
    6144
    """
    choose("published run", id, run_ids())
    return next(r for r in published_runs() if r.id == id)


@functools.lru_cache(maxsize=None)
def not_modelled() -> tuple[NotModelled, ...]:
    """Published runs left out (unmodelled chip or unpublished layout), each with its reason."""
    names = [f.name for f in dataclasses.fields(NotModelled)]
    return tuple(NotModelled(**{k: e[k] for k in names}) for e in load("training_runs")["not_modelled"])
