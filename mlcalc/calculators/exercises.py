"""Self-check exercises: the reader types an answer, the page says whether it is right.

Each exercise set is a calculator like any other (``compute`` + ``view``, standard library only), so
it grades in JupyterLab and on the live site alike. Its controls are number boxes, one per question;
``compute`` compares each answer with the expected value, which is *computed* here by mlcalc's own
functions (never typed in), within a tolerance. A wrong answer gets a hint: the slip it matches
(GB for GiB, both directions for one, a forgotten factor...) when it matches one, else a general hint.
An answer of 0 means "not answered yet".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple

from mlcalc import _check, compute, measured, memory, network, storage
from mlcalc.accelerators import peak_flops, spec
from mlcalc.calc import Calc, Control, Table, View, register

#: How close a matching slip must be for its hint to be shown (relative).
MISTAKE_TOL = 0.01
#: The fewest significant figures a rounded answer may have and still be right (19.53 % answered "20").
SIG_FIGS = 2


def round_sig(x: float, figures: int) -> float:
    """``x`` rounded to ``figures`` significant figures (``round_sig(19.53, 2) == 20.0``)."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, figures - 1 - math.floor(math.log10(abs(x))))


@dataclass(frozen=True)
class Mistake:
    """A common wrong answer: the value it gives, and what to tell the reader who gives it."""

    value: Callable[[], float]  # the wrong answer, computed by mlcalc from the slip
    message: str  # the hint for a reader whose answer matches it


@dataclass(frozen=True)
class Exercise:
    """One question whose answer is a number."""

    key: str  # the control's key, "q1", "q2" ...
    question: str  # the question, as the reader sees it
    unit: str  # the unit the answer is given in ("GPUs", "days", "GB/s" ...)
    answer: Callable[[], float]  # the expected answer, computed by mlcalc's functions
    working: Callable[[], str]  # how the answer comes about (shown once it is right, and to instructors)
    hint: str  # for a wrong answer that matches no known slip
    rel_tol: float = 0.02  # accepted relative error (0: the answer must be exact, for counts)
    mistakes: tuple[Mistake, ...] = ()  # slips learners commonly make, checked in order
    sig_figs: int = SIG_FIGS  # an answer rounded to this many significant figures (or more) is right

    def expected(self) -> float:
        return float(self.answer())

    def roundings(self) -> tuple[float, ...]:
        """The expected answer rounded to ``sig_figs`` up to 6 significant figures, each accepted as right.

        A rounding that a known slip also gives (e.g. 130 for 128 KiB, when the kB slip gives 131) is
        left out: there the reader must give more figures. Counts (``rel_tol`` 0) have none.
        """
        if self.rel_tol == 0:
            return ()
        expected = self.expected()
        slips = [float(m.value()) for m in self.mistakes]
        out = []
        for k in range(self.sig_figs, 7):
            r = round_sig(expected, k)
            if any(math.isclose(r, w, rel_tol=max(self.rel_tol, MISTAKE_TOL)) or round_sig(w, k) == r
                   for w in slips if not math.isclose(w, expected, rel_tol=max(self.rel_tol, 1e-9))):
                continue
            if r not in out:
                out.append(r)
        return tuple(out)

    def accepted(self) -> str:
        """What counts as right, in words ("exact", "within 2% or 2 significant figures")."""
        if self.rel_tol == 0:
            return "exact"
        rounds = self.roundings()
        least = next((k for k in range(self.sig_figs, 7) if round_sig(self.expected(), k) in rounds), None)
        tol = f"within {self.rel_tol * 100:g}%"
        return tol if least is None else f"{tol} or {least} significant figures"

    def is_right(self, given: float) -> bool:
        expected = self.expected()
        if self.rel_tol == 0:
            return given == round(expected)
        if abs(given - expected) <= self.rel_tol * abs(expected):
            return True
        return any(math.isclose(given, r, rel_tol=1e-12) for r in self.roundings())

    def slip(self, given: float) -> str:
        """The hint of the first known slip that ``given`` matches, else ""."""
        expected = self.expected()
        for m in self.mistakes:
            wrong = float(m.value())
            if math.isclose(wrong, expected, rel_tol=max(self.rel_tol, 1e-9)):
                continue  # this slip happens to give the right answer here: nothing to say
            if math.isclose(given, wrong, rel_tol=max(self.rel_tol, MISTAKE_TOL)):
                return m.message
        return ""


