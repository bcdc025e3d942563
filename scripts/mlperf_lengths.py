"""Write mlcalc/data/mlperf_lengths.json: the token lengths of the MLPerf Inference LLM datasets, summarised.

The per-sample lengths come from openshift-psap/performance-dashboard (Red Hat's PSAP team's dashboard), whose
mlperf-data/summaries/*.csv hold one row per sample (input_length,output_length), extracted from MLCommons' dataset
files by its mlperf-data/original/generate_dataset_summaries.py. This script reads those CSVs from a local clone at
the commits named below (``git show <commit>:<path>``) and stores, per dataset, the sample count, the sums, means,
quantiles and the exact frequency table of each length (one entry per distinct length: at most the dataset's
length cap of entries, against 8,313-24,576 rows), so the means can be recomputed from the committed file.

    python scripts/mlperf_lengths.py /path/to/performance-dashboard        # writes the JSON
    python scripts/mlperf_lengths.py /path/to/performance-dashboard --check  # compares with the committed JSON
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import pathlib
import subprocess
import sys

REPO = "openshift-psap/performance-dashboard"
SCRIPT = "mlperf-data/original/generate_dataset_summaries.py"
OUT = pathlib.Path(__file__).resolve().parent.parent / "mlcalc" / "data" / "mlperf_lengths.json"

# benchmark key (as mlcalc/data/mlperf_inference.json names it) -> where its CSV is and what its columns are, as
# generate_dataset_summaries.py (at the commit given) builds them
DATASETS = {
    "llama2-70b": {
        "commit": "7cd1065d1e2c53ee745cbda08e2a8f13a42c93bb",
        "path": "mlperf-data/summaries/llama2-70b-99.csv",
        "extracted_from": "MLCommons open_orca_gpt4_tokenized_llama.sampled_24576.pkl.gz (the Llama 2 70B "
                          "benchmark's dataset), a pandas DataFrame: input_length = its column tok_input_length, "
                          "output_length = tok_output_length (process_llama2_70b)",
        "input_is": "the tokenized prompt the benchmark sends (tok_input, Llama 2 tokenizer: the system prompt and "
                    "the question; NVIDIA's harness pads tok_input to its input_ids and tok_input_length to its "
                    "input_lens)",
        "output_is": "the length of the dataset's reference answer (OpenOrca's GPT-4 response, Llama 2 tokens), not of "
                     "what Llama 2 70B generates: the benchmark's reference run generates 294.45 tokens a sample "
                     "(language/llama2-70b/README.md); the cases take each run's output from its log",
    },
    "mixtral-8x7b": {
        "commit": "67033baeaac181a3a35641dd2b86a7cb22d856dd",
        "path": "mlperf-data/summaries/mixtral-8x7b.csv",
        "extracted_from": "MLCommons 09292024_mixtral_15k_mintoken2_v1.pkl (the Mixtral 8x7B benchmark's dataset: "
                          "5,000 OpenOrca, 5,000 GSM8K and 5,000 MBXP samples), a pandas DataFrame: input_length = "
                          "tok_input_len, output_length = tok_ref_output_len (process_mixtral_8x7b's first branch; "
                          "the output mean, 144.84, is the benchmark's published tokens per sample, which identifies "
                          "the column)",
        "input_is": "the tokenized prompt (Mixtral tokenizer) the benchmark sends",
        "output_is": "the reference output's length (Mixtral 8x7B's own generation in the reference run)",
    },
    "llama3.1-8b": {
        "commit": "7cd1065d1e2c53ee745cbda08e2a8f13a42c93bb",
        "path": "mlperf-data/summaries/llama3-1-8b-datacenter.csv",
        "extracted_from": "MLCommons cnn_eval.json (the Llama 3.1 8B datacenter benchmark's CNN/DailyMail set, 13,368 "
                          "samples): input_length = len(tok_input), output_length = len(output) // 4 "
                          "(process_llama31_8b)",
        "input_is": "the tokenized prompt (Llama 3.1 tokenizer) the benchmark sends: the summarisation instruction "
                    "and the article",
        "output_is": "an ESTIMATE, not a token count: the reference summary's characters over 4 "
                     "(generate_dataset_summaries.py: 'rough approximation: ~4 chars per token')",
    },
    "llama3.1-405b": {
        "commit": "67033baeaac181a3a35641dd2b86a7cb22d856dd",
        "path": "mlperf-data/summaries/llama3-1-405b.csv",
        "extracted_from": "MLCommons mlperf_llama3.1_405b_dataset_8313_processed_fp16_eval.pkl (the Llama 3.1 405B "
                          "benchmark's dataset, 8,313 samples), a pandas DataFrame: input_length = tok_input_len, "
                          "output_length = tok_ref_output_len (process_llama31_405b's first branch; the output mean, "
                          "684.68, is the benchmark's published tokens per sample, which identifies the column)",
        "input_is": "the tokenized prompt (Llama 3.1 tokenizer) the benchmark sends",
        "output_is": "the reference output's length (the FP16 reference run's generation)",
    },
}


def _quantile(counts: list[list[int]], n: int, q: float) -> int:
    """The smallest length with at least q of the samples at or below it (counts sorted by length)."""
    need, seen = q * n, 0
    for length, k in counts:
        seen += k
        if seen >= need:
            return length
    return counts[-1][0]


def _stats(values: list[int]) -> dict:
    table: dict[int, int] = {}
    for v in values:
        table[v] = table.get(v, 0) + 1
    counts = [[k, table[k]] for k in sorted(table)]
    n, total = len(values), sum(values)
    return {"sum": total, "mean": round(total / n, 4), "min": counts[0][0], "median": _quantile(counts, n, 0.5),
            "p90": _quantile(counts, n, 0.9), "p99": _quantile(counts, n, 0.99), "max": counts[-1][0],
            "counts": counts}


def build(clone: pathlib.Path) -> dict:
    out = {
        "about": "Token lengths of the MLPerf Inference LLM datasets (MLCommons), per dataset: the sample count, the "
                 "sum, mean, median, 90th and 99th percentiles, least and largest of the input and output lengths, "
                 "and their exact frequency tables ('counts': [length, samples] for every length that occurs). "
                 "Summarised by scripts/mlperf_lengths.py from the per-sample CSVs of "
                 f"{REPO} (mlperf-data/summaries/, each at the commit given; its {SCRIPT} extracted them from "
                 "MLCommons' dataset files as 'extracted_from' says). Read by mlcalc.mlperf (mean inputs) and its "
                 "tests; not in the site's wheel.",
        "repo": REPO,
        "script": SCRIPT,
        "datasets": {},
    }
    for key, meta in DATASETS.items():
        text = subprocess.run(["git", "-C", str(clone), "show", f"{meta['commit']}:{meta['path']}"], check=True,
                              capture_output=True, text=True).stdout
        blob = subprocess.run(["git", "-C", str(clone), "rev-parse", f"{meta['commit']}:{meta['path']}"], check=True,
                              capture_output=True, text=True).stdout.strip()
        rows = list(csv.DictReader(io.StringIO(text)))
        ins = [int(r["input_length"]) for r in rows]
        outs = [int(r["output_length"]) for r in rows]
        out["datasets"][key] = dict(meta, blob=blob, samples=len(rows), input=_stats(ins), output=_stats(outs))
    return out


def dumps(data: dict) -> str:
    """JSON with each frequency table on one line (the file stays a few hundred lines)."""
    text = json.dumps(data, indent=2)
    # fold the [length, samples] pairs, which indent=2 spreads over four lines each, onto their table's line
    lines, out, depth = text.split("\n"), [], 0
    buf: list[str] = []
    for line in lines:
        if depth == 0 and line.strip().startswith('"counts": ['):
            depth, buf = 1, [line.rstrip()]
            continue
        if depth:
            s = line.strip()
            buf.append(s)
            depth += s.count("[") - s.count("]")
            if depth == 0:
                out.append(buf[0] + "".join(x if x.startswith("]") or x.endswith("[") else x + " " if x.endswith(",")
                                            else x for x in buf[1:]).replace(", ]", "]"))
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("clone", type=pathlib.Path, help=f"a git clone of {REPO} holding the commits named")
    ap.add_argument("--check", action="store_true", help="compare with the committed JSON instead of writing it")
    args = ap.parse_args()
    text = dumps(build(args.clone))
    if args.check:
        same = OUT.read_text() == text
        print("mlperf_lengths.json matches the CSVs" if same else "mlperf_lengths.json differs from the CSVs")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(text):,} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
