"""Tests of mlcalc.storage against published numbers."""

import math

import pytest

from mlcalc import storage
from mlcalc.storage import GB, GiB, MiB, TiB

HOUR = 3600.0
DAY = 86400.0


# ----------------------------------------------------------------------- data


def test_every_figure_has_a_source_and_a_known_unit():
    for fs in storage.filesystems().values():
        assert fs.source.startswith("https://"), fs.key
        assert fs.unit in ("GB/s", "MiB/s", "Gbit/s"), fs.key
        assert fs.scope in ("per client", "per device", "aggregate"), fs.key
        assert fs.direction in ("read", "write"), fs.key
    d = storage.data()
    for section in (d["workloads"], d["bloom"], d["failures"]["llama3"], d["async_checkpoint"]):
        assert section["source"].startswith("https://")


# Lockwood's notes: an NFS client reaches ~3 GB/s over TCP, ~10 GB/s with nconnect.
# Bekman's fio-scan on a Samsung 980 PRO: 2762.0 MiB/s read (GiB-based unit, not GB).
def test_filesystem_units_are_converted():
    assert storage.filesystem("nfs-tcp").bandwidth_bytes_per_s == pytest.approx(3e9)
    assert storage.filesystem("nfs-nconnect").bandwidth_bytes_per_s == pytest.approx(10e9)
    assert storage.filesystem("nvme-980pro-fio").bandwidth_bytes_per_s == pytest.approx(2762.0 * 2**20)
    with pytest.raises(ValueError, match="filesystem"):
        storage.filesystem("floppy")


# ------------------------------------------------------------ dataloader bandwidth


def _workload(key):
    w = storage.data()["workloads"][key]
    return w["sample_mib"] * MiB, w["flops_per_sample_gif"] * GiB


# Ibrahim et al. 2021, section VII: "For an 1PF node peak, CosmoFlow and DeepCAM will demand a
# bandwidth of 65GB/s and 9GB/s respectively". Table II gives the FLOP per sample byte they
# used (15,400 and 107,000); 1e15 / 15,400 = 64.9 GB/s.
@pytest.mark.parametrize("key, paper_gb_per_s", [("cosmoflow", 65), ("deepcam", 9)])
def test_ibrahim_bandwidth_at_one_petaflop(key, paper_gb_per_s):
    intensity = storage.data()["workloads"][key]["flop_per_sample_byte"]
    bw = storage.dataloader_bandwidth(1.0, intensity, 1e15, accelerators_per_node=1)
    assert bw.per_accelerator_bytes_per_s / GB == pytest.approx(paper_gb_per_s, rel=0.05)
    assert bw.flop_per_byte == pytest.approx(intensity)


# Ibrahim et al. 2021, Table II: sample size and measured FLOPs per sample reproduce the
# table's FLOP per sample byte to within 3% (15,808 vs 15,400 for CosmoFlow), so the paper's
# per-sample figures give 63 GB/s per PFLOP/s where its text rounds to 65.
@pytest.mark.parametrize("key", ["cosmoflow", "deepcam", "resnet50"])
def test_ibrahim_table_ii_intensity(key):
    sample, flops = _workload(key)
    bw = storage.dataloader_bandwidth(sample, flops, 1e15)
    assert bw.flop_per_byte == pytest.approx(storage.data()["workloads"][key]["flop_per_sample_byte"], rel=0.03)


# Lockwood's notes from Ibrahim et al.: CosmoFlow sustains 35-50 TFLOP/s per V100, so an
# 8-way V100 node needs 18.2-26 GB/s (at the paper's 65 GB/s per PFLOP/s).
@pytest.mark.parametrize("tflops, node_gb_per_s", [(35, 18.2), (50, 26.0)])
def test_cosmoflow_v100_node(tflops, node_gb_per_s):
    intensity = storage.data()["workloads"]["cosmoflow"]["flop_per_sample_byte"]
    bw = storage.dataloader_bandwidth(1.0, intensity, tflops * 1e12, accelerators_per_node=8)
    assert bw.per_node_bytes_per_s / GB == pytest.approx(node_gb_per_s, rel=0.01)
    assert bw.per_node_bytes_per_s == pytest.approx(8 * bw.per_accelerator_bytes_per_s)


# Lockwood's notes (his calculator, V100 at 130 TFLOP/s): ResNet-50 needs "at most 573 MB/s per
# V100". Bekman's "3.9 GB/s per 8-way node" does not follow: 8 x 573 MB/s = 4.6 GB/s.
def test_resnet50_per_v100():
    sample, flops = _workload("resnet50")
    bw = storage.dataloader_bandwidth(sample, flops, 130e12, accelerators_per_node=8)
    assert bw.per_accelerator_bytes_per_s / 1e6 == pytest.approx(573, abs=0.5)
    assert bw.per_node_bytes_per_s / GB == pytest.approx(4.59, abs=0.01)


