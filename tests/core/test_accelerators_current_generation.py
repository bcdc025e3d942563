"""The current generation in the catalogue and the network model: every new number against its source.

Rack-scale NVLink domains (GB200 / GB300 NVL72), DGX H200 and DGX B300, TPU7x (Ironwood), Trainium3,
and the announced parts (Rubin, MI455X), kept out of the defaults.
"""

import pytest

from mlcalc import facility, network, parallel
from mlcalc.accelerators import catalogue, spec


# ---- accelerators -------------------------------------------------------------------------------

# Google Cloud TPU7x documentation (docs.cloud.google.com/tpu/docs/tpu7x): 2,307 TFLOPS bf16, 4,614 fp8,
# 192 GiB of HBM per chip, 9,216 chips per pod; Google's Ironwood announcement (April 2025): 7.2 TB/s of
# HBM bandwidth and 1.2 TB/s of bidirectional ICI per chip.
def test_tpu_v7_ironwood():
    t = spec("TPU-v7")
    assert t.peak_flops("bf16") == 2307e12 and t.peak_flops("fp8") == 4614e12
    assert t.memory_bytes == pytest.approx(192 * 2**30, rel=1e-3)  # GiB stated, stored in GB
    assert t.memory_bandwidth_bytes_per_s == 7.2e12
    assert 2 * t.scale_up_bytes_per_s == 1.2e12  # bidirectional 1.2 TB/s -> 600 GB/s each way
    assert t.extra["scale_up_domain"] == 9216
    # Google's pod figure: 9,216 chips x 4,614 TFLOPS fp8 = 42.5 exaFLOPS
    assert 9216 * t.peak_flops("fp8") == pytest.approx(42.5e18, rel=1e-3)


# AWS Neuron documentation, Trainium3 (December 2025): 2,517 MXFP8/MXFP4 TFLOPS, 671 BF16/FP16/TF32,
# 183 FP32; 144 GiB of HBM3e at 4.9 TB/s; NeuronLink-v4 2.56 TB/s per device. A 144-chip Trn3 UltraServer
# is quoted at 362 PFLOPS FP8 (AWS): 144 x 2,517 = 362.4.
def test_trainium3():
    t = spec("Trainium3")
    assert t.peak_flops("fp8") == 2517e12 and t.peak_flops("bf16") == 671e12 and t.peak_flops("fp32") == 183e12
    assert t.memory_bytes == pytest.approx(144 * 2**30, rel=1e-3)
    assert t.memory_bandwidth_bytes_per_s == 4.9e12
    assert 2 * t.scale_up_bytes_per_s == 2.56e12
    assert 144 * t.peak_flops("fp8") == pytest.approx(362e15, rel=2e-3)


# NVIDIA GB300 NVL72 page (72 GPUs): FP4 1,440 PFLOPS sparse / 1,080 dense, FP8 720 and BF16 360 and
# TF32 180 PFLOPS with sparsity; up to 20 TB of HBM3e at 576 TB/s; 130 TB/s of NVLink in all.
def test_gb300_per_gpu_is_the_rack_over_72():
    g = spec("GB300")
    assert 72 * g.peak_flops("fp4") == pytest.approx(1080e15)
    assert 72 * g.sparse_flops("fp4") == pytest.approx(1440e15)
    assert 72 * g.sparse_flops("fp8") == pytest.approx(720e15)
    assert 72 * g.sparse_flops("bf16") == pytest.approx(360e15)
    assert 72 * g.sparse_flops("tf32") == pytest.approx(180e15)
    assert 72 * g.memory_bytes == pytest.approx(20e12, rel=1e-3)
    assert 72 * g.memory_bandwidth_bytes_per_s == pytest.approx(576e12)
    # 72 GPUs x 1.8 TB/s (both directions) = 129.6 TB/s, NVIDIA's "130 TB/s"
    assert 72 * 2 * g.scale_up_bytes_per_s == pytest.approx(130e12, rel=0.01)


def test_announced_parts_are_marked_and_kept_out_of_the_defaults():
    shipping = catalogue()
    everything = catalogue(include_announced=True)
    for key in ("Rubin", "MI455X"):
        assert key not in shipping and key in everything
        assert spec(key).status == "announced" and spec(key).extra["date"]
    for key in ("GB300", "TPU-v7", "Trainium3", "H100-SXM"):
        assert key in shipping and spec(key).status == "shipping"
    # every dropdown and table built on catalogue() leaves them out
    assert all(a.status == "shipping" for a in shipping.values())
    assert len(everything) - len(shipping) == 2


def test_every_new_entry_has_a_source_for_each_figure_and_a_date():
    for key in ("GB300", "TPU-v7", "Trainium3", "Rubin", "MI455X"):
        a = spec(key)
        assert {"memory_gb", "memory_bandwidth_tbps", "dense_tflops"} <= set(a.sources)
        assert all(u.startswith("https://") for u in a.sources.values())
        assert len(a.extra["date"]) == 7 and a.extra["date"][4] == "-"


