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
from typing import Mapping, NamedTuple

from mlcalc import _check

# --------------------------------------------------------------------------- units

BITS_PER_BYTE = 8
# The seed chapter ("The AI Battlefield", Inter-node Network): "You typically get at most
# 80% of advertised speed. e.g., if you are told you get 800Gbps, expect ~640Gbps."
SEED_EFFICIENCY = 0.8
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


def expected_bytes_per_s(advertised_bytes_per_s: float, efficiency: float = SEED_EFFICIENCY) -> float:
    """What to plan with: the advertised bandwidth times ``efficiency`` (seed: at most 80%)."""
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

    @property
    def bytes_per_s(self) -> float:
        """Bandwidth of one direction, bytes/s."""
        return one_direction(to_bytes_per_s(self.bandwidth, self.unit), self.direction)


@dataclass(frozen=True)
class System:
    """A node design: GPUs, the link between them, and the NICs that leave the node."""

    key: str  # short name, e.g. "DGX-H100"
    name: str  # product name
    gpus_per_node: int  # accelerators in one node
    intra: Link  # GPU-to-GPU link inside the node
    nic: Link  # one NIC (or, where ``nics_per_node`` is 1, the node's whole network)
    nics_per_node: int  # compute-fabric NICs per node
    source: str  # URL of the node's datasheet
    notes: str = ""  # how it was read

    @property
    def node_bytes_per_s(self) -> float:
        """Inter-node bandwidth of the whole node, one direction, bytes/s (advertised)."""
        return node_bytes_per_s(self.nics_per_node, self.nic.bytes_per_s)

    @property
    def inter_bytes_per_s_per_gpu(self) -> float:
        """The node's inter-node bandwidth shared out per GPU, one direction, bytes/s."""
        return self.node_bytes_per_s / self.gpus_per_node


class Generation(NamedTuple):
    """One GPU generation of the seed's V100 -> B200 table."""

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
                        float(e["step_latency_us"]) * 1e-6, e["source"], e.get("notes", ""))
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
                          int(e["nics_per_node"]), e["source"], e.get("notes", ""))
    return MappingProxyType(out)


def system(key: str) -> System:
    """The node design named ``key`` (ValueError listing the known keys otherwise)."""
    _check.choice("system", key, systems())
    return systems()[key]


def nccl_base_latency_s() -> float:
    """NCCL's fixed latency of a ring collective (Simple protocol), seconds."""
    return float(_raw()["nccl_latency"]["base_latency_us"]) * 1e-6


@lru_cache(maxsize=None)
def generations() -> tuple[Generation, ...]:
    """The seed's GPU generations (V100, A100, H100, B200), oldest first."""
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


def busbw_factor(collective: str, n_ranks: int) -> float:
    """nccl-tests' factor from algorithm bandwidth to bus bandwidth: busbw = algbw x factor.

    all_reduce 2(n-1)/n; all_gather, reduce_scatter and all_to_all (n-1)/n; broadcast,
    reduce and send_recv 1 (nccl-tests doc/PERFORMANCE.md).
    """
    _check.choice("collective", collective, COLLECTIVES)
    n = _check.positive_int("n_ranks", n_ranks)
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


def algbw_to_busbw(algbw_bytes_per_s: float, collective: str, n_ranks: int) -> float:
    """Bus bandwidth from algorithm bandwidth (size / time), nccl-tests convention."""
    return _check.non_negative("algbw_bytes_per_s", algbw_bytes_per_s) * busbw_factor(collective, n_ranks)


def busbw_to_algbw(busbw_bytes_per_s: float, collective: str, n_ranks: int) -> float:
    """Algorithm bandwidth (size / time) that a bus bandwidth gives, nccl-tests convention."""
    busbw_bytes_per_s = _check.non_negative("busbw_bytes_per_s", busbw_bytes_per_s)
    factor = busbw_factor(collective, n_ranks)
    if factor == 0:
        return math.inf
    return busbw_bytes_per_s / factor


