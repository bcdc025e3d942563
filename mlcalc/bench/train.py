"""Training steps of GPT-style models: peak memory and step time, the ground truth for predictions.

Each case builds a model from an :class:`mlcalc.models.ModelConfig` in GPT-2's layout
(:mod:`mlcalc.gpt_program`; random weights, no downloads),
trains it on random tokens with AdamW and automatic mixed precision (fp32 parameters, gradients and
optimizer states; bf16 matmuls through ``torch.autocast``), with or without activation
checkpointing of every block, and records:

* ``peak_bytes``: ``torch.cuda.max_memory_allocated`` over the timed steps (reset before them);
* ``step_s``: the median step time (forward, backward, optimizer step, zero_grad) after warm-up;
* phase readings from one extra instrumented step (memory after forward/backward, phase times),
  which the book uses to explain where a prediction misses.

Attention is ``F.scaled_dot_product_attention`` with a causal mask (flash attention on GPUs that
have it).
"""

from __future__ import annotations

import gc
import statistics
from typing import Any, Callable, Iterable, Sequence

from mlcalc import _check
from mlcalc.bench import _common
from mlcalc.gpt_program import from_bench_config, preset
from mlcalc.models import ModelConfig


def gpu_cases() -> list[dict[str, Any]]:
    """The sweep run on the H100: four GPT-2 sizes, a few batch sizes and lengths, recompute off/on."""
    grid = [
        ("gpt2-124M", 8, 1024), ("gpt2-124M", 16, 1024), ("gpt2-124M", 4, 2048),
        ("gpt2-350M", 8, 1024), ("gpt2-350M", 4, 2048),
        ("gpt2-774M", 8, 1024), ("gpt2-774M", 4, 2048),
        ("gpt2-1.5B", 4, 1024), ("gpt2-1.5B", 8, 1024), ("gpt2-1.5B", 2, 2048),
    ]
    return [{"model": m, "batch": b, "seq_len": s, "recompute": r} for m, b, s in grid for r in (False, True)]


def cpu_cases() -> list[dict[str, Any]]:
    """A tiny case for tests on a CPU."""
    return [{"model": "tiny", "config": {"n_layer": 2, "n_head": 2, "d_model": 32, "vocab_size": 128},
             "batch": 2, "seq_len": 16, "recompute": r} for r in (False, True)]