# ---- systems -----------------------------------------------------------------------------------

# DGX GB200 user guide, hardware: 18 compute trays of 2 Grace CPUs and 4 Blackwell GPUs, 9 NVLink switch
# trays; cluster network per tray 4 x ConnectX-7 single-port 400G. NVIDIA DPS device specifications:
# DGX_GB200 compute tray maxLoadWatts 6,667 -> 18 x 6,667 W = 120 kW, the rack's commonly quoted ~120 kW.
def test_gb200_nvl72_rack():
    s = network.system("GB200-NVL72")
    assert s.gpus_per_node == 72 and s.hosts == 18 and s.gpus_per_host == 4
    assert s.nics_per_node == 72 and s.nic.bytes_per_s == 50e9  # 400 Gb/s per GPU
    assert s.intra.bytes_per_s == 900e9  # NVLink 5: 1.8 TB/s both directions
    tray_w = facility.data()["systems"]["GB200 NVL72"]["tray_power_w"]  # the rack's one home: facility.json
    assert 18 * tray_w / 1e3 == pytest.approx(s.power_kw, rel=1e-3) == pytest.approx(120, rel=1e-3)
    assert network.scale_up_domain("GB200-NVL72") == 72


# NVIDIA Enterprise RA (NVL72 AI factory), components: 18 trays of 4 Blackwell Ultra GPUs; 4 ConnectX-8
# per tray (800 Gb/s each); "Full rack requiring up to 142 kW"; 8 power shelves of 33 kW.
def test_gb300_nvl72_rack():
    s = network.system("GB300-NVL72")
    assert s.gpus_per_node == 72 and s.hosts == 18 and s.nics_per_node == 18 * 4
    assert s.nic.bytes_per_s == 100e9  # 800 Gb/s
    assert s.power_kw == 142
    # the rack's scale-out bandwidth: 72 x 800 Gb/s = 57.6 Tb/s, one direction
    assert s.node_bytes_per_s * 8 == pytest.approx(57.6e12)


# DGX BasePOD reference architecture: DGX H200, eight H200 (1,128 GB), eight ConnectX-7 at 400 Gb/s.
# DGX B300 user guide: eight ConnectX-8 SuperNICs at 800 Gb/s.
def test_dgx_h200_and_b300():
    h = network.system("DGX-H200")
    assert h.gpus_per_node == 8 and h.nics_per_node == 8 and h.nic.bytes_per_s == 50e9
    # the DGX's 1,128 GB is eight datasheet 141 GB (memory_bytes is the capacity a fit uses: 150.1e9 measured)
    assert 8 * spec("H200-SXM").datasheet_memory_bytes == pytest.approx(1128e9)
    assert h.power_kw == 10.2
    b = network.system("DGX-B300")
    assert b.gpus_per_node == 8 and b.nics_per_node == 8 and b.nic.bytes_per_s == 100e9
    assert b.pcie is None  # PCIe Gen6 carries an 800 Gb/s port: no cap modelled


def test_a_rack_fabric_keeps_one_nic_per_gpu_and_nvlink_across_the_rack():
    fab = network.fabric("GB200-NVL72", n_nodes=4)
    assert fab.gpus_per_node == 72 and fab.n_ranks == 288
    # across racks each GPU has its own 400G NIC: 47 of 50 GB/s achievable (nccl-tests#290)
    assert fab.inter_bytes_per_s_per_gpu == pytest.approx(47e9, rel=0.01)
    # part of a rack: 8 GPUs occupy 2 trays and keep their 8 NICs
    part = network.fabric("GB200-NVL72", n_nodes=1, gpus_per_node=8)
    assert part.node_inter_bytes_per_s == pytest.approx(8 * 47e9, rel=0.01)
    # a DGX still allows at most 16 NICs on its one host
    with pytest.raises(ValueError, match="nics_per_node"):
        network.node_network_bytes_per_s(17, 50e9, 8)
    assert network.node_network_bytes_per_s(72, 50e9, 72, hosts=18) == pytest.approx(72 * 50e9)


def test_parallel_degrees_inside_the_scale_up_domain():
    assert network.parallel_degrees_inside("DGX-H100") == (1, 2, 4, 8)
    assert network.parallel_degrees_inside("GB300-NVL72") == (1, 2, 4, 8, 16, 32, 64)
    assert network.parallel_degrees_inside("GB200-NVL72", limit=16) == (1, 2, 4, 8, 16)
    assert set(network.rack_scale_systems()) == {"GB200-NVL72", "GB300-NVL72"}
    with pytest.raises(ValueError, match="limit"):
        network.parallel_degrees_inside("DGX-H100", limit=0)