# BigScience tr11-176B-ml README, "Estimated run time": 450B tokens, 8 x params FLOPs per token
# (activation recomputation), 384 GPUs at 150 TFLOPs, with "Bmodel=167" in their one-liner,
# gives 120.80 days.
def test_bloom_estimated_run_time_from_tokens_per_second():
    per_gpu = storage.tokens_per_second(150e12, 167e9, flops_per_param_per_token=8)
    days = 450e9 / (per_gpu * 384) / DAY
    assert days == pytest.approx(120.80, abs=0.005)


def test_llm_bandwidth_is_tokens_times_bytes():
    # BLOOM's corpus: 1.5 TB of text, 350B tokens -> 4.29 bytes of text per token.
    assert storage.BYTES_PER_TOKEN["raw text (BLOOM corpus: 1.5 TB / 350B tokens)"] == pytest.approx(4.2857, rel=1e-4)
    flops_per_token = storage.llm_flops_per_token(7e9, 6)
    bw = storage.dataloader_bandwidth(4.0, flops_per_token, 400e12)
    assert bw.samples_per_s == pytest.approx(storage.tokens_per_second(400e12, 7e9))
    assert bw.per_accelerator_bytes_per_s == pytest.approx(4.0 * 400e12 / (6 * 7e9))


# ------------------------------------------------------------------- checkpoints


# BigScience tr11-176B-ml README: "the whole checkpoint - ... total 14 bytes per param:
# 176*10**9*14/2**30=2294.77GB" and "bf16 weights - 2 bytes per param: 176*10**9*2/2**30 =
# 327.82GB" (their GB is GiB).
def test_bloom_readme_arithmetic():
    full = storage.checkpoint_size(176e9, "full: bf16 + fp32 weights + Adam")
    assert full.bytes_per_param == 14
    assert full.total_bytes / GiB == pytest.approx(2294.77, abs=0.01)  # 2294.7788, printed truncated
    weights = storage.checkpoint_size(176e9, "weights only (bf16)")
    assert weights.total_bytes / GiB == pytest.approx(327.82, abs=0.01)


# Same README, measured with du on global_step1000: "du -ch mp* layer*  329G" and
# "du -sh .  2.3T". du -h rounds up, in binary units. BLOOM has 176,247M parameters (paper).
def test_bloom_checkpoint_on_disk():
    n = storage.data()["bloom"]["n_params"]
    full = storage.checkpoint_size(n).total_bytes
    weights = storage.checkpoint_size(n, "weights only (bf16)").total_bytes
    assert math.ceil(full / TiB * 10) / 10 == 2.3
    assert math.ceil(weights / GiB) == 329
    # The README's "2.3TB" is 2.24 TiB = 2.47 TB: the unit matters by 10%.
    assert full / 1e12 == pytest.approx(2.468, abs=0.001)


def test_checkpoint_parts_and_custom_contents():
    size = storage.checkpoint_size(7e9, {"bf16 weights": 2, "Adam states (2 x fp32)": 8})
    assert size.total_bytes == pytest.approx(70e9)
    assert sum(size.parts_bytes.values()) == pytest.approx(size.total_bytes)


# Bekman, Storage chapter: at Jean Zay "we were saving 2.3TB checkpoint in parallel on 384
# processes in 40 secs" (GPFS over NVMe); BLOOM README: 48 nodes, 4 x 100 Gbit/s Omni-Path each.
# The nodes' links (2.4 TB/s together) could move it in about a second, so the filesystem set
# the 40 s: it sustained about 62 GB/s.
def test_bloom_checkpoint_write_time():
    bloom = storage.data()["bloom"]
    size = storage.checkpoint_size(bloom["n_params"]).total_bytes
    node = bloom["node_links"] * bloom["node_link_gbit_per_s"] * 1e9 / 8
    implied_fs = size / bloom["checkpoint_save_s"]
    assert implied_fs / GB == pytest.approx(61.7, abs=0.1)
    w = storage.checkpoint_write_time(size, implied_fs, bloom["nodes"], node)
    assert w.bottleneck == "filesystem"
    assert w.seconds == pytest.approx(40.0)
    fast = storage.checkpoint_write_time(size, 1e15, bloom["nodes"], node)
    assert fast.bottleneck == "node network"
    assert fast.seconds == pytest.approx(size / (48 * node)) and fast.seconds < 1.1


# ------------------------------------------------------- failures and the interval


