"""DeepSeek-V3's first three layers are dense (DeepSeek-AI 2024, DeepSeek-V3 Technical Report, 4.2: "we substitute
all FFNs except for the first three layers with MoE layers"; 671B parameters in all, 37B activated per token): every
memory and step path counts them as a dense feed-forward block of width ffn_hidden, not as mixtures of experts."""

from __future__ import annotations

import pytest

from mlcalc import memory, steptime

M = memory.model_preset("DeepSeek-V3")
# The same layer with a dense feed-forward block: what each of the first three is
TWIN = M.replace(n_experts=1, experts_per_token=1, n_shared_experts=0, moe_ffn_hidden=0, first_dense_layers=0)


def test_the_split_is_the_published_one():
    assert (M.first_dense_layers, M.n_moe_layers, M.n_layers) == (3, 58, 61)
    assert M.n_params() == pytest.approx(671e9, rel=0.001)  # 671B total
    assert M.n_active_params() == pytest.approx(37e9, rel=0.015)  # 37B activated
    # counted as mixtures of experts, the three would add 3 x (an MoE layer - a dense one): 34B more than published
    moe_layer = (M.n_experts + M.n_shared_experts) * M.mlp_params_per_expert() + M.router_params_per_layer()
    assert M.n_params() + 3 * (moe_layer - M.mlp_params(M.ffn_hidden)) > 700e9


def test_states_per_pipeline_rank_add_up_to_the_671b():
    # one layer a stage (pp = 61), no data parallelism: each rank holds its layer's routed experts only if it is one
    # of the 58 MoE layers; summed over the ranks, the parameters are the model's 671B (2 bytes each)
    per_rank = memory._moe_layers_per_rank(M, 61, "1f1b", 1, False)
    assert per_rank[:3] == (0, 0, 0) and set(per_rank[3:]) == {1} and sum(per_rank) == 58
    routed = M.n_moe_layers * M.n_experts * M.mlp_params_per_expert()
    total = sum((M.n_params() - routed) / 61 + routed / 58 * n for n in per_rank)
    assert total == pytest.approx(671e9, rel=0.001)
    fit = memory.training_memory(M, 1e18, 1, 4096, dp=1, pp=61, zero_stage=0, activations="architecture",
                                 program="megatron")
    assert fit.parts_bytes["parameters"] == pytest.approx(2 * ((M.n_params() - routed) / 61 + routed / 58))


def test_activations_count_three_dense_layers():
    for prog, prec, fp32 in (("megatron", "bf16-master", False), ("hf", "bf16-master", True)):
        dense = memory.layer_activation_parts(M, prec, "flash", "selective", 4096, experts_in_fp32=fp32,
                                              fused_swiglu=prog == "megatron", moe=False)
        assert dict(dense) == dict(memory.layer_activation_parts(TWIN, prec, "flash", "selective", 4096,
                                                                 experts_in_fp32=fp32, fused_swiglu=prog == "megatron"))
        moe = memory.layer_activation_parts(M, prec, "flash", "selective", 4096, experts_in_fp32=fp32,
                                            fused_swiglu=prog == "megatron")
        assert "routed experts" in moe and "routed experts" not in dense
        fit = memory.training_memory(M, 1e18, 1, 4096, activations="architecture", program=prog,
                                     convention="zero-mixed-adam")
        assert fit.parts_bytes["activations"] == pytest.approx(4096 * (3 * sum(dense.values()) + 58 * sum(moe.values())),
                                                               rel=1e-12)
    # one GPU, Hugging Face's program: the training peak keeps the same layers. Its "loss, forward" candidate grows
    # per sequence by the layers' activations, the final norm (2 x 2 h + 2 h) and the logits (10 bytes each, "hf")
    one, two = (memory.training_peak(M, b, 4096, "none", precision="bf16-master").candidates["loss, forward"]
                for b in (1, 2))
    dense = sum(memory.layer_activation_parts(M, "bf16-master", "flash", "none", 4096, moe=False).values())
    moe = sum(memory.layer_activation_parts(M, "bf16-master", "flash", "none", 4096).values())
    head = 2 * 2 * M.hidden + 2 * M.hidden
    assert two - one == pytest.approx(4096 * (3 * dense + 58 * moe + head + 10 * M.vocab), rel=1e-9)
    with pytest.raises(ValueError, match="moe"):
        memory.layer_activation_parts(TWIN, moe=True)


def test_pipeline_ranks_hold_the_dense_layers_where_they_are():
    # 1F1B over 61 stages of one layer: rank 0 holds 61 micro-batches of layer 0 (dense), rank 3 58 of layer 3 (MoE)
    fit = memory.training_memory(M, 1e18, 1, 4096, dp=1, pp=61, zero_stage=0, activations="architecture",
                                 program="megatron")
    d = 4096 * sum(memory.layer_activation_parts(M, "bf16-master", "flash", "selective", 4096, experts_in_fp32=False,
                                                 fused_swiglu=True, moe=False).values())
    e = 4096 * sum(memory.layer_activation_parts(M, "bf16-master", "flash", "selective", 4096, experts_in_fp32=False,
                                                 fused_swiglu=True).values())
    held = memory._pipeline_held((d,) * 3 + (e,) * 58, 61, "1f1b", 1, 0, False)
    assert held[:4] == pytest.approx((61 * d, 60 * d, 59 * d, 58 * e), rel=1e-12)
    assert fit.parts_bytes["activations"] in held


def test_step_products_and_element_wise_work_count_three_dense_layers():
    T = 4096
    gemms = steptime.step_gemms(M, 1, T, experts_in_fp32=False)
    fwd = sum(2.0 * g.m * g.n * g.k * g.count for g in gemms if g.phase == "forward")
    # forward products: 2 FLOP per active matrix parameter and token (the 37B less embeddings and norms), and the
    # output layer
    assert fwd / T == pytest.approx(2.0 * (M.n_matrix_params(active=True) + M.vocab * M.hidden), rel=1e-9)
    for engine, per_tok in (("eager", steptime.elementwise_bytes_per_token_layer),
                            ("megatron", steptime.fused_bytes_per_token_layer)):
        e = steptime.elementwise_bytes(M, 1, T, engine=engine)
        dense, moe = sum(per_tok(M, False).values()), sum(per_tok(M).values())
        assert dense == sum(per_tok(TWIN).values()) and moe > dense
        assert e["forward: layers"] == pytest.approx(T * (3 * dense + 58 * moe), rel=1e-12)