def test_the_layout_helper_puts_tensor_parallelism_across_a_rack():
    # Narayanan et al.'s 1T-parameter model (128 layers), 16 bytes/param = 16.1 TB of states, half of a
    # GB200's 186 GB for them: 8-way tensor parallelism (a DGX) needs 32 pipeline stages (16.1 TB / 256 =
    # 63 GB each); 64-way inside an NVL72 rack needs 4 (the same 63 GB): the pipeline bubble shrinks 8-fold.
    big = parallel.reference_model("GPT-1008B")
    mem = spec("GB200").memory_bytes
    dgx = parallel.suggest_layout(big, 4608, network.system("DGX-B200").gpus_per_node, mem)
    rack = parallel.suggest_layout(big, 4608, network.system("GB200-NVL72").gpus_per_node, mem)
    assert (dgx.tp, dgx.pp, dgx.dp) == (8, 32, 18)
    assert (rack.tp, rack.pp, rack.dp) == (64, 4, 18)
    assert rack.state_bytes_per_gpu == pytest.approx(dgx.state_bytes_per_gpu)


def test_bad_system_values_are_refused():
    base = network.system("DGX-H100")
    with pytest.raises(ValueError, match="hosts"):
        network.System("x", "x", 72, base.intra, base.nic, 72, "https://x", hosts=5)
    with pytest.raises(ValueError, match="nics_per_node"):
        network.System("x", "x", 72, base.intra, base.nic, 72, "https://x", hosts=1)
    with pytest.raises(ValueError, match="power_kw"):
        network.System("x", "x", 8, base.intra, base.nic, 8, "https://x", power_kw=-1.0)


# Expert parallelism inside the scale-up domain: DeepSeek-V3 style EP=64 with tp=1 crosses a DGX's 8 GPUs
# (each GPU then sends through its own 400G NIC: 47 of 50 GB/s) but stays on NVLink inside an NVL72 rack
# (NVLink 5: 900 GB/s each way, at the same 0.8222 NCCL efficiency as Hopper's 370/450, links.json).
def test_expert_parallel_all_to_all_stays_on_nvlink_inside_a_rack():
    dgx = network.fabric("DGX-B200", n_nodes=8)
    rack = network.fabric("GB200-NVL72", n_nodes=1)
    two_racks = network.fabric("GB200-NVL72", n_nodes=2)
    bw, where = parallel.parallel_busbw_bytes_per_s(dgx, 1, "expert", ep=64)
    assert where == "inter-node" and bw == pytest.approx(47e9, rel=0.01)
    bw, where = parallel.parallel_busbw_bytes_per_s(two_racks, 1, "expert", ep=64)
    assert where == "intra-node" and bw == pytest.approx(900e9 * 0.8222, rel=1e-3)
    assert parallel.parallel_busbw_bytes_per_s(rack, 2, "expert", ep=64)[1] == "intra-node"  # 1 rack: NVLink
    assert parallel.parallel_busbw_bytes_per_s(two_racks, 2, "expert", ep=64)[1] == "inter-node"  # 128 > 72
    with pytest.raises(ValueError, match="ep"):
        parallel.parallel_busbw_bytes_per_s(rack, 1, "expert", ep=0)



def test_the_planner_tries_tensor_parallel_degrees_inside_the_scale_up_domain(monkeypatch):
    # Llama 3 405B has 128 heads: on a DGX (H100) the planner tries tp 1-8; a chip whose system is an
    # NVL72 rack (GB200) gets tp up to 64, all inside the rack's NVLink domain.
    from mlcalc import models, plan

    model = models.preset("Llama-3 405B")
    dgx = {c[0] for c in plan.layout_candidates(model, "H100-SXM", 4608, 8192, 16e6)}
    assert dgx == {1, 2, 4, 8}
    real = plan.chip_info
    monkeypatch.setattr(plan, "chip_info", lambda chip: {**real("B200"), "system": "GB200-NVL72"})
    rack = {c[0] for c in plan.layout_candidates(model, "GB200", 4608, 8192, 16e6)}
    assert rack == {1, 2, 4, 8, 16, 32, 64}


def test_a_systems_power_has_one_home():
    # facility.json holds each system's power once; links.json's nodes and plan.json's chips read it
    from mlcalc import plan

    for key, s in network.systems().items():
        home = network._raw()["systems"][key].get("facility_system")
        if home:
            assert "power_kw" not in network._raw()["systems"][key]
            assert s.power_kw == facility.system(home).power_kw
    for chip in plan.chips():
        assert "node_power_kw" not in plan.data()["chips"][chip] and "board_power_w" not in plan.data()["chips"][chip]
        housed = facility.system(plan.FACILITY_SYSTEM[chip])
        assert plan.chip_info(chip)["node_power_kw"] == housed.power_kw
        assert plan.chip_info(chip)["board_power_w"] == housed.board_power_w