def latency_steps(collective: str, n_ranks: int, algorithm: str = "ring") -> int:
    """How many latency-bound steps the collective takes (the alpha count).

    Ring: all_reduce 2(n-1), all_gather / reduce_scatter / all_to_all n-1, broadcast /
    reduce n (as NCCL's tuning model counts them), send_recv 1. Tree (all_reduce only):
    2 ceil(log2 n), up the tree and back down.
    """
    _check.choice("collective", collective, COLLECTIVES)
    _check.choice("algorithm", algorithm, ALGORITHMS)
    n = _check.positive_int("n_ranks", n_ranks)
    if n == 1:
        return 0
    if algorithm == "tree":
        if collective != "all_reduce":
            raise ValueError(f"algorithm={algorithm!r} is not allowed for collective={collective!r}: "
                             "choose 'ring' (NCCL has trees for all_reduce only)")
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


def collective_time(
    message_bytes: float,
    n_ranks: int,
    busbw_bytes_per_s: float,
    collective: str = "all_reduce",
    algorithm: str = "ring",
    step_latency_s: float = 0.0,
    base_latency_s: float = 0.0,
) -> CollectiveTime:
    """Time of a collective: ``t = base + steps * alpha + bytes_moved / busbw``.

    Parameters
    ----------
    message_bytes : the size nccl-tests calls S: the buffer of an all_reduce, broadcast or
        send, the *gathered* output of an all_gather, the *full* input of a reduce_scatter.
    n_ranks : GPUs taking part.
    busbw_bytes_per_s : bus bandwidth (one direction, bytes/s). Plug in a link's peak, a
        derated figure, or the busbw that nccl-tests measured.
    collective : one of ``COLLECTIVES``.
    algorithm : "ring", or "tree" (all_reduce only; NCCL's double binary tree moves
        2 S per rank: its algorithm bandwidth is half the bus bandwidth).
    step_latency_s, base_latency_s : alpha per step and fixed cost (NCCL's tuning model
        uses 3.4 us per NVLink step, 9.6 us per network step and 8.4 us base).

    References
    ----------
    nccl-tests doc/PERFORMANCE.md (bus bandwidth factors); NCCL src/graph/tuning.cc
    (time = latency + size / algbw; tree algbw = busbw / 2).
    """
    message_bytes = _check.non_negative("message_bytes", message_bytes)
    busbw = _check.positive("busbw_bytes_per_s", busbw_bytes_per_s)
    step_latency_s = _check.non_negative("step_latency_s", step_latency_s)
    base_latency_s = _check.non_negative("base_latency_s", base_latency_s)
    steps = latency_steps(collective, n_ranks, algorithm)
    n = int(n_ranks)
    if n == 1:
        return CollectiveTime(0.0, 0.0, 0.0, math.inf, math.inf)
    factor = busbw_factor(collective, n)
    moved = message_bytes * (2.0 if algorithm == "tree" else factor)
    latency = base_latency_s + steps * step_latency_s
    bandwidth = moved / busbw
    total = latency + bandwidth
    algbw = message_bytes / total if total > 0 else math.inf
    return CollectiveTime(total, latency, bandwidth, algbw, algbw * factor)


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
    return latency / per_byte if per_byte > 0 else math.inf


@dataclass(frozen=True)
class Fabric:
    """GPUs in nodes: the link inside a node and the network between nodes (one direction)."""

    gpus_per_node: int  # GPUs in one node taking part
    n_nodes: int  # nodes taking part
    intra_bytes_per_s: float  # one GPU's bandwidth to the others in its node, bytes/s
    inter_bytes_per_s_per_gpu: float  # the node's network bandwidth per GPU, bytes/s
    intra_step_latency_s: float = 0.0  # alpha of an intra-node step, seconds
    inter_step_latency_s: float = 0.0  # alpha of an inter-node step, seconds
    base_latency_s: float = 0.0  # fixed cost of a collective, seconds

    def __post_init__(self) -> None:
        _check.positive_int("gpus_per_node", self.gpus_per_node)
        _check.positive_int("n_nodes", self.n_nodes)
        _check.positive("intra_bytes_per_s", self.intra_bytes_per_s)
        _check.positive("inter_bytes_per_s_per_gpu", self.inter_bytes_per_s_per_gpu)
        _check.non_negative("intra_step_latency_s", self.intra_step_latency_s)
        _check.non_negative("inter_step_latency_s", self.inter_step_latency_s)
        _check.non_negative("base_latency_s", self.base_latency_s)

    @property
    def n_ranks(self) -> int:
        """GPUs in all."""
        return self.gpus_per_node * self.n_nodes

    @property
    def busbw_bytes_per_s(self) -> float:
        """The ring's bus bandwidth: the slowest link on the ring sets the pace."""
        if self.n_nodes == 1:
            return self.intra_bytes_per_s
        return min(self.intra_bytes_per_s, self.inter_bytes_per_s_per_gpu)

    @property
    def bottleneck(self) -> str:
        """Which link sets the pace: "intra-node" or "inter-node"."""
        if self.n_nodes == 1 or self.intra_bytes_per_s <= self.inter_bytes_per_s_per_gpu:
            return "intra-node"
        return "inter-node"


