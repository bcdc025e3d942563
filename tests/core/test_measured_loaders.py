"""The loaders of mlcalc.measured are total and linear.

Every malformed file gives one ValueError naming the file and what is wrong, in time linear in its size;
valid files from the real tools load (mamf-finder with every dtype it prints, nccl-tests of every
collective, this tool's JSON with a byte-order mark).
"""

from __future__ import annotations

import copy
import json
import time

import pytest

from mlcalc import measured

# The bundled matmul run, as a valid document to break in one place at a time.
GOOD = json.loads((measured._measured_dir() / "h100-2026-11-26" / "matmul.json").read_text())
COLL = json.loads((measured._measured_dir() / "h200x2-2026-11-26" / "collectives.json").read_text())
BW = json.loads((measured._measured_dir() / "h100-2026-11-26" / "bandwidth.json").read_text())
TRAIN = json.loads((measured._measured_dir() / "h100-2026-11-26" / "train.json").read_text())


def _broken(doc, path, value):
    d = copy.deepcopy(doc)
    *head, last = path
    target = d
    for key in head:
        target = target[key]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return d


NESTED = "[" * 100_000 + "]" * 100_000

BAD_FILES = [
    ("empty", b"", "empty"),
    ("only blank lines", b"\n \n\t\n", "empty"),
    ("binary", bytes(range(256)) * 4, "binary"),
    ("not UTF-8", "caf\u00e9 busbw".encode("latin-1"), "UTF-8"),
    ("truncated JSON", json.dumps(GOOD).encode()[:500], "not valid JSON"),
    ("deep nesting", NESTED.encode(), "nested deeper"),
    ("a list at the top", b"[1, 2, 3]", "not an mlcalc.bench result"),
    ("NaN in JSON", json.dumps(_broken(GOOD, ["results", "bf16", "best", "tflops_burst"], float("nan"))).encode(),
     "NaN"),
    ("missing key", json.dumps(_broken(GOOD, ["results", "bf16", "best"], KeyError)).encode(), "'best' is missing"),
    ("list where an object belongs", json.dumps(_broken(GOOD, ["results", "bf16"], [1, 2])).encode(),
     "must be an object"),
    ("null TFLOPS", json.dumps(_broken(GOOD, ["results", "bf16", "best", "tflops_burst"], None)).encode(),
     "must be a number"),
    ("negative TFLOPS", json.dumps(_broken(GOOD, ["results", "bf16", "sweep", 0, "tflops_median"], -5)).encode(),
     "tflops_median=-5"),
    ("empty sweep", json.dumps(_broken(GOOD, ["results", "bf16", "sweep"], [])).encode(), "sweep is empty"),
    ("env a string", json.dumps(_broken(GOOD, ["env"], "x")).encode(), "env must be an object"),
    ("shape not a count", json.dumps(_broken(GOOD, ["results", "bf16", "best", "m"], 1.5)).encode(), "best.m"),
    ("unsorted collective sweep",
     json.dumps(_broken(COLL, ["results", "all_reduce", "sweep"], COLL["results"]["all_reduce"]["sweep"][::-1])).encode(),
     "sizes must increase"),
    ("negative busbw", json.dumps(_broken(COLL, ["results", "all_reduce", "sweep", 3, "busbw_gbps"], -1.0)).encode(),
     "busbw_gbps=-1.0"),
    ("world size 0", json.dumps(_broken(COLL, ["params", "world_size"], 0)).encode(), "world_size"),
    ("bandwidth gbps text", json.dumps(_broken(BW, ["results", "d2d", "sweep", 0, "gbps"], "fast")).encode(), "gbps"),
    ("train case batch null", json.dumps(_broken(TRAIN, ["results", "cases", 0, "batch"], None)).encode(), "batch"),
    ("unknown benchmark", json.dumps(_broken(GOOD, ["benchmark"], "vibes")).encode(), "benchmark"),
    ("schema 99", json.dumps(_broken(GOOD, ["schema"], 99)).encode(), "schema"),
    ("random text", b"hello world\n" * 100, "no nccl-tests data rows"),
    ("nccl-tests with NaN", b"# all_reduce_perf\n        8    2  float  sum  -1  10.0  nan  0.00  0  9.9  0.00  0.00  0\n",
     "finite"),
    ("nccl-tests out of order",
     b"# all_reduce_perf\n  1024  256  float  sum  -1  10.0  0.1  0.1  0  9.9  0.1  0.1  0\n"
     b"   512  128  float  sum  -1  10.0  0.1  0.1  0  9.9  0.1  0.1  0\n", "increasing size"),
    ("nccl-tests negative busbw", b"# all_reduce_perf\n  8  2  float  sum  -1  10.0  0.1  -3  0  9.9  0.1  0.1  0\n",
     "non-negative"),
    ("nccl-tests empty sweep", b"# all_reduce_perf  busbw\n# Avg bus bandwidth    : 0\n", "no nccl-tests data rows"),
    ("mamf-finder without a summary", b"** Dtype: torch.bfloat16\nTFLOPS @ nothing\n", "summary"),
    ("mamf-finder unknown dtype", b"** Dtype: torch.complex64\nmedian: 5.0 TFLOPS @ 8x8x8 (MxNxK)\n", "complex64"),
    ("mamf-finder zero TFLOPS", b"median: 0.0 TFLOPS @ 8x8x8 (MxNxK)\n", "above 0"),
]


