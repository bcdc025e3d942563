"""Moving bits between accelerators: units, link data, collectives and network topology.

Base units inside: bytes, seconds, bytes/s. Every bandwidth a function takes is the
bandwidth of *one direction* (what a link carries each way at once), in bytes/s,
unless a parameter says otherwise. Parallelism, pipeline schedules and the layout
helper live in :mod:`mlcalc.parallel`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from mlcalc import _check, facility

# --------------------------------------------------------------------------- units

BITS_PER_BYTE = 8
# Bekman's chapter ("The AI Battlefield", Inter-node Network): "You typically get at most
# 80% of advertised speed. e.g., if you are told you get 800Gbps, expect ~640Gbps."
BEKMAN_EFFICIENCY = 0.8
DIRECTIONS = ("per direction", "bidirectional")
UNITS = ("GB/s", "Gb/s")


def gbps_to_bytes_per_s(gbps: float) -> float:
    """Gigabits per second (1e9 bits/s) to bytes per second."""
    return _check.result("bytes_per_s", _check.non_negative("gbps", gbps) * 1e9 / BITS_PER_BYTE)


def bytes_per_s_to_gbps(bytes_per_s: float) -> float:
    """Bytes per second to gigabits per second (1e9 bits/s)."""
    return _check.non_negative("bytes_per_s", bytes_per_s) * BITS_PER_BYTE / 1e9


def to_bytes_per_s(value: float, unit: str) -> float:
    """A bandwidth in "GB/s" (1e9 bytes/s) or "Gb/s" (1e9 bits/s) as bytes/s."""
    value = _check.non_negative("bandwidth", value)
    _check.choice("unit", unit, UNITS)
    return _check.result("bytes_per_s", value * 1e9) if unit == "GB/s" else gbps_to_bytes_per_s(value)


def one_direction(bandwidth_bytes_per_s: float, direction: str) -> float:
    """The bandwidth of one direction, from a figure quoted ``direction``-wise.

    A "bidirectional" figure adds both directions of a full-duplex link (NVLink's
    900 GB/s on an H100), so one direction carries half. A "per direction" figure
    (a NIC's 400 Gb/s) already is one direction.
    """
    bandwidth_bytes_per_s = _check.non_negative("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    _check.choice("direction", direction, DIRECTIONS)
    return bandwidth_bytes_per_s / 2 if direction == "bidirectional" else bandwidth_bytes_per_s


def expected_bytes_per_s(advertised_bytes_per_s: float, efficiency: float = BEKMAN_EFFICIENCY) -> float:
    """What to plan with: the advertised bandwidth times ``efficiency`` (Bekman: at most 80%)."""
    advertised_bytes_per_s = _check.non_negative("advertised_bytes_per_s", advertised_bytes_per_s)
    return advertised_bytes_per_s * _check.fraction("efficiency", efficiency)


def node_bytes_per_s(nics_per_node: int, nic_bytes_per_s: float, efficiency: float = 1.0) -> float:
    """Inter-node bandwidth of one node, one direction: NICs x per-NIC bandwidth x efficiency."""
    nics_per_node = _check.positive_int("nics_per_node", nics_per_node)
    nic_bytes_per_s = _check.positive("nic_bytes_per_s", nic_bytes_per_s)
    return nics_per_node * nic_bytes_per_s * _check.fraction("efficiency", efficiency)


class UnitsResult(NamedTuple):
    """A bandwidth in every unit a datasheet might use."""

    one_direction_bytes_per_s: float  # per NIC or link, one direction, advertised
    node_bytes_per_s: float  # x NICs per node, one direction, advertised
    expected_node_bytes_per_s: float  # the node figure x efficiency


def bandwidth_units(value: float, unit: str, direction: str, nics_per_node: int, efficiency: float) -> UnitsResult:
    """Convert one advertised figure to bytes/s per direction, per node, and what to expect."""
    nics_per_node = _check.positive_int("nics_per_node", nics_per_node)
    one = one_direction(to_bytes_per_s(value, unit), direction)
    node = node_bytes_per_s(nics_per_node, one) if one > 0 else 0.0
    return UnitsResult(one, node, expected_bytes_per_s(node, efficiency))


# --------------------------------------------------------------------------- link data


@dataclass(frozen=True)
class Link:
    """One interconnect or NIC, as its source states it (see mlcalc/data/links.json)."""

    key: str  # short name, e.g. "NVLink4-H100"
    name: str  # what it is
    kind: str  # "intra" (inside a node: NVLink, PCIe) or "inter" (between nodes: NICs)
    bandwidth: float  # the figure as stated, in ``unit``
    unit: str  # "GB/s" (1e9 bytes/s) or "Gb/s" (1e9 bits/s)
    direction: str  # "per direction" or "bidirectional" (sum of both directions)
    scope: str  # "per GPU", "per port" or "per node"
    step_latency_s: float  # alpha: NCCL's per-step ring latency on this kind of hop, seconds
    source: str  # URL of the document the figure comes from
    notes: str = ""  # how the figure was read
    efficiency: float = 1.0  # share of the line rate NCCL reaches with large messages (sourced, see links.json)
    efficiency_source: str = ""  # where ``efficiency`` comes from

    def __post_init__(self) -> None:
        _check.non_negative("bandwidth", self.bandwidth)
        _check.choice("unit", self.unit, UNITS)
        _check.choice("direction", self.direction, DIRECTIONS)
        _check.non_negative("step_latency_s", self.step_latency_s)
        _check.fraction("efficiency", self.efficiency)

    @property
    def bytes_per_s(self) -> float:
        """Bandwidth of one direction, bytes/s (the line rate)."""
        return one_direction(to_bytes_per_s(self.bandwidth, self.unit), self.direction)

    @property
    def achievable_bytes_per_s(self) -> float:
        """What NCCL reaches on this link with large messages, one direction: line rate x ``efficiency``."""
        return self.bytes_per_s * self.efficiency


@dataclass(frozen=True)
class System:
    """A node design: GPUs, the link between them, and the NICs that leave the node.

    A node is one scale-up domain: the GPUs one NVLink (or ICI) network joins. For an 8-GPU
    server that is the server; for a rack-scale system (GB200/GB300 NVL72) it is the rack,
    whose ``hosts`` compute trays each carry their own NICs.
    """

    key: str  # short name, e.g. "DGX-H100"
    name: str  # product name
    gpus_per_node: int  # accelerators in one node: one scale-up (NVLink) domain
    intra: Link  # GPU-to-GPU link inside the node
    nic: Link  # one NIC (or, where ``nics_per_node`` is 1, the node's whole network)
    nics_per_node: int  # compute-fabric NICs per node (all its hosts together)
    source: str  # URL of the node's datasheet
    notes: str = ""  # how it was read
    pcie: Link | None = None  # the PCIe link of each GPU and NIC (GPUDirect RDMA reads GPU memory through it)
    hosts: int = 1  # operating-system hosts (compute trays) in one node: 18 in an NVL72 rack, else 1
    power_kw: float | None = None  # maximum power of one node (rack), kW (facility.json's system where it holds one); None: not stored
    power_source: str = ""  # where ``power_kw`` comes from
    date: str = ""  # year and month of the source (YYYY-MM); "" where not recorded

    def __post_init__(self) -> None:
        g = _check.positive_int("gpus_per_node", self.gpus_per_node)
        nics = _check.positive_int("nics_per_node", self.nics_per_node)
        hosts = _check.positive_int("hosts", self.hosts)
        if g % hosts:
            raise ValueError(f"hosts={self.hosts!r} is not allowed: it must divide gpus_per_node={g}")
        if nics > MAX_NICS_PER_NODE * hosts:
            raise ValueError(f"nics_per_node={self.nics_per_node!r} is not allowed: at most {MAX_NICS_PER_NODE} "
                             f"per host ({hosts} host(s))")
        if self.power_kw is not None:
            _check.positive("power_kw", self.power_kw)

    @property
    def scale_up_domain(self) -> int:
        """GPUs one scale-up network joins: tensor and expert parallelism fit inside it."""
        return self.gpus_per_node

    @property
    def gpus_per_host(self) -> int:
        """GPUs one host (compute tray) carries."""
        return self.gpus_per_node // self.hosts

    @property
    def node_bytes_per_s(self) -> float:
        """Inter-node bandwidth of the whole node, one direction, bytes/s (advertised)."""
        return node_bytes_per_s(self.nics_per_node, self.nic.bytes_per_s)

    @property
    def inter_bytes_per_s_per_gpu(self) -> float:
        """The node's inter-node bandwidth shared out per GPU, one direction, bytes/s."""
        return self.node_bytes_per_s / self.gpus_per_node


class Generation(NamedTuple):
    """One GPU generation of Bekman's V100 -> B200 table."""

    gpu: str  # "V100", ...
    year: int  # year of release
    fp16_dense_flops: float  # dense fp16 tensor peak, FLOP/s
    nvlink: Link  # its NVLink
    source: str  # URL for the compute figure
    notes: str  # how it was read


@lru_cache(maxsize=None)
def _raw() -> Mapping:
    return json.loads(resources.files("mlcalc.data").joinpath("links.json").read_text())


@lru_cache(maxsize=None)
def links() -> Mapping[str, Link]:
    """All links in the data file, by key."""
    out = {}
    for key, e in _raw()["links"].items():
        out[key] = Link(key, e["name"], e["kind"], float(e["bandwidth"]), e["unit"], e["direction"], e["scope"],
                        float(e["step_latency_us"]) * 1e-6, e["source"], e.get("notes", ""),
                        float(e.get("efficiency", 1.0)), e.get("efficiency_source", ""))
    return MappingProxyType(out)


def link(key: str) -> Link:
    """The link named ``key`` (ValueError listing the known keys otherwise)."""
    _check.choice("link", key, links())
    return links()[key]


@lru_cache(maxsize=None)
def systems() -> Mapping[str, System]:
    """All node designs in the data file, by key."""
    out = {}
    for key, e in _raw()["systems"].items():
        out[key] = System(key, e["name"], int(e["gpus_per_node"]), link(e["intra"]), link(e["nic"]),
                          int(e["nics_per_node"]), e["source"], e.get("notes", ""),
                          link(e["pcie"]) if e.get("pcie") else None, int(e.get("hosts_per_node", 1)),
                          *_power(e), e.get("date", ""))
    return MappingProxyType(out)


def _power(e: Mapping[str, Any]) -> tuple[float | None, str]:
    """A node's maximum power (kW) and its source: facility.json's system where the entry names one (the one
    home of a system's power), else the entry's own figure, else none."""
    if e.get("facility_system"):
        s = facility.system(e["facility_system"])
        return s.power_kw, s.source
    return (float(e["power_kw"]) if e.get("power_kw") is not None else None), e.get("power_source", "")


def system(key: str) -> System:
    """The node design named ``key`` (ValueError listing the known keys otherwise)."""
    _check.choice("system", key, systems())
    return systems()[key]


def scale_up_domain(system_key: str) -> int:
    """GPUs one scale-up network of ``system_key`` joins (8 for a DGX, 72 for an NVL72 rack).

    Tensor and expert parallelism stay inside it; pipeline and data parallelism cross the
    scale-out network.
    """
    return system(system_key).scale_up_domain


def parallel_degrees_inside(system_key: str, limit: int | None = None) -> tuple[int, ...]:
    """Powers of two up to the scale-up domain of ``system_key``: the tensor (or expert) parallel
    degrees that stay on its NVLink. ``limit`` caps them further (e.g. a model's head count).

    >>> parallel_degrees_inside("DGX-H100")
    (1, 2, 4, 8)
    >>> parallel_degrees_inside("GB200-NVL72")
    (1, 2, 4, 8, 16, 32, 64)
    """
    top = scale_up_domain(system_key)
    if limit is not None:
        top = min(top, _check.positive_int("limit", limit))
    out, d = [], 1
    while d <= top:
        out.append(d)
        d *= 2
    return tuple(out)


def rack_scale_systems() -> tuple[str, ...]:
    """Systems whose scale-up domain spans several hosts (the NVL72 racks), in file order."""
    return tuple(k for k, s in systems().items() if s.hosts > 1)


def nccl_base_latency_s() -> float:
    """NCCL's fixed latency of a ring collective (Simple protocol), seconds."""
    return float(_raw()["nccl_latency"]["base_latency_us"]) * 1e-6


@lru_cache(maxsize=None)
def generations() -> tuple[Generation, ...]:
    """Bekman's GPU generations (V100, A100, H100, B200), oldest first."""
    gpus = _raw()["generations"]["gpus"]
    return tuple(
        Generation(name, int(e["year"]), float(e["fp16_dense_tflops"]) * 1e12, link(e["nvlink"]), e["source"],
                   e["notes"])
        for name, e in gpus.items()
    )


class Speedup(NamedTuple):
    """How much faster one generation is than the baseline."""

    gpu: str  # generation
    compute: float  # fp16 dense FLOP/s relative to the baseline
    intra_node: float  # NVLink bandwidth (one direction) relative to the baseline


def speedups(baseline: str = "V100") -> tuple[Speedup, ...]:
    """Compute and NVLink speed-ups of each generation over ``baseline``."""
    gens = generations()
    _check.choice("baseline", baseline, [g.gpu for g in gens])
    base = next(g for g in gens if g.gpu == baseline)
    return tuple(
        Speedup(g.gpu, g.fp16_dense_flops / base.fp16_dense_flops, g.nvlink.bytes_per_s / base.nvlink.bytes_per_s)
        for g in gens
    )


# --------------------------------------------------------------------------- collectives

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
ALGORITHMS = ("ring", "tree")
IN_NETWORK = ("none", "nvls", "ib_sharp")
VOLUME_CONVENTIONS = ("exact", "2x payload")
# NCCL src/graph/tuning.cc: "if (a == NCCL_ALGO_TREE && coll == ncclFuncAllReduce) busBw = std::min(busBw*.92, ...)".
TREE_BUSBW_FACTOR = 0.92
# Largest communicator the time functions accept: the step counts are exact integers far below this.
MAX_RANKS = 10_000_000

# --------------------------------------------------------------------------- NCCL's ring channels
# How many channels NCCL runs a ring on, from its topology search (NCCL 2.28.9; the files named below):
# src/graph/topo.h:16-21, NCCL's bandwidth of one NVLink by compute capability, GB/s (SMxx_NVLINK_BW).
NCCL_NVLINK_GBPS = MappingProxyType({70: 20.0, 80: 20.0, 86: 12.0, 90: 20.6, 100: 40.1})
# src/graph/search.cc:976, 981, 986: the speeds per channel (GB/s) the intra-node search tries, fastest first.
NCCL_RING_SPEEDS = MappingProxyType({
    80: (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
    90: (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
    100: (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
})
# src/include/device.h:86 (MAXCHANNELS); src/init.cc:1019: the ring search looks for at most MAXCHANNELS/2.
NCCL_MAX_CHANNELS = 64


class RingChannels(NamedTuple):
    """NCCL's ring channels on one node of NVLink-joined GPUs (:func:`nccl_ring_channels`)."""

    searched: int  # channels the topology search found
    speed_GBps: float  # bandwidth each searched channel was given, GB/s (1e9)
    channels: int  # channels the kernels run on (after NCCL duplicates them)

    @property
    def tuner_busbw_GBps(self) -> float:
        """NCCL's own estimate of the ring's bus bandwidth, searched channels x speed (src/graph/tuning.cc:301)."""
        return self.searched * self.speed_GBps


def nccl_ring_channels(nvlinks: int, compute_capability: int) -> RingChannels:
    """The channels NCCL (2.28.9) runs a ring on inside one node whose GPUs are joined by ``nvlinks`` NVLinks each.

    NCCL's search (src/graph/search.cc ncclTopoCompute) gives each channel the fastest speed of its list that
    fits the GPU's NVLink bandwidth (``nvlinks`` x SMxx_NVLINK_BW, src/graph/topo.h), and as many channels as fit
    at it; a slower speed wins only with more bandwidth in all (ties keep the first), and the search stops
    trying once a speed is below 0.49 of the best found. ncclTopoDupChannels (search.cc:961-965) then doubles
    the channels at half the speed when the speed is at least 25 GB/s (on Hopper and newer: at least 50, or 4
    channels or fewer), and ncclTopoPostset doubles them again (src/graph/connect.cc:452), at most 64.
    An H100 or H200 (18 NVLinks, sm90): 18 x 20.6 = 370.8 GB/s, 6 channels at 60 GB/s, 12 at 30, 24 run;
    NCCL's INFO log of 2 H200s says "Channel 00/24" (mlcalc/data/measured/h200x2-2026-11-27-coll9b).
    """
    links_ = _check.positive_int("nvlinks", nvlinks, 64)
    _check.choice("compute_capability", compute_capability, NCCL_RING_SPEEDS)
    cc = compute_capability
    total = links_ * NCCL_NVLINK_GBPS[cc]
    speeds = NCCL_RING_SPEEDS[cc]
    i = next((k for k, sp in enumerate(speeds) if sp <= total), len(speeds) - 1)
    best_n, best_sp = max(1, min(NCCL_MAX_CHANNELS // 2, int(total // speeds[i]))), speeds[i]
    for sp in speeds[i + 1:]:
        if sp / best_sp <= 0.49:
            break
        n = min(NCCL_MAX_CHANNELS // 2, int(total // sp))
        if n * sp > best_n * best_sp:
            best_n, best_sp = n, sp
    searched, speed = best_n, best_sp
    if speed >= 25.0 and not (cc > 80 and speed < 50.0 and searched > 4):
        dup = min(2 * searched, NCCL_MAX_CHANNELS // 2)
        speed /= -(-dup // searched)
        searched = dup
    return RingChannels(searched, speed, min(NCCL_MAX_CHANNELS, 2 * searched))


def _ring_kernel_steps(collective: str, n: int, in_place: bool) -> tuple[tuple[int, int], ...]:
    """NCCL's ring kernel per chunk as (steps, stores per byte) of the steps that send, then of the one that does
    not (NCCL 2.28.9, Simple protocol, P2P write: src/device/all_gather.h:53-70, reduce_scatter.h:41-53,
    all_reduce.h:47-81). A store is a write of each byte by the channel's thread block; a send writes into the
    next GPU's buffer, a copy into this GPU's output.

    - all_gather: directSend (in place) or directCopySend (out of place: 2 stores), n-2 x directRecvCopyDirectSend
      (2), then directRecv (1), which sends nothing;
    - reduce_scatter: send (1), n-2 x recvReduceSend (1), then recvReduceCopy (1), which sends nothing;
    - all_reduce: directSend (1), n-2 x directRecvReduceDirectSend (1), directRecvReduceCopyDirectSend (2),
      n-2 x directRecvCopyDirectSend (2), then directRecv (1), which sends nothing.
    """
    if collective == "all_gather":
        return ((1, 1), (n - 2, 2)) if in_place else ((n - 1, 2),)
    if collective == "reduce_scatter":
        return ((n - 1, 1),)
    return ((n - 1, 1), (n - 1, 2))  # all_reduce


RING_KERNEL_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


def nccl_ring_busbw_bytes_per_s(collective: str, n_ranks: int, channels: int, link_bytes_per_s: float,
                                channel_copy_bytes_per_s: float, in_place: bool = False) -> float:
    """Bus bandwidth of NCCL's ring all_gather / reduce_scatter / all_reduce on one node, large messages.

    Each of the ``channels`` thread blocks runs the ring's steps one after the other on chunks of the same
    size (:func:`_ring_kernel_steps`). The channels start together and do the same work, so they send
    together: a step that sends takes the longer of its own writes at ``channel_copy_bytes_per_s`` per store
    and the link's time for all channels' chunks (channels / ``link_bytes_per_s`` per byte), and the last step
    of each chunk, which only receives, leaves the link idle for stores / ``channel_copy_bytes_per_s``.
    busbw = bytes sent per link / time = (sending steps) x channels / (time of all steps), per byte of chunk.
    Many channels: the link sets the sending steps and only the last step's copy is left; few channels: every
    step is a copy. Two GPUs: one sending step of two (all_gather, reduce_scatter) or two of three
    (all_reduce), so the idle step costs them most.
    """
    _check.choice("collective", collective, RING_KERNEL_COLLECTIVES)
    n = _check.positive_int("n_ranks", n_ranks, MAX_RANKS)
    c = _check.positive_int("channels", channels, NCCL_MAX_CHANNELS)
    link_ = _check.positive("link_bytes_per_s", link_bytes_per_s)
    copy = _check.positive("channel_copy_bytes_per_s", channel_copy_bytes_per_s)
    if n == 1:
        return link_  # nothing crosses a link (busbw factor 0); the link as the ring's pace
    sending = _ring_kernel_steps(collective, n, bool(in_place))
    share = c / link_  # seconds per byte of one channel's chunk when every channel sends at once
    seconds = sum(k * max(stores / copy, share) for k, stores in sending) + 1 / copy
    return _check.result("busbw_bytes_per_s", sum(k for k, _ in sending) * c / seconds)


class RingSchedule(NamedTuple):
    """How NCCL cuts one Ring/Simple collective into steps (:func:`nccl_ring_schedule`)."""

    channels: int  # channels the call runs on
    chunk_bytes: int  # full chunk: bytes one channel moves per rank and step (the Simple buffer / NCCL_STEPS x 4)
    loop_bytes: int  # message size (nccl-tests' S) one round of every channel covers at full chunks
    rounds: int  # rounds each channel makes (1 up to loop_bytes)
    steps_per_round: int  # chunk steps a round makes: 2 (n - 1) for all_reduce, n - 1 for the others
    slices_per_chunk: int  # slices a chunk is sent in (chunk steps / slice steps)
    last_chunk_bytes: float  # bytes one channel moves per rank and step in the last (or only) round


def nccl_ring_schedule(message_bytes: float, collective: str, n_ranks: int, channels: int) -> RingSchedule:
    """NCCL 2.28.9's schedule of a Ring/Simple all_reduce, all_gather or reduce_scatter of ``message_bytes``
    (nccl-tests' S) over ``n_ranks`` GPUs on ``channels`` channels, from links.json's "nccl_chunking" (each
    constant with its file at commit dbc86fd).

    enqueue.cc calcCollChunking gives the ring a chunk of buffSizes[SIMPLE] / NCCL_STEPS x chunkSteps = 4 MiB / 8 x 4
    = 2 MiB per rank and channel whatever the size; each channel carries 1/channels of the data and walks it one
    chunk per rank and step at a time (src/device/all_reduce.h, all_gather.h, reduce_scatter.h runRing). One round of
    every channel covers channels x n x chunk bytes of S (192 MiB on 4 GPUs with 24 channels), so every call up to
    that size makes one round of the same steps, only with smaller chunks. A description of what NCCL runs: the law's
    time (:func:`fabric_collective_time`) does not use it (links.json nccl_chunking.finding says why).
    """
    _check.choice("collective", collective, RING_KERNEL_COLLECTIVES)
    size = _check.non_negative("message_bytes", message_bytes)
    n = _ranks_of_a_collective(n_ranks)
    c = _check.positive_int("channels", channels, NCCL_MAX_CHANNELS)
    e = _raw()["nccl_chunking"]
    chunk = int(e["simple_buffer_bytes"]) // int(e["nccl_steps"]) * int(e["ring_chunk_steps"])
    loop = c * n * chunk
    rounds = max(1, math.ceil(size / loop))
    last = (size - (rounds - 1) * loop) / (c * n)
    steps = latency_steps(collective, n)
    return _check.fields("nccl_ring_schedule", RingSchedule(
        c, chunk, loop, rounds, steps, int(e["ring_chunk_steps"]) // int(e["ring_slice_steps"]), last))


def busbw_factor(collective: str, n_ranks: int) -> float:
    """nccl-tests' factor from algorithm bandwidth to bus bandwidth: busbw = algbw x factor.

    all_reduce 2(n-1)/n; all_gather, reduce_scatter and all_to_all (n-1)/n; broadcast,
    reduce and send_recv 1 (nccl-tests doc/PERFORMANCE.md). One rank gives 0 for the
    first two groups: nothing crosses a link.
    """
    _check.choice("collective", collective, COLLECTIVES)
    n = _check.positive_int("n_ranks", n_ranks)
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


def allreduce_volume_factor(n_ranks: int, volume: str = "exact") -> float:
    """Bytes each rank sends in an all-reduce, per byte of payload.

    ``"exact"``: 2(n-1)/n, what a ring or a reduce-scatter + all-gather moves
    (nccl-tests doc/PERFORMANCE.md). ``"2x payload"``: the back-of-envelope rule "an
    all-reduce moves twice the data", the limit of 2(n-1)/n for large n (Bekman's
    rule of thumb); it overstates by n/(n-1): 2x for 2 GPUs, 14% for 8.
    """
    n = _check.positive_int("n_ranks", n_ranks)
    _check.choice("volume", volume, VOLUME_CONVENTIONS)
    return 2.0 if volume == "2x payload" else 2 * (n - 1) / n


def _ranks_of_a_collective(n_ranks: int) -> int:
    n = _check.positive_int("n_ranks", n_ranks)
    if n < 2:
        raise ValueError(f"n_ranks={n_ranks!r} is not allowed: a collective needs at least 2 ranks "
                         "(on one GPU nothing is sent)")
    if n > MAX_RANKS:
        raise ValueError(f"n_ranks={n_ranks!r} is not allowed: at most {MAX_RANKS:,}")
    return n


def algbw_to_busbw(algbw_bytes_per_s: float, collective: str, n_ranks: int) -> float:
    """Bus bandwidth from algorithm bandwidth (size / time), nccl-tests convention."""
    return _check.non_negative("algbw_bytes_per_s", algbw_bytes_per_s) * busbw_factor(collective, n_ranks)


def busbw_to_algbw(busbw_bytes_per_s: float, collective: str, n_ranks: int) -> float:
    """Algorithm bandwidth (size / time) that a bus bandwidth gives, nccl-tests convention (2 ranks or more)."""
    busbw_bytes_per_s = _check.non_negative("busbw_bytes_per_s", busbw_bytes_per_s)
    return busbw_bytes_per_s / busbw_factor(collective, _ranks_of_a_collective(n_ranks))


def latency_steps(collective: str, n_ranks: int, algorithm: str = "ring") -> int:
    """How many latency-bound steps the collective takes (the alpha count).

    Ring: all_reduce 2(n-1), all_gather / reduce_scatter / all_to_all n-1, broadcast /
    reduce n (as NCCL's tuning model counts them), send_recv 1. Tree (all_reduce only):
    2 ceil(log2 n), up the tree and back down. One rank: 0.
    """
    _check.choice("collective", collective, COLLECTIVES)
    _check.choice("algorithm", algorithm, ALGORITHMS)
    n = _check.positive_int("n_ranks", n_ranks)
    if n > MAX_RANKS:
        raise ValueError(f"n_ranks={n_ranks!r} is not allowed: at most {MAX_RANKS:,}")
    if algorithm == "tree" and collective != "all_reduce":
        raise ValueError(f"algorithm={algorithm!r} is not allowed for collective={collective!r}: "
                         "choose 'ring' (NCCL has trees for all_reduce only)")
    if n == 1:
        return 0
    if algorithm == "tree":
        return 2 * math.ceil(math.log2(n))
    if collective == "all_reduce":
        return 2 * (n - 1)
    if collective in ("all_gather", "reduce_scatter", "all_to_all"):
        return n - 1
    if collective == "send_recv":
        return 1
    return n


class CollectiveTime(NamedTuple):
    """Time of one collective by the alpha-beta model, and the bandwidths it shows."""

    time_s: float  # latency_s + bandwidth_s
    latency_s: float  # alpha part: base latency + steps x step latency
    bandwidth_s: float  # beta part: bytes on the busiest link / bus bandwidth
    algbw_bytes_per_s: float  # message_bytes / time_s, as nccl-tests reports "algbw"
    busbw_bytes_per_s: float  # algbw x factor, as nccl-tests reports "busbw"


def _timed(message_bytes: float, n: int, collective: str, latency: float, bandwidth: float) -> CollectiveTime:
    total = latency + bandwidth
    algbw = message_bytes / total if total > 0 else 0.0
    return _check.fields("collective_time", CollectiveTime(total, latency, bandwidth, algbw,
                                                            algbw * busbw_factor(collective, n)))


def collective_time(
    message_bytes: float,
    n_ranks: int,
    busbw_bytes_per_s: float,
    collective: str = "all_reduce",
    algorithm: str = "ring",
    step_latency_s: float = 0.0,
    base_latency_s: float = 0.0,
    volume: str = "exact",
) -> CollectiveTime:
    """Time of a collective: ``t = base + steps * alpha + bytes_moved / busbw``.

    Parameters
    ----------
    message_bytes : the size nccl-tests calls S: the buffer of an all_reduce, broadcast or
        send, the *gathered* output of an all_gather, the *full* input of a reduce_scatter.
    n_ranks : GPUs taking part (at least 2).
    busbw_bytes_per_s : bus bandwidth (one direction, bytes/s). Plug in a link's peak, a
        derated figure, or the busbw that nccl-tests measured.
    collective : one of ``COLLECTIVES``.
    algorithm : "ring", or "tree" (all_reduce only; NCCL's double binary tree moves
        2 S per rank: its algorithm bandwidth is half the bus bandwidth).
    step_latency_s, base_latency_s : alpha per step and fixed cost (NCCL's tuning model
        uses 3.4 us per NVLink step, 9.6 us per network step and 8.4 us base).
    volume : "exact" (2(n-1)/n S for an all_reduce) or "2x payload" (the rule of thumb
        2 S); see :func:`allreduce_volume_factor`. Other collectives ignore it.

    References
    ----------
    nccl-tests doc/PERFORMANCE.md (bus bandwidth factors); NCCL src/graph/tuning.cc
    (time = latency + size / algbw; tree algbw = busbw / 2).

    nccl-tests doc/PERFORMANCE.md: an all-reduce of S bytes on n ranks at bus bandwidth B takes at best
    (S / B) 2(n-1)/n: 1 GB over 8 GPUs at 450 GB/s (NVLink 4, one direction), in milliseconds:

    >>> round(collective_time(1e9, 8, 450e9).time_s * 1e3, 3)
    3.889
    """
    message_bytes = _check.non_negative("message_bytes", message_bytes)
    busbw = _check.positive("busbw_bytes_per_s", busbw_bytes_per_s)
    step_latency_s = _check.non_negative("step_latency_s", step_latency_s)
    base_latency_s = _check.non_negative("base_latency_s", base_latency_s)
    _check.choice("volume", volume, VOLUME_CONVENTIONS)
    steps = latency_steps(collective, n_ranks, algorithm)
    n = _ranks_of_a_collective(n_ranks)
    moved = message_bytes * _moved_per_byte(collective, n, algorithm, volume)
    return _timed(message_bytes, n, collective, base_latency_s + steps * step_latency_s, moved / busbw)


def _moved_per_byte(collective: str, n: int, algorithm: str, volume: str) -> float:
    """Bytes the busiest link carries per byte of the message (what :func:`collective_time` divides by busbw): a tree
    2; a ring's all_reduce its volume factor, any other collective busbw's factor."""
    if algorithm == "tree":
        return 2.0
    return allreduce_volume_factor(n, volume) if collective == "all_reduce" else busbw_factor(collective, n)


def latency_bandwidth_crossover_bytes(
    n_ranks: int, busbw_bytes_per_s: float, collective: str = "all_reduce", algorithm: str = "ring",
    step_latency_s: float = 0.0, base_latency_s: float = 0.0,
) -> float:
    """Message size at which the latency part and the bandwidth part are equal.

    Below it latency dominates (time barely grows with size); above it bandwidth does.
    """
    per_byte = collective_time(1.0, n_ranks, busbw_bytes_per_s, collective, algorithm).bandwidth_s
    latency = collective_time(0.0, n_ranks, busbw_bytes_per_s, collective, algorithm, step_latency_s,
                              base_latency_s).latency_s
    return _check.result("crossover bytes", latency / _check.positive_result("bandwidth time per byte", per_byte))


# --------------------------------------------------------------------------- nodes and fabrics

# At most this many NICs per node: each NIC takes a PCIe x16 link, and a two-socket host has at most
# 2 x 128 = 256 PCIe lanes (AMD EPYC 9004: 128 per socket), so at most 16 x16 links even before the
# GPUs take theirs. Catalogued and published nodes have 8.
MAX_NICS_PER_NODE = 16


def node_network_bytes_per_s(nics_per_node: int, nic_bytes_per_s: float, gpus_per_node: int,
                             pcie_bytes_per_s: float | None = None, nics_per_pcie_link: int = 1,
                             hosts: int = 1) -> float:
    """What one node's NICs carry out of the node, one direction, bytes/s.

    ``nic_bytes_per_s`` is one NIC's achievable rate (line x efficiency). With
    GPUDirect RDMA the NIC reads GPU memory over PCIe, so ``pcie_bytes_per_s`` (one
    x16 link's achievable rate) caps it twice: ``nics_per_pcie_link`` NICs sharing
    one uplink share its rate, and the node's GPUs together cannot push more than
    ``gpus_per_node`` PCIe links (NCCL routes a GPU's traffic to another GPU's NIC over
    NVLink, PXN, so only the sum binds). A NIC hanging off the CPU instead of a GPU's
    PCIe switch is slower still (NCCL maintainer, nccl#412: 16 GB/s of a 24 GB/s HDR
    NIC); the model does not cover that case. A rack-scale node (an NVL72 rack) has
    ``hosts`` compute trays, each with its own NICs: the NIC limit applies per host.
    """
    nics = _check.positive_int("nics_per_node", nics_per_node)
    nic = _check.positive("nic_bytes_per_s", nic_bytes_per_s)
    g = _check.positive_int("gpus_per_node", gpus_per_node)
    h = _check.positive_int("hosts", hosts)
    if nics > MAX_NICS_PER_NODE * h:
        raise ValueError(f"nics_per_node={nics_per_node!r} is not allowed: at most {MAX_NICS_PER_NODE} per host, "
                         f"{h} host(s) (each NIC needs a PCIe x16 link; a two-socket host has at most 256 lanes)")
    share = _check.positive_int("nics_per_pcie_link", nics_per_pcie_link)
    if share > nics:
        raise ValueError(f"nics_per_pcie_link={nics_per_pcie_link!r} is not allowed: at most nics_per_node={nics}")
    rate = nics * nic
    if pcie_bytes_per_s is not None:
        pcie = _check.positive("pcie_bytes_per_s", pcie_bytes_per_s)
        rate = min(rate, nics / share * pcie, g * pcie)
    return rate


@dataclass(frozen=True)
class Fabric:
    """GPUs in nodes: the link inside a node and the network between nodes (one direction).

    Rates are what NCCL reaches (achievable), not line rates, unless built otherwise.
    """

    gpus_per_node: int  # GPUs in one node taking part
    n_nodes: int  # nodes taking part
    intra_bytes_per_s: float  # one GPU's bandwidth to the others in its node (NVLink), bytes/s
    inter_bytes_per_s_per_gpu: float  # the node's network bandwidth divided by its GPUs, bytes/s
    intra_step_latency_s: float = 0.0  # alpha of an intra-node step, seconds
    inter_step_latency_s: float = 0.0  # alpha of an inter-node step, seconds
    base_latency_s: float = 0.0  # fixed cost of a collective, seconds
    in_network: str = "none"  # in-network reduction: "none", "nvls" (NVLink SHARP) or "ib_sharp"
    nvls_algbw_bytes_per_s: float = 0.0  # NVLink SHARP all-reduce algbw on one node (0: none), bytes/s
    nvls_min_gpus: int = 5  # fewest GPUs per node at which NVLink SHARP beats the ring
    ring_channels: int = 0  # channels NCCL runs a ring on inside a node (0: not known; the link alone sets the ring)
    channel_copy_bytes_per_s: float = 0.0  # what one channel writes per second when the link is not full (0: not known)

    def __post_init__(self) -> None:
        _check.positive_int("gpus_per_node", self.gpus_per_node)
        _check.positive_int("n_nodes", self.n_nodes)
        if self.gpus_per_node * self.n_nodes > MAX_RANKS:
            raise ValueError(f"n_nodes={self.n_nodes!r} is not allowed: at most {MAX_RANKS:,} GPUs in all")
        _check.positive("intra_bytes_per_s", self.intra_bytes_per_s)
        _check.positive("inter_bytes_per_s_per_gpu", self.inter_bytes_per_s_per_gpu)
        _check.non_negative("intra_step_latency_s", self.intra_step_latency_s)
        _check.non_negative("inter_step_latency_s", self.inter_step_latency_s)
        _check.non_negative("base_latency_s", self.base_latency_s)
        _check.choice("in_network", self.in_network, IN_NETWORK)
        _check.non_negative("nvls_algbw_bytes_per_s", self.nvls_algbw_bytes_per_s)
        _check.positive_int("nvls_min_gpus", self.nvls_min_gpus)
        _check.bounded_int("ring_channels", self.ring_channels, 0, NCCL_MAX_CHANNELS)
        _check.non_negative("channel_copy_bytes_per_s", self.channel_copy_bytes_per_s)
        if self.in_network == "nvls" and self.nvls_algbw_bytes_per_s == 0:
            raise ValueError("in_network='nvls' is not allowed without nvls_algbw_bytes_per_s > 0 "
                             "(this NVLink has no NVLink SHARP figure)")

    @property
    def n_ranks(self) -> int:
        """GPUs in all."""
        return self.gpus_per_node * self.n_nodes

    @property
    def node_inter_bytes_per_s(self) -> float:
        """The whole node's network bandwidth, one direction, bytes/s."""
        return self.inter_bytes_per_s_per_gpu * self.gpus_per_node

    @property
    def busbw_bytes_per_s(self) -> float:
        """The bus bandwidth of a ring all_reduce / all_gather / reduce_scatter with large messages.

        NCCL runs several rings (channels) at once and each crosses between nodes
        through its own NIC, so across nodes the rings together use the node's
        *whole* network bandwidth: busbw = min(NVLink per GPU, node network). Each
        ring link carries the same bytes, and the node's network carries one ring
        link per channel.
        """
        if self.n_nodes == 1:
            return self.intra_bytes_per_s
        return min(self.intra_bytes_per_s, self.node_inter_bytes_per_s)

    @property
    def bottleneck(self) -> str:
        """Which link sets a ring's pace: "intra-node" or "inter-node"."""
        if self.n_nodes == 1 or self.intra_bytes_per_s <= self.node_inter_bytes_per_s:
            return "intra-node"
        return "inter-node"


def fabric(system_key: str, n_nodes: int = 1, efficiency: float = 1.0, gpus_per_node: int | None = None,
           rates: str = "achievable", in_network: str = "none", nics_per_node: int | None = None) -> Fabric:
    """A :class:`Fabric` of ``n_nodes`` nodes of a catalogued system.

    ``rates="achievable"`` (default) uses each link's sourced efficiency (NVLink 370 of
    450 GB/s on an H100, 47 of 50 GB/s per 400G NIC; see mlcalc/data/links.json);
    ``"line"`` uses the datasheet line rates. ``efficiency`` derates both further
    (1.0 = as stated). With fewer GPUs per node than the system has, the node keeps
    its share of the NICs (rail-optimized nodes: one NIC per GPU) unless
    ``nics_per_node`` says how many NICs the run uses.
    """
    s = system(system_key)
    efficiency = _check.fraction("efficiency", efficiency)
    _check.choice("rates", rates, ("achievable", "line"))
    g = s.gpus_per_node if gpus_per_node is None else _check.positive_int("gpus_per_node", gpus_per_node)
    if g > s.gpus_per_node:
        raise ValueError(f"gpus_per_node={gpus_per_node!r} is not allowed: a {system_key} node has {s.gpus_per_node}")
    n_nodes = _check.positive_int("n_nodes", n_nodes)

    def rate(lk: Link) -> float:
        return (lk.achievable_bytes_per_s if rates == "achievable" else lk.bytes_per_s) * efficiency

    if nics_per_node is None:
        nics = max(1, round(s.nics_per_node * g / s.gpus_per_node))
    else:
        nics = _check.positive_int("nics_per_node", nics_per_node)
    pcie = rate(s.pcie) if s.pcie is not None and s.nics_per_node > 1 else None
    hosts = max(1, -(-g // s.gpus_per_host))  # trays the g GPUs occupy (1 for an 8-GPU server)
    node = node_network_bytes_per_s(nics, rate(s.nic), g, pcie, hosts=hosts) \
        if s.nics_per_node > 1 else rate(s.nic) * g / s.gpus_per_node
    nvls = _nvls(s.intra.key)
    return Fabric(g, n_nodes, rate(s.intra), node / g, s.intra.step_latency_s, s.nic.step_latency_s,
                  nccl_base_latency_s(), in_network, nvls[0] * efficiency, nvls[1], *ring_channel_data(s.intra.key))


def _nvls(intra_key: str) -> tuple[float, int]:
    e = _raw().get("in_network", {}).get(intra_key)
    return (float(e["nvls_algbw_GBps"]) * 1e9, int(e["nvls_min_gpus"])) if e else (0.0, 5)


@lru_cache(maxsize=None)
def ring_channel_data(intra_key: str) -> tuple[int, float]:
    """(channels, one channel's copy rate in bytes/s) of NCCL's ring on the link ``intra_key`` (links.json's
    "nccl_ring": :func:`nccl_ring_channels` of its NVLinks, and the measured copy rate); (0, 0.0) where none is
    stored (the link alone then sets the ring's pace)."""
    e = _raw().get("nccl_ring", {}).get(intra_key)
    if not e:
        return 0, 0.0
    return nccl_ring_channels(int(e["nvlinks"]), int(e["compute_capability"])).channels, \
        float(e["channel_copy_GBps"]) * 1e9


def in_node_ring_busbw_bytes_per_s(fab: Fabric, collective: str, n_ranks: int, link_bytes_per_s: float) -> float:
    """A ring's bus bandwidth inside one node of ``fab`` over links of ``link_bytes_per_s``: NCCL's ring kernel on
    its channels (:func:`nccl_ring_busbw_bytes_per_s`) for all_reduce, all_gather and reduce_scatter over more than
    one GPU where the fabric's link stores the channels and their copy rate (``ring_channels``); the link's rate
    otherwise."""
    if n_ranks > 1 and fab.ring_channels and fab.channel_copy_bytes_per_s and collective in RING_KERNEL_COLLECTIVES:
        return nccl_ring_busbw_bytes_per_s(collective, n_ranks, fab.ring_channels, link_bytes_per_s,
                                           fab.channel_copy_bytes_per_s)
    return link_bytes_per_s


def with_busbw(fab: Fabric, busbw_bytes_per_s: float) -> Fabric:
    """The same fabric with its links replaced by one measured bus bandwidth (e.g. from nccl-tests).

    Latencies are kept; ``busbw_bytes_per_s`` becomes the pace of every ring, so
    :func:`fabric_collective_time` uses it as the ring's bus bandwidth.
    """
    bw = _check.positive("busbw_bytes_per_s", busbw_bytes_per_s)
    return Fabric(fab.gpus_per_node, fab.n_nodes, bw, bw / fab.gpus_per_node if fab.n_nodes > 1 else bw,
                  fab.intra_step_latency_s, fab.inter_step_latency_s, fab.base_latency_s)


def collective_busbw_bytes_per_s(fab: Fabric, collective: str = "all_reduce", algorithm: str = "ring") -> float:
    """Large-message bus bandwidth (nccl-tests convention) of a collective on ``fab``.

    - ring all_reduce / all_gather / reduce_scatter / broadcast / reduce:
      min(NVLink per GPU, the node's whole network) (:attr:`Fabric.busbw_bytes_per_s`); on one node whose
      link stores NCCL's channels and their copy rate (``ring_channels``), all_reduce, all_gather and
      reduce_scatter run at :func:`nccl_ring_busbw_bytes_per_s` of that link: the last step of each chunk
      only receives and leaves the link idle;
    - tree all_reduce: the slower of the chain in the node (2 S over NVLink) and the trees
      across nodes (S per node on 2 nodes, 2 S on more), derated by 0.92 (NCCL
      src/graph/tuning.cc); see :func:`_tree_seconds_per_byte`;
    - all_to_all: each GPU sends (n-g)/n of its buffer off the node through its share
      of the node's NICs (node / g) and (g-1)/n over NVLink; the slower part sets the
      time. nccl-tests' busbw is then (n-1)/n x size / time: twice the per-GPU network
      share on 2 nodes, falling to it on many (NCCL maintainer, nccl-tests#130);
    - send_recv: across nodes every GPU of a pipeline stage sends at once, each through
      its share of the NICs (node / g); inside a node, NVLink;
    - in_network="nvls": an all_reduce on one node of at least ``nvls_min_gpus`` GPUs
      reaches the NVLink SHARP algbw x 2(g-1)/g (nccl-tests#212: ~480 GB/s on 8 H100);
    - in_network="ib_sharp": across nodes the switches reduce, so each node sends and
      receives its data once instead of 2(N-1)/N times (NVIDIA SHARP documentation):
      the network part runs at node x 2(N-1)/N in busbw terms, still capped by NVLink,
      which carries the in-node reduce-scatter and all-gather.
    """
    _check.choice("collective", collective, COLLECTIVES)
    _check.choice("algorithm", algorithm, ALGORITHMS)
    n = _ranks_of_a_collective(fab.n_ranks)
    g, nodes = fab.gpus_per_node, fab.n_nodes
    intra, node = fab.intra_bytes_per_s, fab.node_inter_bytes_per_s
    if collective == "all_to_all":
        if nodes == 1:
            return intra
        per_byte = max((n - g) / n * g / node, (g - 1) / n / intra)
        return (n - 1) / n / per_byte
    if collective == "send_recv":
        return intra if nodes == 1 else min(intra, node / g)
    if algorithm == "tree":
        latency_steps(collective, n, algorithm)  # tree is all_reduce only
        return 2 * (n - 1) / n / _tree_seconds_per_byte(fab)
    ring = in_node_ring_busbw_bytes_per_s(fab, collective, n, fab.busbw_bytes_per_s) if nodes == 1 \
        else fab.busbw_bytes_per_s
    if collective == "all_reduce" and fab.in_network == "nvls" and nodes == 1 and g >= fab.nvls_min_gpus:
        return max(ring, fab.nvls_algbw_bytes_per_s * 2 * (g - 1) / g)
    if collective == "all_reduce" and fab.in_network == "ib_sharp" and nodes > 1:
        factor = 2 * (n - 1) / n
        network = node * factor  # S per node each way carries busbw = S/t x 2(n-1)/n
        nvlink = intra * factor / (2 * (g - 1) / g) if g > 1 else math.inf
        return min(network, nvlink)
    return ring


def _tree_seconds_per_byte(fab: Fabric) -> float:
    """Seconds per byte of an all_reduce over NCCL's trees (chain in the node, double binary tree across).

    In the node each GPU sends 2 S over NVLink (up the chain, then down). Across nodes
    each node sends and receives S on 2 nodes, 2 S on more (an interior node of one
    tree, a leaf of the other, S/2 per tree each way). NCCL derates trees by 0.92
    (src/graph/tuning.cc). On 2 nodes this is why tree busbw can exceed the network
    (nccl-tests#196).
    """
    g, nodes = fab.gpus_per_node, fab.n_nodes
    parts = []
    if g > 1:
        parts.append(2 / fab.intra_bytes_per_s)
    if nodes > 1:
        parts.append((1 if nodes == 2 else 2) / fab.node_inter_bytes_per_s)
    return max(parts) / TREE_BUSBW_FACTOR


def fabric_collective_time(
    message_bytes: float, fab: Fabric, collective: str = "all_reduce", algorithm: str = "ring",
    volume: str = "exact",
) -> CollectiveTime:
    """A collective over every GPU of ``fab``: NCCL-style bandwidth and latency.

    Bandwidth from :func:`collective_busbw_bytes_per_s`. Latency follows NCCL's tuning
    model: a ring pays the network step latency on the steps that cross nodes and the
    intra-node latency on the rest; a tree pays 2 ((g-1) intra + log2(nodes) inter) steps.
    """
    message_bytes = _check.non_negative("message_bytes", message_bytes)
    n, latency, seconds = _fabric_parts_of(fab, collective, algorithm, volume)
    return _timed(message_bytes, n, collective, latency, seconds(message_bytes))


#: Most message sizes one :func:`fabric_collective_times` call takes (a chart's sweep has a few dozen).
MAX_SIZES = 10_000


def fabric_collective_times(
    sizes: Sequence[float], fab: Fabric, collective: str = "all_reduce", algorithm: str = "ring",
    volume: str = "exact",
) -> tuple[CollectiveTime, ...]:
    """:func:`fabric_collective_time` for each message size of ``sizes`` (at most :data:`MAX_SIZES`): the same
    numbers, the fabric's latency and bandwidth worked out once (a sweep over the message size)."""
    if isinstance(sizes, (str, bytes)) or len(sizes) > MAX_SIZES:
        raise ValueError(f"sizes={_check._fmt(sizes)} is not allowed: give a list of at most {MAX_SIZES:,} sizes")
    checked = [_check.non_negative("message_bytes", s) for s in sizes]
    n, latency, seconds = _fabric_parts_of(fab, collective, algorithm, volume)
    return tuple(_timed(s, n, collective, latency, seconds(s)) for s in checked)


def _fabric_parts_of(fab: Fabric, collective: str, algorithm: str,
                     volume: str) -> tuple[int, float, Callable[[float], float]]:
    """:func:`_fabric_parts`, remembered (bounded: 4,096; a Fabric is frozen, equal fabrics give equal parts): a
    layout search times the same group's collectives at many message sizes."""
    try:
        return _fabric_parts_cached(fab, collective, algorithm, volume)
    except TypeError:  # a fabric that cannot be a key
        return _fabric_parts(fab, collective, algorithm, volume)


def fabric_collective_seconds(message_bytes: float, fab: Fabric, collective: str = "all_reduce",
                              algorithm: str = "ring") -> float:
    """``fabric_collective_time(message_bytes, fab, collective, algorithm).time_s`` without the rest of its record
    (the same number, from the same parts: what a layout search needs); refused as it refuses."""
    if type(message_bytes) is float and 0.0 <= message_bytes < math.inf and isinstance(fab, Fabric):
        try:
            n, latency, seconds = _fabric_parts_of(fab, collective, algorithm, "exact")
        except ValueError:
            pass  # refused: said by fabric_collective_time below
        else:
            t = latency + seconds(message_bytes)  # _timed's time
            if 0.0 <= t < math.inf:
                return t
    return fabric_collective_time(message_bytes, fab, collective, algorithm).time_s


def nccl_collective_seconds(message_bytes: float, fab: Fabric, collective: str = "all_reduce") -> float:
    """``nccl_collective_time(message_bytes, fab, collective).time_s`` (the faster of ring and tree for an all_reduce),
    as :func:`fabric_collective_seconds` gives it."""
    ring = fabric_collective_seconds(message_bytes, fab, collective, "ring")
    if collective != "all_reduce":
        return ring
    tree = fabric_collective_seconds(message_bytes, fab, collective, "tree")
    return tree if tree < ring else ring


def _fabric_parts(fab: Fabric, collective: str, algorithm: str,
                  volume: str) -> tuple[int, float, Callable[[float], float]]:
    """A collective over every GPU of ``fab``: its ranks, its latency (base included) and its bandwidth part as a
    function of the message size (NCCL's tuning model, see :func:`fabric_collective_time`)."""
    n = _ranks_of_a_collective(fab.n_ranks)
    steps = latency_steps(collective, n, algorithm)
    if algorithm == "tree":
        g, nodes = fab.gpus_per_node, fab.n_nodes
        latency = 2 * ((g - 1) * fab.intra_step_latency_s + math.ceil(math.log2(nodes)) * fab.inter_step_latency_s)
    else:
        inter_steps = latency_steps(collective, fab.n_nodes, "ring") if fab.n_nodes > 1 else 0
        latency = (steps - inter_steps) * fab.intra_step_latency_s + inter_steps * fab.inter_step_latency_s
    if algorithm == "tree":
        per_byte = _tree_seconds_per_byte(fab)
        return n, fab.base_latency_s + latency, lambda size: size * per_byte
    busbw = _check.positive("busbw_bytes_per_s", collective_busbw_bytes_per_s(fab, collective, algorithm))
    _check.choice("volume", volume, VOLUME_CONVENTIONS)
    factor = _moved_per_byte(collective, n, algorithm, volume)  # what collective_time moves on the busiest link
    return n, fab.base_latency_s + latency, lambda size: size * factor / busbw


_fabric_parts_cached = lru_cache(maxsize=4096)(_fabric_parts)  # bounded: 4,096 (fabric, collective, algorithm, volume)


def nccl_collective_time(message_bytes: float, fab: Fabric, collective: str = "all_reduce") -> CollectiveTime:
    """The faster of ring and tree for an all_reduce (NCCL's tuner picks by the same model); ring otherwise."""
    ring = fabric_collective_time(message_bytes, fab, collective, "ring")
    if collective != "all_reduce":
        return ring
    tree = fabric_collective_time(message_bytes, fab, collective, "tree")
    return tree if tree.time_s < ring.time_s else ring


# --------------------------------------------------------------------------- NCCL's protocols (LL, LL128, Simple)
# NCCL's tuning model (src/graph/tuning.cc ncclTopoTuneModel and ncclTopoGetAlgoTime, NCCL 2.28.9 at dbc86fd) gives
# every algorithm and protocol a latency and a bandwidth; enqueue.cc topoGetAlgoInfo runs the one it predicts
# fastest. LL (8 bytes of data with 8 of flags, no fence) has the smallest latency and the least bandwidth, Simple
# the reverse, LL128 sits between. The constants are links.json's "nccl_tuning", each named there.
NCCL_PROTOCOLS = ("LL", "LL128", "Simple")
#: The collectives NCCL's tuning model prices this way (all_to_all and send_recv are point-to-point, not tuned so).
TUNED_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


class NcclTuned(NamedTuple):
    """One algorithm and protocol as NCCL's tuning model prices it (one node)."""

    algorithm: str  # "ring" or "tree"
    protocol: str  # "LL", "LL128" or "Simple"
    latency_s: float  # baseLat + steps x hwLat, seconds
    algbw_bytes_per_s: float  # size / (time - latency) before the tree's correction, bytes/s
    time_s: float  # latency + size / bandwidth (the tree's bandwidth corrected for the size), seconds


def nccl_tuning() -> Mapping[str, Any]:
    """links.json's "nccl_tuning": NCCL's tuning constants, each with what it is (its "fields")."""
    return MappingProxyType(_raw()["nccl_tuning"])


def nccl_tuned_links() -> tuple[str, ...]:
    """The intra-node links whose NVLinks and compute capability NCCL's tuning model is given (links.json)."""
    return tuple(k for k in _raw()["nccl_tuning"]["links"] if k != "fields")


def _cc_key(compute_capability: int) -> str:
    """NCCL's compCapIndex: Blackwell from 100, Hopper from 90, Ampere from 80, else Volta (tuning.cc)."""
    return "100" if compute_capability >= 100 else "90" if compute_capability >= 90 else \
        "80" if compute_capability >= 80 else "70"


@lru_cache(maxsize=256)
def nccl_tuner_table(collective: str, n_ranks: int, intra_key: str = "NVLink4-H100") -> tuple[NcclTuned, ...]:
    """NCCL's modelled latency and bandwidth of each (algorithm, protocol) for ``collective`` over ``n_ranks`` GPUs of
    one node joined by ``intra_key`` (an NVLink of :func:`nccl_tuned_links`); ``time_s`` is the latency alone.

    Ring: the topology search's channels x their speed (:func:`nccl_ring_channels`, e.g. 12 x 30 = 360 GB/s on an H100)
    is the Simple bus bandwidth; LL is min(llMaxBw, half of it), LL128 min(0.92 of it, channels x a per-channel cap);
    algbw = busbw x n / steps; latency = baseLat + steps x hwLat (2(n-1) steps for all_reduce, n-1 otherwise).
    Tree (all_reduce only; NCCL searches it on the ring's channel count, init.cc, here at the ring's speed too):
    min(0.92 x, channels x cap), LL /3.8, LL128 x 7/9 on one node, algbw = busbw / 2, latency = baseLat + 2(n-1) hwLat.
    """
    _check.choice("collective", collective, TUNED_COLLECTIVES)
    n = _ranks_of_a_collective(n_ranks)
    t = _raw()["nccl_tuning"]
    if intra_key not in nccl_tuned_links():
        raise ValueError(f"intra_key={intra_key!r} is not allowed: NCCL's tuning model is stored for "
                         f"{', '.join(nccl_tuned_links())}")
    lk = t["links"][intra_key]
    cc = int(lk["compute_capability"])
    ring = nccl_ring_channels(int(lk["nvlinks"]), cc)
    ch, simple = ring.searched, ring.tuner_busbw_GBps
    key = _cc_key(cc)
    ll_max = float(t["ll_max_busbw_GBps"][key])
    steps = 2 * (n - 1) if collective == "all_reduce" else n - 1
    out = []
    for i, proto in enumerate(NCCL_PROTOCOLS):
        if proto == "LL":
            bus = min(ll_max, simple * t["ring_ll_factor"])
        elif proto == "LL128":
            bus = min(simple * t["ring_ll128_factor"], ch * float(t["ring_ll128_per_channel_GBps"][key]))
        else:
            bus = simple
        lat = t["base_latency_us"]["ring"][i] + steps * t["nvlink_step_latency_us"]["ring"][i]
        out.append(NcclTuned("ring", proto, lat * 1e-6, bus * n / steps * 1e9, lat * 1e-6))
    if collective == "all_reduce":
        tree = min(simple * t["tree_factor"], ch * float(t["tree_per_channel_GBps"][key]))
        for i, proto in enumerate(NCCL_PROTOCOLS):
            bus = min(tree / t["tree_ll_divisor"], ll_max) if proto == "LL" else min(
                tree * t["tree_ll128_factor_one_node"], ch * float(t["tree_ll128_per_channel_GBps"][key])) \
                if proto == "LL128" else tree
            lat = t["base_latency_us"]["tree"][i] + 2 * (n - 1) * t["nvlink_step_latency_us"]["tree"][i]
            out.append(NcclTuned("tree", proto, lat * 1e-6, bus * 0.5 * 1e9, lat * 1e-6))
    return tuple(out)


def _tuned_time(row: NcclTuned, message_bytes: float) -> float:
    """ncclTopoGetAlgoTime: latency + size / bandwidth, a tree's bandwidth times treeCorrectionFactor at its size."""
    bw = row.algbw_bytes_per_s
    if row.algorithm == "tree":
        whole = int(message_bytes) >> 6
        log_size = whole.bit_length() - 1  # log2i: floor(log2), -1 for 0
        if 0 <= log_size < 23:
            bw *= _raw()["nccl_tuning"]["tree_correction"][NCCL_PROTOCOLS.index(row.protocol)][log_size]
    return row.latency_s + message_bytes / bw


def nccl_tuned_choices(message_bytes: float, n_ranks: int, collective: str = "all_reduce",
                       intra_key: str = "NVLink4-H100") -> tuple[NcclTuned, ...]:
    """Every (algorithm, protocol) of :func:`nccl_tuner_table` timed at ``message_bytes`` (nccl-tests' S: the whole
    buffer), fastest first, as NCCL's tuning model times them."""
    message_bytes = _check.non_negative("message_bytes", message_bytes)
    rows = [r._replace(time_s=_tuned_time(r, message_bytes))
            for r in nccl_tuner_table(collective, n_ranks, intra_key)]
    order = {(a, p): k for k, (a, p) in enumerate((a, p) for a in ("tree", "ring") for p in NCCL_PROTOCOLS)}
    # topoGetAlgoInfo keeps the first of equal times in its loop order: tree before ring, LL before LL128 before Simple
    return tuple(sorted(rows, key=lambda r: (r.time_s, order[(r.algorithm, r.protocol)])))


def engine_allreduce_paths() -> Mapping[str, Mapping[str, str]]:
    """Which all-reduce each engine path runs and what the book charges for it, each with its source (links.json
    nccl_latency "engine_paths"). The law (:func:`fabric_collective_time`, :func:`mlcalc.serving.comm_s`) charges
    NCCL's Ring/Simple for every engine; the book's own CUDA-graph engine is charged its measured call
    (:func:`mlcalc.servemeasured.graph_allreduce_s`); SGLang and TensorRT-LLM run kernels of their own inside a node."""
    e = _raw()["nccl_latency"]["engine_paths"]
    return MappingProxyType({k: MappingProxyType(dict(v)) for k, v in e.items() if k != "notes"})


def nccl_tuned_pick(message_bytes: float, n_ranks: int, collective: str = "all_reduce",
                    intra_key: str = "NVLink4-H100", protocols: Sequence[str] = NCCL_PROTOCOLS) -> NcclTuned:
    """The algorithm and protocol NCCL runs (the least modelled time, enqueue.cc topoGetAlgoInfo) among
    ``protocols`` (NCCL_PROTO restricts them so), with its modelled time."""
    allowed = tuple(protocols) if not isinstance(protocols, str) else (protocols,)
    if not allowed:
        raise ValueError("protocols=() is not allowed: name one or more of 'LL', 'LL128', 'Simple'")
    for p in allowed:
        _check.choice("protocols", p, NCCL_PROTOCOLS)
    return next(r for r in nccl_tuned_choices(message_bytes, n_ranks, collective, intra_key) if r.protocol in allowed)


class ProtocolTime(NamedTuple):
    """A collective priced in the protocol NCCL's tuner picks for it (:func:`nccl_protocol_time`)."""

    algorithm: str  # the algorithm NCCL's tuning model picks ("ring" or "tree")
    protocol: str  # the protocol it picks ("LL", "LL128" or "Simple")
    time_s: float  # floor_s + latency_s + bandwidth_s, seconds
    floor_s: float  # fixed time per call in a CUDA graph that NCCL's model does not carry, seconds
    latency_s: float  # the law's Simple latency scaled by NCCL's protocol relations, seconds
    bandwidth_s: float  # the law's Simple bytes time scaled by NCCL's protocol bandwidth relation, seconds


def nccl_graph_floor_s() -> float:
    """The fixed time per NCCL call inside a CUDA graph that NCCL's tuning model does not carry, seconds (links.json
    nccl_latency "graph_call_floor_us": a calibration on the serve run's graph all-reduces, not a mechanism)."""
    return float(_raw()["nccl_latency"]["graph_call_floor_us"]) * 1e-6


def nccl_protocol_time(message_bytes: float, fab: Fabric, collective: str = "all_reduce",
                       intra_key: str = "NVLink4-H100", floor_s: float | None = None) -> ProtocolTime:
    """A collective on one node of ``fab`` as a CUDA graph replays it: the law's time in the protocol NCCL runs.

    NCCL's tuning model picks the algorithm and protocol (:func:`nccl_tuned_pick`; lat16 found its pick equal to
    NCCL's logged one at 102 of 102 points). The law's Ring/Simple (or tree) time (:func:`fabric_collective_time`:
    baseLat + steps x hwLat, the bytes at the measured link's bus bandwidth) is the anchor, and only NCCL's
    *relations* between protocols (src/graph/tuning.cc at v2.28.9-1) move it to the protocol picked:
    - base latency x baseLat[P] / baseLat[Simple] (ring: LL 6.6 / 8.4, LL128 14.0 / 8.4);
    - each step's latency x hwLat[NVLink][P] / hwLat[NVLink][Simple] (ring: LL 0.6 / 3.4, LL128 1.9 / 3.4);
    - the bytes' time x NCCL's Simple bandwidth / its P bandwidth (:func:`nccl_tuner_table`; ring LL: half the
      Simple rate, an LL line of 16 bytes carries 8 of data and 8 of flags (src/include/device.h ncclLLFifoLine,
      src/device/prims_ll.h storeLL), capped at llMaxBw = 141 GB/s of NCCL's 360 on an H100; LL128 0.92 = 120/128).
    Plus ``floor_s`` (None: :func:`nccl_graph_floor_s`), one time per call for every protocol. One node only.

    lat16 (4 x H200, NCCL 2.28.9): an all-reduce of 8 KiB over 4 GPUs in a CUDA graph took 17.5 us; this law
    says Ring/LL:

    >>> r = nccl_protocol_time(8192, fabric("DGX-H100", 1, gpus_per_node=4))
    >>> (r.protocol, round(r.time_s * 1e6, 1))
    ('LL', 13.9)
    """
    message_bytes = _check.non_negative("message_bytes", message_bytes)
    _check.choice("collective", collective, TUNED_COLLECTIVES)
    if fab.n_nodes != 1:
        raise ValueError(f"fab.n_nodes={fab.n_nodes!r} is not allowed: NCCL's protocol relations are stored for one "
                         "node (use fabric_collective_time across nodes)")
    n = _ranks_of_a_collective(fab.n_ranks)
    floor = nccl_graph_floor_s() if floor_s is None else _check.non_negative("floor_s", floor_s)
    pick = nccl_tuned_pick(message_bytes, n, collective, intra_key)
    a = pick.algorithm
    t = _raw()["nccl_tuning"]
    i, s = NCCL_PROTOCOLS.index(pick.protocol), NCCL_PROTOCOLS.index("Simple")
    base, hw = t["base_latency_us"][a], t["nvlink_step_latency_us"][a]
    law = fabric_collective_time(message_bytes, fab, collective, a)
    law_steps = law.latency_s - fab.base_latency_s  # one node: the law's steps, each at the intra-node latency
    latency = fab.base_latency_s * base[i] / base[s] + law_steps * hw[i] / hw[s]
    table = {r.protocol: r.algbw_bytes_per_s for r in nccl_tuner_table(collective, n, intra_key) if r.algorithm == a}
    bandwidth = law.bandwidth_s * table["Simple"] / table[pick.protocol]
    return _check.fields("nccl_protocol_time", ProtocolTime(a, pick.protocol, floor + latency + bandwidth, floor,
                                                            latency, bandwidth))


class HierarchicalTime(NamedTuple):
    """A hierarchical all_reduce: reduce-scatter in the node, all-reduce across, all-gather in the node."""

    reduce_scatter_s: float  # in-node reduce-scatter of S over g GPUs (NVLink)
    inter_all_reduce_s: float  # all-reduce of each GPU's S/g across the nodes, through its NIC share
    all_gather_s: float  # in-node all-gather back to S
    time_s: float  # the three in a row


def hierarchical_all_reduce_time(message_bytes: float, fab: Fabric) -> HierarchicalTime:
    """Time of a hierarchical (2D) all_reduce on ``fab``, the three phases run one after the other.

    Each GPU all-reduces its S/g shard with the same GPU of every other node, all g
    shards at once, each through its share of the node's network (node / g): the
    network moves the same 2(N-1)/N S per node as a flat ring; the in-node phases add
    NVLink time on top unless they overlap (NCCL's ring pipelines them, so a flat ring
    is not slower).
    """
    message_bytes = _check.non_negative("message_bytes", message_bytes)
    g, nodes = fab.gpus_per_node, fab.n_nodes
    _ranks_of_a_collective(fab.n_ranks)
    lat_in, lat_out, base = fab.intra_step_latency_s, fab.inter_step_latency_s, fab.base_latency_s
    rs = ag = 0.0
    if g > 1:
        rs = collective_time(message_bytes, g, fab.intra_bytes_per_s, "reduce_scatter", "ring", lat_in, base).time_s
        ag = collective_time(message_bytes, g, fab.intra_bytes_per_s, "all_gather", "ring", lat_in, base).time_s
    inter = 0.0
    if nodes > 1:
        inter = collective_time(message_bytes / g, nodes, min(fab.intra_bytes_per_s, fab.inter_bytes_per_s_per_gpu),
                                "all_reduce", "ring", lat_out, base).time_s
    return HierarchicalTime(rs, inter, ag, rs + inter + ag)


# --------------------------------------------------------------------------- published results


@dataclass(frozen=True)
class PublishedCase:
    """One published multi-node collective result (mlcalc/data/published_collectives.json)."""

    id: str  # short name
    source: str  # URL of the thread, README or paper
    kind: str  # "measurement" or "maintainer expectation"
    gpu: str  # the GPU as the source names it
    gpus_per_node: int  # GPUs per node taking part
    n_nodes: int  # nodes
    nics_per_node: int  # compute NICs per node used
    nic: Link  # one NIC
    intra: Link  # GPU-to-GPU link
    pcie: Link | None  # PCIe link of each GPU and NIC
    network: str  # the fabric as the source states it
    collective: str  # one of COLLECTIVES
    algorithm: str  # "ring", "tree" or "default"
    size_bytes: float | None  # message size, or None for the source's peak figure
    busbw_bytes_per_s: float  # published bus bandwidth, bytes/s
    met: bool  # whether the model is expected within +-15%
    reason: str  # where not met: why
    stated_per_nic_bytes_per_s: float | None  # where not met: the per-NIC rate the source reports
    maintainer_expected_bytes_per_s: float | None  # where not met: what NCCL maintainers expect
    notes: str  # how it was read


def published_collectives() -> tuple[PublishedCase, ...]:
    """Every published case, in file order."""
    raw = json.loads(resources.files("mlcalc.data").joinpath("published_collectives.json").read_text())
    out = []
    for c in raw["cases"]:
        def gbps(key: str, c: dict = c) -> float | None:
            return float(c[key]) * 1e9 if c.get(key) is not None else None

        out.append(PublishedCase(
            c["id"], c["source"], c["kind"], c["gpu"], int(c["gpus_per_node"]), int(c["n_nodes"]),
            int(c["nics_per_node"]), link(c["nic"]), link(c["intra"]), link(c["pcie"]) if c.get("pcie") else None,
            c["network"], c["collective"], c["algorithm"],
            float(c["size_bytes"]) if c.get("size_bytes") is not None else None, float(c["busbw_GBps"]) * 1e9,
            bool(c["met"]), c.get("reason", ""), gbps("stated_per_nic_GBps"), gbps("maintainer_expected_GBps"),
            c.get("notes", "")))
    return tuple(out)


class InternalPoint(NamedTuple):
    """One point of an internal (our own) measurement kept beside the published cases."""

    run: str  # id of the measurement
    gpus_per_node: int  # GPUs on the one node
    collective: str  # one of COLLECTIVES
    size_bytes: float  # message size, bytes
    busbw_bytes_per_s: float  # measured bus bandwidth, bytes/s
    source: str  # where it is recorded


def internal_measurements() -> tuple[InternalPoint, ...]:
    """Our own multi-GPU measurements that have no bundled bench file (e.g. the 4-H200 all-reduce)."""
    raw = json.loads(resources.files("mlcalc.data").joinpath("published_collectives.json").read_text())
    return tuple(InternalPoint(m["id"], int(m["gpus_per_node"]), m["collective"], float(pt["size_bytes"]),
                               float(pt["busbw_GBps"]) * 1e9, m["source"])
                 for m in raw.get("internal", []) for pt in m["points"])


# Size at which a case with no stated size is predicted: nccl-tests sweeps usually end at 8 GiB or more.
PEAK_SIZE_BYTES = 8 * 2**30


def case_fabric(case: PublishedCase, nic_bytes_per_s: float | None = None) -> Fabric:
    """The :class:`Fabric` of a published case from its hardware and the links' sourced efficiencies.

    ``nic_bytes_per_s`` replaces the NIC's achievable rate (to test a cause a source states).
    """
    nic = case.nic.achievable_bytes_per_s if nic_bytes_per_s is None else _check.positive(
        "nic_bytes_per_s", nic_bytes_per_s)
    pcie = case.pcie.achievable_bytes_per_s if case.pcie is not None else None
    node = node_network_bytes_per_s(case.nics_per_node, nic, case.gpus_per_node, pcie)
    g = case.gpus_per_node
    return Fabric(g, case.n_nodes, case.intra.achievable_bytes_per_s, node / g, case.intra.step_latency_s,
                  case.nic.step_latency_s, nccl_base_latency_s())


def predict_case(case: PublishedCase, nic_bytes_per_s: float | None = None) -> float:
    """Predicted busbw (bytes/s) of a published case at its size (``PEAK_SIZE_BYTES`` if none is stated).

    "default" takes the faster of ring and tree (NCCL's tuner); "ring" / "tree" as forced.
    """
    fab = case_fabric(case, nic_bytes_per_s)
    size = case.size_bytes if case.size_bytes is not None else PEAK_SIZE_BYTES
    if case.algorithm == "default":
        return nccl_collective_time(size, fab, case.collective).busbw_bytes_per_s
    return fabric_collective_time(size, fab, case.collective, case.algorithm).busbw_bytes_per_s


# --------------------------------------------------------------------------- topology

# Largest network the topology functions size: 10 million endpoints (a 100k-GPU cluster is 10^5).
MAX_ENDPOINTS = 10_000_000


def _radix(radix: int) -> int:
    k = _check.positive_int("radix", radix)
    if k < 4 or k % 2:
        raise ValueError(f"radix={radix!r} is not allowed: it must be an even number of ports, at least 4 "
                         "(a 2-port switch only joins two endpoints)")
    return k


def _endpoints(name: str, value: int) -> int:
    n = _check.positive_int(name, value)
    if n > MAX_ENDPOINTS:
        raise ValueError(f"{name}={value!r} is not allowed: at most {MAX_ENDPOINTS:,}")
    return n


def fat_tree_tiers(n_endpoints: int, radix: int) -> int:
    """Fewest tiers of a non-blocking fat tree (folded Clos) of ``radix``-port switches.

    A tree of T tiers reaches 2 (k/2)^T endpoints: every switch below the top gives half
    its ports to the tier below and half to the tier above; the top uses all of them.
    ``radix`` must be even and at least 4; ``n_endpoints`` at most ``MAX_ENDPOINTS``
    (so at most 23 tiers, reached with radix 4).
    """
    n = _endpoints("n_endpoints", n_endpoints)
    k = _radix(radix)
    tiers, reach = 1, k
    while reach < n:
        tiers += 1
        reach = 2 * (k // 2) ** tiers
    return tiers


class _SwitchCount(NamedTuple):
    tiers: int  # switch tiers a packet may climb
    switches: int  # switches of the given radix
    transceivers: int  # optical transceivers: two per link, on every tier (GPU-leaf links included)


class SwitchCount(_SwitchCount):
    """What a network needs: tiers, switches, optical transceivers (each a whole number >= 0; tiers >= 1)."""

    __slots__ = ()

    def __new__(cls, tiers: int, switches: int, transceivers: int) -> "SwitchCount":
        _check.positive_int("tiers", tiers)
        for name, value in (("switches", switches), ("transceivers", transceivers)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer() \
                    or value < 0:
                raise ValueError(f"{name}={value!r} is not allowed: it must be a whole number of at least 0")
        return super().__new__(cls, int(tiers), int(switches), int(transceivers))


def fat_tree_counts(n_endpoints: int, radix: int) -> SwitchCount:
    """Switches and transceivers of a non-blocking fat tree for ``n_endpoints`` NICs.

    Each of the lower T-1 tiers has 2N/k switches, the top tier N/k; every tier
    carries N links with a transceiver at each end: (2T-1) N/k switches, 2 T N
    transceivers. This reproduces the "SOTA" columns of Wang et al.'s comparison.
    """
    n = _endpoints("n_endpoints", n_endpoints)
    k = _radix(radix)
    t = fat_tree_tiers(n, k)
    return SwitchCount(t, math.ceil((2 * t - 1) * n / k), 2 * t * n)


def rail_only_counts(n_gpus: int, radix: int, hb_domain: int) -> SwitchCount:
    """Switches and transceivers of a Rail-only network (Wang et al. 2023).

    GPUs sit in high-bandwidth (HB) domains of ``hb_domain`` GPUs (an NVLink domain);
    GPU i of every domain joins rail i, and each rail is its own fat tree of
    n_gpus / hb_domain GPUs, with no spine joining the rails.
    """
    n = _endpoints("n_gpus", n_gpus)
    k = _radix(radix)
    d = _check.positive_int("hb_domain", hb_domain)
    if d > n or n % d:
        raise ValueError(f"hb_domain={hb_domain!r} is not allowed: it must divide n_gpus={n_gpus!r}")
    t = fat_tree_tiers(n // d, k)
    return SwitchCount(t, math.ceil((2 * t - 1) * n / k), 2 * t * n)


def oversubscribed_fat_tree_counts(n_endpoints: int, radix: int, oversubscription: float = 1.0) -> SwitchCount:
    """A fat tree whose leaves have ``oversubscription`` : 1 more downlinks than uplinks.

    Leaf switches give d = floor(k o/(o+1)) ports to endpoints and u = k - d up; the
    tiers above are non-blocking over the leaves' E = L u uplinks (L leaves). T tiers
    reach d 2 (k/2)^(T-1) endpoints (k^2/2 for T = 2 when o = 1). Switches:
    L + (T-2) 2E/k + E/k; transceivers: 2 N below the leaves and 2 E per tier above.
    Bisection bandwidth is divided by o (see :func:`bisection_bytes_per_s`).
    """
    n = _endpoints("n_endpoints", n_endpoints)
    k = _radix(radix)
    o = _check.at_least("oversubscription", oversubscription, 1.0)
    if o == 1.0 or n <= k:
        return fat_tree_counts(n, k)
    down = min(k - 1, math.floor(k * o / (o + 1)))
    up = k - down
    tiers = 2
    while down * 2 * (k // 2) ** (tiers - 1) < n:
        tiers += 1
    leaves = math.ceil(n / down)
    e = leaves * up
    switches = leaves + (tiers - 2) * math.ceil(2 * e / k) + math.ceil(e / k)
    return SwitchCount(tiers, switches, 2 * n + 2 * e * (tiers - 1))


def network_cost(counts: SwitchCount, radix: int, cost_per_switch_port: float, cost_per_transceiver: float) -> float:
    """Cost of a network: switches x radix x price per port + transceivers x price each."""
    if not isinstance(counts, SwitchCount):
        counts = SwitchCount(*counts)
    k = _check.positive_int("radix", radix)
    return (counts.switches * k * _check.non_negative("cost_per_switch_port", cost_per_switch_port)
            + counts.transceivers * _check.non_negative("cost_per_transceiver", cost_per_transceiver))


def bisection_bytes_per_s(n_endpoints: int, link_bytes_per_s: float, oversubscription: float = 1.0) -> float:
    """Bisection bandwidth, one direction: what half the endpoints can send the other half.

    A non-blocking (1:1) fat tree gives N/2 x link; an oversubscription of o:1 (leaf
    downlinks o times the uplinks) divides it by o.
    """
    n = _endpoints("n_endpoints", n_endpoints)
    bw = _check.positive("link_bytes_per_s", link_bytes_per_s)
    o = _check.at_least("oversubscription", oversubscription, 1.0)
    return n / 2 * bw / o


class TopologyResult(NamedTuple):
    """A fat tree and a Rail-only network for the same GPUs."""

    fat_tree: SwitchCount  # non-blocking fat tree over every GPU's NIC
    rail_only: SwitchCount  # one fat tree per rail, no spine
    cost_reduction: float  # 1 - rail-only cost / fat-tree cost


def compare_topologies(n_gpus: int, radix: int, hb_domain: int,
                       port_to_transceiver_cost: float = 2.0) -> TopologyResult:
    """Fat tree against Rail-only for ``n_gpus`` GPUs.

    Costs are in units of one transceiver, a switch port costing
    ``port_to_transceiver_cost`` of them (2 reproduces the Rail-only paper's column).
    """
    port_to_transceiver_cost = _check.non_negative("port_to_transceiver_cost", port_to_transceiver_cost)
    fat = fat_tree_counts(n_gpus, radix)
    rail = rail_only_counts(n_gpus, radix, hb_domain)
    ratio = network_cost(rail, radix, port_to_transceiver_cost, 1.0) / network_cost(
        fat, radix, port_to_transceiver_cost, 1.0)
    return TopologyResult(fat, rail, 1 - ratio)


__all__ = [
    "ALGORITHMS", "BITS_PER_BYTE", "COLLECTIVES", "IN_NETWORK", "MAX_ENDPOINTS", "MAX_NICS_PER_NODE", "MAX_RANKS",
    "BEKMAN_EFFICIENCY", "TREE_BUSBW_FACTOR", "VOLUME_CONVENTIONS", "CollectiveTime", "Fabric", "Generation",
    "HierarchicalTime", "Link", "Speedup", "SwitchCount", "System", "TopologyResult", "UnitsResult",
    "algbw_to_busbw", "allreduce_volume_factor", "bandwidth_units", "bisection_bytes_per_s", "busbw_factor",
    "busbw_to_algbw", "bytes_per_s_to_gbps", "collective_busbw_bytes_per_s", "collective_time",
    "compare_topologies", "expected_bytes_per_s", "fabric", "fabric_collective_time", "fabric_collective_times",
    "fat_tree_counts",
    "fat_tree_tiers", "gbps_to_bytes_per_s", "generations", "hierarchical_all_reduce_time",
    "latency_bandwidth_crossover_bytes", "latency_steps", "link", "links", "nccl_base_latency_s",
    "nccl_collective_time", "network_cost", "node_bytes_per_s", "node_network_bytes_per_s", "one_direction",
    "InternalPoint", "PEAK_SIZE_BYTES", "PublishedCase", "internal_measurements", "case_fabric",
    "oversubscribed_fat_tree_counts", "predict_case",
    "published_collectives", "rail_only_counts", "speedups", "system", "systems", "to_bytes_per_s",
    "scale_up_domain", "parallel_degrees_inside", "rack_scale_systems",
    "with_busbw", "NCCL_PROTOCOLS", "TUNED_COLLECTIVES", "NcclTuned", "nccl_tuning", "nccl_tuned_links",
    "nccl_tuner_table", "nccl_tuned_choices", "nccl_tuned_pick", "engine_allreduce_paths",
    "RingSchedule", "nccl_ring_schedule", "ProtocolTime", "nccl_graph_floor_s", "nccl_protocol_time",
]


# Object parameters (a ModelConfig, a Fabric, a list of offers...) are checked by type before each call.
_check.guard(globals())
