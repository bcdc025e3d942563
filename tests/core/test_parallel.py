"""Tests of mlcalc.parallel (parallelism traffic, pipeline schedules, layouts) against published numbers."""

import pytest

from mlcalc import models

from mlcalc import network as net
from mlcalc import parallel as par


# --------------------------------------------------------------------------- data parallel volumes

def test_zero_paper_volumes_2psi_and_3psi():
    # Rajbhandari et al. 2020 (ZeRO), section 7.2: data parallelism moves 2 Psi per step
    # (reduce-scatter + all-gather); P_os and P_os+g also 2 Psi; P_os+g+p 3 Psi, 1.5x.
    psi, dp = 7.5e9, 1024
    wire = {s: sum(par.wire_bytes(o) for o in par.data_parallel_ops(psi, dp, s, bytes_per_value=1.0))
            for s in par.DP_STRATEGIES}
    assert wire["ddp"] == pytest.approx(2 * psi, rel=1e-3)
    assert wire["zero1"] == wire["zero2"] == pytest.approx(wire["ddp"])
    assert wire["zero3"] == wire["fsdp"] == pytest.approx(3 * psi, rel=1e-3)
    assert wire["zero3"] / wire["ddp"] == pytest.approx(1.5)


def test_data_parallel_collectives():
    # Lockwood's notes "Communication": data parallelism uses AllReduce, sharded data parallelism
    # AllGather and ReduceScatter.
    assert [o.collective for o in par.data_parallel_ops(1e9, 8, "ddp")] == ["all_reduce"]
    assert sorted(o.collective for o in par.data_parallel_ops(1e9, 8, "fsdp")) == ["all_gather", "all_gather",
                                                                                  "reduce_scatter"]


def test_megatron_tensor_parallel_four_allreduces_per_layer():
    # Shoeybi et al. 2019 (Megatron-LM), Fig. 4: "4 total communication operations in the
    # forward and backward pass of a single model parallel transformer layer", each of b x s x h.
    m = par.Workload(models.ModelConfig(name="toy", n_layers=10, hidden=1024, n_heads=8, n_kv_heads=8, head_dim=128,
                                        ffn_hidden=4096, vocab=32000), seq_len=2048)
    (op,) = par.tensor_parallel_ops(m, tp=8, micro_batch=1, n_micro=1)
    assert op.collective == "all_reduce" and op.count == 4 * 10
    assert op.message_bytes == pytest.approx(1 * 2048 * 1024 * 2)
    # Korthikanti et al. 2022: sequence parallelism swaps each all-reduce for an
    # all-gather + reduce-scatter "with the same communication bandwidth".
    sp = par.tensor_parallel_ops(m, tp=8, micro_batch=1, n_micro=1, sequence_parallel=True)
    assert sum(par.wire_bytes(o) for o in sp) == pytest.approx(par.wire_bytes(op))


def test_pipeline_sends_bsh_per_microbatch_each_way():
    # Narayanan et al. 2021, 3.2 / 4.1: consecutive stages exchange a b x s x h tensor
    # per micro-batch, forward (activations) and backward (their gradients).
    m = par.reference_model("GPT-145.6B")
    (op,) = par.pipeline_parallel_ops(m, micro_batch=1, n_micro=8)
    assert op.collective == "send_recv" and op.count == 16
    assert par.wire_bytes(op) == pytest.approx(16 * 2048 * 12288 * 2)


def test_expert_parallel_all_to_alls():
    # Lepikhin et al. 2020 (GShard), 2.2: dispatch and combine are one all-to-all each in
    # the forward pass (and again in the backward pass).
    (op,) = par.expert_parallel_ops(tokens=4096, hidden=4096, ep=8, moe_layers=2, top_k=2)
    assert op.collective == "all_to_all" and op.count == 8
    assert op.message_bytes == pytest.approx(4096 * 2 * 4096 * 2)


# --------------------------------------------------------------------------- compute and overlap

def test_six_n_flops_and_backward_share():
    # Kaplan et al. 2020, 2.1: C = 6 N per token (2N forward, 4N backward).
    assert par.FLOPS_PER_PARAM_PER_TOKEN == 6 and par.BACKWARD_SHARE == pytest.approx(2 / 3)
    # Bekman "TFLOPS" section: 624 TFLOP for one iteration at 156 TFLOPS takes 4 s.
    assert par.step_compute_s(624e12 / 6, 1, 1, 312e12, mfu=0.5) == pytest.approx(4.0)


