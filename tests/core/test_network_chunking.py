"""How NCCL cuts a ring collective into chunks and rounds, and what that says about the 2-32 MiB misses of the
collectives-small family (mlcalc.network.nccl_ring_schedule, links.json "nccl_chunking").

Sources. The code: NVIDIA/nccl at tag v2.28.9-1 (commit dbc86fd06e8b0c4517b95d8958a09ccacf9520c9), the version the
measurement ran: src/include/device.h:24 (NCCL_STEPS 8); src/init.cc:699 (DEFAULT_BUFFSIZE 1 << 22, 4 MiB);
src/include/collectives.h:17-24 (ALLREDUCE/ALLGATHER/REDUCESCATTER_CHUNKSTEPS NCCL_STEPS/2, _SLICESTEPS NCCL_STEPS/4);
src/enqueue.cc:2021-2082 (calcCollChunking: chunkSize = buffSize / NCCL_STEPS x chunkSteps, shrunk for CollNet, NVLS,
Tree/LL128 and PAT only); src/device/all_reduce.h:32-36, all_gather.h:43, reduce_scatter.h:33 (the rounds). The
measurement: mlcalc/data/measured/h200x4-2026-11-28-lat16 (4 x H200, NCCL 2.28.9, bf16; tuning.json: rank 0's
per-call NCCL INFO lines with the channels each call ran on; small_collectives.json: the times).
"""

import json
from pathlib import Path

import pytest

from mlcalc import accuracy
from mlcalc import measured
from mlcalc import network as net

MiB = 2**20
RUN = Path(measured.__file__).parent / "data" / "measured" / "h200x4-2026-11-28-lat16"
H100_RING = net.nccl_ring_channels(18, 90).channels  # 24: what NCCL's log of 2 H200s says ("Channel 00/24")


def test_the_constants_are_nccls_source_at_2_28_9():
    e = net._raw()["nccl_chunking"]
    assert e["nccl_version"] == "2.28.9"
    for key in ("simple_buffer_source", "nccl_steps_source", "ring_steps_source", "chunking_source", "loop_source"):
        assert "dbc86fd06e8b0c4517b95d8958a09ccacf9520c9" in e[key], key
    assert (e["simple_buffer_bytes"], e["nccl_steps"]) == (1 << 22, 8)
    assert (e["ring_chunk_steps"], e["ring_slice_steps"]) == (8 // 2, 8 // 4)


@pytest.mark.parametrize("collective", net.RING_KERNEL_COLLECTIVES)
def test_one_round_covers_channels_x_ranks_x_2_mib(collective):
    # chunk = 4 MiB / 8 x 4 = 2 MiB per rank and channel; a round: 24 channels x n ranks x 2 MiB of nccl-tests' S.
    four = net.nccl_ring_schedule(32 * MiB, collective, 4, H100_RING)
    assert (four.channels, four.chunk_bytes, four.loop_bytes, four.rounds) == (24, 2 * MiB, 192 * MiB, 1)
    assert four.slices_per_chunk == 2
    assert four.last_chunk_bytes == pytest.approx(32 * MiB / 96)  # the only round's chunk: S / (channels x n)
    assert four.steps_per_round == (6 if collective == "all_reduce" else 3)
    two = net.nccl_ring_schedule(32 * MiB, collective, 2, H100_RING)
    assert (two.loop_bytes, two.rounds) == (96 * MiB, 1)
    # every size of the family (8 KiB-32 MiB) and of the earlier curves up to 64 MiB: one round, the same steps
    for size in (2**13, 2**16, 2**19, 2**22, 2**25, 2**26):
        assert net.nccl_ring_schedule(size, collective, 4, H100_RING).rounds == 1
        assert net.nccl_ring_schedule(size, collective, 2, H100_RING).rounds == 1
    # 1 GiB, where the law is checked at 10 of 10 (the collectives family): 6 rounds on 4 GPUs, 11 on 2
    assert net.nccl_ring_schedule(2**30, collective, 4, H100_RING).rounds == 6
    assert net.nccl_ring_schedule(2**30, collective, 2, H100_RING).rounds == 11
    assert net.nccl_ring_schedule(192 * MiB, collective, 4, H100_RING).rounds == 1
    assert net.nccl_ring_schedule(192 * MiB + 1, collective, 4, H100_RING).rounds == 2


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="collective='broadcast'"):
        net.nccl_ring_schedule(MiB, "broadcast", 4, 24)
    with pytest.raises(ValueError, match="n_ranks=1"):
        net.nccl_ring_schedule(MiB, "all_reduce", 1, 24)
    with pytest.raises(ValueError, match="channels=0"):
        net.nccl_ring_schedule(MiB, "all_reduce", 4, 0)
    with pytest.raises(ValueError, match="message_bytes=-1"):
        net.nccl_ring_schedule(-1, "all_reduce", 4, 24)


