"""Print a short summary of the JSON results in a folder (the last thing a GPU run prints)."""

import json
import sys
from pathlib import Path


def main(folder: str) -> None:
    d = Path(folder)
    if (f := d / "matmul.json").exists():
        r = json.loads(f.read_text())
        print("device:", r["env"].get("device_name"), "driver", r["env"].get("driver"), "torch", r["env"]["torch"])
        for dt, v in r["results"].items():
            if "skipped" in v:
                print(f"matmul {dt}: skipped ({v['skipped']})")
                continue
            b, ref = v["best"], v["reference"]
            bs = v.get("best_sustained", b)
            if "tflops_burst" in b:
                print(f"matmul {dt}: best burst {b['tflops_burst']:.1f} TFLOPS @ {b['m']}x{b['n']}x{b['k']};"
                      f" best sustained {bs['tflops_sustained']:.1f} @ {bs['m']}x{bs['n']}x{bs['k']};"
                      f" 8192^3 burst {ref['tflops_burst']:.1f} sustained {ref['tflops_sustained']:.1f}")
            else:
                print(f"matmul {dt}: best {b['tflops_median']:.1f} TFLOPS @ {b['m']}x{b['n']}x{b['k']};"
                      f" 8192^3 {ref['tflops_median']:.1f}")
    if (f := d / "matmul_train_shapes.json").exists():
        r = json.loads(f.read_text())["results"]["bf16"]
        rows = sorted(r["sweep"], key=lambda x: x["tflops_median"])
        print(f"train-shape matmuls: {len(rows)} shapes, {rows[0]['tflops_median']:.0f} to {rows[-1]['tflops_median']:.0f} TFLOPS")
    if (f := d / "attention.json").exists():
        for c in json.loads(f.read_text())["results"]["cases"]:
            print(f"sdpa b={c['batch']} a={c['heads']} s={c['seq_len']}: fwd {c['fwd_tflops']:.0f}, fwd+bwd {c['fwd_bwd_tflops']:.0f} TFLOPS")
    if (f := d / "bandwidth.json").exists():
        r = json.loads(f.read_text())["results"]
        for k, v in r.items():
            if "peak" in v:
                extra = f" ({v['peak']['gbps_rw']:.0f} GB/s read+write)" if "gbps_rw" in v["peak"] else ""
                print(f"copy {k}: {v['peak']['gbps']:.1f} GB/s @ {v['peak']['bytes'] / 2**20:.0f} MiB{extra}")
    if (f := d / "collectives.json").exists():
        r = json.loads(f.read_text())
        for op, v in r["results"].items():
            ok = all(x["correct"] for x in v["sweep"])
            print(f"{op} x{r['env']['world_size']}: peak busbw {v['peak_busbw_gbps']:.1f} GB/s, correct={ok}")
    if (f := d / "train.json").exists():
        r = json.loads(f.read_text())
        for c in r["results"]["cases"]:
            head = f"{c['model']:10s} b={c['batch']:2d} s={c['seq_len']:4d} rc={int(c['recompute'])}"
            if c.get("oom"):
                print(head, "OOM")
            else:
                print(head, f"{c['step_s'] * 1e3:8.1f} ms  peak {c.get('peak_bytes', 0) / 2**30:6.2f} GiB"
                      f"  {c['model_tflops_6nd']:.0f} TFLOPS(6ND)")


if __name__ == "__main__":
    main(sys.argv[1])