def test_overlap_hides_only_what_fits_in_the_backward_pass():
    ov = par.overlap(comm_s=1.0, compute_s=3.0)
    assert ov.hidden and ov.exposed_s == 0
    ov = par.overlap(comm_s=3.0, compute_s=3.0)
    assert not ov.hidden and ov.exposed_s == pytest.approx(1.0)


# --------------------------------------------------------------------------- pipeline schedules

def test_narayanan_bubble_fractions():
    # Narayanan et al. 2021, 2.2.1: bubble fraction (p-1)/m; 2.2.2: interleaved (p-1)/(m v).
    # Their Fig. 4 example: p = 4, m = 8, v = 2.
    assert par.bubble_fraction(4, 8) == pytest.approx(3 / 8)
    assert par.bubble_fraction(4, 8, v=2) == pytest.approx(3 / 16)


def test_gpipe_bubble_over_total():
    # Huang et al. 2019 (GPipe), 2.3: the bubble overhead is O((K-1)/(M+K-1)) of the step.
    assert par.bubble_fraction(4, 8, relative_to="total") == pytest.approx(3 / 11)


@pytest.mark.parametrize("kind, p, m, v", [
    ("gpipe", 4, 8, 1), ("1f1b", 4, 8, 1), ("1f1b", 8, 16, 1), ("interleaved", 4, 8, 2),
    ("interleaved", 8, 16, 4), ("1f1b", 4, 2, 1),
])
def test_simulated_schedules_match_the_formulas(kind, p, m, v):
    # The simulated timelines reproduce Narayanan et al.'s (p-1)/m and (p-1)/(m v).
    t = par.pipeline_schedule(kind, p, m, v)
    assert t.bubble_fraction == pytest.approx(par.bubble_fraction(p, m, v))
    assert len(t.slots) == 2 * m * v * p
    assert t.makespan == pytest.approx(t.busy * (1 + par.bubble_fraction(p, m, v)))


def test_1f1b_holds_at_most_p_microbatches_gpipe_all_m():
    # Narayanan et al. 2021, 2.2.1: 1F1B limits in-flight micro-batches to p; GPipe keeps m.
    assert par.pipeline_schedule("gpipe", 4, 8).peak_in_flight == 8
    assert par.pipeline_schedule("1f1b", 4, 8).peak_in_flight == 4


# --------------------------------------------------------------------------- layout