def _main_calls():
    """(protocol setting, collective, n, size) -> (channels, protocol) of the call the point timed (the line its
    capture wrote 35 times: 32 timed calls and warm-up), from rank 0's NCCL log."""
    points = json.loads((RUN / "tuning.json").read_text())["points"]
    out = {}
    for p in points:
        call = max(p["calls"], key=lambda c: c["count"])
        out[(p["proto_env"], p["coll"], p["n"], p["size_bytes"])] = (call["ch_hi"] - call["ch_lo"] + 1, call["proto"])
    return out


def test_nccl_ran_all_its_ring_channels_from_2_mib():
    # NCCL's log: every call of 4 MiB or more ran on channels 0-23, whatever the collective, the GPUs (2 or 4) and
    # the protocol setting, and so did every call of 2 MiB with NCCL's default protocol (under NCCL_PROTO=LL128 or
    # Simple the 2 MiB all-gathers and reduce-scatters ran on 22): the mid-size misses are not fewer channels.
    calls = _main_calls()
    big = {k: v for k, v in calls.items() if k[3] >= 4 * MiB}
    assert len(big) == 4 * 3 * 2 * 5  # 4 protocol settings x 3 collectives x 2 and 4 GPUs x 4-64 MiB
    assert {channels for channels, _ in big.values()} == {H100_RING}
    at_2 = {k: v[0] for k, v in calls.items() if k[3] == 2 * MiB}
    assert {v for k, v in at_2.items() if k[0] == "unset"} == {H100_RING}
    assert {k for k, v in at_2.items() if v != H100_RING} == {
        (proto, coll, n, 2 * MiB) for proto in ("LL128", "Simple") for coll in ("all_gather", "reduce_scatter")
        for n in (2, 4)} and set(at_2.values()) == {22, 24}
    # below, NCCL uses fewer: under NCCL_PROTO=Simple the 4-GPU all-reduce of 64 KiB ran on 2 channels, 512 KiB on 16
    assert calls[("Simple", "all_reduce", 4, 2**16)][0] == 2 and calls[("Simple", "all_reduce", 4, 2**19)][0] == 16


def _graph_times():
    rows = measured.small_collectives()
    times = {(p.nccl_proto, p.collective, p.n_ranks, p.size_bytes): p.time_s for p in rows
             if p.engine == "nccl" and p.mode == "graph" and not (p.nccl_proto == "unset" and p.nccl_log)}
    logged = {(p.collective, p.n_ranks, p.size_bytes): p.logged for p in rows
              if p.engine == "nccl" and p.mode == "graph" and p.nccl_proto == "unset" and p.nccl_log}
    return times, logged


def test_where_nccl_ran_simple_the_time_is_its_small_message_floor_plus_the_laws_bytes():
    # Every graph point of 2-64 MiB whose log says ring/Simple (NCCL's default protocol): the same graph's time under
    # NCCL_PROTO=Simple at 1 KiB plus the bytes at the law's bus bandwidth is within -19.3 to +11.2 % of it (none
    # outside 20 %), while the law (NCCL's baseLat 8.4 us + steps x hwLat 3.4 us, then the same bytes) is -36 to +4 %,
    # outside 20 % at 14 of the 29. The Simple floor is 6.7-9.3 us over the law's latency on all six (collective, GPUs).
    times, logged = _graph_times()
    floor_err, law_err, over = [], [], []
    for n in (2, 4):
        for collective in net.RING_KERNEL_COLLECTIVES:
            fab = net.fabric("DGX-H100", 1, gpus_per_node=n)
            floor = times[("Simple", collective, n, 1024)]
            over.append(floor - net.fabric_collective_time(1024, fab, collective).latency_s)
            for size in [2**k for k in range(21, 27)]:
                if logged[(collective, n, size)] != ("ring/Simple",):
                    continue
                t = times[("unset", collective, n, size)]
                law = net.fabric_collective_time(size, fab, collective)
                floor_err.append((floor + law.bandwidth_s) / t - 1)
                law_err.append(law.time_s / t - 1)
    assert len(floor_err) == 29  # 2-GPU all-reduce from 2 MiB, 4-GPU all-reduce from 16 MiB, the rest from 4 MiB
    assert -0.20 < min(floor_err) < -0.18 and 0.10 < max(floor_err) < 0.12
    assert sum(abs(e) > 0.20 for e in floor_err) == 0
    assert sum(abs(e) > 0.20 for e in law_err) == 14 and min(law_err) < -0.35
    assert 6.5e-6 < min(over) and max(over) < 9.5e-6


def test_the_mid_size_misses_state_this_cause():
    # small17: the family now prices the protocol NCCL runs with a floor per call calibrated on the serve run; its
    # Simple misses (all-gather at 4 MiB on 2 and 4 GPUs, reduce-scatter at 32 MiB on 2) are fast and name the floor
    # this call's own forced-Simple graph shows at 1 KiB.
    fast = [c for c in accuracy.cases("collectives-small") if c.cause and "ring/Simple here" in c.cause]
    assert len(fast) == 3
    for c in fast:
        assert c.predicted < c.observed and "under NCCL_PROTO=Simple this call's graph took" in c.cause