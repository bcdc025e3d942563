"""Benchmarks that measure a machine, for the book's "measured" numbers.

An optional part of mlcalc: it needs PyTorch (``pip install 'mlcalc[bench]'``), and PyTorch is
imported only when a benchmark runs, so ``import mlcalc.bench`` stays cheap.

Five benchmarks, each returning (and, from the command line, writing) one JSON-ready dict that
carries the environment (device name, driver, library versions, date) and the full sweep:

* :func:`mlcalc.bench.matmul.run_matmul`: achievable matmul TFLOPS over a sweep of shapes;
* :func:`mlcalc.bench.bandwidth.run_bandwidth`: device-to-device copy and host<->device copies;
* :func:`mlcalc.bench.collectives.run_collectives`: all-reduce, all-gather and reduce-scatter
  bus bandwidth against message size through ``torch.distributed`` (launch with ``torchrun``);
* :func:`mlcalc.bench.attention.run_attention`: causal ``scaled_dot_product_attention`` forward
  and backward throughput;
* :func:`mlcalc.bench.train.run_train`: training steps of small GPT-style models (peak memory,
  step time), the ground truth for the book's predictions (:mod:`mlcalc.gpt_program`).

Nothing in mlcalc imports this package (except the deprecated ``predict`` / ``gpt`` shims kept for
``mlcalc/widgets/measured.py``); the predictions live in the core (:mod:`mlcalc.gpt_program`,
:mod:`mlcalc.steptime`, :mod:`mlcalc.memory`).

Command line::

    python -m mlcalc.bench matmul --out matmul.json
    torchrun --nproc_per_node=8 -m mlcalc.bench collectives --out coll.json

:mod:`mlcalc.measured` reads the files back into typed results.
"""

SCHEMA_VERSION = 1  # bumped when the JSON layout changes; mlcalc.measured checks it
