"""One description of a decoder-only transformer, and the preset table (``data/models.json``).

Every calculator that needs a model's shape takes a :class:`ModelConfig`: memory (weights,
activations, KV cache), FLOPs, step time, communication. Presets are data with a source each;
variants are made with :func:`dataclasses.replace` (or :meth:`ModelConfig.replace`), not new classes.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping

from mlcalc import _check

NORMS = ("rmsnorm", "layernorm")
ATTENTIONS = ("standard", "mla")  # standard: MHA / GQA / MQA by n_kv_heads; mla: DeepSeek's latent attention
ACTIVATIONS = ("silu", "gelu", "gelu_tanh", "relu")

# Upper bounds on sizes, so that nothing sized by a config can explode (a loop over layers, a
# table over experts). Each is far above any published model (Llama-3 405B: 126 layers, width
# 16384; DeepSeek-V3: 256 routed experts; Gemma 3: 262,144 vocabulary entries).
MAX_LAYERS = 10_000
MAX_WIDTH = 1_000_000  # hidden, ffn widths, head_dim, ranks
MAX_HEADS = 10_000
MAX_EXPERTS = 100_000
MAX_VOCAB = 10_000_000
MAX_SEQ = 100_000_000


@lru_cache(maxsize=1)
def _compared_fields() -> tuple[str, ...]:
    """The fields of ModelConfig that equality compares (what its hash is made of, as the dataclass's own)."""
    return tuple(f.name for f in dataclasses.fields(ModelConfig) if (f.compare if f.hash is None else f.hash))


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only transformer's shape: enough to count its parameters, FLOPs, activations and caches."""

    name: str  # label, e.g. "Llama-3 70B"
    n_layers: int  # transformer blocks
    hidden: int  # model (residual-stream) width d_model
    n_heads: int  # query heads per layer
    n_kv_heads: int  # key/value heads per layer (n_heads: MHA, fewer: GQA, 1: MQA; MLA: n_heads)
    head_dim: int  # width of one query/key head (MLA: the non-rotary part, qk_nope_head_dim)
    ffn_hidden: int  # inner width of a dense feed-forward block
    vocab: int  # rows of the token-embedding table
    n_experts: int = 1  # routed feed-forward experts per MoE layer (1: dense model)
    experts_per_token: int = 1  # routed experts each token goes to
    n_shared_experts: int = 0  # experts every token goes to besides the routed ones (DeepSeek)
    moe_ffn_hidden: int = 0  # inner width of one expert (0: ffn_hidden)
    first_dense_layers: int = 0  # leading layers with a dense feed-forward block in an MoE model (DeepSeek-V3: 3)
    gated_mlp: bool = True  # SwiGLU/GeGLU block with three matrices (False: two matrices)
    activation: str = "silu"  # the MLP's non-linearity
    tied_embeddings: bool = False  # output projection shares the input embedding matrix
    biases: bool = False  # every linear layer carries a bias vector (GPT-2/3)
    qkv_bias: bool = False  # only the Q, K, V projections carry biases (Qwen 2 / 2.5)
    norm: str = "rmsnorm"  # "rmsnorm" (weight vector) or "layernorm" (weight and bias)
    norms_per_layer: int = 2  # 2 (pre-norm), 4 (Gemma 2/3: pre and post norms around both blocks)
    qk_norm: bool = False  # a norm over each query and key head (Qwen 3, Gemma 3)
    learned_positions: int = 0  # rows of a learned position table (0: rotary embeddings)
    dropout: float = 0.0  # dropout probability on the residual branches (0 for modern LLMs)
    attention: str = "standard"  # "standard" or "mla"
    q_lora_rank: int = 0  # MLA: rank of the query compression (0: no compression)
    kv_lora_rank: int = 0  # MLA: rank of the joint key/value compression
    qk_rope_head_dim: int = 0  # MLA: rotary part of each query/key head
    v_head_dim: int = 0  # width of one value head (0: head_dim)
    max_seq_len: int = 0  # context length the model was released with (0: unknown)
    sliding_window: int = 0  # tokens a local (sliding-window) attention layer attends to and caches (0: none)
    sliding_window_pattern: int = 0  # with a window: every pattern-th layer is global, the rest local (Hugging
    #                                  Face's Gemma naming: 2 for Gemma 2, 6 for Gemma 3); 0: every layer local
    published_params: float = 0.0  # total parameters as the source states them (0: unknown)
    published_active_params: float = 0.0  # parameters used per token as published (MoE; 0: unknown)
    source: str = ""  # where the numbers come from

    def __post_init__(self) -> None:
        bounds = {"n_layers": MAX_LAYERS, "hidden": MAX_WIDTH, "n_heads": MAX_HEADS, "n_kv_heads": MAX_HEADS,
                  "head_dim": MAX_WIDTH, "ffn_hidden": MAX_WIDTH, "vocab": MAX_VOCAB, "n_experts": MAX_EXPERTS,
                  "experts_per_token": MAX_EXPERTS, "norms_per_layer": 8}
        for field, top in bounds.items():
            value = _check.positive_int(field, getattr(self, field))
            if value > top:
                raise ValueError(f"{field}={value!r} is not allowed: it must be at most {top}")
        zero_ok = {"n_shared_experts": MAX_EXPERTS, "moe_ffn_hidden": MAX_WIDTH, "first_dense_layers": MAX_LAYERS,
                   "learned_positions": MAX_SEQ, "q_lora_rank": MAX_WIDTH, "kv_lora_rank": MAX_WIDTH,
                   "qk_rope_head_dim": MAX_WIDTH, "v_head_dim": MAX_WIDTH, "max_seq_len": MAX_SEQ,
                   "sliding_window": MAX_SEQ, "sliding_window_pattern": MAX_LAYERS}
        for field, top in zero_ok.items():
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
                raise ValueError(f"{field}={value!r} is not allowed: it must be a whole number from 0 to {top}")
        _check.choice("norm", self.norm, NORMS)
        _check.choice("attention", self.attention, ATTENTIONS)
        _check.choice("activation", self.activation, ACTIVATIONS)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads={self.n_kv_heads!r} is not allowed: it must divide n_heads={self.n_heads}")
        if self.experts_per_token > self.n_experts:
            raise ValueError(f"experts_per_token={self.experts_per_token!r} is not allowed: "
                             f"it must be at most n_experts={self.n_experts}")
        if self.first_dense_layers > self.n_layers:
            raise ValueError(f"first_dense_layers={self.first_dense_layers!r} is not allowed: "
                             f"it must be at most n_layers={self.n_layers}")
        if self.attention == "mla" and self.kv_lora_rank < 1:
            raise ValueError(f"kv_lora_rank={self.kv_lora_rank!r} is not allowed with attention='mla': "
                             "it must be at least 1")
        if not 0.0 <= _check.non_negative("dropout", self.dropout) < 1.0:
            raise ValueError(f"dropout={self.dropout!r} is not allowed: it must be in [0, 1)")
        _check.non_negative("published_params", self.published_params)
        _check.non_negative("published_active_params", self.published_active_params)

    def replace(self, **changes: Any) -> "ModelConfig":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def __hash__(self) -> int:
        # The dataclass's hash (of the tuple of the fields equality compares), remembered on the instance: a frozen
        # ModelConfig's fields never change, and the planner's search looks a model up in its caches tens of
        # thousands of times (hashing 34 fields each time was a third of a search). Not carried by a copy or a
        # pickle (__getstate__): a string's hash differs from one process to the next.
        known = self.__dict__.get("_hash_known")
        if known is None:
            known = self.__dict__["_hash_known"] = hash(tuple(getattr(self, name) for name in _compared_fields()))
        return int(known)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_hash_known"}

    # -- derived widths -----------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        """True for a mixture of experts (more than one routed expert)."""
        return self.n_experts > 1

    @property
    def expert_ffn(self) -> int:
        """Inner width of one expert."""
        return self.moe_ffn_hidden or self.ffn_hidden

    @property
    def n_moe_layers(self) -> int:
        """Layers whose feed-forward block is a mixture of experts."""
        return self.n_layers - self.first_dense_layers if self.is_moe else 0

    @property
    def n_global_layers(self) -> int:
        """Layers that attend to (and cache) the whole context: all of them without a sliding window."""
        if not self.sliding_window:
            return self.n_layers
        return self.n_layers // self.sliding_window_pattern if self.sliding_window_pattern else 0

    @property
    def n_local_layers(self) -> int:
        """Sliding-window layers: they cache at most ``sliding_window`` tokens per sequence."""
        return self.n_layers - self.n_global_layers

    @property
    def qk_head_dim(self) -> int:
        """Width of one query/key head as attention scores see it (MLA: non-rotary + rotary part)."""
        return self.head_dim + (self.qk_rope_head_dim if self.attention == "mla" else 0)

    @property
    def v_dim(self) -> int:
        """Width of one value head."""
        return self.v_head_dim or self.head_dim

    @property
    def q_width(self) -> int:
        """Width of all query heads together."""
        return self.n_heads * self.qk_head_dim

    @property
    def kv_width(self) -> int:
        """Width of all key heads together (= value heads when head widths agree)."""
        return (self.n_heads if self.attention == "mla" else self.n_kv_heads) * self.qk_head_dim

    @property
    def attn_out_width(self) -> int:
        """Width of the attention output before the output projection: heads x value head width."""
        return self.n_heads * self.v_dim

    def _norm_params(self, width: int) -> int:
        return width * (2 if self.norm == "layernorm" else 1)

    # -- parameter counts -------------------------------------------------------------------
    def attention_params_per_layer(self) -> int:
        """Q, K, V and output projections of one layer (with biases and Q/K norms if any)."""
        h = self.hidden
        if self.attention == "mla":
            qd = self.n_heads * self.qk_head_dim
            q = (h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * qd) if self.q_lora_rank else h * qd
            kv = (h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
                  + self.kv_lora_rank * self.n_heads * (self.head_dim + self.v_dim))
            return q + kv + self.attn_out_width * h
        qd, kvd, vd = self.q_width, self.n_kv_heads * self.head_dim, self.n_kv_heads * self.v_dim
        params = h * (qd + kvd + vd) + self.attn_out_width * h
        if self.biases or self.qkv_bias:
            params += qd + kvd + vd
        if self.biases:
            params += h
        if self.qk_norm:
            params += 2 * self._norm_params(self.head_dim)
        return params

    def mlp_params(self, width: int) -> int:
        """One feed-forward block (or expert) of inner width ``width``: 3 matrices if gated, else 2."""
        mats = 3 if self.gated_mlp else 2
        bias = (width * (2 if self.gated_mlp else 1) + self.hidden) if self.biases else 0
        return mats * self.hidden * width + bias

    def mlp_params_per_expert(self) -> int:
        """One expert (or, for a dense model, the feed-forward block)."""
        return self.mlp_params(self.expert_ffn)

    def norm_params_per_layer(self) -> int:
        """The layer's norms over the residual stream (``norms_per_layer`` of them)."""
        return self.norms_per_layer * self._norm_params(self.hidden)

    def router_params_per_layer(self) -> int:
        """The gate that routes tokens to experts in one MoE layer (0 for a dense model)."""
        return self.hidden * self.n_experts if self.is_moe else 0

    def params_breakdown(self) -> Mapping[str, int]:
        """Parameter count by part of the model (sums to ``n_params()``)."""
        # Remembered on the instance (a frozen ModelConfig's counts never change; the cache is no field: equality,
        # hashing, repr and replace() ignore it). The memory and step-time models ask for it thousands of times.
        known = self.__dict__.get("_params_breakdown_known")
        if known is None:  # a plain dict kept (a copy or pickle of the model carries it), a read-only view given
            known = self.__dict__["_params_breakdown_known"] = dict(self._params_breakdown())
        return MappingProxyType(known)

    def _params_breakdown(self) -> Mapping[str, int]:
        dense_layers = self.n_layers - self.n_moe_layers
        experts = self.n_moe_layers * (self.n_experts + self.n_shared_experts) * self.mlp_params_per_expert()
        parts = {
            "embeddings": self.vocab * self.hidden + self.learned_positions * self.hidden,
            "attention": self.n_layers * self.attention_params_per_layer(),
            "feed-forward (dense layers)": dense_layers * self.mlp_params(self.ffn_hidden),
            "feed-forward (all experts)": experts,
            "router": self.n_moe_layers * self.router_params_per_layer(),
            "norms": self.n_layers * self.norm_params_per_layer() + self._norm_params(self.hidden),
            "output projection": 0 if self.tied_embeddings else self.vocab * self.hidden,
        }
        return MappingProxyType(parts)

    def n_params(self) -> int:
        """Total parameters (what memory follows): embeddings, all layers, all experts."""
        known = self.__dict__.get("_n_params_known")
        if known is None:
            known = self.__dict__["_n_params_known"] = sum(self.params_breakdown().values())
        return int(known)

    def n_active_params(self) -> int:
        """Parameters one token passes through (what compute follows): only its routed experts."""
        idle = self.n_moe_layers * (self.n_experts - self.experts_per_token) * self.mlp_params_per_expert()
        return self.n_params() - idle

    def n_embedding_params(self) -> int:
        """Input embedding (and position) table plus an untied output projection."""
        parts = self.params_breakdown()
        return parts["embeddings"] + parts["output projection"]

    def n_matrix_params(self, active: bool = False) -> int:
        """Parameters in the blocks' weight matrices (what matmuls read), without embeddings, norms, biases.

        ``active=True`` counts only the experts a token uses.
        """
        h = self.hidden
        if self.attention == "mla":
            qd = self.n_heads * self.qk_head_dim
            q = (h * self.q_lora_rank + self.q_lora_rank * qd) if self.q_lora_rank else h * qd
            attn = (q + h * (self.kv_lora_rank + self.qk_rope_head_dim)
                    + self.kv_lora_rank * self.n_heads * (self.head_dim + self.v_dim) + self.attn_out_width * h)
        else:
            attn = h * (self.q_width + self.n_kv_heads * (self.head_dim + self.v_dim)) + self.attn_out_width * h
        mats = 3 if self.gated_mlp else 2
        per_expert = mats * h * self.expert_ffn
        experts = (self.experts_per_token if active else self.n_experts) + self.n_shared_experts
        mlp = ((self.n_layers - self.n_moe_layers) * mats * h * self.ffn_hidden
               + self.n_moe_layers * (experts * per_expert + self.router_params_per_layer()))
        return self.n_layers * attn + mlp


@lru_cache(maxsize=None)
def presets() -> Mapping[str, ModelConfig]:
    """All model presets in ``mlcalc/data/models.json``, by name, in file order."""
    raw = json.loads(resources.files("mlcalc.data").joinpath("models.json").read_text())
    return MappingProxyType({name: ModelConfig(name=name, **entry) for name, entry in raw["models"].items()})


def preset(name: str) -> ModelConfig:
    """The preset called ``name`` (ValueError listing the known names otherwise).

    Meta's Llama 3 8B: 8.03B parameters (its model card; 8,030,261,248 in the released weights):

    >>> preset("Llama-3 8B").n_params()
    8030261248
    """
    _check.choice("model", name, presets())
    return presets()[name]


def from_dict(values: Mapping[str, Any]) -> ModelConfig:
    """A ModelConfig from a mapping of its fields (unknown keys are refused, naming them)."""
    known = {f.name for f in dataclasses.fields(ModelConfig)}
    for key in values:
        if key not in known:
            raise ValueError(f"{key}={values[key]!r} is not allowed: not a ModelConfig field "
                             f"(fields: {', '.join(sorted(known))})")
    return ModelConfig(**dict(values))


def as_dict(model: ModelConfig) -> dict[str, Any]:
    """The fields of ``model`` as a plain dict (JSON-ready)."""
    return dataclasses.asdict(model)


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