# Daly 2006, Figs. 3-5 (R = 10 min, delta = 5 min): the higher-order model predicts
# tau_opt = 117 min for M = 24 h, 57 min for M = 6 h and 9.1 min for M = 15 min. Those figures come
# from his series estimate of the optimum; the function solves the same optimality condition exactly,
# which the estimate approximates within 1% (116.7, 56.7 and 9.17 min).
@pytest.mark.parametrize("mtbf_min, tau_min", [(24 * 60, 117), (6 * 60, 57), (15, 9.1)])
def test_daly_figures(mtbf_min, tau_min):
    assert storage.daly_interval_s(5 * 60, mtbf_min * 60) / 60 == pytest.approx(tau_min, rel=0.01)


def test_daly_large_checkpoint_limit_and_young():
    # Daly 2006: for delta >= 2M checkpoint about every M; the exact optimum approaches M from below
    # as delta / M grows (981 s for delta = 3 M, within 0.1% of M for delta = 7 M)...
    assert 0.98 * 1000 < storage.daly_interval_s(3000, 1000) < 1000
    assert storage.daly_interval_s(7000, 1000) == pytest.approx(1000, rel=1e-3)
    # ...and Young's sqrt(2 delta M) as delta / M shrinks.
    assert storage.daly_interval_s(1, 1e9) == pytest.approx(storage.young_interval_s(1, 1e9), rel=1e-4)
    # Young 1974: sqrt(2 * delta * M); for delta = 5 min and M = 24 h, 120 min, which Daly's
    # correction (+1.4%) minus delta brings to 117 min.
    assert storage.young_interval_s(300, 86400) / 60 == pytest.approx(120.0)


# Llama 3 paper, section 3.3.4: 419 unexpected interruptions in 54 days on 16,384 H100s,
# "one failure every three hours".
def test_llama3_failure_rate():
    d = storage.data()["failures"]["llama3"]
    device = storage.device_mtbf_from_observation(d["gpus"], d["days"] * DAY, d["unexpected"])
    assert storage.system_mtbf_s(device, d["gpus"]) / HOUR == pytest.approx(3.09, abs=0.01)
    assert device / HOUR == pytest.approx(50_677, rel=1e-3)  # about 5.8 years per GPU


# Cross-check of two sources: the Llama 3 per-GPU failure rate predicts, for BLOOM's 384-416
# GPUs, 1.3-1.4 failures a week; the BLOOM chronicles report "1-2 GPU failures a week".
def test_llama3_rate_predicts_bloom_failures():
    d = storage.data()["failures"]["llama3"]
    device = storage.device_mtbf_from_observation(d["gpus"], d["days"] * DAY, d["unexpected"])
    low, high = storage.data()["bloom"]["failures_per_week"]
    for gpus in (384, 416):
        per_week = 7 * DAY / storage.system_mtbf_s(device, gpus)
        assert low <= per_week <= high


# BLOOM chronicles: "saving a checkpoint every 3h (100 iterations) so on average we would lose
# 1.5h of training on hardware crash" -- half a checkpoint period.
def test_bloom_lost_work_per_failure():
    g = storage.goodput(3 * HOUR, 40.0, mtbf_s=100 * HOUR)
    assert g.lost_work_per_failure_s / HOUR == pytest.approx(1.5, abs=0.01)


# PyTorch blog (IBM, 7B): asynchronous saving cuts the blocking time from 148.8 s to 6.3 s,
# "23.62x faster"; the checkpoint overhead at a fixed interval shrinks by nearly as much.
def test_async_checkpoint_overhead():
    a = storage.data()["async_checkpoint"]
    assert a["blocking_s"] / a["async_s"] == pytest.approx(a["speedup"], abs=0.005)
    sync = storage.goodput(HOUR, a["blocking_s"], mtbf_s=24 * HOUR)
    asyn = storage.goodput(HOUR, a["async_s"], mtbf_s=24 * HOUR)
    ratio = sync.checkpoint_fraction / asyn.checkpoint_fraction
    # delta / E of each, E = M (e^(T/M) - 1) the wall time of a period of T = tau + delta (Daly 2006)
    wall = {k: math.expm1((HOUR + a[k]) / (24 * HOUR)) for k in ("blocking_s", "async_s")}
    assert ratio == pytest.approx(a["blocking_s"] / a["async_s"] * wall["async_s"] / wall["blocking_s"])
    assert ratio > 0.95 * a["speedup"]
    assert asyn.fraction > sync.fraction