def build_model(torch: Any, cfg: ModelConfig, seq_len: int, recompute: bool) -> Any:
    """A GPT-2-style model (see the module docstring) as a torch.nn.Module on the current device."""
    nn, F = torch.nn, torch.nn.functional
    Module: Any = nn.Module  # the base class, from the torch this function was given
    from torch.utils.checkpoint import checkpoint

    h, heads, f = cfg.hidden, cfg.n_heads, cfg.ffn_hidden

    class Block(Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
            self.fc1, self.fc2 = nn.Linear(h, f), nn.Linear(f, h)

        def forward(self, x: Any) -> Any:
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
            q, k, v = (z.view(b, t, heads, h // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, h))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    class GPT(Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(cfg.vocab, h), nn.Embedding(seq_len, h)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg.n_layers))
            self.ln_f = nn.LayerNorm(h)
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    nn.init.normal_(p, std=0.02)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, idx: Any, targets: Any) -> Any:
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for blk in self.blocks:
                x = checkpoint(blk, x, use_reentrant=False) if recompute else blk(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)  # output layer tied to the embedding
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    return GPT()


def _config_of(case: dict[str, Any]) -> ModelConfig:
    if "config" in case:
        return from_bench_config(case["config"], str(case.get("model", "GPT")))
    return preset(case["model"])


def _run_case(torch: Any, dev: Any, case: dict[str, Any], warmup: int, steps: int) -> dict[str, Any]:
    cfg = _config_of(case)
    b = _check.positive_int("batch", case["batch"])
    s = _check.positive_int("seq_len", case["seq_len"])
    recompute = bool(case["recompute"])
    cuda = dev.type == "cuda"
    row: dict[str, Any] = {**{k: v for k, v in case.items()}, "config": {
        "n_layer": cfg.n_layers, "n_head": cfg.n_heads, "d_model": cfg.hidden,
        "vocab_size": cfg.vocab, "mlp_ratio": cfg.ffn_hidden // cfg.hidden}}
    torch.manual_seed(0)
    with torch.device(dev):
        model = build_model(torch, cfg, s, recompute)
    row["n_params"] = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=cuda)
    gen = torch.Generator(device=dev).manual_seed(1)
    idx = torch.randint(0, cfg.vocab, (b, s), device=dev, generator=gen)
    tgt = torch.randint(0, cfg.vocab, (b, s), device=dev, generator=gen)
    amp_dtype = torch.bfloat16

    def mem() -> int | None:
        return torch.cuda.memory_allocated(dev) if cuda else None

    def step(marks: Callable[[str], None] | None = None) -> Any:  # the loss, a 0-d tensor
        with torch.autocast(device_type=dev.type, dtype=amp_dtype):
            loss = model(idx, tgt)
        if marks:
            marks("forward")
        loss.backward()
        if marks:
            marks("backward")
        opt.step()
        opt.zero_grad(set_to_none=True)
        if marks:
            marks("optimizer")
        return loss

    for _ in range(warmup):
        step()
    _common.synchronize(torch, dev)
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)
    row["static_bytes"] = mem()  # parameters + optimizer states, gradients freed
    times = _common.time_calls(torch, dev, step, repeats=steps, warmup=0)
    row["step_s"] = statistics.median(times)
    row["step_s_all"] = times
    if cuda:
        row["peak_bytes"] = torch.cuda.max_memory_allocated(dev)
        row["peak_reserved_bytes"] = torch.cuda.max_memory_reserved(dev)
    # One instrumented step: memory and time at each phase boundary.
    phases: dict[str, Any] = {}
    if cuda:
        torch.cuda.synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        events = [("start", torch.cuda.Event(enable_timing=True))]
        events[0][1].record()

        def marks(name: str) -> None:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            events.append((name, ev))
            torch.cuda.synchronize(dev)
            phases[f"{name}_alloc_bytes"] = torch.cuda.memory_allocated(dev)
            phases[f"{name}_peak_bytes"] = torch.cuda.max_memory_allocated(dev)
            torch.cuda.reset_peak_memory_stats(dev)

        loss = step(marks)
        torch.cuda.synchronize(dev)
        for (_, e0), (name, e1) in zip(events, events[1:]):
            phases[f"{name}_s"] = e0.elapsed_time(e1) / 1e3
        row["loss"] = float(loss.detach())
    row["phases"] = phases
    tokens = b * s
    row["tokens_per_s"] = tokens / row["step_s"]
    row["model_tflops_6nd"] = 6 * row["n_params"] * tokens / row["step_s"] / 1e12
    return row


def run_train(
    cases: Iterable[dict[str, Any]] | None = None,
    device: str | None = None,
    warmup: int = 3,
    steps: int = 6,
    progress: bool = True,
    on_case: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run every case; return the JSON-ready result. A case that runs out of memory is recorded as such.

    ``on_case`` is called with the partial result after each case (to save progress to disk).
    """
    torch = _common.import_torch()
    _check.positive_int("steps", steps)
    dev = _common.pick_device(torch, device)
    case_list: Sequence[dict[str, Any]] = list(cases) if cases is not None else (
        gpu_cases() if dev.type == "cuda" else cpu_cases())
    env = _common.environment(torch, dev)
    params = {"warmup": warmup, "steps": steps, "optimizer": "AdamW (fused on CUDA), lr 1e-4, weight decay 0.1",
              "precision": "AMP: fp32 parameters, gradients and AdamW states; torch.autocast bf16",
              "attention": "F.scaled_dot_product_attention(is_causal=True)",
              "recompute": "torch.utils.checkpoint of every block (use_reentrant=False)",
              "zero_grad": "set_to_none=True", "step_s": "median over steps after warm-up",
              "peak_bytes": "torch.cuda.max_memory_allocated over the timed steps"}
    rows: list[dict[str, Any]] = []
    bar = _common.Progress(len(case_list), "train", enabled=progress)
    for case in case_list:
        try:
            row = _run_case(torch, dev, case, warmup, steps)
        except torch.OutOfMemoryError as err:  # record, free, go on
            row = {**case, "oom": True, "error": str(err).splitlines()[0]}
            gc.collect()
            torch.cuda.empty_cache()
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        rows.append(row)
        note = (f"{case['model']} b={case['batch']} s={case['seq_len']} rc={int(case['recompute'])} "
                + ("OOM" if row.get("oom") else f"{row['step_s'] * 1e3:.1f} ms"
                   + (f" {row['peak_bytes'] / 2**30:.2f} GiB" if row.get("peak_bytes") else "")))
        bar.update(note)
        if on_case:
            on_case(_common.result("train", env, params, {"cases": rows}))
    return _common.result("train", env, params, {"cases": rows})