def fabric(system_key: str, n_nodes: int = 1, efficiency: float = 1.0, gpus_per_node: int | None = None) -> Fabric:
    """A :class:`Fabric` of ``n_nodes`` nodes of a catalogued system, links derated by ``efficiency``."""
    s = system(system_key)
    efficiency = _check.fraction("efficiency", efficiency)
    g = s.gpus_per_node if gpus_per_node is None else _check.positive_int("gpus_per_node", gpus_per_node)
    if g > s.gpus_per_node:
        raise ValueError(f"gpus_per_node={gpus_per_node!r} is not allowed: a {system_key} node has {s.gpus_per_node}")
    return Fabric(g, _check.positive_int("n_nodes", n_nodes), s.intra.bytes_per_s * efficiency,
                  s.node_bytes_per_s * efficiency / g, s.intra.step_latency_s, s.nic.step_latency_s,
                  nccl_base_latency_s())


def with_busbw(fab: Fabric, busbw_bytes_per_s: float) -> Fabric:
    """The same fabric with its links replaced by one measured bus bandwidth (e.g. from nccl-tests).

    Latencies are kept; ``busbw_bytes_per_s`` becomes the pace of every hop, so
    :func:`fabric_collective_time` uses it as the ring's bus bandwidth.
    """
    bw = _check.positive("busbw_bytes_per_s", busbw_bytes_per_s)
    return Fabric(fab.gpus_per_node, fab.n_nodes, bw, bw, fab.intra_step_latency_s, fab.inter_step_latency_s,
                  fab.base_latency_s)


def fabric_collective_time(
    message_bytes: float, fab: Fabric, collective: str = "all_reduce", algorithm: str = "ring"
) -> CollectiveTime:
    """A collective over every GPU of ``fab``: bandwidth of the slowest link, NCCL-style latency.

    Latency follows NCCL's tuning model: a ring pays the network step latency on the
    steps that cross nodes and the intra-node latency on the rest; a tree pays
    2 ((g-1) intra + log2(nodes) inter) steps.
    """
    n = fab.n_ranks
    steps = latency_steps(collective, n, algorithm)
    if algorithm == "tree":
        g, nodes = fab.gpus_per_node, fab.n_nodes
        latency = 2 * ((g - 1) * fab.intra_step_latency_s + math.ceil(math.log2(nodes)) * fab.inter_step_latency_s)
    else:
        inter_steps = latency_steps(collective, fab.n_nodes, "ring") if fab.n_nodes > 1 else 0
        latency = (steps - inter_steps) * fab.intra_step_latency_s + inter_steps * fab.inter_step_latency_s
    base = collective_time(message_bytes, n, fab.busbw_bytes_per_s, collective, algorithm)
    if n == 1:
        return base
    total = fab.base_latency_s + latency + base.bandwidth_s
    algbw = message_bytes / total if total > 0 else math.inf
    return CollectiveTime(total, fab.base_latency_s + latency, base.bandwidth_s, algbw,
                          algbw * busbw_factor(collective, n))


# --------------------------------------------------------------------------- topology