@pytest.mark.parametrize("what, content, message", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_malformed_file_gives_one_clear_error(tmp_path, what, content, message):
    path = tmp_path / "result_all_reduce_perf.txt"
    path.write_bytes(content)
    t0 = time.perf_counter()
    with pytest.raises(ValueError) as err:
        measured.load(path)
    assert time.perf_counter() - t0 < 5.0  # a hang guard, not a speed target
    text = str(err.value)
    assert path.name in text or str(path) in text, f"the message does not name the file: {text}"
    assert message in text, text


def test_missing_and_huge_files(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        measured.load(tmp_path / "nope.json")
    big = tmp_path / "big.txt"
    with big.open("wb") as f:
        f.truncate(measured.MAX_FILE_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(ValueError, match="too large"):
        measured.load(big)


def test_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "matmul.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode())
    results = measured.load(path)
    assert {r.dtype for r in results} == {"bf16", "fp8"}


def _seconds(fn, text):
    # CPU seconds of this process: the parser's own work, not the time other processes (make test's other
    # workers, a shared machine) held the cores (wall time failed this test three times in one loaded run)
    t0 = time.process_time()
    with pytest.raises(ValueError):
        fn(text)
    return time.process_time() - t0


@pytest.mark.parametrize("parse", [measured.parse_mamf_log, lambda t: measured.parse_nccl_tests(t, op="all_reduce"),
                                   lambda t: measured.parse_json(t, "pasted")], ids=["mamf", "nccl", "json"])
@pytest.mark.parametrize("filler", ["\n", " \n", "1 | 2(mean) \n", "[" * 10 + "\n", " \t" * 40 + "\n"])
def test_parsers_are_linear(parse, filler):
    # The mamf-finder parser was quadratic (64 kB of blank lines took 5 s: a regex anchored with ^\s*
    # rescanned every remaining line at each line start). Time for 256 kB and 1 MB: linear means ~4x.
    small, large = filler * (2**18 // len(filler)), filler * (2**20 // len(filler))
    t_small = min(_seconds(parse, small) for _ in range(3))
    t_large = min(_seconds(parse, large) for _ in range(3))
    assert t_large < 5.0  # quadratic parsing took ~1,000 s here; the bound only has to catch that
    assert t_large < 10 * t_small + 0.05


# mamf-finder.py prints "** Dtype: {torch dtype}" (its --dtype is any torch dtype name; v4 adds the
# block-scaled mxfp8, mxfp4 and nvfp4), then the summary (ml-engineering, compute/accelerator/benchmarks).
@pytest.mark.parametrize("printed, ours", [
    ("torch.bfloat16", "bf16"), ("torch.float16", "fp16"), ("torch.float32", "fp32"),
    ("torch.float8_e4m3fn", "fp8"), ("torch.float8_e4m3fnuz", "fp8"), ("torch.float8_e5m2", "fp8"),
    ("torch.float8_e5m2fnuz", "fp8"), ("mxfp8", "fp8"), ("mxfp4", "fp4"), ("nvfp4", "fp4"),
])
def test_mamf_every_dtype(tmp_path, printed, ours):
    log = (f"\nBenchmark started on 2026-11-26 02:00:00\n\n** Dtype: {printed}\n\n** Platform/Device info:\n"
           "- _CudaDeviceProperties(name='NVIDIA H100 80GB HBM3', major=9, minor=0, total_memory=81008MB)\n\n"
           "     1 |  756.1(mean)  758.2(median)  762.3(max) @ 8192x4096x4096        | best:  756.1(mean)\r"
           "     2 |  701.0(mean)  702.0(median)  703.0(max) @ 4096x4096x4096        | best:  756.1(mean)\r\n"
           "\nTried 2 shapes => the best outcomes were:\n"
           "mean:   756.1 TFLOPS @ 8192x4096x4096 (MxNxK)\n"
           "median: 758.2 TFLOPS @ 8192x4096x4096 (MxNxK)\n"
           "max:    762.3 TFLOPS @ 8192x4096x4096 (MxNxK)\n")
    path = tmp_path / "mamf.txt"
    path.write_text(log)
    [r] = measured.load(path)
    assert (r.dtype, r.best_tflops, r.best_shape, len(r.sweep)) == (ours, 758.2, (8192, 4096, 4096), 2)
    assert r.info.accelerator == "H100-SXM"


# nccl-tests prints one table layout for every *_perf program (README "Performance"): size count type
# redop root, then time algbw busbw #wrong out of place and in place; older versions drop root, and
# older all_gather / alltoall / sendrecv also redop.
@pytest.mark.parametrize("program", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall",
                                     "sendrecv", "gather", "scatter", "hypercube"])
@pytest.mark.parametrize("columns", ["redop root", "redop", ""])
def test_nccl_tests_every_collective(tmp_path, program, columns):
    extra = {"redop root": "  none  -1", "redop": "  none", "": ""}[columns]
    text = (f"# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20\n"
            "# Using devices\n"
            "#  Rank  0 Group  0 Pid  1 on  node-1 device  0 [0x18] NVIDIA H100 80GB HBM3\n"
            "#  Rank  1 Group  0 Pid  2 on  node-1 device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
            f"#       size   count   type {columns}   time   algbw   busbw #wrong   time   algbw   busbw #wrong\n"
            f"           8       2  float{extra}   10.00    0.00    0.00      0    9.90    0.00    0.00    N/A\n"
            f"        1024     256  float{extra}   20.00    0.05    0.05      0   19.00    0.05    0.05    N/A\n"
            "# Avg bus bandwidth    : 0.025\n")
    path = tmp_path / f"{program}_perf.txt"
    path.write_text(text)
    [c] = measured.load(path)
    assert (c.op, c.n_ranks, c.sizes_bytes, c.busbw_gbps) == (program, 2, (8, 1024), (0.0, 0.05))
    assert c.time_s == pytest.approx((10e-6, 20e-6))


def test_matmul_rate_near_takes_any_results():
    # The natural call, with every bundled result (copies and collectives among them), works.
    rate = measured.matmul_rate_near(measured.bundled(), 8192, 8192, 8192)
    assert rate == measured.matmul_rate_near([r for r in measured.bundled() if isinstance(r, measured.MatmulResult)],
                                             8192, 8192, 8192)
    with pytest.raises(ValueError, match="no matmul result"):
        measured.matmul_rate_near(measured.run("h200x2-2026-11-26-collectives2"), 8, 8, 8)


def test_results_built_by_hand_validate_themselves():
    info = measured.RunInfo("x", "x", "x", "")
    with pytest.raises(ValueError, match="sizes must increase"):
        measured.BusbwCurve(info, "all_reduce", 2, (8, 4), (1.0, 1.0), (1.0, 1.0), (1.0, 1.0))
    with pytest.raises(ValueError, match="busbw_gbps"):
        measured.BusbwCurve(info, "all_reduce", 2, (4, 8), (1.0, float("nan")), (1.0, 1.0), (1.0, 1.0))
    with pytest.raises(ValueError, match="tflops"):
        measured.MatmulShape(8, 8, 8, -1.0)
    with pytest.raises(ValueError, match="kind"):
        measured.CopyResult(info, "sideways", (1,), (1.0,))


@pytest.mark.parametrize("parse, text, field", [
    (lambda t: measured.parse_nccl_tests(t, op="all_reduce", label="pasted"),
     "  " + "9" * 5000 + " 256 float sum -1 1.0 1 1 0 1 1 1 0\n", "size"),
    (lambda t: measured.parse_nccl_tests(t, op="all_reduce", label="pasted"),
     "  1024 256 float sum -1 " + "9" * 5000 + " 1 1 0 1 1 1 0\n", "time"),
    (lambda t: measured.parse_mamf_log(t, label="pasted"), "log\nmedian: 100 TFLOPS @ 1" + "0" * 5000 + "x1x1\n", "shape"),
    (lambda t: measured.parse_mamf_log(t, label="pasted"), "log\nmedian: 1" + "0" * 400 + " TFLOPS @ 8x8x8\n", "TFLOPS"),
])
def test_a_paste_error_names_the_line_and_the_field(parse, text, field):
    """A 5,000-digit number in a paste: the line and the field, shortened (not Python's own digit-limit message)."""
    with pytest.raises(ValueError) as err:
        parse(text)
    message = str(err.value)
    assert "pasted: line " in message and field in message and len(message) < 300, message
    assert "int_max_str_digits" not in message


def _depth_by_characters(text: str, limit: int) -> bool:
    """The depth check as a plain scan of every character (what measured._json_depth_over does faster)."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def test_json_depth_check_reads_as_a_character_scan():
    import random

    rng = random.Random(21)
    cases = ['"[[[["', '["\\"[[["]', '"\\\\"[[', "[[[", '"abc\\', '{"a": [{"b": "[[["}]}', "]]][[["]
    cases += ["".join(rng.choice('[]{}"\\ a\n') for _ in range(rng.randint(0, 40))) for _ in range(20000)]
    over = 0
    for text in cases:
        for limit in (0, 1, 2, 3, 5):
            assert measured._json_depth_over(text, limit) == _depth_by_characters(text, limit), (text, limit)
            over += _depth_by_characters(text, limit)
    assert over > 1000  # both answers occur
    assert measured._json_depth_over("[" * 33 + "]" * 33, 32) and not measured._json_depth_over("[" * 32 + "]" * 32, 32)


def test_bundled_files_skipped_unparsed_are_other_tools_files():
    # _bundled_file leaves a file unparsed when no string of it can read "mlcalc.bench": every bundled file is
    # parsed in full here, and what it gives is what the full parse gives.
    for name in measured.runs():
        folder = measured._measured_dir().joinpath(name)
        for f in folder.iterdir():
            if not f.name.endswith(".json"):
                continue
            data = measured.parse_json(f.read_text(encoding="utf-8-sig"), f.name)
            ours = isinstance(data, dict) and data.get("tool") == "mlcalc.bench"
            got = measured._bundled_file(name, f)
            assert got == (measured.from_bench(data, f"{name}/{f.name}") if ours else []), f"{name}/{f.name}"