@dataclass(frozen=True)
class ExerciseSet:
    """The self-check exercises of one area of the book."""

    area: str  # "start", "accelerators" ... (the calculator key is "exercises.<area>")
    title: str  # what the set is about
    chapters: tuple[str, ...]  # the chapters it checks (docnames)
    exercises: tuple[Exercise, ...]


class Grade(NamedTuple):
    """How one answer fared."""

    number: int  # question number, from 1
    answer: float  # what the reader typed (0: not answered)
    expected: float  # the computed answer
    verdict: str  # "right", "wrong" or "unanswered"
    message: str  # what the reader is told


def grade(ex: Exercise, number: int, given: Any) -> Grade:
    """Grade one answer (ValueError naming the question for something that is not a number >= 0)."""
    value = _check.non_negative(f"answer to Q{number}", given)
    expected = ex.expected()
    if value == 0:
        return Grade(number, value, expected, "unanswered", f"Q{number}: waiting for your answer ({ex.unit}).")
    shown = f"{value:,.6g} {ex.unit}"
    if ex.is_right(value):
        return Grade(number, value, expected, "right", f"Q{number}: right, {shown}. {ex.working()}")
    hint = ex.slip(value) or ex.hint
    side = "too high" if value > expected else "too low"
    return Grade(number, value, expected, "wrong", f"Q{number}: not yet, {shown} is {side}. Hint: {hint}")


def _set_compute(s: ExerciseSet) -> Callable[[Mapping[str, Any]], list[Grade]]:
    def compute_(values: Mapping[str, Any]) -> list[Grade]:
        return [grade(ex, i, values[ex.key]) for i, ex in enumerate(s.exercises, 1)]

    return compute_


def _set_view(grades: list[Grade], values: Mapping[str, Any]) -> View:
    right = sum(g.verdict == "right" for g in grades)
    answered = sum(g.verdict != "unanswered" for g in grades)
    head = (f"{right} of {len(grades)} right." if answered else
            f"Type your answers in the boxes ({len(grades)} questions); each is graded as you type.")
    return View(text="\n".join([head, *(g.message for g in grades)]))


def _calc(s: ExerciseSet) -> Calc:
    controls = tuple(Control(ex.key, f"Q{i} ({ex.unit})", "number", 0.0, help=ex.question)
                     for i, ex in enumerate(s.exercises, 1))
    return register(Calc(key=f"exercises.{s.area}", widget=f"{s.area.capitalize()}Exercises", title=s.title,
                         controls=controls,
                         compute=_set_compute(s), view=_set_view,
                         notes=ROUNDING_NOTE))


#: What the reader is told about accepted answers (shown under every set, in Jupyter and on the site).
ROUNDING_NOTE = (f"Answers are computed by mlcalc; 0 means not answered yet. Counts must be exact; other answers "
                 f"are right within the tolerance each question states or when "
                 f"rounded to {SIG_FIGS} significant figures or more (19.53 answered as 20), unless that rounding "
                 f"is also what a known slip gives: then give more figures.")


def questions_table(s: ExerciseSet) -> Table:
    """The questions of a set, numbered, with the unit each answer is given in."""
    return Table(("Q", "question", "answer in", "accepted"),
                 tuple((f"Q{i}", ex.question, ex.unit, ex.accepted()) for i, ex in enumerate(s.exercises, 1)))


# --------------------------------------------------------------------------- the sets

_H100, _H200, _A100 = "H100-SXM", "H200-SXM", "A100-80GB"
_DAY_S = 86_400.0
_HOUR_S = 3_600.0


