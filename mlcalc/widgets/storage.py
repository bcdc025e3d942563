"""Widgets for the storage calculators: ipywidgets shells over :mod:`mlcalc.calculators.storage`."""

from __future__ import annotations

from mlcalc.calculators import storage as calculators_storage
from mlcalc.widgets._base import CalcWidget
from mlcalc.widgets._shell import LinkedCalcWidget


class DataloaderWidget(LinkedCalcWidget):
    """Input bandwidth a node needs (Ibrahim et al. 2021): sample size, FLOPs per sample, achieved FLOP/s."""

    calc = calculators_storage.DATALOADER
    aliases = {"achieved_tflops": "tflops", "accelerators_per_node": "per_node"}


class LlmDataloaderWidget(CalcWidget):
    """Input bandwidth of language-model training: tokens per second x bytes per token."""

    calc = calculators_storage.LLM_DATALOADER
    aliases = {"n_params_billion": "params", "achieved_tflops": "tflops"}


class CheckpointWidget(CalcWidget):
    """Checkpoint size from the parameter count and what is saved, and the time to write it."""

    calc = calculators_storage.CHECKPOINT
    aliases = {"n_params_billion": "params", "n_nodes": "nodes", "filesystem_gb_per_s": "fs",
               "node_gbit_per_s": "node"}


class CheckpointIntervalWidget(CalcWidget):
    """How often to checkpoint: failure rate from the GPU count, Young/Daly interval, goodput."""

    calc = calculators_storage.CHECKPOINT_INTERVAL
    aliases = {"device_mtbf_years": "mtbf", "checkpoint_s": "ckpt", "restart_min": "restart",
               "interval_h": "interval"}


class CapacityWidget(CalcWidget):
    """Storage to buy: datasets + retained checkpoints + the rest, over the usable fraction."""

    calc = calculators_storage.CAPACITY
    aliases = {"dataset_tb": "dataset", "checkpoint_tb": "ckpt", "checkpoints_kept": "kept", "other_tb": "other",
               "usable_fraction": "usable"}


class StartupWidget(CalcWidget):
    """Start-up time of N nodes importing M files from a shared filesystem."""

    calc = calculators_storage.STARTUP
    aliases = {"n_nodes": "nodes", "processes_per_node": "procs", "n_files": "files", "ops_per_file": "ops",
               "metadata_kops": "kops", "op_latency_ms": "latency"}