def fat_tree_tiers(n_endpoints: int, radix: int) -> int:
    """Fewest tiers of a non-blocking fat tree (folded Clos) of ``radix``-port switches.

    A tree of T tiers reaches 2 (k/2)^T endpoints: every switch below the top gives half
    its ports to the tier below and half to the tier above; the top uses all of them.
    """
    n = _check.positive_int("n_endpoints", n_endpoints)
    k = _check.at_least("radix", _check.positive_int("radix", radix), 2)
    if int(k) % 2:
        raise ValueError(f"radix={radix!r} is not allowed: it must be an even number of ports")
    tiers, reach = 1, k
    while reach < n:
        tiers += 1
        reach = 2 * (k / 2) ** tiers
    return tiers


class SwitchCount(NamedTuple):
    """What a network needs: tiers, switches, optical transceivers."""

    tiers: int  # switch tiers a packet may climb
    switches: int  # switches of the given radix
    transceivers: int  # optical transceivers: two per link, on every tier (GPU-leaf links included)


def fat_tree_counts(n_endpoints: int, radix: int) -> SwitchCount:
    """Switches and transceivers of a non-blocking fat tree for ``n_endpoints`` NICs.

    Each of the lower T-1 tiers has 2N/k switches, the top tier N/k; every tier
    carries N links with a transceiver at each end: (2T-1) N/k switches, 2 T N
    transceivers. This reproduces the "SOTA" columns of Wang et al.'s comparison.
    """
    n = _check.positive_int("n_endpoints", n_endpoints)
    k = _check.positive_int("radix", radix)
    t = fat_tree_tiers(n, k)
    return SwitchCount(t, math.ceil((2 * t - 1) * n / k), 2 * t * n)


def rail_only_counts(n_gpus: int, radix: int, hb_domain: int) -> SwitchCount:
    """Switches and transceivers of a Rail-only network (Wang et al. 2023).

    GPUs sit in high-bandwidth (HB) domains of ``hb_domain`` GPUs (an NVLink domain);
    GPU i of every domain joins rail i, and each rail is its own fat tree of
    n_gpus / hb_domain GPUs, with no spine joining the rails.
    """
    n = _check.positive_int("n_gpus", n_gpus)
    k = _check.positive_int("radix", radix)
    d = _check.positive_int("hb_domain", hb_domain)
    if n % d:
        raise ValueError(f"hb_domain={hb_domain!r} is not allowed: it must divide n_gpus={n_gpus!r}")
    t = fat_tree_tiers(n // d, k)
    return SwitchCount(t, math.ceil((2 * t - 1) * n / k), 2 * t * n)


def network_cost(counts: SwitchCount, radix: int, cost_per_switch_port: float, cost_per_transceiver: float) -> float:
    """Cost of a network: switches x radix x price per port + transceivers x price each."""
    k = _check.positive_int("radix", radix)
    return (counts.switches * k * _check.non_negative("cost_per_switch_port", cost_per_switch_port)
            + counts.transceivers * _check.non_negative("cost_per_transceiver", cost_per_transceiver))


def bisection_bytes_per_s(n_endpoints: int, link_bytes_per_s: float, oversubscription: float = 1.0) -> float:
    """Bisection bandwidth, one direction: what half the endpoints can send the other half.

    A non-blocking (1:1) fat tree gives N/2 x link; an oversubscription of o:1 (leaf
    downlinks o times the uplinks) divides it by o.
    """
    n = _check.positive_int("n_endpoints", n_endpoints)
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
    "ALGORITHMS", "BITS_PER_BYTE", "COLLECTIVES", "SEED_EFFICIENCY", "CollectiveTime", "Fabric", "Generation",
    "Link", "Speedup", "SwitchCount", "System", "TopologyResult", "UnitsResult", "algbw_to_busbw",
    "bandwidth_units", "bisection_bytes_per_s", "busbw_factor", "compare_topologies",
    "busbw_to_algbw", "bytes_per_s_to_gbps", "collective_time", "expected_bytes_per_s", "fabric",
    "fabric_collective_time", "fat_tree_counts", "with_busbw", "fat_tree_tiers", "gbps_to_bytes_per_s", "generations",
    "latency_bandwidth_crossover_bytes", "latency_steps", "link", "links", "network_cost", "node_bytes_per_s",
    "nccl_base_latency_s", "one_direction", "rail_only_counts", "speedups", "system", "systems", "to_bytes_per_s",
]