def _gpus(n_params: float, acc: str, mode: str, bytes_per_param: float | None = None,
          headroom: float = 1.25) -> memory.GpuEstimate:
    return memory.gpus_needed(n_params, spec(acc).memory_bytes, mode=mode, bytes_per_param=bytes_per_param,
                              headroom=headroom)


START = ExerciseSet(
    area="start",
    title="Self-check: how many GPUs",
    chapters=("notebooks/start/how-many-gpus",),
    exercises=(
        Exercise(
            "q1",
            f"How many H200s (sold as {spec(_H200).memory_gb:g} GB; {spec(_H200).memory_bytes / 1e9:.1f}e9 bytes as "
            "measured) does an 80B-parameter model need to train, at 18 bytes per parameter and a headroom of 1.25?",
            "GPUs",
            lambda: _gpus(80e9, _H200, "train").n_gpus,
            lambda: (f"80e9 x 18 bytes x 1.25 / {spec(_H200).memory_bytes / 1e9:.1f}e9 bytes = "
                     f"{_gpus(80e9, _H200, 'train').exact:.2f}, rounded up."),
            "multiply parameters by bytes per parameter and by the headroom, divide by one GPU's memory, round up.",
            rel_tol=0,
            mistakes=(
                Mistake(lambda: math.floor(_gpus(80e9, _H200, "train").exact),
                        "a fraction of a GPU still takes a whole GPU: round the ratio up."),
                Mistake(lambda: _gpus(80e9, _H200, "train", headroom=1.0).n_gpus,
                        "the 1.25 headroom for activations and buffers is missing."),
            ),
        ),
        Exercise(
            "q2",
            f"With 8-bit weights (1 byte per parameter) and the same 1.25 headroom, how many H100s (sold as "
            f"{spec(_H100).memory_gb:g} GB; {spec(_H100).memory_bytes / 1e9:.1f}e9 bytes as measured) does it take to "
            "serve a 405B model?",
            "GPUs",
            lambda: _gpus(405e9, _H100, "inference", 1.0).n_gpus,
            lambda: (f"405e9 x 1 byte x 1.25 / {spec(_H100).memory_bytes / 1e9:.1f}e9 bytes = "
                     f"{_gpus(405e9, _H100, 'inference', 1.0).exact:.2f}, rounded up; in practice one node of 8."),
            "serving needs only the weights (1 byte each here) times the headroom; divide by one GPU's bytes and "
            "round up.",
            rel_tol=0,
            mistakes=(
                Mistake(lambda: _gpus(405e9, _H100, "inference", 2.0).n_gpus,
                        "8-bit weights take 1 byte per parameter, not 2 (that is bf16)."),
                Mistake(lambda: math.floor(_gpus(405e9, _H100, "inference", 1.0).exact),
                        "a fraction of a GPU still takes a whole GPU: round the ratio up."),
            ),
        ),
    ),
)


def _days_70b(peak: float, flops_per_param_token: float = 6.0, mfu: float = 0.4) -> float:
    flops = compute.training_flops(70e9, 2e12) * flops_per_param_token / compute.FLOPS_PER_PARAM_TOKEN
    return compute.training_time_s(flops, 2048, peak, mfu) / _DAY_S


def _mfu_13b(flops_per_param_token: float = 6.0) -> float:
    return compute.mfu(flops_per_param_token * 13e9 * 4e6, 20.0, peak_flops(_A100, "bf16"), 256)


def _ridge(acc: str, dtype: str = "bf16") -> float:
    return compute.ridge_intensity(peak_flops(acc, dtype), spec(acc).memory_bandwidth_tbps * 1e12)