def test_goodput_parts_and_young_optimum():
    g = storage.goodput(2 * HOUR, 60.0, mtbf_s=10 * HOUR, restart_s=600.0)
    assert g.fraction == pytest.approx(1 - g.checkpoint_fraction - g.lost_work_fraction - g.restart_fraction)
    assert g.restart_fraction == pytest.approx(600 / (10 * HOUR))
    # The first-order waste delta/T + T/(2M) is smallest at T = sqrt(2 delta M) (Young).
    delta, mtbf = 60.0, 10 * HOUR
    best = storage.young_interval_s(delta, mtbf) - delta
    near = [storage.goodput(best * f, delta, mtbf).fraction for f in (0.8, 1.0, 1.25)]
    assert near[1] > near[0] and near[1] > near[2]
    assert 0.0 <= storage.goodput(100 * HOUR, 60, 1 * HOUR).fraction < 1e-30  # never negative


# Work that restarts from its last checkpoint under Poisson failures: a period of T seconds takes
# M (e^(T/M) - 1) on average (Daly 2006, section 3, with R = 0; the textbook result for a task that
# restarts from scratch). With no checkpoint cost and T = M, goodput is 1 / (e - 1) = 0.582.
def test_goodput_complete_model_at_one_mtbf():
    g = storage.goodput(HOUR, 0.0, mtbf_s=HOUR)
    assert g.fraction == pytest.approx(1 / (math.e - 1), rel=1e-12)
    assert g.checkpoint_fraction == 0 and g.restart_fraction == 0
    assert g.lost_work_fraction == pytest.approx(1 - 1 / (math.e - 1), rel=1e-12)


# The first-order form 1 - delta/T - T/(2M) - R/M is the complete model's limit for T, R << M.
def test_goodput_first_order_limit():
    tau, delta, mtbf, r = 600.0, 10.0, 1e6, 60.0
    first = 1 - delta / (tau + delta) - (tau + delta) / (2 * mtbf) - r / mtbf
    # the two differ by second-order terms (delta/T x (T/2M + R/M) = 6e-6 here)
    assert storage.goodput(tau, delta, mtbf, r).fraction == pytest.approx(first, abs=1e-5)


@pytest.mark.parametrize("tau,delta,mtbf,r", [(1e6, 10, 1.0, 0.0), (3600, 3000, 100, 5000), (1, 0, 1e-300, 1e300),
                                              (1e300, 1e300, 1.0, 0.0), (5, 5, 5, 5)])
def test_goodput_shares_stay_in_range(tau, delta, mtbf, r):
    # every share between 0 and 1, summing to 1, at any inputs (the first-order form printed
    # "lost work 1613%" once the period passed the job's MTBF)
    g = storage.goodput(tau, delta, mtbf, r)
    parts = (g.fraction, g.checkpoint_fraction, g.lost_work_fraction, g.restart_fraction)
    assert all(0.0 <= p <= 1.0 for p in parts) and sum(parts) == pytest.approx(1.0)
    assert math.isfinite(g.lost_work_per_failure_s) and g.lost_work_per_failure_s >= 0


# ----------------------------------------------------------------------- capacity


# Bekman's chapter "The AI Battlefield" (and Bekman's Storage chapter): "If you want a reliable
# 100TBs you need to rent 125TBs". GCP Filestore: 89% usable, "buy 12% more".
def test_bekman_usable_rule():
    cap = storage.storage_capacity(100e12, 0, 0)
    assert cap.to_buy_bytes / 1e12 == pytest.approx(125.0)
    gcp = storage.data()["capacity"]["gcp_filestore_usable_fraction"]
    cap = storage.storage_capacity(100e12, 0, 0, usable_fraction=gcp)
    assert cap.to_buy_bytes / cap.needed_bytes - 1 == pytest.approx(0.12, abs=0.005)


def test_capacity_adds_checkpoints_kept():
    cap = storage.storage_capacity(1.5e12, 2.5e12, checkpoints_kept=10, other_bytes=1e12)
    assert cap.parts_bytes["checkpoints"] == pytest.approx(25e12)
    assert cap.needed_bytes == pytest.approx(27.5e12)
    assert cap.to_buy_bytes == pytest.approx(27.5e12 / 0.8)


# Bekman, Storage chapter: with a 16 MiB block size and 16 KiB files "you will be using 1,024
# times more disk space": 100 MiB of such files show as 100 GiB.
def test_block_size_waste():
    n = 100 * MiB // (16 * 1024)
    used = storage.allocated_bytes(16 * 1024, n, 16 * MiB)
    assert used / (n * 16 * 1024) == 1024
    assert used / GiB == pytest.approx(100)
    assert storage.allocated_bytes(4096, 10, 4096) == 40960  # exact fit: no extra block


