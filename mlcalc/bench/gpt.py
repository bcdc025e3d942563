"""Deprecated: GPT-2 shapes as the old GPTConfig, kept only for mlcalc/widgets/measured.py (use mlcalc.gpt_program).

The model is GPT-2's layout (Radford et al. 2019): learned token and position embeddings,
pre-LayerNorm blocks of causal self-attention and a 4x GELU MLP, biases on every linear layer,
a final LayerNorm, and an output layer tied to the token embedding.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlcalc import _check


@dataclass(frozen=True)
class GPTConfig:
    """Shape of a GPT-style decoder."""

    n_layer: int  # transformer blocks
    n_head: int  # attention heads
    d_model: int  # hidden size h
    vocab_size: int = 50304  # GPT-2's 50,257 tokens padded up to a multiple of 64
    mlp_ratio: int = 4  # MLP inner size / d_model

    def __post_init__(self) -> None:
        _check.positive_int("n_layer", self.n_layer)
        _check.positive_int("n_head", self.n_head)
        _check.positive_int("d_model", self.d_model)
        _check.positive_int("vocab_size", self.vocab_size)
        _check.positive_int("mlp_ratio", self.mlp_ratio)
        if self.d_model % self.n_head:
            raise ValueError(f"n_head={self.n_head!r} is not allowed: it must divide d_model={self.d_model}")

    def n_params(self, seq_len: int) -> int:
        """Parameters, counting the position table for ``seq_len`` positions and the tied output once."""
        _check.positive_int("seq_len", seq_len)
        h, f = self.d_model, self.mlp_ratio * self.d_model
        per_layer = (2 * h) + (3 * h * h + 3 * h) + (h * h + h) + (2 * h) + (h * f + f) + (f * h + h)
        return self.vocab_size * h + seq_len * h + self.n_layer * per_layer + 2 * h

    def n_matrix_params(self) -> int:
        """Parameters of the blocks' weight matrices (the ones matmuls read), without embeddings."""
        h, f = self.d_model, self.mlp_ratio * self.d_model
        return self.n_layer * (4 * h * h + 2 * h * f)


# GPT-2's four sizes (Radford et al. 2019, Table 2: 117M/345M/762M/1542M as first counted;
# 124M/355M/774M/1558M with the count that includes the position table).
PRESETS: dict[str, GPTConfig] = {
    "gpt2-124M": GPTConfig(n_layer=12, n_head=12, d_model=768),
    "gpt2-350M": GPTConfig(n_layer=24, n_head=16, d_model=1024),
    "gpt2-774M": GPTConfig(n_layer=36, n_head=20, d_model=1280),
    "gpt2-1.5B": GPTConfig(n_layer=48, n_head=25, d_model=1600),
}


def preset(name: str) -> GPTConfig:
    """The named GPT-2 size (ValueError listing the names otherwise)."""
    _check.choice("model", name, PRESETS)
    return PRESETS[name]