ACCELERATORS = ExerciseSet(
    area="accelerators",
    title="Self-check: accelerators, FLOPs and time",
    chapters=("notebooks/accelerators/catalogue", "notebooks/accelerators/training-cost",
              "notebooks/accelerators/roofline"),
    exercises=(
        Exercise(
            "q1",
            "A 70B model is trained on 2 trillion tokens on 2,048 H100s at 40% MFU (of the dense bf16 peak). "
            "How many days does it take?",
            "days",
            lambda: _days_70b(peak_flops(_H100, "bf16")),
            lambda: (f"6 x 70e9 x 2e12 = {compute.training_flops(70e9, 2e12):.3g} FLOP, divided by "
                     f"2,048 x {peak_flops(_H100, 'bf16') / 1e12:,.1f} TFLOPS x 0.4."),
            "total FLOP = 6 x parameters x tokens; divide by GPUs x dense peak x MFU, then by 86,400 s per day.",
            rel_tol=0.03,
            mistakes=(
                Mistake(lambda: _days_70b(2 * peak_flops(_H100, "bf16")),
                        "that uses the sparse peak, twice the dense one: MFU is counted against dense TFLOPS."),
                Mistake(lambda: _days_70b(peak_flops(_H100, "bf16"), 2.0),
                        "training costs 6 FLOP per parameter per token (forward 2, backward 4), not 2."),
                Mistake(lambda: _days_70b(peak_flops(_H100, "bf16"), mfu=1.0),
                        "at 40% MFU the GPUs deliver 0.4 of their peak: divide by 0.4 too."),
                Mistake(lambda: _days_70b(peak_flops(_H100, "bf16")) * 24,
                        "that is in hours: divide by 24."),
            ),
        ),
        Exercise(
            "q2",
            "What is the H100 SXM's ridge point in bf16: how many FLOP per byte read from memory must a kernel do "
            "before compute, not memory bandwidth, limits it?",
            "FLOP/byte",
            lambda: _ridge(_H100),
            lambda: (f"{peak_flops(_H100, 'bf16') / 1e12:,.1f} TFLOPS / {spec(_H100).memory_bandwidth_tbps:g} TB/s "
                     f"= {_ridge(_H100):,.0f} FLOP per byte."),
            "divide the dense bf16 peak (FLOP/s) by the memory bandwidth (bytes/s).",
            mistakes=(
                Mistake(lambda: _ridge(_H100, "fp8"),
                        "that uses twice the dense bf16 peak (the sparse or the fp8 figure)."),
            ),
        ),
        Exercise(
            "q3",
            "A step of a 13B model processes 4 million tokens in 20 s on 256 A100s. What is its MFU, in percent?",
            "%",
            lambda: 100 * _mfu_13b(),
            lambda: (f"6 x 13e9 x 4e6 / (20 s x 256) = {6 * 13e9 * 4e6 / 20 / 256 / 1e12:.1f} TFLOPS per GPU, "
                     f"of {peak_flops(_A100, 'bf16') / 1e12:g} dense bf16."),
            "model FLOP per step (6 x parameters x tokens) / step time / GPUs, over one A100's dense bf16 peak.",
            mistakes=(
                Mistake(lambda: 100 * _mfu_13b(8.0),
                        "8 FLOP per parameter per token counts the recomputed forward: that is HFU, not MFU."),
                Mistake(lambda: _mfu_13b(), "give it in percent (0.2 is 20%)."),
            ),
        ),
    ),
)


def _llama3_8b_states_gb(bytes_per_param: float | None = None, unit: float = 1e9) -> float:
    b = sum(memory.training_bytes_per_param("bekman").values()) if bytes_per_param is None else bytes_per_param
    return memory.model_preset("Llama-3 8B").n_params() * b / unit


def _kv_kib(kv_heads: int = 8, unit: float = 1024.0, kv: int = 2) -> float:
    m = memory.model_preset("Llama-3 8B")
    heads = m.n_kv_heads if kv_heads == 8 else m.n_heads
    return memory.kv_cache_bytes_per_token(m.n_layers, heads, m.head_dim, memory.dtype_bytes("bf16")) * kv / 2 / unit