# -------------------------------------------------------------------- small files


# blister README (Python 2.7): 13,619 file operations for 479 modules, "28.4 DOPM".
def test_blister_ops_per_module():
    b = storage.data()["small_files"]["blister"]
    assert b["file_operations"] / b["modules"] == pytest.approx(28.4, abs=0.05)
    t = storage.import_startup_time(1, 1, b["modules"], b["file_operations"] / b["modules"], 1e9, 1e-3)
    assert t.total_ops == pytest.approx(13619)
    assert t.bottleneck == "round-trip latency" and t.seconds == pytest.approx(13.619)


def test_startup_switches_to_the_metadata_server_at_scale():
    one = storage.import_startup_time(1, 8, 500, 10, 100_000, 0.5e-3)
    assert one.bottleneck == "round-trip latency"
    assert one.seconds == pytest.approx(500 * 10 * 0.5e-3)
    many = storage.import_startup_time(512, 8, 500, 10, 100_000, 0.5e-3)
    assert many.bottleneck == "metadata server"
    assert many.seconds == pytest.approx(512 * 8 * 500 * 10 / 100_000)
    # FSx for Lustre's smallest provisioned metadata rate (1,500 IOPS, AWS API reference) makes
    # the same start-up 128x slower than its largest (192,000).
    sf = storage.data()["small_files"]["fsx_lustre_metadata_iops"]
    slow = storage.import_startup_time(512, 8, 500, 10, sf["min"], 0.5e-3)
    fast = storage.import_startup_time(512, 8, 500, 10, sf["max"], 0.5e-3)
    assert slow.seconds / fast.seconds == pytest.approx(128)


# ------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: storage.dataloader_bandwidth(0, 1, 1), "bytes_per_sample"),
        (lambda: storage.dataloader_bandwidth(1, -1, 1), "flops_per_sample"),
        (lambda: storage.dataloader_bandwidth(1, 1, math.nan), "achieved_flops_per_s"),
        (lambda: storage.dataloader_bandwidth(1, 1, 1, accelerators_per_node=2.5), "accelerators_per_node"),
        (lambda: storage.tokens_per_second(1e12, 0), "n_params"),
        (lambda: storage.llm_flops_per_token(7e9, 0), "flops_per_param_per_token"),
        (lambda: storage.checkpoint_size(0), "n_params"),
        (lambda: storage.checkpoint_size(1e9, "everything"), "contents"),
        (lambda: storage.checkpoint_size(1e9, {"weights": -2}), "contents"),
        (lambda: storage.checkpoint_size(1e9, 14), "contents"),
        (lambda: storage.checkpoint_write_time(0, 1, 1, 1), "checkpoint_bytes"),
        (lambda: storage.checkpoint_write_time(1, 0, 1, 1), "filesystem_write_bytes_per_s"),
        (lambda: storage.checkpoint_write_time(1, 1, 0, 1), "n_nodes"),
        (lambda: storage.checkpoint_write_time(1, 1, 1, "fast"), "node_bytes_per_s"),
        (lambda: storage.device_mtbf_from_observation(10, 1, 0), "n_failures"),
        (lambda: storage.system_mtbf_s(-1, 8), "device_mtbf_s"),
        (lambda: storage.system_mtbf_s(1, 0), "n_devices"),
        (lambda: storage.young_interval_s(0, 1), "checkpoint_s"),
        (lambda: storage.daly_interval_s(1, 0), "mtbf_s"),
        (lambda: storage.goodput(0, 1, 1), "interval_s"),
        (lambda: storage.goodput(1, -1, 1), "checkpoint_s"),
        (lambda: storage.goodput(1, 1, 1, restart_s=-5), "restart_s"),
        (lambda: storage.storage_capacity(-1, 0, 0), "dataset_bytes"),
        (lambda: storage.storage_capacity(1, 1, -1), "checkpoints_kept"),
        (lambda: storage.storage_capacity(1, 1, 1.5), "checkpoints_kept"),
        (lambda: storage.storage_capacity(1, 1, 1, usable_fraction=1.2), "usable_fraction"),
        (lambda: storage.storage_capacity(0, 0, 0), "total bytes"),
        (lambda: storage.allocated_bytes(1, 1, 0), "block_bytes"),
        (lambda: storage.import_startup_time(0, 1, 1, 1, 1, 1), "n_nodes"),
        (lambda: storage.import_startup_time(1, 1, 1, 1, 0, 1), "metadata_ops_per_s"),
        (lambda: storage.import_startup_time(1, 1, 1, 1, 1, -1), "op_latency_s"),
    ],
)
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name) as err:
        call()
    assert "not allowed" in str(err.value)
