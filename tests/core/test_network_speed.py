"""The collective times' speed-up changes no answer: fabric_collective_time from its remembered message-independent
parts (network._fabric_parts_cached) equals the computation written out from the public pieces, and
fabric_collective_seconds / nccl_collective_seconds are the time_s of fabric_collective_time / nccl_collective_time,
refusals included."""

from __future__ import annotations

import math
import random

import pytest

from mlcalc import network


def _reference(message_bytes, fab, collective, algorithm, volume):
    # fabric_collective_time as it was written before its terms were remembered
    message_bytes = float(message_bytes)
    n = fab.n_ranks
    steps = network.latency_steps(collective, n, algorithm)
    if algorithm == "tree":
        g, nodes = fab.gpus_per_node, fab.n_nodes
        latency = 2 * ((g - 1) * fab.intra_step_latency_s + math.ceil(math.log2(nodes)) * fab.inter_step_latency_s)
        bandwidth = message_bytes * network._tree_seconds_per_byte(fab)
    else:
        inter_steps = network.latency_steps(collective, fab.n_nodes, "ring") if fab.n_nodes > 1 else 0
        latency = (steps - inter_steps) * fab.intra_step_latency_s + inter_steps * fab.inter_step_latency_s
        busbw = network.collective_busbw_bytes_per_s(fab, collective, algorithm)
        bandwidth = network.collective_time(message_bytes, n, busbw, collective, algorithm, volume=volume).bandwidth_s
    return network._timed(message_bytes, n, collective, fab.base_latency_s + latency, bandwidth)


def _outcome(f, *args):
    try:
        r = f(*args)
    except (ValueError, TypeError) as err:
        return f"{type(err).__name__}: {err}"
    return r


def test_collective_times_from_remembered_terms_are_the_written_out_ones():
    rng = random.Random(4)
    systems = list(network.systems())
    checked = 0
    for _ in range(400):
        sys_key = rng.choice(systems)
        g = rng.choice([x for x in (1, 2, 4, 8) if x <= network.system(sys_key).gpus_per_node])
        fab = network.fabric(sys_key, rng.choice((1, 2, 3, 16)), gpus_per_node=g,
                             in_network=rng.choice(("none", "none", "ib_sharp")))
        if fab.n_ranks < 2:
            continue
        collective = rng.choice(("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"))
        algorithm = "tree" if collective == "all_reduce" and rng.random() < 0.4 else "ring"
        volume = rng.choice(("exact", "2x payload"))
        msg = rng.choice((0.0, 1.0, 12345.0, 2.0 ** rng.randint(10, 40), rng.uniform(1, 1e11)))
        want = _outcome(_reference, msg, fab, collective, algorithm, volume)
        network._fabric_parts_cached.cache_clear()
        assert _outcome(network.fabric_collective_time, msg, fab, collective, algorithm, volume) == want
        assert _outcome(network.fabric_collective_time, msg, fab, collective, algorithm, volume) == want  # remembered
        if volume == "exact":
            assert network.fabric_collective_seconds(msg, fab, collective, algorithm) == want.time_s
            nccl = network.nccl_collective_time(msg, fab, collective).time_s
            assert network.nccl_collective_seconds(msg, fab, collective) == nccl
        checked += 1
    assert checked > 300


@pytest.mark.parametrize("msg", [-1.0, math.inf, math.nan, "1e9", 10**400])
def test_the_seconds_refuse_what_the_record_refuses(msg):
    fab = network.fabric("DGX-H100", 2)
    with pytest.raises(ValueError) as want:
        network.fabric_collective_time(msg, fab, "all_gather")
    with pytest.raises(ValueError) as got:
        network.fabric_collective_seconds(msg, fab, "all_gather")
    assert str(got.value) == str(want.value)