MEMORY = ExerciseSet(
    area="memory",
    title="Self-check: what fills GPU memory",
    chapters=("notebooks/memory/bytes-per-parameter", "notebooks/memory/serving"),
    exercises=(
        Exercise(
            "q1",
            "How many GB (1e9 bytes) of model states does Llama-3 8B need to train under Bekman's convention "
            "of 18 bytes per parameter?",
            "GB",
            _llama3_8b_states_gb,
            lambda: (f"{memory.model_preset('Llama-3 8B').n_params() / 1e9:.2f}e9 parameters x 18 bytes: more than "
                     "one 80 GB GPU holds."),
            "parameters (from the model's shape, about 8.03e9) times 18 bytes, in units of 1e9 bytes.",
            mistakes=(
                Mistake(lambda: _llama3_8b_states_gb(unit=2.0**30),
                        "that is GiB (2^30 bytes); the question asks GB (1e9 bytes)."),
                Mistake(lambda: _llama3_8b_states_gb(16.0),
                        "16 bytes per parameter is ZeRO's count; Bekman's convention is 18."),
            ),
        ),
        Exercise(
            "q2",
            "How many KiB of KV cache does one token of Llama-3 8B take in bf16 (32 layers, 8 KV heads of "
            "dimension 128)?",
            "KiB",
            _kv_kib,
            lambda: (f"2 (K and V) x 32 layers x 8 KV heads x 128 x 2 bytes = {_kv_kib() * 1024:,.0f} bytes "
                     f"= {_kv_kib():g} KiB."),
            "2 (K and V) x layers x KV heads x head dimension x bytes per value, over 1,024 bytes per KiB.",
            rel_tol=0.01,
            mistakes=(
                Mistake(lambda: _kv_kib(kv_heads=32),
                        "Llama-3 uses grouped-query attention: only its 8 KV heads are cached, not the 32 query heads."),
                Mistake(lambda: _kv_kib(kv=1), "count both the keys and the values (x 2)."),
                Mistake(lambda: _kv_kib(unit=1000.0), "that is kB (1,000 bytes); the question asks KiB (1,024 bytes)."),
            ),
        ),
    ),
)


def _nvlink_quoted() -> float:
    """The A100's NVLink as NVIDIA quotes it (both directions), GB/s."""
    a100 = network.link("NVLink3-A100")
    return network.to_bytes_per_s(a100.bandwidth, a100.unit) / 1e9


def _nvlink_ms(direction: str = "bidirectional") -> float:
    a100 = network.link("NVLink3-A100")
    return 1e9 / network.one_direction(network.to_bytes_per_s(a100.bandwidth, a100.unit), direction) * 1e3


def _busbw_allgather(collective: str = "all_gather") -> float:
    return network.algbw_to_busbw(2e9 / 5e-3, collective, 8) / 1e9


def _per_gpu_gbs(efficiency: float = network.BEKMAN_EFFICIENCY, bits: bool = False) -> float:
    per_gpu = network.gbps_to_bytes_per_s(3200) / 8
    gbs = network.expected_bytes_per_s(per_gpu, efficiency) / 1e9
    return gbs * network.BITS_PER_BYTE if bits else gbs


