"""Tests of mlcalc.memory against published numbers."""

import math

import pytest

from mlcalc import memory, spec


# Bekman's chapter "The AI Battlefield", "Tell how many GPUs do you need in 5 secs":
# an 80B-parameter model on 80 GB GPUs needs at least 23 to train (80*18*1.25/80 = 22.5)
# and 3 to serve (80*2*1.25/80 = 2.5).
def test_bekman_example_training_80b_on_80gb():
    est = memory.gpus_needed(80e9, 80e9, mode="train")
    assert est.n_gpus == 23
    assert est.exact == pytest.approx(22.5)
    assert est.total_bytes == pytest.approx(80e9 * 18 * 1.25)


def test_bekman_example_inference_80b_on_80gb():
    est = memory.gpus_needed(80e9, 80e9, mode="inference")
    assert est.n_gpus == 3
    assert est.exact == pytest.approx(2.5)


def test_bekman_breakdown_sums_to_18_and_2():
    # Same Bekman section: "8 bytes for AdamW states, 4 bytes for grads, 4+2 bytes for weights".
    assert sum(memory.BEKMAN_TRAINING_BYTES.values()) == 18
    assert sum(memory.BEKMAN_INFERENCE_BYTES.values()) == 2


def test_parts_add_up_to_total_and_headroom_is_a_quarter():
    est = memory.gpus_needed(7e9, spec("H100-SXM").memory_bytes)
    assert sum(est.parts_bytes.values()) == pytest.approx(est.total_bytes)
    assert est.parts_bytes["activations (headroom)"] == pytest.approx(0.25 * 7e9 * 18)


def test_explicit_bytes_and_headroom_are_used():
    # ZeRO paper (Rajbhandari et al. 2020, section 3.1): mixed-precision Adam needs 16 bytes
    # per parameter, so a 7.5B model holds 120 GB of model states.
    est = memory.gpus_needed(7.5e9, 80e9, bytes_per_param=16, headroom=1.0)
    assert est.total_bytes == pytest.approx(120e9)
    assert est.n_gpus == 2


def test_exact_multiple_does_not_round_up_an_extra_gpu():
    est = memory.gpus_needed(64e9, 80e9, bytes_per_param=1.25, headroom=1.0)
    assert est.n_gpus == 1
    est = memory.gpus_needed(0.1 * 3, 0.3, bytes_per_param=1, headroom=1.0)
    assert est.n_gpus == 1


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_params": 0}, "n_params"),
        ({"n_params": -5}, "n_params"),
        ({"n_params": math.nan}, "n_params"),
        ({"n_params": "80e9"}, "n_params"),
        ({"gpu_memory_bytes": 0}, "gpu_memory_bytes"),
        ({"mode": "finetune"}, "mode"),
        ({"headroom": 0.9}, "headroom"),
        ({"bytes_per_param": 0}, "bytes_per_param"),
        ({"bytes_per_param": {"weights": -1}}, "bytes_per_param"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, name):
    args = {"n_params": 80e9, "gpu_memory_bytes": 80e9}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name) as err:
        memory.gpus_needed(**args)
    assert "not allowed" in str(err.value)