@pytest.mark.parametrize("name", list(par.NARAYANAN_TABLE1))
def test_layout_rule_reproduces_narayanan_table1(name):
    # Narayanan et al. 2021, Table 1: (t, p) chosen for each model on 80 GB A100s, 8 per node.
    _p, _h, _hid, _l, t, p, gpus, _b = par.NARAYANAN_TABLE1[name]
    lay = par.suggest_layout(par.reference_model(name), gpus, 8, 80e9)
    assert (lay.tp, lay.pp, lay.dp) == (t, p, gpus // (t * p))


def test_layout_budget_on_dgx_a100():
    m = par.reference_model("GPT-145.6B")
    lay = par.suggest_layout(m, 1536, 8, 80e9)
    fab = net.fabric("DGX-A100", n_nodes=192)
    b = par.layout_budget(m, lay, fab, global_batch=2304, micro_batch=1, flops_per_gpu=312e12, mfu=0.47)
    kinds = {line.parallelism: line for line in b.lines}
    assert set(kinds) == {"tensor", "pipeline", "data"}
    assert kinds["tensor"].link == "intra-node" and kinds["data"].link == "inter-node"
    # Wang et al. 2023 (Rail-only), quoted in Lockwood's notes: with 3D parallelism "over 75% of all
    # bytes transferred between processors is for tensor parallelism".
    total = sum(line.wire_bytes for line in b.lines)
    assert kinds["tensor"].wire_bytes / total > 0.75
    assert b.step_s == pytest.approx(b.compute_s + b.exposed_s)


def test_data_parallel_ring_gets_the_node_network_divided_by_tp():
    # NCCL rings cross nodes through every NIC (NCCL maintainers: 46-48 GB/s per 400G NIC, nccl-tests#290;
    # 192 GB/s all-reduce busbw on DGX A100's 8 HDR NICs, nccl#812). With tp GPUs of a node in tp
    # different data-parallel groups, the tp groups share the node's NICs: node / tp each. Only with
    # tp = 8 does each group get one GPU's NIC share.
    fab = net.fabric("DGX-A100", 4)
    node = fab.node_inter_bytes_per_s
    assert par.parallel_busbw_bytes_per_s(fab, 1, "data") == (pytest.approx(node), "inter-node")
    assert par.parallel_busbw_bytes_per_s(fab, 8, "data")[0] == pytest.approx(node / 8)
    assert par.parallel_busbw_bytes_per_s(fab, 8, "pipeline")[0] == pytest.approx(node / 8)
    assert par.parallel_busbw_bytes_per_s(fab, 8, "tensor") == (pytest.approx(fab.intra_bytes_per_s), "intra-node")
    # Pure data parallelism over 2 DGX A100: the gradient ring runs at the node's 188 GB/s, not 23.5.
    m = par.reference_model("GPT-1.7B")
    b = par.layout_budget(m, par.GridLayout(1, 1, 16), net.fabric("DGX-A100", 2), 512, 1, 312e12)
    (dp,) = b.lines
    assert dp.link == "inter-node"
    grads = 2 * m.n_params  # bf16
    assert dp.time_s == pytest.approx(2 * 15 / 16 * grads / node, rel=0.02)


def test_wire_bytes_rule_of_thumb_option():
    # "2x the payload" beside 2(n-1)/n (nccl-tests doc/PERFORMANCE.md): for 8 ranks 2 vs 1.75.
    op = par.Op("gradients", "all_reduce", 1e9, 1, 8)
    assert par.wire_bytes(op) == pytest.approx(1.75e9)
    assert par.wire_bytes(op, volume="2x payload") == pytest.approx(2e9)


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("call, name", [
    (lambda: par.data_parallel_ops(0, 8), "n_params"),
    (lambda: par.data_parallel_ops(1e9, 8, "zero4"), "strategy"),
    (lambda: par.bubble_fraction(0, 8), "p"),
    (lambda: par.bubble_fraction(4, 8, relative_to="all"), "relative_to"),
    (lambda: par.pipeline_schedule("zb", 4, 8), "kind"),
    (lambda: par.pipeline_schedule("1f1b", 4, 8, v=2), "v"),
    (lambda: par.pipeline_schedule("interleaved", 4, 6, v=2), "m"),
    (lambda: par.reference_model("GPT-5"), "model"),
    (lambda: par.Workload("x"), "model"),
    (lambda: par.suggest_layout(par.reference_model("GPT-1008B"), 3072, 8, 1e9), "gpu_memory_bytes"),
    (lambda: par.suggest_layout(par.reference_model("GPT-145.6B"), 100, 8, 80e9), "n_gpus"),
    (lambda: par.overlap(1, 1, backward_share=0), "backward_share"),
    (lambda: par.layout_budget(par.reference_model("GPT-1.7B"), par.GridLayout(1, 1, 16, 0, 0),
                               net.fabric("DGX-A100", 2), 100, 1, 312e12), "global_batch"),
    (lambda: par.pipeline_schedule("1f1b", 1e30, 8), "p"),
    (lambda: par.pipeline_schedule("1f1b", 8, 10**6), "m"),
    (lambda: par.pipeline_schedule("interleaved", 64, 1024, v=8), "v"),
    (lambda: par.wire_bytes(par.Op("x", "all_reduce", -1, 1, 8)), "message_bytes"),
    (lambda: par.Op("x", "all_reduce", 1e9, 0, 8), "count"),
    (lambda: par.Op("x", "gather", 1e9, 1, 8), "collective"),
    (lambda: par.Op("x", "all_reduce", 1e9, 1, 0), "group"),
    (lambda: par.wire_bytes(par.Op("x", "all_reduce", 1e9, 1, 8), volume="3x"), "volume"),
    (lambda: par.GridLayout(0, 1, 1), "tp"),
    (lambda: par.Workload(models.preset("Mistral 7B").replace(n_layers=10**9)), "n_layers"),
    (lambda: par.GridLayout(1, 1, 1, -5.0), "state_bytes_per_gpu"),
    (lambda: par.parallel_busbw_bytes_per_s(net.fabric("DGX-A100", 2), 16, "data"), "tp"),
    (lambda: par.parallel_busbw_bytes_per_s(net.fabric("DGX-A100", 2), 8, "context"), "parallelism"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name) as err:
        call()
    assert "not allowed" in str(err.value)