NETWORK = ExerciseSet(
    area="network",
    title="Self-check: bandwidth, directions and collectives",
    chapters=("notebooks/network/units-and-generations", "notebooks/network/collectives"),
    exercises=(
        Exercise(
            "q1",
            f"An A100's NVLink is quoted as {_nvlink_quoted():g} GB/s. At best, how many milliseconds does it take to "
            "send 1 GB from one A100 to another?",
            "ms",
            _nvlink_ms,
            lambda: (f"{_nvlink_quoted():g} GB/s counts both directions: one carries "
                     f"{network.link('NVLink3-A100').bytes_per_s / 1e9:g} GB/s, and 1 GB takes {_nvlink_ms():.2f} ms."),
            "is the quoted figure one direction or both? Only one direction carries the data.",
            mistakes=(
                Mistake(lambda: _nvlink_ms("per direction"),
                        f"{_nvlink_quoted():g} GB/s adds both directions of the link: one direction carries half."),
            ),
        ),
        Exercise(
            "q2",
            "An all-gather over 8 GPUs with a 2 GB output buffer took 5 ms. What bus bandwidth (busbw) does "
            "nccl-tests report, in GB/s?",
            "GB/s",
            _busbw_allgather,
            lambda: f"algbw = 2 GB / 5 ms = 400 GB/s; busbw = algbw x (n-1)/n = {_busbw_allgather():.0f} GB/s.",
            "busbw = algbw x the collective's factor; for an all-gather it is (n-1)/n.",
            mistakes=(
                Mistake(lambda: 2e9 / 5e-3 / 1e9,
                        "that is algbw (size / time); busbw multiplies it by (n-1)/n for an all-gather."),
                Mistake(lambda: _busbw_allgather("all_reduce"), "2(n-1)/n is the all-reduce's factor, not the all-gather's."),
            ),
        ),
        Exercise(
            "q3",
            "A cloud node advertises 3,200 Gb/s of network for its 8 GPUs. Planning with 80% of the advertised "
            "speed, how many GB/s per GPU, one direction, do you get?",
            "GB/s",
            _per_gpu_gbs,
            lambda: f"3,200 Gb/s / 8 bits = 400 GB/s per node, 50 per GPU, x 0.8 = {_per_gpu_gbs():g} GB/s.",
            "Gb/s are bits per second: divide by 8 for bytes, by 8 GPUs, then take 80%.",
            mistakes=(
                Mistake(lambda: _per_gpu_gbs(efficiency=1.0), "plan with 80% of the advertised speed, not all of it."),
                Mistake(lambda: _per_gpu_gbs(bits=True), "Gb/s are gigabits: divide by 8 for gigabytes."),
            ),
        ),
    ),
)


def _ckpt_tb(contents: str = "full: bf16 + fp32 weights + Adam", unit: float = 1e12) -> float:
    return storage.checkpoint_size(70e9, contents).total_bytes / unit


def _young_min(n_gpus: int = 1024, factor: float = 2.0) -> float:
    mtbf = storage.system_mtbf_s(50_000 * _HOUR_S, n_gpus)
    return storage.young_interval_s(60.0, mtbf) * math.sqrt(factor / 2.0) / 60.0


STORAGE = ExerciseSet(
    area="storage",
    title="Self-check: checkpoints",
    chapters=("notebooks/storage/checkpoints",),
    exercises=(
        Exercise(
            "q1",
            "How many TB (1e12 bytes) does a full checkpoint of a 70B model take: bf16 and fp32 weights plus "
            "Adam's two fp32 moments?",
            "TB",
            _ckpt_tb,
            lambda: (f"{storage.checkpoint_size(70e9).bytes_per_param:g} bytes per parameter "
                     f"(2 + 4 + 2 x 4) x 70e9 = {_ckpt_tb():.2f} TB."),
            "add the bytes per parameter of each part (bf16 2, fp32 4, two fp32 moments 8) and multiply by 70e9.",
            mistakes=(
                Mistake(lambda: _ckpt_tb(unit=2.0**40), "that is TiB (2^40 bytes); the question asks TB (1e12 bytes)."),
                Mistake(lambda: _ckpt_tb("weights only (bf16)"),
                        "a full checkpoint also holds the fp32 master weights and Adam's moments."),
            ),
        ),
        Exercise(
            "q2",
            "Writing a checkpoint takes 60 s. The job runs on 1,024 GPUs, each failing on average once every "
            "50,000 hours. By Young's formula, how many minutes of compute should pass between checkpoints?",
            "minutes",
            _young_min,
            lambda: (f"MTBF of the job = 50,000 h / 1,024 = {storage.system_mtbf_s(50_000 * _HOUR_S, 1024) / _HOUR_S:.1f} h; "
                     f"sqrt(2 x 60 s x MTBF) = {_young_min():.0f} min."),
            "the job's MTBF is one GPU's divided by the GPUs; Young's interval is sqrt(2 x checkpoint time x MTBF).",
            mistakes=(
                Mistake(lambda: _young_min(n_gpus=1),
                        "the job stops when any of its 1,024 GPUs fails: its MTBF is one GPU's divided by 1,024."),
                Mistake(lambda: _young_min(factor=1.0), "Young's interval is sqrt(2 x checkpoint time x MTBF): the 2 is missing."),
                Mistake(lambda: _young_min() * 60, "that is in seconds: divide by 60."),
            ),
        ),
    ),
)


