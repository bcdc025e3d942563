"""mlcalc.memory.eager_layout_peak: the eager multi-GPU program's peak memory, phase by phase.

The byte counts are read off the PyTorch source named in mlcalc/memory.py (FSDP2's FSDPParamGroup.post_backward,
torch.distributed.tensor.parallel.loss, torch.distributed.pipelining's schedules); the measured runs that check the
whole model are in tests/core/test_distruns.py.
"""

import pytest

from mlcalc import memory, models

B1 = models.preset("Llama-3.2 1B").replace(name="1B untied", tied_embeddings=False, published_params=0.0)
B8 = models.preset("Llama-3 8B")


def _peak(**kw):
    args = dict(micro_batch=1, seq_len=2048)
    args.update(kw)
    return memory.eager_layout_peak(B1, args.pop("micro_batch"), args.pop("seq_len"), **args)


# One GPU: the same count as training_peak's for its loss phase (fp32 weights, AdamW, autocast; Hugging Face's
# 10 / 12 bytes per logit), since the program is the same one.
def test_one_gpu_loss_phase_is_training_peak():
    one = _peak()
    ref = memory.training_peak(B1, 1, 2048, "none")
    assert one.candidates["loss, backward"] == pytest.approx(ref.candidates["loss, backward"], rel=0.02)


# FSDP2 shards fp32 weights and AdamW states (12 bytes per parameter) over dp; no autocast cache.
def test_fsdp_shards_the_states_and_keeps_no_autocast_copies():
    f2 = _peak(dp=2, fsdp=True).candidates["loss, backward"]
    f4 = _peak(dp=4, fsdp=True).candidates["loss, backward"]
    assert f2 - f4 == pytest.approx(12.0 * B1.n_params() * (1 / 2 - 1 / 4), rel=1e-9)
    assert "bf16 weight copies (autocast cache)" not in _peak(dp=2, fsdp=True).parts_bytes


# Tensor parallel loss: loss_parallel holds 16 bytes per local logit in its backward (saved log-softmax, zeros_like,
# the sum with exp(x), its product with the output gradient), vs 12 without it.
def test_loss_parallel_bytes_per_logit():
    assert memory.LOSS_PARALLEL_BYTES == (14.0, 16.0)
    t = _peak(tp=2).parts_bytes
    assert t["logits (loss)"] == pytest.approx(16.0 * 2048 * B1.vocab / 2)


# GPipe keeps every micro-batch until the backward pass: one more micro-batch adds its activations, its kept output
# and its log-softmax (6 bytes per logit) on the last stage; 1F1B's last stage keeps one in flight and only 2 bytes
# per logit more per micro-batch (the kept output).
def test_pipeline_schedules_hold_what_they_keep():
    g4 = _peak(pp=2, schedule="gpipe", n_micro=4)
    g5 = _peak(pp=2, schedule="gpipe", n_micro=5)
    f4 = _peak(pp=2, schedule="1f1b", n_micro=4)
    f5 = _peak(pp=2, schedule="1f1b", n_micro=5)
    logit = 2048 * B1.vocab
    assert f5.total_bytes - f4.total_bytes == pytest.approx(2.0 * logit)
    assert g5.total_bytes - g4.total_bytes > 6.0 * logit
    assert g4.total_bytes > f4.total_bytes and "stage 1" in g4.phase


# Gradient accumulation without a pipeline keeps the gradients of earlier micro-batches at the next loss.
def test_gradient_accumulation_keeps_gradients():
    one, acc = _peak(), _peak(n_micro=2)
    assert acc.candidates["loss, backward"] - one.candidates["loss, backward"] == pytest.approx(4.0 * B1.n_params())


# Full recomputation keeps only each layer's input: much less than storing every activation.
def test_recomputation_keeps_less():
    assert _peak(recompute="full", seq_len=8192).total_bytes < _peak(seq_len=8192).total_bytes


@pytest.mark.parametrize("kw, name", [
    (dict(dp=2), "dp"), (dict(tp=3), "tp"), (dict(pp=99), "pp"), (dict(schedule="zigzag"), "schedule"),
    (dict(micro_batch=0), "micro_batch"), (dict(recompute="most"), "recompute"),
])
def test_bad_input_is_refused(kw, name):
    with pytest.raises(ValueError, match=name):
        _peak(**kw)


def test_8b_fsdp_on_two_gpus_fits_an_80gb_card_with_checkpointing():
    p = memory.eager_layout_peak(B8, 1, 2048, dp=2, fsdp=True, recompute="full")
    assert p.total_bytes < 85.0e9 * 0.9
