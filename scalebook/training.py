"""How long a training step takes on many chips, how much memory it needs, and what MFU it gets.

Chapter 5 of the book derives the model, chapter 6 applies it to LLaMA 3 and checks it against
published runs. `estimate` prices one `Strategy` (see `scalebook.strategy`) with the step model
of `scalebook.step`; `planner.plan` searches all of them.

Conventions:

- Model FLOPs per step = 3 x forward matmul FLOPs per token (attention at the sequence length,
  causal) x tokens: what MFU counts (Chowdhery et al. 2022, appendix B). Hardware FLOPs add
  what remat recomputes: what HFU counts.
- MFU = model FLOPs / (step seconds x chips x peak), HFU the same with hardware FLOPs; the peak is
  the dense peak of the dtype the matmuls run in (bf16, or fp8 where the chip has it).
- `efficiency` is the fraction of peak FLOP/s that the matmuls achieve while they run: kernel
  efficiency, not communication (which the model prices). Its default is fitted on the published
  runs marked 'fit' (`fit_runs`, chapter 6): one constant for TPUs, one per GPU generation that
  has fit runs (Ampere, Hopper), and one over every GPU fit run for the GPUs of a generation
  without any (`efficiency_family`); pass your own to explore.
- Memory per chip counts weights, gradients, Adam state (two moments and a master copy),
  FSDP's gathered layers, saved activations of the microbatches in flight, and the fp32 logits of
  one microbatch. It leaves out framework workspace and fragmentation, so "fits" is optimistic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ._readable import Readable
from . import collectives, step, units
from . import efficiency as efficiency_
from ._data import load
from .errors import Error, require_positive
from .errors import MAX_CHIPS, MAX_COUNT, MAX_TOKENS, require_count as _require_count  # noqa: F401
from .errors import instance as _instance, integer as _integer, number as _number, text as _text
from .errors import model as _as_model
from .hardware import Chip, chip as _chip
from .models import Transformer
from .strategy import KINDS, POLICY_NAMES, Placement, Strategy, place
from .topology import Topology, for_chips

__all__ = ["Strategy", "TrainingEstimate", "StepCollective", "MemoryPerChip", "estimate", "default_efficiency",
           "efficiency_family", "efficiency_families",
           "critical_batch_per_chip", "rule_of_thumb_batch_per_chip", "max_tp_degree", "check_fits_model",
           "fit_efficiency", "refit_default_efficiency", "price_per_chip_hour", "link_bytes_per_s",
           "pipeline_bubble_fraction", "min_expert_width", "min_context_chunk", "fit_runs", "tp_overlap_slowdown"]


def efficiency_families() -> tuple[str, ...]:
    """The names whose matmul efficiency is fitted: 'tpu', 'gpu' and each GPU generation with fit runs."""
    return tuple(k for k, v in load("training_efficiency").items() if isinstance(v, dict) and "efficiency" in v)


def efficiency_family(chip: "str | Chip") -> str:
    """Whose fitted efficiency `chip` takes: 'tpu'; its GPU generation ('ampere', 'hopper') where
    `data/training_efficiency.json` fits one (the entry lists its `chips`); else 'gpu', fitted on
    every GPU fit run (Blackwell today: no published Blackwell run is marked 'fit').

    A generation is one Tensor Core design: its chips run the same kernels, so a kernel's fraction of
    peak carries over between them (H200 is a Hopper GPU like H100, with more and faster HBM,
    nvidiah200), not across generations (Hopper's fourth-generation Tensor Cores and Tensor Memory
    Accelerator are new, nvidiahopperwp).
    """
    c = _chip(chip)
    if c.is_tpu:
        return "tpu"
    for family, entry in load("training_efficiency").items():
        if isinstance(entry, dict) and c.name in entry.get("chips", ()):
            return family
    return "gpu"


def default_efficiency(chip: "str | Chip") -> float:
    """Achieved matmul efficiency of `chip`'s efficiency family (`efficiency_family`), fitted in chapter 6.

    Stored in `data/training_efficiency.json` with the runs it was fitted on (`fitted_on`);
    regenerate with `tools/fit_efficiency.py` (a test checks each stored value still reproduces
    its fit).
    """
    return float(load("training_efficiency")[efficiency_family(chip)]["efficiency"])


def price_per_chip_hour(chip: "str | Chip") -> float | None:
    """On-demand price in USD per chip-hour where the spec data has one (Austin et al. 2025)."""
    c = _chip(chip)
    prices = load("hardware_specs")["pricing_usd_per_hour"]
    key = c.display_name.split(" (")[0]
    value = prices.get(key)
    return float(value) if isinstance(value, (int, float)) else None


# --- results ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class StepCollective(Readable):
    """One kind of collective a step runs: `count` times per step, `seconds` each.

    `array_bytes` is V in `collectives`' convention (the array whole along `axes`); `per_layer`
    says it repeats for every layer of the chip's pipeline stage (`count` already includes that).
    """

    parallelism: str
    purpose: str
    kind: str
    axes: tuple[str, ...]
    array_bytes: float
    count: float
    per_layer: bool
    seconds: float

    @property
    def total_seconds(self) -> float:
        return self.count * self.seconds

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"StepCollective({self.parallelism}: {collectives.label(self.kind)} over {'x'.join(self.axes)}, "
                f"V={f(self.array_bytes, 'B')}, {self.count:g}x {f(self.seconds, 's')} = {f(self.total_seconds, 's')}"
                f" -- {self.purpose})")


@dataclass(frozen=True)
class MemoryPerChip(Readable):
    """Bytes one chip holds during a step, by part (module docstring), against its HBM."""

    params_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    gathered_weights_bytes: float
    activation_bytes: float
    logits_bytes: float
    hbm_bytes: float

    @property
    def bytes(self) -> float:
        return sum(self.parts().values())

    @property
    def fits(self) -> bool:
        return bool(self.bytes <= self.hbm_bytes)

    def parts(self) -> dict[str, float]:
        return {"parameters": self.params_bytes, "gradients": self.grads_bytes, "optimizer": self.optimizer_bytes,
                "gathered weights": self.gathered_weights_bytes, "activations": self.activation_bytes,
                "logits": self.logits_bytes}

    def __repr__(self) -> str:
        f = units.format_quantity
        inner = ", ".join(f"{k} {f(v, 'B')}" for k, v in self.parts().items() if v)
        return f"MemoryPerChip({f(self.bytes, 'B')} of {f(self.hbm_bytes, 'B')}{'' if self.fits else ' -- DOES NOT FIT'}: {inner})"


@dataclass(frozen=True)
class TrainingEstimate(Readable):
    """The result of `estimate`: time, memory and utilisation of one training step.

    Times are seconds per step on one chip. `compute_seconds` = `matmul_seconds` (FLOPs at the
    achieved peak) + `memory_bound_seconds` (norms, activations, softmax through HBM).
    `comm_seconds` is each parallelism's collective time, `exposed_seconds` the part of it not
    hidden behind compute; step = compute + exposed + bubble + optimizer.
    """

    model_name: str
    chip: Chip
    topology: Topology
    strategy: Strategy
    placement: Placement
    batch_tokens: float
    seq_len: int
    efficiency: float
    microbatches: int
    model_flops: float
    hardware_flops: float
    compute_seconds: float
    matmul_seconds: float
    memory_bound_seconds: float
    comm_seconds: Mapping[str, float]
    exposed_seconds: Mapping[str, float]
    bubble_seconds: float
    optimizer_seconds: float
    step_seconds: float
    memory: MemoryPerChip
    collectives: tuple[StepCollective, ...] = field(repr=False)
    peak_flops_per_s: float = 0.0

    @property
    def chips(self) -> int:
        return self.topology.num_chips

    @property
    def fits(self) -> bool:
        return self.memory.fits

    @property
    def tokens_per_s(self) -> float:
        return self.batch_tokens / self.step_seconds

    @property
    def tokens_per_s_per_chip(self) -> float:
        return self.tokens_per_s / self.chips

    @property
    def model_flops_per_s_per_chip(self) -> float:
        return self.model_flops / self.step_seconds / self.chips

    @property
    def mfu(self) -> float:
        return self.model_flops_per_s_per_chip / self.peak_flops_per_s

    @property
    def hfu(self) -> float:
        return self.hardware_flops / self.step_seconds / self.chips / self.peak_flops_per_s

    @property
    def exposed_comm_seconds(self) -> float:
        return sum(self.exposed_seconds.values())

    def days(self, tokens: float) -> float:
        """Days to train on `tokens` tokens at this step rate."""
        require_positive(tokens=tokens)
        return tokens / self.tokens_per_s / 86400

    def chip_hours(self, tokens: float) -> float:
        return self.days(tokens) * 24 * self.chips

    def cost_usd(self, tokens: float, usd_per_chip_hour: float | None = None) -> float:
        """Chip-hours x price; the default price is the spec data's on-demand one, if any."""
        price = usd_per_chip_hour if usd_per_chip_hour is not None else price_per_chip_hour(self.chip)
        if price is None:
            raise Error(f"no price per chip-hour for {self.chip.name} in the spec data; pass usd_per_chip_hour")
        require_positive(usd_per_chip_hour=price)
        return self.chip_hours(tokens) * price

    def breakdown(self) -> dict[str, float]:
        """Step seconds by part: compute, each exposed collective time, bubble, optimizer."""
        d = {"matmuls": self.matmul_seconds, "memory-bound ops": self.memory_bound_seconds}
        d.update({f"{k} (exposed)": v for k, v in self.exposed_seconds.items() if v > 0})
        d["pipeline bubble"] = self.bubble_seconds
        d["optimizer update"] = self.optimizer_seconds
        return {k: v for k, v in d.items() if v > 0 or k == "matmuls"}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields (the `train-estimate --json` contract)."""
        s = self.strategy
        return {
            "model": self.model_name, "chip": self.chip.name, "chips": self.chips, "topology": self.topology.shape,
            "strategy": {**s.degrees(), "sequence_parallel": s.sequence_parallel, "schedule": s.schedule,
                         "virtual_stages": s.virtual_stages, "microbatch": self.microbatch_seqs, "remat": s.remat,
                         "zero": s.zero, "dtype": s.matmul_dtype, "label": s.label()},
            "placement": {g: list(self.placement.groups[g]) for g in KINDS + ("ep",) if self.placement.size(g) > 1},
            "batch_tokens": self.batch_tokens, "seq_len": self.seq_len, "microbatches": self.microbatches,
            "efficiency": self.efficiency, "peak_flops_per_s": self.peak_flops_per_s,
            "step_seconds": self.step_seconds, "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_chip": self.tokens_per_s_per_chip,
            "model_flops_per_s_per_chip": self.model_flops_per_s_per_chip, "mfu": self.mfu, "hfu": self.hfu,
            "model_flops_per_step": self.model_flops, "hardware_flops_per_step": self.hardware_flops,
            "memory_bytes_per_chip": self.memory.bytes, "hbm_bytes_per_chip": self.memory.hbm_bytes,
            "fits": bool(self.fits),
            "memory_bytes": {k.replace(" ", "_"): v for k, v in self.memory.parts().items()},
            "compute_seconds": self.compute_seconds, "matmul_seconds": self.matmul_seconds,
            "memory_bound_seconds": self.memory_bound_seconds,
            "comm_seconds": dict(self.comm_seconds), "exposed_seconds": dict(self.exposed_seconds),
            "bubble_seconds": self.bubble_seconds, "optimizer_seconds": self.optimizer_seconds,
            "breakdown_seconds": self.breakdown(),
            "collectives": [
                {"parallelism": c.parallelism, "purpose": c.purpose, "kind": c.kind, "axes": list(c.axes),
                 "array_bytes": c.array_bytes, "count": c.count, "seconds_each": c.seconds} for c in self.collectives],
        }

    @property
    def microbatch_seqs(self) -> int:
        return int(round(self.batch_tokens / self.seq_len / self.strategy.data / self.microbatches))

    def __repr__(self) -> str:
        f = units.format_quantity
        fit = "fits" if self.fits else "DOES NOT FIT"
        return (f"TrainingEstimate({self.model_name} on {self.chips} {self.chip.name}, {self.strategy.label()}: "
                f"step {f(self.step_seconds, 's')}, MFU {units.fmt_percent(self.mfu, 1)}, "
                f"{f(self.tokens_per_s_per_chip, 'token/s')} per chip, memory {f(self.memory.bytes, 'B')} ({fit}))")

    def _repr_html_(self) -> str:
        f = units.format_quantity
        rows = [(k, f(v, "s"), f"{units.fmt_percent(v / self.step_seconds, 1)}") for k, v in self.breakdown().items()]
        body = "".join(f"<tr><td>{a}</td><td style='text-align:right'>{b}</td><td style='text-align:right'>{c}</td>"
                       f"</tr>" for a, b, c in rows)
        mem = "".join(f"<tr><td>{k}</td><td style='text-align:right'>{f(v, 'B')}</td><td></td></tr>"
                      for k, v in self.memory.parts().items() if v)
        cap = (f"{self.model_name} on {self.chips} {self.chip.display_name}, {self.strategy.label()}: step "
               f"{f(self.step_seconds, 's')}, MFU {units.fmt_percent(self.mfu, 1)}, memory {f(self.memory.bytes, 'B')} of "
               f"{f(self.memory.hbm_bytes, 'B')}")
        return (f"<table><caption>{cap}</caption><thead><tr><th>part</th><th>seconds</th><th>share</th></tr></thead>"
                f"<tbody>{body}<tr><th colspan=3 style='text-align:left'>memory per chip</th></tr>{mem}</tbody></table>")


# --- validation --------------------------------------------------------------------------------

def check_fits_model(model: Transformer, strategy: Strategy, seq_len: int) -> None:
    """Raise `Error` where a degree cannot split this model (heads, width, layers, experts, T)."""
    model = _as_model(model)
    _instance('strategy', strategy, Strategy)
    _integer('seq_len', seq_len)
    s = strategy
    if model.heads % s.tp:
        raise Error(f"tp={s.tp} must divide the {model.heads} query heads of {model.name}")
    if s.tp > model.kv_heads and s.tp % model.kv_heads or s.tp < model.kv_heads and model.kv_heads % s.tp:
        raise Error(f"tp={s.tp} and the {model.kv_heads} kv heads of {model.name} must divide one another")
    width = model.d_ff or model.expert_d_ff
    if width % s.tp:
        raise Error(f"tp={s.tp} must divide the MLP width {width} of {model.name}")
    if s.pp > model.layers:
        raise Error(f"pp={s.pp} stages for {model.layers} layers: at most {model.layers}")
    if s.pp * s.virtual_stages > model.layers:
        raise Error(f"pp x virtual_stages = {s.pp * s.virtual_stages} exceeds the {model.layers} layers")
    if s.ep > 1 and not model.is_moe:
        raise Error(f"ep={s.ep} needs a mixture-of-experts model; {model.name} is dense")
    if s.ep > 1 and model.routed_experts % s.ep:
        raise Error(f"ep={s.ep} must divide the {model.routed_experts} routed experts of {model.name}")
    if seq_len % s.cp:
        raise Error(f"cp={s.cp} must divide the sequence length {seq_len}")


def _microbatch(strategy: Strategy, replica_seqs: int) -> int:
    if strategy.microbatch is not None:
        return strategy.microbatch
    return 1 if strategy.pp > 1 else replica_seqs


def _batch(batch_tokens: float | None, batch_seqs: int | None, seq_len: int) -> float:
    if (batch_tokens is None) == (batch_seqs is None):
        raise Error("give exactly one of batch_tokens (tokens per step) or batch_seqs (sequences per step)")
    if batch_seqs is not None:
        batch_seqs = _require_count("batch_seqs", batch_seqs, maximum=MAX_TOKENS)
        return float(batch_seqs * seq_len)
    require_positive(batch_tokens=batch_tokens)
    seqs = round(batch_tokens / seq_len)  # "4M tokens" of 2,048-token sequences: 1,953 sequences
    if seqs < 1:
        raise Error(f"batch_tokens={batch_tokens:g} is less than one {seq_len}-token sequence")
    return float(seqs * seq_len)


def setting(model: Transformer, *, topology: Topology, strategy: Strategy, batch_tokens: float, seq_len: int,
            efficiency: float | None) -> step.Setting:
    """The strategy-independent inputs of the step model (dtypes come from `strategy`)."""
    model = _as_model(model)
    c = topology.chip
    eff = default_efficiency(c) if efficiency is None else efficiency
    require_positive(efficiency=eff)
    if eff > 1:
        raise Error(f"efficiency is a fraction of peak FLOP/s, at most 1; got {eff:g}")
    s = strategy
    b = units.dtype_bytes
    master = b(s.master_dtype) if s.master_dtype else 0.0
    peak = c.peak_flops_per_s(c.compute_dtype(s.matmul_dtype))
    attention = efficiency_.attention_flops_per_s(c, s.attention_kernel, matmul_flops_per_s=peak * eff)
    return step.Setting(
        model=model, facts=step.model_facts(model, seq_len), topology=topology, batch_tokens=batch_tokens,
        seq_len=seq_len, peak_flops_per_s=c.peak_flops_per_s(c.compute_dtype(s.matmul_dtype)), efficiency=eff,
        param_bytes=b(s.param_dtype), grad_bytes=b(s.grad_dtype),
        optimizer_bytes_per_param=2 * b(s.optimizer_dtype) + master, activation_bytes=b(s.activation_dtype),
        flash_attention=s.flash_attention, activation_dtype=s.activation_dtype,
        tp_overlap_slowdown=tp_overlap_slowdown(), dropout=s.dropout,
        attention_forward_flops_per_s=attention.forward_flops_per_s,
        attention_backward_flops_per_s=attention.backward_flops_per_s)


def tp_overlap_slowdown() -> float:
    """Seconds of matmul time lost per second of TP traffic hidden behind the matmuls (`tp_overlap`).

    While a collective matmul communicates, part of the chip (SMs driving NCCL kernels, or the
    DMA and vector work of XLA's decomposed collective) is not computing. The value is Calculon's
    `processor_usage` of the NVLink network in its A100 and H100 system files (Isaev et al. 2023);
    the package applies it to TPU ICI as well, having no TPU measurement. Stored with its source in
    `data/training_efficiency.json`.
    """
    return float(load("training_efficiency")["tp_overlap"]["compute_slowdown"])


def arrays(strategies: "list[Strategy]", micro: "list[int]") -> dict[str, np.ndarray]:
    """The `step.evaluate` input arrays for a list of strategies and their microbatch sizes."""
    col = lambda f: np.array([f(s) for s in strategies])  # noqa: E731
    return dict(dp=col(lambda s: s.dp), fsdp=col(lambda s: s.fsdp), tp=col(lambda s: s.tp), pp=col(lambda s: s.pp),
                ep=col(lambda s: s.ep), cp=col(lambda s: s.cp), virtual_stages=col(lambda s: s.virtual_stages),
                microbatch=np.array(micro), remat=col(lambda s: POLICY_NAMES.index(s.remat)),
                sp=col(lambda s: int(s.sequence_parallel)), zero=col(lambda s: s.zero),
                schedule=col(lambda s: step.SCHEDULE_INDEX[s.schedule]), tp_overlap=col(lambda s: int(s.tp_overlap)),
                reshard_after_forward=col(lambda s: int(s.reshard_after_forward)),
                backward_prefetch=col(lambda s: int(s.backward_prefetch)))


# --- estimate ----------------------------------------------------------------------------------

def _resolve_topology(chip, chips, topology) -> Topology:
    if topology is not None:
        if not isinstance(topology, Topology):
            raise Error(f"topology must be a scalebook.topology.Topology, got {type(topology).__name__}")
        if chip is not None and _chip(chip).name != topology.chip.name:
            raise Error(f"chip {_chip(chip).name} differs from the topology's {topology.chip.name}")
        if chips is not None and chips != topology.num_chips:
            raise Error(f"chips={chips} but the topology has {topology.num_chips}")
        return topology
    if chip is None or chips is None:
        raise Error("give chip and chips, or a topology")
    return for_chips(chip, chips)


def estimate(model: Transformer, *, strategy: Strategy, seq_len: int, batch_tokens: float | None = None,
             batch_seqs: int | None = None, chip: "str | Chip | None" = None, chips: int | None = None,
             topology: Topology | None = None, efficiency: float | None = None) -> TrainingEstimate:
    """Time, memory and MFU of one training step of `model` under `strategy` (Chapter 5).

    Give the chips as `chip` and `chips` (laid out by `topology.for_chips`) or as a `topology`.
    The batch is `batch_tokens` (rounded to whole sequences) or `batch_seqs` per step, of `seq_len`
    tokens each; it must split evenly over the dp x fsdp replicas. The step model
    and its assumptions: `scalebook.step`; conventions: this module's docstring.
    """
    return _estimator(model, strategy=strategy, seq_len=seq_len, batch_tokens=batch_tokens, batch_seqs=batch_seqs,
                      chip=chip, chips=chips, topology=topology)(efficiency)


def _estimator(model: Transformer, *, strategy: Strategy, seq_len: int, batch_tokens: float | None = None,
               batch_seqs: int | None = None, chip: "str | Chip | None" = None, chips: int | None = None,
               topology: Topology | None = None) -> "Callable[[float | None], TrainingEstimate]":
    """`estimate` of these inputs as a function of `efficiency`, for fits that call it many times.

    The inputs are checked, the strategy placed and its groups described once; each call prices
    the step at its efficiency (`setting`, `step.evaluate`). Collectives depend on bytes and
    links, not on the efficiency: `step.price` keeps what it priced on each group (`step.PRICED`),
    and the step's list of collectives is made again only when the step's structure differs
    (`_from_row`). The same numbers as `estimate` with that efficiency.
    """
    model = _as_model(model)
    _instance('strategy', strategy, Strategy)
    if not isinstance(model, Transformer):
        raise Error(f"model must be a scalebook.models.Transformer (e.g. models.preset('llama3-70b')), "
                    f"got {type(model).__name__}")
    if not isinstance(strategy, Strategy):
        raise Error(f"strategy must be a scalebook.training.Strategy, got {type(strategy).__name__}")
    seq_len = _require_count("seq_len", seq_len, maximum=MAX_TOKENS)
    topo = _resolve_topology(chip, chips, topology)
    tokens = _batch(batch_tokens, batch_seqs, seq_len)
    check_fits_model(model, strategy, seq_len)
    pl = place(strategy, topo)
    seqs = round(tokens / seq_len)
    if seqs % strategy.data:
        raise Error(f"{seqs} sequences per step do not split over dp x fsdp = {strategy.data} replicas; "
                    f"use a batch that is a multiple of {strategy.data} sequences")
    replica = seqs // strategy.data
    mb = _microbatch(strategy, replica)
    if replica % mb:
        raise Error(f"microbatch={mb} does not divide the {replica} sequences of each data-parallel replica")
    # each group keeps its priced collectives: no efficiency changes them (`step.PRICED`)
    groups = {g: {**step.stack([step.describe(pl, g)]), step.PRICED: {}} for g in pl.groups}
    arr = arrays([strategy], [mb])
    priced: dict = {}  # the step's collectives, by the structure they depend on

    def at(efficiency: float | None) -> TrainingEstimate:
        st = setting(model, topology=topo, strategy=strategy, batch_tokens=tokens, seq_len=seq_len,
                     efficiency=efficiency)
        return _from_row(model, st, strategy, pl, step.evaluate(st, arr, groups), 0, priced)

    return at


def _from_row(model: Transformer, st: step.Setting, strategy: Strategy, pl: Placement,
              r: Mapping[str, np.ndarray], i: int, priced: "dict | None" = None) -> TrainingEstimate:
    """The `TrainingEstimate` of row `i` of a `step.evaluate` result (`r`), priced under `st`.

    `estimate` calls it on its one-row evaluation and `planner.plan` on the rows of its search, so
    a plan's strategies carry exactly the numbers `estimate` gives them. Trusts its inputs: the
    strategy is row `i`'s (its microbatch count, placement `pl` and setting `st` dtypes), already
    checked. `priced`, where given, keeps the step's collectives (`_collectives`) of earlier calls
    with the same strategy, placement, model and batch, by the numbers of the row they read: a
    fit that varies only the efficiency prices them once.
    """
    topo, tokens, seq_len = st.topology, st.batch_tokens, st.seq_len
    r = {k: v[i] if np.ndim(v) else np.asarray(v)[()] for k, v in r.items()}  # numpy scalars, as one row gives
    if priced is None:
        steps = _collectives(st, strategy, pl, r)
    else:
        shape = tuple(r[k] for k in ("microbatches", "stage_layers", "dense_stage_params", "expert_stage_params"))
        if shape not in priced:
            priced[shape] = _collectives(st, strategy, pl, r)
        steps = priced[shape]
    kinds = ("tp", "fsdp", "dp", "pp", "ep", "cp")
    mem = MemoryPerChip(params_bytes=r["params_bytes"], grads_bytes=r["grads_bytes"],
                        optimizer_bytes=r["optimizer_bytes"], gathered_weights_bytes=r["gathered_weights_bytes"],
                        activation_bytes=r["activation_bytes"], logits_bytes=r["logits_bytes"],
                        hbm_bytes=topo.chip.hbm_bytes)
    return TrainingEstimate(
        model_name=model.name, chip=topo.chip, topology=topo, strategy=strategy, placement=pl,
        batch_tokens=tokens, seq_len=seq_len, efficiency=st.efficiency, microbatches=int(round(r["microbatches"])),
        model_flops=float(r["model_flops"]), hardware_flops=float(r["hardware_flops"]),
        compute_seconds=float(r["compute"]), matmul_seconds=float(r["matmul"]),
        memory_bound_seconds=float(r["vector"]), comm_seconds={k: float(r[k]) for k in kinds},
        exposed_seconds={k: float(r[f"exposed_{k}"]) for k in kinds}, bubble_seconds=float(r["bubble"]),
        optimizer_seconds=float(r["optimizer"]), step_seconds=float(r["step"]), memory=mem,
        collectives=steps, peak_flops_per_s=st.peak_flops_per_s)


def _collectives(st: step.Setting, s: Strategy, pl: Placement, r: Mapping[str, float]) -> tuple[StepCollective, ...]:
    """The step's collectives priced one by one with `collectives.cost` (the chapter 3 formulas)."""
    topo, n, m = pl.topology, r["microbatches"], st.facts
    b_act = units.dtype_bytes(st.activation_dtype)
    tok = st.batch_tokens / st.seq_len / s.data / n * st.seq_len / s.cp
    layers = r["stage_layers"]
    full = s.remat == "full"
    out: list[StepCollective] = []

    def add(par, purpose, kind, group, v, count, per_layer):
        axes = pl.groups[group]
        if not axes or pl.size(group) == 1 or v <= 0 or count <= 0:
            return
        c = collectives.cost(kind, topo, axes=axes, bytes_=v)
        out.append(StepCollective(parallelism=par, purpose=purpose, kind=c.kind, axes=axes, array_bytes=v,
                                  count=float(count), per_layer=per_layer, seconds=c.seconds))

    v_tp = tok * m.d_model * b_act
    per = (2 + (2 if full else 0)) * layers * n
    if s.sequence_parallel:
        add("tp", "activations gathered before attention and MLP (forward, recompute)", "all-gather", "tp", v_tp, per, True)
        add("tp", "partial outputs reduce-scattered after attention and MLP (forward, recompute)", "reduce-scatter",
            "tp", v_tp, per, True)
        add("tp", "input gradients gathered and reduce-scattered (backward)", "all-gather", "tp", v_tp, 2 * layers * n, True)
        add("tp", "input gradients reduce-scattered (backward)", "reduce-scatter", "tp", v_tp, 2 * layers * n, True)
    else:
        add("tp", "partial outputs of attention and MLP summed (forward, recompute)", "all-reduce", "tp", v_tp, per, True)
        add("tp", "input gradients of attention and MLP summed (backward)", "all-reduce", "tp", v_tp, 2 * layers * n, True)
    if s.tp > 1:
        if s.pp == 1:
            add("tp", "embedding rows looked up in each vocab shard and summed, forward pass", "all-reduce", "tp", v_tp, n,
                False)
        add("tp", "unembedding input gradient summed over vocab shards, backward pass", "all-reduce", "tp", v_tp, n, False)
        add("tp", "softmax max, sum and target logit over vocab shards (per token, fp32)", "all-reduce", "tp",
            tok * 4.0, 3 * n, False)
    dense, expert = r["dense_stage_params"], r["expert_stage_params"]
    layer_w = m.layer_dense_params / m.layers
    top = m.other_params / min(s.pp, 2)
    add("fsdp", "embedding, unembedding and final norm gathered (forward)", "all-gather", "fsdp",
        top * st.param_bytes / s.tp, n, False)
    add("fsdp", "embedding, unembedding and final norm gradients reduce-scattered", "reduce-scatter", "fsdp",
        top * st.grad_bytes / s.tp, n, False)
    add("fsdp", "weights gathered before the forward pass", "all-gather", "fsdp", layer_w * st.param_bytes / s.tp,
        layers * n, True)
    if s.reshard_after_forward:
        add("fsdp", "weights gathered again for the backward pass", "all-gather", "fsdp",
            layer_w * st.param_bytes / s.tp, layers * n, True)
    add("fsdp", "weight gradients reduce-scattered", "reduce-scatter", "fsdp", layer_w * st.grad_bytes / s.tp,
        layers * n, True)
    if m.moe_layers:
        ew = m.layer_expert_params / m.layers
        add("fsdp", "expert weights gathered (forward and backward)" if s.reshard_after_forward
            else "expert weights gathered (forward, kept for backward)", "all-gather", "expert_fsdp",
            ew * st.param_bytes / (s.tp * s.ep), (2 if s.reshard_after_forward else 1) * layers * n, True)
        add("fsdp", "expert gradients reduce-scattered", "reduce-scatter", "expert_fsdp",
            ew * st.grad_bytes / (s.tp * s.ep), layers * n, True)
    efsdp = s.fsdp // s.ep if s.ep <= s.fsdp else 1
    add("dp", "weight gradients summed over data-parallel replicas", "all-reduce", "grad",
        dense * st.grad_bytes / (s.tp * s.fsdp), 1, False)
    add("dp", "expert gradients summed over their replicas", "all-reduce", "expert_grad",
        expert * st.grad_bytes / (s.tp * s.ep * efsdp), 1, False)
    v_pp = s.pp * tok * m.d_model * b_act / (s.tp if s.sequence_parallel else 1)
    add("pp", "activations to the next stage and gradients back", "collective-permute", "pp", v_pp,
        2 * s.virtual_stages * n, False)
    if m.moe_layers:
        moe = m.moe_layers * layers / m.layers
        add("ep", "tokens sent to their experts and back (dispatch, combine)", "all-to-all", "ep",
            s.ep * (tok / s.tp) * m.experts_per_token * m.d_model * b_act, (4 + (2 if full else 0)) * moe * n, True)
    kv = tok * 2 * m.kv_width * b_act / min(s.tp, m.kv_heads)
    add("cp", "keys and values passed round the ring (ring attention)", "collective-permute", "cp", s.cp * kv,
        (3 + (1 if full else 0)) * (s.cp - 1) * layers * n, True)
    return tuple(out)


# --- thresholds (Chapter 5) ----------------------------------------------------------------------

def critical_batch_per_chip(model: Transformer, *, strategy: Strategy, seq_len: int,
                            chip: "str | Chip | None" = None, chips: int | None = None,
                            topology: Topology | None = None, efficiency: float | None = None) -> float:
    """Tokens per chip per step above which the FSDP and DP traffic hides behind compute.

    FSDP and DP move the weights whatever the batch, while compute grows with it, so each has a
    batch B* where its traffic fits the compute that hides it (`step.evaluate`): FSDP's gather of
    each layer within a layer's forward compute, and a gather plus a reduce-scatter within a
    layer's backward compute; DP's AllReduce within the last microbatch's backward pass, together
    with the FSDP traffic of that pass when both use the same network; and FSDP's network as a
    whole busy no longer than the step (every gather and scatter, the embedding tables' too, and
    DP's AllReduce when it shares that network, within the compute plus the first gather and the
    optimizer update). This returns the largest B*, in tokens per chip per microbatch; at and
    above it `estimate` has no exposed DP time and exposes of FSDP only the first gather of each
    microbatch (layer 0 and the embedding tables), which nothing precedes. Returns 0 when the
    strategy has no FSDP or DP traffic.

    B* counts the tokens of one microbatch, not of the step: FSDP gathers every layer again for
    each microbatch, so a step cut into m microbatches needs m x B* tokens per chip, and a fixed
    `microbatch` of fewer tokens per chip than B* never hides its traffic, whatever the batch
    (Chapter 5: "b is the tokens per chip per microbatch"). The strategy's `microbatch`, when
    set, is only the smallest microbatch the search tries.

    Compute is not linear in the batch: matmuls are priced by their shape (`step._shape_ratio`:
    tile and wave quantisation, small matmuls bound by HBM), so a token costs more in a small
    microbatch. B* is therefore found numerically: the compute per token is taken at a microbatch
    of B* itself (in whole sequences per replica, at least the strategy's microbatch), starting
    from the strategy's microbatch and repeating until the sequence count stops changing (at
    most 30 rounds; the largest B* seen if it cycles between neighbouring counts).
    """
    model = _as_model(model)
    _instance('strategy', strategy, Strategy)
    topo = _resolve_topology(chip, chips, topology)
    mb = strategy.microbatch or 1

    def needed(seqs: int) -> float:
        base = estimate(model, strategy=strategy.replace(microbatch=seqs), seq_len=seq_len,
                        batch_seqs=strategy.data * seqs, topology=topo, efficiency=efficiency)
        per_chip = base.batch_tokens / base.chips
        compute = base.compute_seconds / per_chip  # per token per chip at this microbatch
        bwd = compute * _backward_share(base)
        fwd = compute - bwd
        layer = [c for c in base.collectives if c.parallelism == "fsdp" and c.per_layer]
        gathers = sum(c.total_seconds for c in layer if c.kind == "all-gather") / 2  # forward's share
        scatters = sum(c.total_seconds for c in layer if c.kind == "reduce-scatter")
        shared = 0.0
        if base.comm_seconds["dp"] and layer:
            pl = base.placement
            same = step._network(step.stack([step.describe(pl, "grad")]))[0] == \
                step._network(step.stack([step.describe(pl, "fsdp")]))[0]
            shared = (gathers + scatters) if same else 0.0
        needs = [gathers / fwd, (gathers + scatters) / bwd,
                 (base.comm_seconds["dp"] + shared) / bwd if base.comm_seconds["dp"] else 0.0]
        if layer:
            # FSDP's network must also carry the whole step's traffic on it (every gather and
            # scatter, the embedding tables', and DP's AllReduce when it shares the network) within
            # the step: compute, plus the first gather that nothing hides, plus the optimizer.
            fsdp_all = sum(c.total_seconds for c in base.collectives if c.parallelism == "fsdp")
            first = sum(c.seconds for c in base.collectives if c.parallelism == "fsdp" and c.kind == "all-gather"
                        and (not c.per_layer or "before the forward" in c.purpose))
            dp_same = base.comm_seconds["dp"] if shared else 0.0
            net = lambda group: step._network(step.stack([step.describe(base.placement, group)]))[0]  # noqa: E731
            # TP and CP traffic hidden under compute on the same network occupies it too
            hidden = sum(base.comm_seconds[k] - base.exposed_seconds[k] for k in ("tp", "cp")
                         if base.comm_seconds[k] and net(k) == net("fsdp"))
            needs.append((fsdp_all + dp_same + hidden - first - base.optimizer_seconds) / compute)
        return max(needs), per_chip / seqs

    seqs, seen = mb, {}
    for _ in range(30):
        b_star, per_seq = needed(seqs)
        seen[seqs] = b_star
        nxt = max(mb, math.ceil(b_star / per_seq - 1e-9))
        if nxt == seqs:
            return b_star
        if nxt in seen:
            return max(seen.values())
        seqs = nxt
    return max(seen.values())


def _backward_share(e: TrainingEstimate) -> float:
    """Share of the hardware FLOPs spent in the backward pass (as `step.evaluate`'s c_bwd)."""
    fwd_model = e.model_flops / 3
    remat = e.hardware_flops - e.model_flops
    return (2 * fwd_model + remat) / e.hardware_flops


def rule_of_thumb_batch_per_chip(chip: "str | Chip", *, link: str = "ici", grad_dtype: str = "bf16",
                                 tp: int = 1, chips_sharing: int = 1) -> float:
    """Chapter 5's rule: DP or FSDP is compute-bound above about peak / W tokens per chip (over tp).

    FSDP moves 3 x P x b bytes per step (two gathers, one scatter) against 6 P B FLOPs of compute;
    DP moves 2 x P x b against a backward of 4 P B. Both give B > (b / 2) x peak / W in tokens per
    chip, peak / W for bf16; with tp-way tensor parallelism each chip holds 1/tp of the weights, so
    the bound drops by tp. W is the per-chip bandwidth of `link`: 'ici' (bidirectional, with
    wraparound), 'nvlink', 'infiniband' or 'dcn' (the chip's NIC share). Large-N limit: the
    (N - 1) / N factors that `estimate` keeps are dropped here.

    Across InfiniBand or DCN a group usually has several chips in each node or slice; the
    collective then runs hierarchically and only 1/`chips_sharing` of the bytes cross the slow
    link per chip (`collectives.cost`), so the bound drops by that factor too: pass the number of
    the group's chips in one node or slice (1: one chip per node or slice).
    """
    c = _chip(chip)
    w = link_bytes_per_s(c, link)
    for name, v in (("tp", tp), ("chips_sharing", chips_sharing)):
        v = _require_count(name, v, maximum=MAX_CHIPS)
    return units.dtype_bytes(grad_dtype, "grad_dtype") / 2 * c.peak_flops_per_s("bf16") / w / tp / chips_sharing


def pipeline_bubble_fraction(*, pp: int, microbatches: int, virtual_stages: int = 1) -> float:
    """Share of a pipelined step lost to the bubble: ((pp - 1) / v) / (m + (pp - 1) / v).

    GPipe and 1F1B idle for pp - 1 microbatch slots per step; interleaving v virtual stages per
    chip shrinks that to (pp - 1) / v (Narayanan et al. 2021). Chapter 5.
    """
    _integer('pp', pp), _integer('microbatches', microbatches), _integer('virtual_stages', virtual_stages)
    for name, v in (("pp", pp), ("microbatches", microbatches), ("virtual_stages", virtual_stages)):
        v = _require_count(name, v, maximum=MAX_CHIPS)
    bubble = (pp - 1) / virtual_stages
    return bubble / (microbatches + bubble)


def min_expert_width(chip: "str | Chip", *, link: str, activation_dtype: str = "bf16") -> float:
    """Expert width F_e above which expert parallelism's AllToAlls hide behind expert compute.

    Per token and MoE layer, 4 AllToAlls move k D b bytes each (about k D b / W seconds on a
    switched network) against 18 k D F_e FLOPs of gated-expert training compute, so
    F_e >= (2 b / 9) C / W (Chapter 5; the batch and k cancel).
    """
    c = _chip(chip)
    return 2 * units.dtype_bytes(activation_dtype, "activation_dtype") / 9 * c.peak_flops_per_s("bf16") / link_bytes_per_s(c, link)


def min_context_chunk(model: Transformer, *, chip: "str | Chip", link: str, activation_dtype: str = "bf16") -> float:
    """Tokens per context-parallel chunk above which ring attention hides its key/value traffic.

    A chunk of T/c tokens sends (T/c) 2 K H b bytes per ring step. Against it the chip computes
    its queries' attention to one key/value chunk: 4 (T/c)^2 N_q H FLOPs for a full block, but with
    a causal mask and load-balanced chunks (each chip holds an early and a late piece of the
    sequence, so every ring step does the same work) half of that on average, 2 (T/c)^2 N_q H. The
    traffic hides when T/c >= b (K / N) C / W (Chapter 5): the per-step rule `step.evaluate` uses.
    """
    model = _as_model(model)
    c = _chip(chip)
    b = units.dtype_bytes(activation_dtype, "activation_dtype")
    return b * model.kv_heads / model.heads * c.peak_flops_per_s("bf16") / link_bytes_per_s(c, link)


def link_bytes_per_s(chip: "str | Chip", link: str) -> float:
    """Per-chip collective bandwidth W of a kind of link, as `topology` builds its axes."""
    c = _chip(chip)
    _text("link", link)
    if link == "ici":
        if not c.is_tpu:
            raise Error(f"{c.name} is a GPU: its fast link is 'nvlink'")
        return c.ici_bidi_bytes_per_s
    if link == "nvlink":
        if c.is_tpu:
            raise Error(f"{c.name} is a TPU: its fast link is 'ici'")
        return c.ici_one_way_bytes_per_s
    if link == "infiniband":
        if c.is_tpu:
            raise Error(f"{c.name} is a TPU: between slices it uses 'dcn'")
        return c.node_egress_bytes_per_s / c.nvlink_domain
    if link == "dcn":
        if not c.dcn_bytes_per_s:
            raise Error(f"{c.name} has no DCN figure in the spec table")
        return c.dcn_bytes_per_s
    raise Error(f"unknown link {link!r}; valid: ici, nvlink, infiniband, dcn")


def max_tp_degree(model: Transformer, *, chip: "str | Chip", link: str | None = None,
                  activation_dtype: str = "bf16", efficiency: float = 1.0) -> float:
    """Largest tensor-parallel degree whose activation AllReduces stay hidden-able by compute.

    Per layer and token, TP moves 4 AllReduces of D activations (each 2 D b / W in the large-N
    limit) = 8 D b / W seconds, while each chip computes 6 P_layer / (tp x peak); compute covers
    the traffic while tp <= 6 P_layer W / (8 D b peak). For a standard layer (P_layer = 12 D^2)
    that is about 9 D W / (b peak): the wider the model, the more TP it can take. At the bound TP
    time equals compute: on the critical path (the default) that doubles the step, and with
    `tp_overlap` the traffic hides at the cost of `tp_overlap_slowdown` of it (Chapter 5). `link` defaults
    to the chip's fast link (ICI or NVLink); 'infiniband' or 'dcn' price a group with one chip per
    node or slice (a group of whole nodes runs hierarchically and fares better, as `estimate` shows).
    """
    model = _as_model(model)
    c = _chip(chip)
    if link is not None:
        _text("link", link)
    w = link_bytes_per_s(c, link or ("ici" if c.is_tpu else "nvlink"))
    require_positive(efficiency=efficiency)
    facts = step.model_facts(model, 1)
    layer = (facts.layer_dense_params + facts.layer_expert_params * (model.experts_per_token /
             max(model.routed_experts, 1))) / model.layers
    peak = c.peak_flops_per_s("bf16") * efficiency
    return 6 * layer * w / (8 * model.d_model * units.dtype_bytes(activation_dtype, "activation_dtype") * peak)


# --- calibration -------------------------------------------------------------------------------

def fit_runs(family: str) -> list:
    """The published runs the default efficiency of `family` is fitted on (`efficiency_families`).

    Every run whose `role` is 'fit' (`scalebook.runs`), that reports a speed and whose chip is of
    that family: 'tpu' every TPU, 'gpu' every GPU, a generation ('ampere', 'hopper') its `chips`.
    """
    _text('family', family)
    from . import runs
    families = efficiency_families()
    if family not in families:
        raise Error(f"unknown chip family {family!r}; valid: {', '.join(families)}")
    entry = load("training_efficiency")[family]

    def member(chip: str) -> bool:
        c = _chip(chip)
        if family in ("tpu", "gpu"):
            return c.is_tpu == (family == "tpu")
        return c.name in entry.get("chips", ())
    fits = [r for r in runs.published_runs() if getattr(r, "role", None) == "fit"
            and member(r.chip) and r.reported_tokens_per_s_per_chip()]
    if not fits:
        raise Error(f"no published run of chip family {family!r} has role 'fit' and a reported speed")
    return fits


def _run_estimate(run, efficiency: float) -> "TrainingEstimate":
    return _run_estimator(run)(efficiency)


def _run_estimator(run) -> "Callable[[float | None], TrainingEstimate]":
    """`_run_estimate(run, efficiency)` as a function of the efficiency (`_estimator`)."""
    kw = run.estimate_kwargs()
    strategy = Strategy(**kw.pop("strategy_kwargs"))
    return _estimator(run.model_config(), strategy=strategy, **kw)


def refit_default_efficiency(family: str) -> float:
    """Fit the default efficiency of a chip family (`efficiency_families`) again on its fit runs.

    The efficiency minimises the median over `fit_runs(family)` of |log(predicted / reported)|
    tokens/s per chip. The median is flat between the runs' own efficiencies (the value at which
    each run alone is reproduced), so the search tries those and a grid between them. With one
    run it is that run's efficiency (bisection, `fit_efficiency`). `tools/fit_efficiency.py`
    writes the result, and the runs it came from, to the data file.
    """
    runs_ = fit_runs(family)
    own = []
    for run in runs_:
        kw = run.estimate_kwargs()
        strategy = Strategy(**kw.pop("strategy_kwargs"))
        try:
            own.append(fit_efficiency(run.model_config(), target=run.reported_tokens_per_s_per_chip(),
                                      metric="tokens_per_s_per_chip", strategy=strategy, **kw))
        except Error:  # too fast for this model even at 100% of peak
            own.append(1.0)
    if len(own) == 1:
        return own[0]
    lo, hi = min(own), max(own)
    trials = sorted(set(own) | {lo + (hi - lo) * i / 40 for i in range(41)})

    at = [_run_estimator(r) for r in runs_]  # each run checked and placed once for every trial

    def cost(eff: float) -> float:
        return float(np.median([abs(math.log(est(eff).tokens_per_s_per_chip / r.reported_tokens_per_s_per_chip()))
                                for r, est in zip(runs_, at)]))
    return min(trials, key=cost)


def fit_efficiency(model: Transformer, *, target: float, metric: str = "mfu", **estimate_kwargs) -> float:
    """The `efficiency` at which `estimate(model, **estimate_kwargs)` reports `metric` = `target`.

    Bisection on efficiency in (0, 1]; `metric` is 'mfu', 'hfu', 'model_flops_per_s_per_chip' or
    'tokens_per_s_per_chip'. Chapter 6 fits the package's defaults on the measured throughput
    (tokens/s per chip) of PaLM 540B (TPU) and Megatron-LM 1T (GPU): throughput does not depend on
    how a paper counts FLOPs.
    """
    model = _as_model(model)
    if metric not in ("mfu", "hfu", "model_flops_per_s_per_chip", "tokens_per_s_per_chip"):
        raise Error(f"unknown metric {metric!r}; valid: mfu, hfu, model_flops_per_s_per_chip, tokens_per_s_per_chip")
    require_positive(target=target)
    if "efficiency" in estimate_kwargs:
        raise Error("fit_efficiency finds the efficiency: do not pass one")
    at = _estimator(model, **estimate_kwargs)  # checked and placed once for the whole bisection
    get = lambda eff: getattr(at(eff), metric)  # noqa: E731
    lo, hi = 1e-4, 1.0
    if get(hi) < target:
        raise Error(f"even at 100% matmul efficiency the model gives {metric} {get(hi):.3g} < {target:.3g}: "
                    "communication alone is too slow for the target")
    for _ in range(60):
        mid = (lo + hi) / 2
        if get(mid) < target:
            lo = mid
        else:
            hi = mid
    return hi