def _busbw_nccl(size_bytes: float = 2.0**30, collective: str = "all_reduce") -> float:
    algbw = size_bytes / 4700e-6
    return network.algbw_to_busbw(algbw, collective, 8) / 1e9 if collective else algbw / 1e9


def _step_ms(rate: float) -> float:
    return 90e12 / rate * 1e3


HARDWARE = ExerciseSet(
    area="hardware",
    title="Self-check: measured numbers",
    chapters=("notebooks/hardware/measured-vs-advertised", "notebooks/hardware/your-own-numbers"),
    exercises=(
        Exercise(
            "q1",
            "nccl-tests shows 4,700 µs for an all-reduce of 1 GiB on 8 GPUs. What bus bandwidth is that, in GB/s?",
            "GB/s",
            _busbw_nccl,
            lambda: (f"algbw = 2^30 bytes / 4,700 µs = {_busbw_nccl(collective=''):.1f} GB/s; "
                     f"busbw = algbw x 2 x 7/8 = {_busbw_nccl():.1f} GB/s."),
            "algbw = size / time; an all-reduce's busbw is algbw x 2(n-1)/n.",
            mistakes=(
                Mistake(lambda: _busbw_nccl(collective=""), "that is algbw; busbw multiplies it by 2(n-1)/n = 1.75."),
                Mistake(lambda: _busbw_nccl(1e9), "1 GiB is 2^30 = 1.074e9 bytes, not 1e9."),
            ),
        ),
        Exercise(
            "q2",
            "A training step does 90 TFLOP of bf16 matmuls. How many milliseconds does it take at the sustained "
            "matmul rate measured on an H100 in the chapter?",
            "ms",
            lambda: _step_ms(measured.best_matmul_flops(_H100, "bf16", sustained=True)),
            lambda: (f"90e12 FLOP / {measured.best_matmul_flops(_H100, 'bf16', sustained=True) / 1e12:,.0f} TFLOPS "
                     f"sustained = {_step_ms(measured.best_matmul_flops(_H100, 'bf16', sustained=True)):.0f} ms."),
            "divide the FLOP by the measured sustained rate (FLOP/s), not the datasheet's.",
            mistakes=(
                Mistake(lambda: _step_ms(peak_flops(_H100, "bf16")),
                        "that is at the datasheet peak; the question asks the measured sustained rate."),
                Mistake(lambda: _step_ms(measured.best_matmul_flops(_H100, "bf16")),
                        "that is the short burst rate; over a long run the GPU sustains less."),
            ),
        ),
    ),
)

SETS: tuple[ExerciseSet, ...] = (START, ACCELERATORS, MEMORY, NETWORK, STORAGE, HARDWARE)
CALCS: dict[str, Calc] = {s.area: _calc(s) for s in SETS}


# --------------------------------------------------------------------------- the room's quiz


@dataclass(frozen=True)
class QuizQuestion:
    """A multiple-choice question of the before-and-after quiz (asked at the start and at the end)."""

    question: str  # as printed
    options: tuple[str, ...]  # A, B, C ... in this order
    answer: int  # index of the right option
    why: str  # one line for the instructor's key
    chapter: str  # the chapter that teaches it (docname)


def _h100_sparse_bf16() -> str:
    return f"{spec(_H100).sparse_tflops['bf16']:,.0f}"


