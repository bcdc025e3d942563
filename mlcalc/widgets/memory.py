"""Widgets for the memory calculators: ipywidgets shells over :mod:`mlcalc.calculators.memory`."""

from __future__ import annotations

from mlcalc.calculators import memory as calculators_memory
from mlcalc.widgets._base import CalcWidget
from mlcalc.widgets._shell import LinkedCalcWidget


class GpuCountWidget(LinkedCalcWidget):
    """How many GPUs do you need? Model size, accelerator, training or inference, bytes/param convention."""

    calc = calculators_memory.GPU_COUNT
    aliases = {"n_params_billion": "params"}


class BytesPerParamWidget(CalcWidget):
    """Training bytes per parameter: pick a convention and a model size, see where the bytes go."""

    calc = calculators_memory.BYTES_PER_PARAM
    aliases = {"n_params_billion": "params"}


class ZeroWidget(CalcWidget):
    """ZeRO stages 0-3: per-device model states against the data-parallel degree, with offload."""

    calc = calculators_memory.ZERO
    aliases = {"n_params_billion": "params"}


class ActivationWidget(CalcWidget):
    """Activation memory per layer and for the model (Korthikanti et al. 2023)."""

    calc = calculators_memory.ACTIVATIONS


class ServingWidget(CalcWidget):
    """Serving memory: weights by dtype plus the KV cache, devices needed, the largest batch."""

    calc = calculators_memory.SERVING
    aliases = {"context_len": "context"}


class MoeWidget(CalcWidget):
    """Mixture of experts: memory follows the total parameters, compute the active ones."""

    calc = calculators_memory.MOE


class TrainingFitWidget(CalcWidget):
    """The whole training picture: model states + activations + overhead against one device."""

    calc = calculators_memory.TRAINING_FIT
    aliases = {"zero_stage": "stage"}
    MICRO_BATCHES = calculators_memory.MICRO_BATCHES


class CpuWidget(CalcWidget):
    """Cores and host RAM for one training node: dataloader workers, loading, offload."""

    calc = calculators_memory.CPU
    aliases = {"ram_per_worker_gb": "ram_per_worker"}
