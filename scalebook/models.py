"""Transformer configurations and the published models the book uses (Chapter 4).

A `Transformer` is the shape of a decoder-only model and nothing else: sizes of every weight,
the kind of attention (MHA / GQA / MQA / MLA) and MLP (gated or plain), and the mixture of
experts, if any. Counting its parameters, FLOPs and bytes is `scalebook.transformer`'s job.

Notation of Chapter 4: L layers, D = d_model, N_q query heads, K kv heads, H head dim, F MLP
hidden width (per branch for a gated MLP), V vocabulary, E routed experts, k experts per token,
S shared experts, F_e expert hidden width.

Presets (`preset(name)`) take their dimensions from `data/models.json`, each with the source of
its figures; `published_params` carries the total the model's authors state, with its citation,
so the book can set the package's count beside it.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from ._readable import Readable
from ._data import load
from .errors import Error, _show, choose, number, require_flag

MLP_KINDS = ("gated", "plain")
NORM_KINDS = ("rmsnorm", "layernorm")


@dataclass(frozen=True, kw_only=True)
class Transformer(Readable):
    """A decoder-only Transformer's shape (Chapter 4). All sizes are integer counts.

    - Attention: `heads` (N) query heads of `head_dim` (H, default D / N); `kv_heads` (K,
      default N) key/value heads: K = N is MHA, 1 < K < N is GQA, K = 1 is MQA. N x H need not
      equal D (Gemma's does not). Q and O are D x N_q H, K and V are D x K H each.
    - MLA (DeepSeek-V2/V3): set `mla_kv_compression_dim` (the cached latent, d_c) and
      `mla_rope_head_dim` (the decoupled RoPE key, d_R, shared by all heads); `mla_q_compression_dim`
      (d'_c) is optional (0: queries are projected from D directly). H is then the per-head
      dimension of the non-RoPE query/key part and of the values. `kv_heads` must equal `heads`.
    - MLP: `mlp="gated"` (SwiGLU / GeGLU: gate, up, down, 3 D x F matrices) or `"plain"` (up, down,
      2 matrices). `d_ff` is F, the width of one branch (Gemma's papers quote 2F).
    - MoE: `routed_experts` (E) experts of width `expert_d_ff` (F_e) of which `experts_per_token`
      (k) are used per token, plus `shared_experts` (S) used by every token, in
      `layers - dense_layers` layers; the first `dense_layers` layers have a dense MLP of width F.
    - `tied_embeddings`: the unembedding reuses the embedding matrix (V x D stored once).
    - `parallel_block`: attention and MLP read the same normed input (GPT-J, PaLM): one norm per
      layer instead of two (see `norms_per_layer`).
    - `norms_per_layer`: norms in each layer (default 2, 1 for a parallel block; Gemma 2 has 4).
      One final norm follows the last layer. Each norm has D scales, plus D shifts when `biases`
      (PaLM's LayerNorms have no bias; `norm` names the kind and does not change the count).
    - `biases`: linear layers and norms carry biases (GPT-2/3); `learned_positions`: rows of a
      learned position embedding (0 for RoPE).
    - `published_params` / `published_active_params`: totals stated by the model's authors, with
      `published_source`; `source` cites the dimensions.
    """

    name: str = "custom"
    layers: int
    d_model: int
    heads: int
    kv_heads: int | None = None
    head_dim: int | None = None
    d_ff: int = 0
    vocab: int
    mlp: str = "gated"
    norm: str = "rmsnorm"
    norms_per_layer: int | None = None
    tied_embeddings: bool = False
    parallel_block: bool = False
    biases: bool = False
    learned_positions: int = 0
    routed_experts: int = 0
    shared_experts: int = 0
    experts_per_token: int = 0
    expert_d_ff: int = 0
    dense_layers: int | None = None
    mla_kv_compression_dim: int = 0
    mla_q_compression_dim: int = 0
    mla_rope_head_dim: int = 0
    train_seq_len: int | None = None
    source: str = ""
    published_params: float | None = None
    published_active_params: float | None = None
    published_source: str = ""

    def __post_init__(self) -> None:
        _require_int(layers=self.layers, d_model=self.d_model, heads=self.heads, vocab=self.vocab)
        for name in ("published_params", "published_active_params"):
            if getattr(self, name) is not None and number(name, getattr(self, name)) <= 0:
                raise Error(f"{name} must be a positive number of parameters, got {_show(getattr(self, name))}")
        for flag in ("tied_embeddings", "parallel_block", "biases"):
            require_flag(flag, getattr(self, flag))
        for name in ("name", "mlp", "norm", "source", "published_source"):
            if not isinstance(getattr(self, name), str):
                raise Error(f"{name} must be a string, got {_show(getattr(self, name))}")
        set_ = functools.partial(object.__setattr__, self)
        if self.kv_heads is None:
            set_("kv_heads", self.heads)
        if self.head_dim is None:
            if self.d_model % self.heads:
                raise Error(
                    f"head_dim not given and d_model={self.d_model} is not divisible by heads={self.heads}; "
                    f"give head_dim explicitly or choose heads dividing {self.d_model}"
                )
            set_("head_dim", self.d_model // self.heads)
        _require_int(kv_heads=self.kv_heads, head_dim=self.head_dim)
        if self.heads % self.kv_heads:
            divisors = [k for k in range(1, self.heads + 1) if self.heads % k == 0]
            raise Error(
                f"kv_heads={self.kv_heads} must divide heads={self.heads} (each kv head serves a group "
                f"of query heads); valid kv_heads: {', '.join(map(str, divisors))}"
            )
        choose("mlp", self.mlp, MLP_KINDS)
        choose("norm", self.norm, NORM_KINDS)
        if self.norms_per_layer is None:
            set_("norms_per_layer", 1 if self.parallel_block else 2)
        _require_int(norms_per_layer=self.norms_per_layer, zero_ok=True)
        _require_int(
            learned_positions=self.learned_positions, routed_experts=self.routed_experts,
            shared_experts=self.shared_experts, experts_per_token=self.experts_per_token,
            expert_d_ff=self.expert_d_ff, d_ff=self.d_ff, mla_kv_compression_dim=self.mla_kv_compression_dim,
            mla_q_compression_dim=self.mla_q_compression_dim, mla_rope_head_dim=self.mla_rope_head_dim,
            zero_ok=True,
        )
        self._check_moe(set_)
        self._check_mla()
        if self.dense_layers and not self.d_ff:
            raise Error(f"{self.dense_layers} dense layer(s) need d_ff > 0 (the dense MLP width)")
        if self.train_seq_len is not None:
            _require_int(train_seq_len=self.train_seq_len)
        for name in ("published_params", "published_active_params"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and value > 0):
                raise Error(f"{name} must be a positive number or None, got {value!r}")

    def _check_moe(self, set_) -> None:
        if not self.routed_experts:
            if self.experts_per_token or self.shared_experts or self.expert_d_ff:
                raise Error(
                    "experts_per_token, shared_experts and expert_d_ff need routed_experts > 0; "
                    "for a dense model leave them at 0"
                )
            if self.dense_layers not in (None, self.layers):
                raise Error(f"a model without experts has all {self.layers} layers dense; got dense_layers={self.dense_layers}")
            set_("dense_layers", self.layers)
            return
        if not 1 <= self.experts_per_token <= self.routed_experts:
            raise Error(
                f"experts_per_token (top-k) must be between 1 and routed_experts={self.routed_experts}, "
                f"got {self.experts_per_token}"
            )
        if not self.expert_d_ff:
            raise Error("a mixture of experts needs expert_d_ff > 0 (the hidden width of one expert)")
        if self.dense_layers is None:
            set_("dense_layers", 0)
        _require_int(dense_layers=self.dense_layers, zero_ok=True)
        if self.dense_layers > self.layers:
            raise Error(f"dense_layers={self.dense_layers} exceeds layers={self.layers}; valid: 0..{self.layers}")

    def _check_mla(self) -> None:
        if not self.mla_kv_compression_dim:
            if self.mla_q_compression_dim or self.mla_rope_head_dim:
                raise Error("mla_q_compression_dim and mla_rope_head_dim need mla_kv_compression_dim > 0 (MLA)")
            return
        if self.kv_heads != self.heads:
            raise Error(
                f"MLA decompresses keys and values for every query head: kv_heads must equal heads={self.heads}, "
                f"got {self.kv_heads}"
            )

    # --- derived shape facts -------------------------------------------------------------
    @property
    def attention(self) -> str:
        """'MLA', 'MHA', 'MQA' or 'GQA'."""
        if self.is_mla:
            return "MLA"
        if self.kv_heads == self.heads:
            return "MHA"
        return "MQA" if self.kv_heads == 1 else "GQA"

    @property
    def is_mla(self) -> bool:
        return self.mla_kv_compression_dim > 0

    @property
    def is_moe(self) -> bool:
        return self.routed_experts > 0

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts: L - dense_layers."""
        return self.layers - self.dense_layers

    def replace(self, **changes) -> "Transformer":
        """A copy with some fields changed, validated again; published totals are dropped.

        Fields left at their defaults (kv_heads = heads, head_dim = D / N, norms per layer,
        dense layers of a dense model) follow the changed fields.
        """
        changes.setdefault("published_params", None)
        changes.setdefault("published_active_params", None)
        changes.setdefault("published_source", "")
        defaults = {
            "kv_heads": self.kv_heads == self.heads,
            "head_dim": self.head_dim * self.heads == self.d_model,
            "norms_per_layer": self.norms_per_layer == (1 if self.parallel_block else 2),
            "dense_layers": not self.is_moe,
        }
        for name, defaulted in defaults.items():
            if defaulted and name not in changes:
                changes[name] = None
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        attn = f"{self.heads} heads x {self.head_dim}"
        if self.is_mla:
            attn += f" MLA (latent {self.mla_kv_compression_dim} + rope {self.mla_rope_head_dim})"
        elif self.kv_heads != self.heads:
            attn += f" ({self.attention}, {self.kv_heads} kv)"
        if self.is_moe:
            mlp = (f"MoE {self.routed_experts} experts top-{self.experts_per_token}"
                   + (f" + {self.shared_experts} shared" if self.shared_experts else "")
                   + f" F_e={self.expert_d_ff}")
            if self.dense_layers:
                mlp += f", {self.dense_layers} dense layers F={self.d_ff}"
        else:
            mlp = f"{self.mlp} MLP F={self.d_ff}"
        extras = [x for x, on in (("tied", self.tied_embeddings), ("parallel", self.parallel_block)) if on]
        return (f"Transformer({self.name!r}: L={self.layers}, D={self.d_model}, {attn}, {mlp}, "
                f"V={self.vocab}{''.join(', ' + x for x in extras)})")


def _require_int(zero_ok: bool = False, **values: object) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise Error(f"{name} must be a whole number, got {_show(value)}")
        if value < 0 or (value == 0 and not zero_ok):
            raise Error(f"{name} must be {'>= 0' if zero_ok else '> 0'}, got {value}")
        if value > 10**7:
            raise Error(f"{name} is too large (at most 10,000,000 for a model dimension or count), got {_show(value)}")


# --- presets -------------------------------------------------------------------------------

#: LLaMA-3 totals are not in the paper: they are the parameter counts of the released checkpoint
#: files (the safetensors of the Llama 3.1 repositories, as the Hugging Face model pages show them).
_LLAMA3_CARD = ("Meta 2024, released Llama 3.1 checkpoints: parameter count of the safetensors files "
                "(Hugging Face model pages), not a figure from the paper")
_GEMMA2_T2 = "Gemma Team 2024, Gemma 2 (arXiv 2408.00118) Table 2: embedding + non-embedding parameters"
_GEMMA1_T2 = "Gemma Team 2024, Gemma (arXiv 2403.08295) Table 2: embedding + non-embedding parameters"

#: Architecture facts that models.json states in words, per preset family (never dimensions).
#: GPT-3: "the same model and architecture as GPT-2" (Brown et al. 2020 section 2.1): biases,
#: LayerNorm, learned positions for the whole context (learned_positions=True: use seq_len).
_GPT3 = dict(mlp="plain", norm="layernorm", biases=True, tied_embeddings=True, learned_positions=True)
_PALM = dict(norm="layernorm")
_LLAMA = dict(mlp="gated", norm="rmsnorm", tied_embeddings=False)
_GEMMA = dict(mlp="gated", norm="rmsnorm", tied_embeddings=True)

#: preset name -> (json key, sub-model key or None, architecture, published totals).
_PRESETS: dict[str, tuple[str, str | None, dict, dict]] = {
    **{k: (k, None, _GPT3, {}) for k in (
        "gpt3-small", "gpt3-medium", "gpt3-large", "gpt3-xl", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b")},
    "gpt3-175b": ("gpt3-175b", None, _GPT3, dict(
        published_params=175.0e9, published_source="Brown et al. 2020 (GPT-3) Table 2.1 (n_params 175.0B)")),
    "palm-8b": ("palm-family", "8B", _PALM, dict(
        published_params=8.63e9, published_source="Chowdhery et al. 2022 (PaLM) Table 1")),
    "palm-62b": ("palm-family", "62B", _PALM, dict(
        published_params=62.50e9, published_source="Chowdhery et al. 2022 (PaLM) Table 1")),
    "palm-540b": ("palm-family", "540B", _PALM, dict(
        published_params=540.35e9, published_source="Chowdhery et al. 2022 (PaLM) Table 1")),
    "llama2-70b": ("llama2-70b", None, _LLAMA, {}),
    "llama3-8b": ("llama3-8b", None, _LLAMA, dict(published_params=8.03e9, published_source=_LLAMA3_CARD)),
    "llama3-70b": ("llama3-70b", None, _LLAMA, dict(published_params=70.6e9, published_source=_LLAMA3_CARD)),
    "llama3-405b": ("llama3-405b", None, _LLAMA, dict(published_params=405.9e9, published_source=_LLAMA3_CARD)),
    "gemma-2b": ("gemma1", "2B", _GEMMA, dict(
        published_params=524_550_144 + 1_981_884_416, published_source=_GEMMA1_T2)),
    "gemma-7b": ("gemma1", "7B", _GEMMA, dict(
        published_params=786_825_216 + 7_751_248_896, published_source=_GEMMA1_T2)),
    "gemma2-2b": ("gemma2", "2B", {**_GEMMA, "norms_per_layer": 4}, dict(
        published_params=590_118_912 + 2_024_517_888, published_source=_GEMMA2_T2)),
    "gemma2-9b": ("gemma2", "9B", {**_GEMMA, "norms_per_layer": 4}, dict(
        published_params=917_962_752 + 8_324_201_984, published_source=_GEMMA2_T2)),
    "gemma2-27b": ("gemma2", "27B", {**_GEMMA, "norms_per_layer": 4}, dict(
        published_params=1_180_237_824 + 26_047_480_320, published_source=_GEMMA2_T2)),
    "mixtral-8x7b": ("mixtral-8x7b", None, _LLAMA, dict(
        published_params=46.7e9, published_active_params=12.9e9,
        published_source="Mistral AI 2023, 'Mixtral of experts' announcement (46.7B total, 12.9B per token)")),
    "deepseek-v3": ("deepseek-v3", None, _LLAMA, dict(
        published_params=671e9, published_active_params=37e9,
        published_source="DeepSeek-AI 2024, DeepSeek-V3 Technical Report, abstract (671B total, 37B activated; "
                         "excludes the 14B multi-token-prediction module)")),
}


@dataclass(frozen=True)
class ReportedTraining:
    """What a model's authors report about its training run (Chapter 4, MFU from chip-hours).

    `tokens` trained on and `chip_hours` of `chip` time, each with its source; `flops` is the
    training compute the authors state (with `tokens_source`), None where they state none.
    """

    model: str
    tokens: float
    chip: str
    chip_hours: float
    tokens_source: str
    chip_hours_source: str
    flops: float | None = None


def reported_training_names() -> list[str]:
    """Presets whose tokens and chip-hours are reported (in data/models.json)."""
    return [n for n, (key, *_rest) in _PRESETS.items()
            if "reported_training" in load("models")["models"][key]]


def reported_training(name: str) -> ReportedTraining:
    """Reported training tokens and chip-hours of preset `name` (Chapter 4).

    >>> reported_training("llama3-405b").chip
    'h100'
    """
    choose("model with reported training", name, reported_training_names())
    r = load("models")["models"][_PRESETS[name][0]]["reported_training"]
    return ReportedTraining(model=name, tokens=float(r["tokens"]), chip=r["chip"],
                            chip_hours=float(r["chip_hours"]), tokens_source=r["tokens_source"],
                            chip_hours_source=r["chip_hours_source"],
                            flops=float(r["flops"]) if "flops" in r else None)


def preset_names() -> list[str]:
    """Names accepted by `preset`, in the order of `data/models.json`."""
    return list(_PRESETS)


def preset(name: str) -> Transformer:
    """A published model's config, dimensions from `data/models.json` (Chapter 4).

    >>> preset("llama3-8b").kv_heads
    8
    """
    choose("model", name, preset_names())
    return _build(name)


@functools.lru_cache(maxsize=None)
def _build(name: str) -> Transformer:
    key, sub, arch, published = _PRESETS[name]
    entry = load("models")["models"][key]
    c = dict(entry["config"])
    if sub is not None:
        c = {**{k: v for k, v in c.items() if k != "models"}, **c["models"][sub]}
    kw: dict = dict(name=name, layers=c["layers"], d_model=c["d_model"], heads=c["heads"],
                    kv_heads=c.get("kv_heads"), head_dim=c.get("head_dim"), vocab=c["vocab"],
                    source=entry["source"], **arch, **published)
    if kw.get("learned_positions") is True:
        kw["learned_positions"] = c["seq_len"]
    kw["d_ff"] = c.get("d_ff_per_branch", c.get("d_ff", c.get("dense_d_ff", 0)))
    seq = c.get("seq_len", c.get("seq_len_pretrain"))
    if seq:
        kw["train_seq_len"] = seq
    if "tied_embeddings" in c:
        kw["tied_embeddings"] = c["tied_embeddings"]
    ffn = c.get("ffn", "")
    if ffn:
        kw["mlp"] = "plain" if "2-matrix" in ffn else "gated"
    if c.get("block") == "parallel attn+MLP":
        kw["parallel_block"] = True
    if "biases" in c:
        kw["biases"] = c["biases"]
    experts = c.get("routed_experts", c.get("experts", 0))
    if experts:
        kw.update(routed_experts=experts, experts_per_token=c["experts_per_token"],
                  expert_d_ff=c["expert_d_ff"], shared_experts=c.get("shared_experts", 0),
                  dense_layers=c.get("dense_layers", 0))
    if c.get("attention") == "MLA":
        kw.update(kv_heads=c["heads"], mla_kv_compression_dim=c["mla_kv_compression_dim"],
                  mla_q_compression_dim=c.get("mla_q_compression_dim", 0),
                  mla_rope_head_dim=c.get("mla_rope_head_dim", 0))
    return Transformer(**kw)


#: Other names for `Transformer` fields that config files use (Hugging Face, Megatron, papers).
FIELD_ALIASES = {
    "n_layers": "layers", "num_layers": "layers", "num_hidden_layers": "layers", "n_layer": "layers",
    "hidden_size": "d_model", "dim": "d_model", "n_embd": "d_model", "model_dim": "d_model",
    "n_heads": "heads", "num_heads": "heads", "num_attention_heads": "heads", "n_head": "heads",
    "n_kv_heads": "kv_heads", "num_key_value_heads": "kv_heads", "num_kv_heads": "kv_heads",
    "intermediate_size": "d_ff", "ffn_dim": "d_ff", "ffn_hidden_size": "d_ff", "mlp_dim": "d_ff",
    "vocab_size": "vocab", "padded_vocab_size": "vocab",
    "experts": "routed_experts", "num_experts": "routed_experts", "n_routed_experts": "routed_experts",
    "num_local_experts": "routed_experts", "top_k": "experts_per_token", "num_experts_per_tok": "experts_per_token",
    "moe_intermediate_size": "expert_d_ff", "n_shared_experts": "shared_experts",
    "first_k_dense_replace": "dense_layers", "kv_lora_rank": "mla_kv_compression_dim",
    "q_lora_rank": "mla_q_compression_dim", "qk_rope_head_dim": "mla_rope_head_dim",
    "max_position_embeddings": "train_seq_len", "seq_len": "train_seq_len", "tie_word_embeddings": "tied_embeddings",
}


def from_dict(fields: "dict[str, object]") -> Transformer:
    """A `Transformer` from a dict of its fields (aliases in `FIELD_ALIASES` accepted).

    Used by the CLI's MODEL argument when it names a JSON file. Unknown keys raise `Error`
    listing the valid ones; a missing required field (layers, d_model, heads, vocab) too.
    """
    if not isinstance(fields, dict):
        raise Error(f"a model file must hold a JSON object of Transformer fields, got {type(fields).__name__}")
    valid = {f.name for f in dataclasses.fields(Transformer)}
    kw: dict = {}
    for key, value in fields.items():
        name = FIELD_ALIASES.get(key, key)
        if name not in valid:
            raise Error(f"unknown model field {key!r}; valid: {', '.join(sorted(valid))}")
        if name in kw:
            raise Error(f"model field {name!r} is given twice (as {key!r} and another name)")
        kw[name] = value
    missing = [n for n in ("layers", "d_model", "heads", "vocab") if n not in kw]
    if missing:
        raise Error(f"model file lacks {', '.join(missing)}; required: layers, d_model, heads, vocab")
    if "mlp" not in kw and kw.get("d_ff") is None and not kw.get("routed_experts"):
        raise Error("model file needs d_ff (the MLP width) or experts")
    return Transformer(**kw)


def from_spec(spec: str) -> Transformer:
    """A preset by name, or a model from a JSON file of `Transformer` fields (`from_dict`)."""
    import json
    import os

    if not isinstance(spec, str) or not spec:
        raise Error("name a preset or a JSON file of Transformer fields")
    if spec in _PRESETS:
        return preset(spec)
    if not (spec.endswith(".json") or os.path.sep in spec or os.path.exists(spec)):
        choose("model", spec, preset_names() + ["<path to a .json file of Transformer fields>"])
    try:
        with open(spec, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as e:
        raise Error(f"cannot read model file {spec!r}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise Error(f"model file {spec!r} is not valid JSON: {e}") from None
    if isinstance(data, dict) and "name" not in data:
        data = {"name": os.path.splitext(os.path.basename(spec))[0], **data}
    return from_dict(data)