def _quiz() -> tuple[QuizQuestion, ...]:
    h100 = spec(_H100)
    nic_gb = network.gbps_to_bytes_per_s(400) / 1e9
    mtbf_h, n_gpus = 50_000, 1_000  # one device's mean time between failures, hours; devices in the job
    return (
        QuizQuestion(f"A datasheet prints {_h100_sparse_bf16()} TFLOPS of bf16 for the {h100.name}. How much can "
                     "a dense matrix product reach at most?",
                     (f"{_h100_sparse_bf16()} TFLOPS", f"{h100.dense_tflops['bf16']:,.1f} TFLOPS (half of it)",
                      f"{h100.dense_tflops['bf16'] * 4:,.0f} TFLOPS"),
                     1, "datasheets print the 2:4-sparse figure; a dense product peaks at half of it.",
                     "notebooks/accelerators/catalogue"),
        QuizQuestion("Training a model with AdamW in mixed precision: about how many bytes of GPU memory does each "
                     "parameter take before activations?",
                     ("2 (its bf16 weight)", "6", "16 to 18", "about 100"),
                     2, "weights, gradients and two optimizer moments: 16 bytes (ZeRO's count) or 18 with a bf16 copy.",
                     "notebooks/memory/bytes-per-parameter"),
        QuizQuestion("When serving, which part of GPU memory grows with the number of tokens in flight?",
                     ("the weights", "the KV cache", "the optimizer states"),
                     1, "every token of every sequence keeps its keys and values for each layer.",
                     "notebooks/memory/serving"),
        QuizQuestion("A NIC is sold as 400 Gb/s. How many GB/s does it move in one direction?",
                     (f"{nic_gb * 8:g}", f"{nic_gb * 2:g}", f"{nic_gb:g}"),
                     2, "network rates are in bits per second: divide by 8.",
                     "notebooks/network/units-and-generations"),
        QuizQuestion("nccl-tests prints algbw and busbw for an all-reduce. Which one compares with a link's "
                     "bandwidth?", ("algbw", "busbw", "neither"),
                     1, "busbw corrects for the algorithm's 2(n-1)/n factor, so it compares with the hardware.",
                     "notebooks/network/collectives"),
        QuizQuestion(f"A GPU fails on average once in {mtbf_h:,} hours. A job holds {n_gpus:,} of them. About how "
                     "often does the job meet a failure?",
                     (f"every {mtbf_h:,} hours", f"every {mtbf_h / n_gpus:g} hours", f"every {mtbf_h / n_gpus / 10:g} hours"),
                     1, "failures add up: the job's MTBF is the device's divided by the number of devices.",
                     "notebooks/storage/checkpoints"),
        QuizQuestion("Decoding one token at a time at batch 1, what limits a large model's speed?",
                     ("the matrix units' FLOPS", "memory bandwidth: every weight is read for every token",
                      "the network"),
                     1, "at batch 1 each weight read does 2 FLOPs: far below the roofline's ridge.",
                     "notebooks/accelerators/roofline"),
        QuizQuestion("MFU divides which FLOPs by the hardware's peak?",
                     ("the FLOPs the model needs (no recomputation)", "every FLOP the GPU ran, recomputation included",
                      "the FLOPs of the matrix products only"),
                     0, "MFU counts the model's FLOPs; HFU counts what the hardware ran, recomputation included.",
                     "notebooks/accelerators/training-cost"),
    )


#: The quiz asked at the start and at the end of a workshop (same questions, same order).
QUIZ: tuple[QuizQuestion, ...] = _quiz()


def quiz_table(with_answers: bool = False) -> Table:
    """The quiz as a table: number, question, options (A, B, C...); with the key and why for instructors."""
    def opts(q: QuizQuestion) -> str:
        return "; ".join(f"{chr(65 + i)}. {o}" for i, o in enumerate(q.options))

    if with_answers:
        return Table(("#", "right option", "why"),
                     tuple((str(i), f"{chr(65 + q.answer)}. {q.options[q.answer]}", q.why) for i, q in enumerate(QUIZ, 1)))
    return Table(("#", "question", "options"), tuple((str(i), q.question, opts(q)) for i, q in enumerate(QUIZ, 1)))


def exercise_set(area: str) -> ExerciseSet:
    """The exercise set of ``area`` (one of the areas of ``SETS``)."""
    _check.choice("area", area, [s.area for s in SETS])
    return next(s for s in SETS if s.area == area)


__all__ = ["QUIZ", "QuizQuestion", "quiz_table", "round_sig", "ACCELERATORS", "CALCS", "HARDWARE", "MEMORY", "NETWORK", "SETS", "START", "STORAGE", "Exercise",
           "ExerciseSet", "Grade", "Mistake", "exercise_set", "grade", "questions_table"]
