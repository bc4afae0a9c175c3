"""Training engine for Hardt & Ma's all-convolutional residual network (ICLR 2017, Section 4).

The defaults are the paper's CIFAR recipe: momentum SGD (0.9) on batches of 128, learning rate 0.05 divided
by 10 at steps 30,000 and 50,000, weight decay 1e-4 on the convolution weights only, no batch norm (the model
is :class:`resnet_theory.engine.allconv.AllConvResNet`). Everything else is engineering that a reader can rely on:

- one library call, :func:`train` on a :class:`TrainConfig`, and the same thing from the shell:
  ``python -m resnet_theory.engine.train --dataset digits --steps 300 --out-dir runs/digits``;
- the data stay on the device (:class:`resnet_theory.engine.data.DeviceData`); the precision is ``precision="auto"``:
  bf16 autocast on GPUs that have bf16 (compute capability 8.0 and newer), fp16 autocast with a gradient
  scaler on older GPUs with fp16 tensor cores, float32 on the CPU (the decisions, and the device index, are
  the pure functions of :mod:`resnet_theory.engine.devices`); channels_last and fused SGD on CUDA; ``torch.compile``
  only when asked for;
- a tqdm progress bar (step, loss, images/s), metrics as JSON lines, evaluation every ``eval_every`` steps;
- checkpoints every ``checkpoint_every`` steps, written atomically (temporary file, then ``os.replace``),
  holding the model, the optimiser, the step, the history and every random state (torch CPU and CUDA, the data
  generator, numpy, Python) as plain tensors, numbers, strings and lists, read back with
  ``torch.load(weights_only=True)`` (a crafted file cannot run code). ``resume=True`` continues a killed run
  exactly: on the CPU the resumed run ends with bitwise the same weights as an uninterrupted one, and on CUDA
  too with ``deterministic=True`` (deterministic cuDNN kernels, no cuDNN autotuning;
  ``python -m resnet_theory.engine.gpu_check`` checks it);
- one run per output folder: a new run into a folder holding one is refused (pass ``resume=True`` or another
  folder), and the folder is locked while a run uses it, so a second run on it is refused at once;
- on the CPU, subnormal floats are flushed to zero while training (``flush_denormal``): the paper's small
  initialisation makes many gradients and weights subnormal, and x86 CPUs process those about ten times more
  slowly (a 100-step digits run took 97 s instead of 9.5 s when this was written);
- a NaN or diverging loss stops the run with a message naming the step, and the last good checkpoint stays;
- several processes with ``torchrun --nproc_per_node=N -m resnet_theory.engine.train ...``
  (DistributedDataParallel, also for one process started by torchrun; gloo on the CPU, NCCL on GPUs): every
  rank draws the same global batch and trains on its own slice of it, so N processes follow the same trajectory
  as one process with the same global batch.

How the data order is made resumable: each epoch's batches come from ``DeviceData.batches`` driven by one
``torch.Generator``. A checkpoint stores that generator's state at the start of the current epoch and the number
of batches already taken from it; resuming restores the state and replays (discards) those batches, then checks
that the generator has arrived at the state it had when the checkpoint was written.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import json
import math
import os
import random
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm.std import tqdm  # the plain class: tqdm.auto warns, with a path, in a kernel

from .. import validate as _validate
from ..outputs import OutputRefused, check_command_output
from . import allconv as _allconv
from . import data as _data
from . import devices as _devices
from .interval import Interval, LossAccumulator, finished_message, history_record

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX (Windows): run folders are not locked there
    fcntl = None

DATASETS = {"cifar10": 10, "cifar100": 100, "digits": 10}
CHECKPOINT_NAME = "checkpoint.pt"
PREVIOUS_CHECKPOINT_NAME = "checkpoint.prev.pt"  # the one before: the fallback when checkpoint.pt is damaged
METRICS_NAME = "metrics.jsonl"
CIFAR_HELP = {
    "cifar10": "cifar-10-binary.tar.gz (or the extracted folder cifar-10-batches-bin/)",
    "cifar100": "cifar-100-binary.tar.gz (or the extracted folder cifar-100-binary/)",
}
CIFAR_URL = "https://www.cs.toronto.edu/~kriz/cifar.html"
#: The augmentation of the TensorFlow ResNet code Hardt & Ma started from: pad to 36x36 (with black), random
#: 32x32 crop, left-right flip, then per-image standardisation (``TrainConfig(**TENSORFLOW_RECIPE, ...)``).
TENSORFLOW_RECIPE = {"augment": True, "augment_pad": 2, "augment_flip": True, "standardize": "image"}

#: Fields added to :class:`TrainConfig` after checkpoints were first written, with the value that reproduces
#: what the code did before the field existed: a checkpoint without the field is read as having that value.
#: (``standardize``: per-channel standardisation was the only kind before the TensorFlow recipe.)
#: (``precision``: "auto" is what the code did before on the CPU, float32, and on GPUs with bf16, bf16 autocast.)
FIELDS_ADDED_LATER = {"standardize": "channel", "precision": "auto", "deterministic": False, "head_rank": None}
#: Fields that may differ between a checkpoint and the run that resumes it (they do not change the numbers).
RESUMABLE_CHANGES = {
    "steps",
    "resume",
    "progress",
    "eval_every",
    "log_every",
    "checkpoint_every",
    "out_dir",
    "data_dir",
    "download",
    "device",
    "compile",
    "on_divergence",
    "eval_batch_size",
    "deterministic",
}


class ConfigError(ValueError):
    """A configuration that cannot run, with what to change."""


class ConfigTypeError(ConfigError, TypeError):
    """A setting of the wrong type (a float where an integer is meant, a string where a boolean is): a
    :class:`ConfigError` that is also a TypeError, as the library's validation rule asks."""


class OutputError(RuntimeError):
    """The output folder cannot be written (full disk, read-only, not a folder); the message names it."""


class CheckpointDamaged(ValueError):
    """A checkpoint file that does not verify (empty, truncated, not a checkpoint, checksum mismatch)."""


class TrainingDiverged(_validate.DivergenceError, RuntimeError):
    """The loss became NaN, infinite or larger than ``max_loss``; the last good checkpoint is kept."""

    def __init__(self, message: str, result: TrainResult):
        super().__init__(message)
        self.result = result


#: Fields whose ``None`` means "the default" (checked only when set).
_OPTIONAL_FIELDS = {"augment", "augment_pad", "augment_flip", "max_loss", "data_dir", "out_dir", "head_rank"}


@dataclass
class TrainConfig:
    """Everything a run depends on. The defaults are the paper's CIFAR-10 recipe (Section 4)."""

    # data
    dataset: str = "cifar10"  # "cifar10", "cifar100" (need data_dir) or "digits" (bundled, 8x8)
    data_dir: str | None = None  # folder with the official CIFAR binary archive or its extracted folder
    download: bool = False  # fetch the CIFAR archive from the authors' site (needs the internet)
    augment: bool | None = None  # pad-and-crop + flip; None: on for CIFAR, off for the 8x8 digits
    augment_pad: int | None = None  # padding before the random crop; None: 4 for CIFAR, 1 for the digits
    augment_flip: bool | None = None  # random horizontal flips; None: on for CIFAR, off (mirrored digits differ)
    standardize: str = "channel"  # "channel": training-set mean/std per channel; "image": per image (TF)
    # model (resnet_theory.engine.allconv.AllConvResNet)
    stem_channels: int = 16
    widths: tuple[int, ...] = (64, 128, 256)
    blocks_per_stage: int = 9
    kernel_size: int = 3
    init: str = "small"  # "small": the paper's N(0, 1/(k^2 c)); "standard" for the ablation
    skip: bool = True  # False: the same convolutions without the identity shortcuts
    trainable_head: bool = False  # the paper keeps the last layer fixed at random
    head_rank: int | None = None  # None: the paper's full-rank random head; r: a degenerate head of rank r
    # optimisation
    steps: int = 64_000
    batch_size: int = 128  # global batch, split evenly between processes
    lr: float = 0.05
    lr_milestones: tuple[int, ...] = (30_000, 50_000)
    lr_gamma: float = 0.1  # multiply the learning rate by this at each milestone
    momentum: float = 0.9
    weight_decay: float = 1e-4  # on convolution weights only
    max_loss: float | None = None  # stop when the mean training loss exceeds this; None: 10 ln(classes)
    on_divergence: str = "raise"  # "raise" TrainingDiverged, or "stop" and return the result
    # bookkeeping
    seed: int = 0
    eval_every: int = 1000  # test-set evaluation every this many steps (0: only at the end)
    eval_batch_size: int = 1000
    log_every: int = 50  # training-loss record and divergence check every this many steps
    checkpoint_every: int = 1000  # 0: only at the end; nothing is written without out_dir
    out_dir: str | None = None  # checkpoint.pt and metrics.jsonl go here
    resume: bool = False  # continue from out_dir/checkpoint.pt
    device: str = "auto"  # "auto" (CUDA when available), "cpu", "cuda", "cuda:1", ...
    compile: bool = False  # torch.compile the model (only when asked, also on CUDA)
    precision: str = "auto"  # "auto" (bf16 / fp16 + scaler / float32 by device), "bf16", "fp16", "float32"
    deterministic: bool = False  # CUDA: deterministic cuDNN kernels, no autotuning (bitwise resumption)
    flush_denormal: bool = True  # CPU: flush subnormal floats to zero during the run (see below)
    progress: bool = True  # tqdm progress bar

    @property
    def num_classes(self) -> int:
        return DATASETS[self.dataset]

    @property
    def uses_augmentation(self) -> bool:
        return self.dataset.startswith("cifar") if self.augment is None else bool(self.augment)

    @property
    def augmentation(self) -> tuple[bool, int, bool]:
        """(augment, pad, flip) after the dataset's defaults."""
        cifar = self.dataset.startswith("cifar")
        pad = (4 if cifar else 1) if self.augment_pad is None else self.augment_pad
        flip = cifar if self.augment_flip is None else bool(self.augment_flip)
        return self.uses_augmentation, pad, flip

    def divergence_threshold(self) -> float:
        return 10.0 * math.log(self.num_classes) if self.max_loss is None else float(self.max_loss)

    def validate(self, world_size: int = 1) -> None:
        """Raise :class:`ConfigError` naming the first setting that cannot work (:class:`ConfigTypeError`, also
        a TypeError, for a setting of the wrong type)."""
        try:
            self._check_fields()
        except TypeError as exc:
            raise ConfigTypeError(str(exc)) from None
        except ValueError as exc:
            raise (exc if isinstance(exc, ConfigError) else ConfigError(str(exc))) from None
        if self.batch_size % world_size:
            raise ConfigError(f"batch_size {self.batch_size} does not split evenly between {world_size} processes")
        if self.resume and not self.out_dir:
            raise ConfigError("resume=True needs out_dir, the folder holding checkpoint.pt")
        self._validate_more()
        if self.dataset.startswith("cifar") and not self.data_dir:
            raise ConfigError(
                f"{self.dataset} needs data_dir: put {CIFAR_HELP[self.dataset]} from {CIFAR_URL} "
                f"in a folder and pass it as data_dir (--data-dir FOLDER)"
            )

    def _check_fields(self) -> None:
        """Every field on its own, through :mod:`resnet_theory.validate` (TypeError / ValueError). Numpy
        scalars are accepted and stored as the Python numbers they stand for (the configuration goes to JSON)."""
        v = _validate

        def check(name, checker, *args, **kwargs):
            if getattr(self, name) is not None or name not in _OPTIONAL_FIELDS:
                setattr(self, name, checker(name, getattr(self, name), *args, **kwargs))

        check("dataset", v.choice, tuple(DATASETS))
        for name in (
            "steps",
            "batch_size",
            "stem_channels",
            "blocks_per_stage",
            "kernel_size",
            "eval_batch_size",
            "log_every",
            "head_rank",
        ):
            check(name, v.positive_int)
        for name in ("eval_every", "checkpoint_every", "seed", "augment_pad"):
            check(name, v.non_negative_int)
        for name in (
            "augment",
            "augment_flip",
            "download",
            "skip",
            "trainable_head",
            "resume",
            "compile",
            "flush_denormal",
            "progress",
            "deterministic",
        ):
            check(name, v.boolean)
        check("precision", v.choice, _devices.PRECISIONS)
        v.instance("widths", self.widths, (tuple, list), what="a tuple of positive integers")
        if not self.widths:
            raise ValueError(f"widths must be one or more positive integers, got {self.widths!r}")
        self.widths = tuple(v.positive_int(f"widths[{i}]", w) for i, w in enumerate(self.widths))
        if self.kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd (same padding), got {self.kernel_size}")
        if self.head_rank is not None and self.head_rank > min(self.num_classes, self.widths[-1]):
            raise ConfigError(
                f"head_rank must be at most min(classes, last width) = {min(self.num_classes, self.widths[-1])}, "
                f"got {self.head_rank}"
            )
        check("standardize", v.choice, ("channel", "image"))
        check("init", v.choice, ("small", "standard", "printed-standard"))
        check("on_divergence", v.choice, ("raise", "stop"))
        for name in ("lr", "lr_gamma", "max_loss"):
            check(name, v.positive_float)
        check("momentum", v.finite_float, minimum=0.0, maximum=1.0, open_maximum=True)
        check("weight_decay", v.non_negative_float)
        v.instance("lr_milestones", self.lr_milestones, (tuple, list), what="a tuple of step numbers")
        self.lr_milestones = tuple(v.positive_int(f"lr_milestones[{i}]", m) for i, m in enumerate(self.lr_milestones))
        v.increasing("lr_milestones", np.asarray(self.lr_milestones, dtype=np.int64))
        for name in ("data_dir", "out_dir"):
            check(name, v.path)

    def _validate_more(self) -> None:
        """The width order, the output folder and the model's memory."""
        if self.skip:
            chain = (self.stem_channels,) + tuple(self.widths)
            if any(b < a for a, b in zip(chain, chain[1:])):
                raise ConfigError(
                    f"widths must not decrease from stem_channels ({self.stem_channels}) on with "
                    f"skip connections (the shortcut pads channels with zeros), got "
                    f"{','.join(map(str, self.widths))}"
                )
        if self.out_dir is not None:
            if Path(self.out_dir).exists() and not Path(self.out_dir).is_dir():
                raise ConfigError(f"out_dir {self.out_dir} exists and is not a folder")
        side = 8 if self.dataset == "digits" else 32
        if self.augment_pad is not None and self.augment_pad > side:  # found here, not by the first batch's crop
            raise ConfigError(
                f"augment_pad must be at most {side} (the side of a {self.dataset} image: a larger pad crops "
                f"padding alone), got {self.augment_pad}"
            )
        blocks = (self.blocks_per_stage,) * len(self.widths)
        weights = _allconv.estimate_model_bytes(
            3, self.stem_channels, self.widths, blocks, self.kernel_size, self.num_classes
        )
        side = 8 if self.dataset == "digits" else 32
        # forward activations kept for the backward pass: two convolution outputs per block, float32
        activations = 4 * 2 * self.batch_size * side * side * sum(w * b for w, b in zip(self.widths, blocks))
        need = 4 * weights + activations  # weights, gradients, momentum and a copy while checkpointing
        try:
            _validate.check_budget(
                "widths/blocks_per_stage/batch_size", need, _validate.memory_limit_bytes(), value=None
            )
        except ValueError as exc:
            raise ConfigError(
                f"this model needs about {_validate.human_bytes(need)} of memory (widths "
                f"{','.join(map(str, self.widths))}, {self.blocks_per_stage} blocks per stage, "
                f"batches of {self.batch_size}), more than the "
                f"{_validate.human_bytes(_validate.memory_limit_bytes())} this machine allows; "
                f"choose smaller widths"
            ) from exc

    def checkpoint_bytes(self) -> int:
        """About how large one checkpoint is (weights and momentum, float32)."""
        blocks = (self.blocks_per_stage,) * len(self.widths)
        return 2 * _allconv.estimate_model_bytes(
            3, self.stem_channels, self.widths, blocks, self.kernel_size, self.num_classes
        )

    def to_dict(self) -> dict:
        return {
            f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in dataclasses.fields(self)
        }

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise ConfigError(f"unknown TrainConfig fields: {', '.join(unknown)}")
        return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()})


@dataclass
class TrainResult:
    """What a run produced. ``history`` holds the same records as the metrics file."""

    config: TrainConfig
    history: list[dict]
    steps_done: int
    final_test_accuracy: float
    final_test_loss: float
    final_train_loss: float
    diverged: bool
    message: str
    checkpoint_path: str | None
    wall_seconds: float
    images_per_second: float
    trainable_parameters: int
    model: nn.Module | None = field(default=None, repr=False)

    def records(self, kind: str) -> list[dict]:
        return [r for r in self.history if r["kind"] == kind]

    def curve(self, kind: str, key: str) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, values)`` of one metric, e.g. ``curve("eval", "test_accuracy")``."""
        rows = self.records(kind)
        return np.array([r["step"] for r in rows]), np.array([r[key] for r in rows], dtype=float)


# --- pieces ---------------------------------------------------------------------------------------------------
def learning_rate(config: TrainConfig, step: int) -> float:
    """The learning rate of update number ``step`` (0-based): ``lr * gamma^(milestones passed)``."""
    return config.lr * config.lr_gamma ** sum(step >= m for m in config.lr_milestones)


def build_model(config: TrainConfig, in_channels: int) -> nn.Module:
    return _allconv.AllConvResNet(
        num_classes=config.num_classes,
        in_channels=in_channels,
        stem_channels=config.stem_channels,
        widths=tuple(config.widths),
        blocks_per_stage=config.blocks_per_stage,
        init=config.init,
        skip=config.skip,
        trainable_head=config.trainable_head,
        kernel_size=config.kernel_size,
        head_rank=config.head_rank,
    )


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Weight decay on convolution weights only (the paper's only regulariser); none on anything else."""
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            (decay if isinstance(module, nn.Conv2d) and name == "weight" else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    return groups


def load_dataset(config: TrainConfig) -> dict:
    """``{"train": (uint8 images, labels), "test": ...}`` for the configured dataset, or a clear error."""
    if config.dataset == "digits":
        return _data.load_digits_images()
    try:
        return _data.load_cifar(config.data_dir, name=config.dataset, download=config.download)
    except FileNotFoundError as exc:
        raise ConfigError(
            f"no {config.dataset} data under {config.data_dir!r}: put {CIFAR_HELP[config.dataset]} "
            f"from {CIFAR_URL} there (or pass download=True with internet access). ({exc})"
        ) from exc


def random_states() -> dict:
    """Every random state a run draws from, as plain tensors, numbers, strings and lists (what
    ``torch.load(weights_only=True)`` reads back; numpy's state array is stored as an int64 tensor)."""
    name, keys, pos, has_gauss, cached = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    states = {
        "torch_cpu": torch.get_rng_state(),
        "numpy": {
            "bit_generator": str(name),
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "python": [int(version), [int(k) for k in internal], gauss_next],
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states["torch_cuda"] = list(torch.cuda.get_rng_state_all())
    return states


def set_random_states(states: dict) -> None:
    torch.set_rng_state(states["torch_cpu"])
    n = states["numpy"]
    np.random.set_state(
        (n["bit_generator"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"])
    )
    version, internal, gauss_next = states["python"]
    random.setstate((version, tuple(internal), gauss_next))
    if "torch_cuda" in states and torch.cuda.is_available():
        # one state per GPU of the machine that wrote the checkpoint; this one may have fewer
        for index, state in enumerate(states["torch_cuda"][: torch.cuda.device_count()]):
            torch.cuda.set_rng_state(state, index)


class BatchStream:
    """An endless stream of training batches, epoch after epoch, whose position can be saved and restored."""

    def __init__(self, data, batch_size: int, generator: torch.Generator, augment: bool, pad: int, flip: bool):
        self.data, self.batch_size, self.generator = data, batch_size, generator
        self.augment, self.pad, self.flip = augment, pad, flip
        if data.num_batches(batch_size) < 1:
            raise ConfigError(f"the training set ({len(data)} images) is smaller than one batch of {batch_size}")
        self.epoch, self.consumed = -1, 0
        self.epoch_start_state = generator.get_state()
        self._batches: Iterator | None = None

    def _start_epoch(self, epoch: int) -> None:
        self.epoch, self.consumed = epoch, 0
        self.epoch_start_state = self.generator.get_state()
        self._batches = self.data.batches(
            self.batch_size,
            self.generator,
            augment=self.augment,
            shuffle=True,
            drop_last=True,
            pad=self.pad,
            flip=self.flip,
        )

    def __next__(self):
        if self._batches is None:
            self._start_epoch(0)
        batch = next(self._batches, None)
        if batch is None:
            self._start_epoch(self.epoch + 1)
            batch = next(self._batches)
        self.consumed += 1
        return batch

    def state(self) -> dict:
        return {
            "epoch": self.epoch,
            "consumed": self.consumed,
            "epoch_start_state": self.epoch_start_state,
            "generator_state": self.generator.get_state(),
        }

    def restore(self, state: dict) -> None:
        """Back to a saved position: the epoch's generator state, then its first batches drawn again."""
        self.generator.set_state(state["epoch_start_state"])
        if state["epoch"] >= 0:
            self._start_epoch(state["epoch"])
            for _ in range(state["consumed"]):
                next(self._batches)
            self.consumed = state["consumed"]
        if not torch.equal(self.generator.get_state(), state["generator_state"]):
            raise RuntimeError(
                "the data stream could not be restored exactly: after replaying the current epoch "
                "the data generator is not where the checkpoint left it"
            )


@torch.no_grad()
def evaluate(
    model: nn.Module,
    test,
    batch_size: int,
    amp: bool,
    rank: int = 0,
    world_size: int = 1,
    channels_last: bool = False,
    amp_dtype: torch.dtype | None = torch.bfloat16,
) -> tuple[float, float]:
    """Mean cross-entropy and accuracy on the whole test set (each process takes every world_size-th batch);
    with ``amp``, under autocast to ``amp_dtype``."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    sums = torch.zeros(3, dtype=torch.float64, device=device)  # loss sum, correct, count
    for i, (x, y) in enumerate(test.batches(batch_size, None, augment=False, shuffle=False, drop_last=False)):
        if i % world_size != rank:
            continue
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp):
            logits = model(x).float()
        sums[0] += F.cross_entropy(logits, y, reduction="sum").double()
        sums[1] += (logits.argmax(1) == y).sum()
        sums[2] += y.numel()
    if world_size > 1:
        dist.all_reduce(sums)
    model.train(was_training)
    loss, correct, count = sums.tolist()
    return loss / count, correct / count


# A checkpoint file is MAGIC, the SHA-256 of the body, the body's length (8 bytes, little-endian), then the body
# (what torch.save writes). A file that does not verify is never unpickled, and one that verifies is read with
# torch.load(weights_only=True): tensors, numbers, strings, lists and dicts only, never arbitrary objects (the
# SHA-256 checks that the file is whole, not who wrote it). Version 2 pickled numpy's random state and was read
# with weights_only=False; such files are refused.
_MAGIC = b"resnet-theory-ckpt-v3\n"
_OLD_MAGICS = (b"resnet-theory-ckpt-v2\n",)


def _write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` and make it durable (fsync). Tests replace this to simulate a full disk."""
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _append_file(path: Path, text: str) -> None:
    """Append ``text`` to ``path``. Tests replace this to simulate a disk that fills up in the middle of a write."""
    with open(path, "a") as fh:
        fh.write(text)


def _remove_quietly(path: Path) -> None:
    """Remove a temporary file if it is there, during clean-up after a failed write: on a read-only file system
    even removing a file that does not exist fails (EROFS: the kernel checks the mount before the name), and
    that error must not replace the one being reported."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def _kept_checkpoint(path: Path) -> str:
    """What survives a failed write in ``path``'s folder, for the error message (only checkpoints that
    verify count: a folder or a damaged file in their place is no checkpoint)."""
    previous = path.with_name(PREVIOUS_CHECKPOINT_NAME)
    if _checkpoint_intact(path):
        return f"the last good checkpoint {path} is kept"
    if _checkpoint_intact(previous):
        return f"the previous checkpoint {previous} is kept"
    return "no checkpoint that verifies is kept"


@contextlib.contextmanager
def _signals_deferred():
    """SIGINT and SIGTERM held back while the block runs, then handled as they would have been: the two renames of
    a save happen both or neither, so an interrupted run always names its current checkpoint. (A signal mask would
    not do: any other thread, torch's among them, may take the signal and trip Python's handler.) Outside the main
    thread, where handlers cannot be set, the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {signum: signal.signal(signum, lambda got, frame: held.append(got)) for signum in _DEFERRED}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if held:
            handler = previous[held[0]]
            if callable(handler):
                handler(held[0], None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), held[0])


#: The signals a save's renames hold back.
_DEFERRED = (signal.SIGINT, signal.SIGTERM)


def save_checkpoint(path: Path, payload: dict) -> None:
    """Write atomically: a killed process leaves either the previous checkpoint or the new one, never half.

    The checkpoint it replaces is kept as ``checkpoint.prev.pt`` (two are kept). A write that fails (full disk,
    read-only folder) raises :class:`OutputError` naming the folder; the last good checkpoint stays.
    """
    buffer = io.BytesIO()
    torch.save(payload, buffer)  # fails before any file is touched if the payload cannot be saved
    body = buffer.getvalue()
    data = _MAGIC + hashlib.sha256(body).digest() + len(body).to_bytes(8, "little") + body
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        _write_file(tmp, data)
        with _signals_deferred():  # Ctrl-C or SIGTERM between the two renames would leave no current checkpoint
            if _checkpoint_intact(path):  # a damaged current checkpoint must not push out a good previous one
                os.replace(path, path.with_name(PREVIOUS_CHECKPOINT_NAME))
            os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(
            f"cannot write a checkpoint in {path.parent}: {_validate.describe_os_error(exc)}; {_kept_checkpoint(path)}"
        ) from exc
    finally:
        _remove_quietly(tmp)


def read_checkpoint(path: Path) -> dict:
    """The payload of a checkpoint written by :func:`save_checkpoint`, after checking its SHA-256.

    Raises :class:`CheckpointDamaged` (the reason in one line) for an empty, truncated or altered file, and for
    one whose body holds anything but tensors, numbers, strings, lists and dicts: the body is read with
    ``torch.load(weights_only=True)``, so a file crafted to run code when unpickled is refused, not run (a
    checkpoint is trusted input only as far as torch's ``weights_only`` loader makes it so).
    """
    path = Path(path)
    body = _verified_body(path)
    try:
        return torch.load(io.BytesIO(body), map_location="cpu", weights_only=True)
    except Exception as exc:  # pickle.UnpicklingError and whatever a crafted body makes the loader raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointDamaged(
            f"{path} holds objects that a checkpoint of this library never holds and is "
            f"not loaded (torch.load with weights_only=True refused it: {first[:200]})"
        ) from None


def _checkpoint_intact(path: Path) -> bool:
    """Whether ``path`` exists and passes the checks of :func:`read_checkpoint` (without unpickling it)."""
    try:
        _verified_body(path)
    except (CheckpointDamaged, OSError):
        return False
    return True


def _verified_body(path: Path) -> bytes:
    """The stored payload bytes of a checkpoint file, after its header, length and SHA-256 checks."""
    if path.exists() and not path.is_file():
        raise CheckpointDamaged(f"{path} is not a file (a folder or special file stands in its place)")
    data = path.read_bytes()
    head = len(_MAGIC) + 32 + 8
    if not data:
        raise CheckpointDamaged(f"{path} is empty")
    if data.startswith(_OLD_MAGICS):
        raise CheckpointDamaged(
            f"{path} was written by an older version of this library (format v2, whose "
            "random states could only be read by unpickling arbitrary objects); it is not "
            "loaded: start a new run, or resume it with the version that wrote it"
        )
    if not data.startswith(_MAGIC):
        raise CheckpointDamaged(f"{path} is not a checkpoint of this library (unknown header)")
    if len(data) < head:
        raise CheckpointDamaged(f"{path} is truncated ({len(data)} bytes)")
    digest, length = data[len(_MAGIC) : len(_MAGIC) + 32], int.from_bytes(data[head - 8 : head], "little")
    body = data[head:]
    if len(body) != length:
        raise CheckpointDamaged(f"{path} is truncated ({len(body)} of {length} bytes)")
    if hashlib.sha256(body).digest() != digest:
        raise CheckpointDamaged(f"{path} is damaged (its SHA-256 does not match the one stored in it)")
    return body


def clean_temporaries(out_dir: Path) -> list[Path]:
    """Remove the temporary files a killed run can leave in ``out_dir``; returns what was removed."""
    removed = []
    for pattern in (f".{CHECKPOINT_NAME}.tmp*", f"{METRICS_NAME}.tmp", ".write-probe*"):
        for p in out_dir.glob(pattern):
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed


class RunFolderLock:
    """An exclusive, non-blocking ``flock`` on the run folder itself (no lock file is left behind): a second run
    on the same folder is refused at once instead of interleaving its metrics and checkpoints with the first's.
    Released by :meth:`release` or when the process ends (also when it is killed)."""

    def __init__(self, folder: Path):
        self.folder, self.fd = folder, None
        if fcntl is None:  # pragma: no cover - not POSIX: no lock
            return
        try:
            fd = os.open(folder, os.O_RDONLY)
        except OSError as exc:
            raise OutputError(f"cannot open the output folder {folder}: {_validate.describe_os_error(exc)}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise ConfigError(
                f"another run is using {folder} (it holds the folder's lock): wait for it to "
                f"finish, or give this run another folder (--out-dir)"
            ) from None
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


#: The files of a run in its folder.
RUN_FILES = (CHECKPOINT_NAME, PREVIOUS_CHECKPOINT_NAME, METRICS_NAME)


def prepare_run_folder(out_dir: Path, config: TrainConfig) -> RunFolderLock:
    """Create and lock the run folder, remove a killed run's temporaries, and refuse what would lose data or
    fail later: a new run (no ``resume``) into a folder holding a run, a run file replaced by a folder, an
    unwritable folder or too little free space (:func:`check_output_folder`). Returns the held lock."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder {out_dir}: {_validate.describe_os_error(exc)}") from None
    lock = RunFolderLock(out_dir)
    try:
        try:
            clean_temporaries(out_dir)
        except OSError as exc:
            raise OutputError(
                f"cannot remove a killed run's temporary files in the output folder {out_dir}: "
                f"{_validate.describe_os_error(exc)}"
            ) from None
        for name in RUN_FILES:
            if (out_dir / name).exists() and not (out_dir / name).is_file():
                raise OutputError(
                    f"{out_dir / name} is not a file (a folder or special file stands in its place); "
                    f"the run cannot keep its {'metrics' if name == METRICS_NAME else 'checkpoints'} "
                    f"there: move it away"
                )
        if not config.resume:
            held = [
                name
                for name in RUN_FILES
                if (out_dir / name).is_file() and (name != METRICS_NAME or (out_dir / name).stat().st_size > 0)
            ]
            if held:
                raise ConfigError(
                    f"{out_dir} already holds a run ({', '.join(held)}): a new run would overwrite "
                    f"it; pass --resume (resume=True) to continue it, or give a new folder "
                    f"(--out-dir)"
                )
        check_output_folder(out_dir, config.checkpoint_bytes())
    except BaseException:
        lock.release()
        raise
    return lock


def check_output_folder(out_dir: Path, need_bytes: int) -> None:
    """Refuse, in one line naming the folder, an output folder that cannot be created or written, or whose
    disk has less free space than two checkpoints need. Writes (and removes) a small probe file."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder {out_dir}: {_validate.describe_os_error(exc)}") from None
    probe = out_dir / f".write-probe{os.getpid()}"
    try:
        _write_file(probe, b"probe\n" * 1024)
    except OSError as exc:
        raise OutputError(f"cannot write in the output folder {out_dir}: {_validate.describe_os_error(exc)}") from None
    finally:
        _remove_quietly(probe)
    free = shutil.disk_usage(out_dir).free
    if free < 2 * need_bytes:
        raise OutputError(
            f"the output folder {out_dir} has {_validate.human_bytes(free)} free; two checkpoints "
            f"of this model need about {_validate.human_bytes(2 * need_bytes)}"
        )


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


#: What a checkpoint payload holds: field -> (test, what it must be).
_PAYLOAD_FIELDS = {
    "config": (lambda v: isinstance(v, dict), "a dict"),
    "step": (lambda v: _is_int(v) and v >= 0, "a step number >= 0"),
    "model": (
        lambda v: isinstance(v, dict) and all(isinstance(t, torch.Tensor) for t in v.values()),
        "a dict of tensors",
    ),
    "optimizer": (
        lambda v: isinstance(v, dict) and isinstance(v.get("state"), dict) and isinstance(v.get("param_groups"), list),
        "an optimiser state (state, param_groups)",
    ),
    "data_stream": (
        lambda v: (
            isinstance(v, dict)
            and _is_int(v.get("epoch"))
            and _is_int(v.get("consumed"))
            and v["consumed"] >= 0
            and isinstance(v.get("epoch_start_state"), torch.Tensor)
            and isinstance(v.get("generator_state"), torch.Tensor)
        ),
        "a data-stream position (epoch, consumed, epoch_start_state, generator_state)",
    ),
    "random_states": (
        lambda v: (
            isinstance(v, dict)
            and isinstance(v.get("torch_cpu"), torch.Tensor)
            and isinstance(v.get("numpy"), dict)
            and isinstance(v["numpy"].get("keys"), torch.Tensor)
            and isinstance(v.get("python"), list)
            and len(v["python"]) == 3
        ),
        "the random states (torch_cpu, numpy, python)",
    ),
    "history": (
        lambda v: (
            isinstance(v, list)
            and all(isinstance(r, dict) and isinstance(r.get("kind"), str) and _is_int(r.get("step", 0)) for r in v)
        ),
        "a list of metrics records",
    ),
}


def payload_problem(payload) -> str | None:
    """Why a checkpoint payload that verified cannot be resumed from (a missing field, a wrong type), or None."""
    if not isinstance(payload, dict):
        return f"it holds a {type(payload).__name__}, not a dict of the run's state"
    for name, (test, what) in _PAYLOAD_FIELDS.items():
        if name not in payload:
            return f"it has no {name!r} field"
        try:
            ok = test(payload[name])
        except Exception:
            ok = False
        if not ok:
            return f"its {name!r} field is not {what} (got {_validate.show(payload[name], 60)})"
    return None


def load_checkpoint(path: Path, config: TrainConfig) -> dict:
    """The newest checkpoint in ``path``'s folder that verifies, checked against ``config``.

    A damaged ``checkpoint.pt`` (or one that verifies but lacks a field or holds a wrong type) is named in a
    one-line warning and ``checkpoint.prev.pt`` is used; when both are damaged the run is refused with both
    names. A checkpoint past ``config.steps`` is refused (there is nothing left to train).
    """
    candidates = [p for p in (path, path.with_name(PREVIOUS_CHECKPOINT_NAME)) if p.exists()]
    if not candidates:
        raise ConfigError(f"resume=True but there is no checkpoint at {path}")
    problems, payload, used = [], None, None
    for candidate in candidates:
        try:
            loaded = read_checkpoint(candidate)
            problem = payload_problem(loaded)
            if problem is not None:
                raise CheckpointDamaged(f"{candidate} verifies but cannot be resumed from: {problem}")
            payload, used = loaded, candidate
            break
        except (CheckpointDamaged, OSError) as exc:
            problems.append(str(exc))
    if payload is None:
        raise ConfigError(f"cannot resume: {'; '.join(problems)}")
    if problems:
        print(f"warning: {problems[0]}; resuming from {used} (step {payload['step']})", file=sys.stderr)
    saved = {**FIELDS_ADDED_LATER, **payload["config"]}
    now = config.to_dict()
    differ = [
        f"{k}: checkpoint {saved.get(k)!r}, now {now[k]!r}"
        for k in now
        if k not in RESUMABLE_CHANGES and saved.get(k) != now[k]
    ]
    if differ:
        raise ConfigError(f"cannot resume {path} with a different configuration ({'; '.join(differ)})")
    if payload["step"] > config.steps:
        raise ConfigError(
            f"cannot resume: the checkpoint {used} is at step {payload['step']}, past steps="
            f"{config.steps}; pass a number of steps of at least {payload['step']} (--steps) to "
            f"train on, or start a new run in another folder"
        )
    payload["path"] = str(used)
    return payload


class _Metrics:
    """The JSON-lines metrics file (rank 0 only); on resume, records after the checkpoint are dropped.

    A write that fails (a full disk, a folder turned read-only) raises :class:`OutputError` naming the folder and
    the checkpoint that is kept, and leaves the file ending with its last whole record, so that the run can be
    resumed once there is room; a record cut short by a killed process is dropped on resume.
    """

    def __init__(self, path: Path | None, keep_until_step: int | None, history: list[dict] | None = None):
        self.path = path
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if keep_until_step is None:
                path.write_text("")
            else:
                kept = self.resumed_lines(path, keep_until_step, history or [])
                tmp = path.with_name(path.name + ".tmp")
                tmp.write_text("".join(line + "\n" for line in kept))
                os.replace(tmp, path)
        except OSError as exc:
            _remove_quietly(path.with_name(path.name + ".tmp"))
            raise self._error(exc) from exc

    @classmethod
    def resumed_lines(cls, path: Path, step: int, history: list[dict]) -> list[str]:
        """The metrics file of a resumed run: always the checkpoint's history (every record up to its step), so
        that the file and the history agree whatever happened to the file: records written after the checkpoint
        (a final evaluation, a killed attempt's) are dropped and evaluated again, and a file that was removed,
        emptied or cut short is rebuilt, saying so in one line when records were missing from it."""
        lines = [json.dumps(r) for r in history if r.get("step", 0) <= step and r["kind"] != "end"]
        if path.exists():
            on_file: dict[str, int] = {}
            for record in cls.read_records(path, step):  # refuses a file that is not a metrics file
                key = json.dumps(record)
                on_file[key] = on_file.get(key, 0) + 1
            missing = 0
            for line in lines:
                if on_file.get(line, 0):
                    on_file[line] -= 1
                else:
                    missing += 1
            if missing:
                print(
                    f"warning: {path} lacked {missing} of the {len(lines)} records the checkpoint (step {step}) "
                    f"holds (emptied or cut short?); rewritten from the checkpoint's history",
                    file=sys.stderr,
                )
        return lines

    @staticmethod
    def read_records(path: Path, step: int) -> list[dict]:
        """The records of a metrics file being resumed; the last line may be cut short (a killed process was
        writing it) and is then dropped. Anything else that is not a record raises :class:`ConfigError` naming
        the file and line, and how to continue from the checkpoint (which holds the run's history)."""
        lines = path.read_bytes().split(b"\n")
        while lines and not lines[-1].strip():
            lines.pop()
        records = []
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            why = None
            try:
                record = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                why = "it is not UTF-8 text"
            except json.JSONDecodeError as exc:
                if number == len(lines):  # the record a killed process was writing
                    break
                why = f"it is not JSON ({exc.msg})"
            if why is None and not (isinstance(record, dict) and isinstance(record.get("kind"), str)):
                why = "it is not a record with a 'kind'"
            elif why is None and not (_is_int(record.get("step", 0)) or isinstance(record.get("step"), float)):
                why = "its 'step' is not a number"
            if why is not None:
                raise ConfigError(
                    f"cannot resume: {path} line {number}: {why}; the checkpoint (step {step}) holds "
                    f"the run's history: move {path.name} aside and resume again to continue from "
                    f"the checkpoint, with the metrics rewritten from it"
                )
            records.append(record)
        return records

    def _error(self, exc: OSError) -> OutputError:
        return OutputError(
            f"cannot write the metrics in {self.path.parent}: {_validate.describe_os_error(exc)}; "
            f"{_kept_checkpoint(self.path.with_name(CHECKPOINT_NAME))}"
        )

    def write(self, record: dict) -> None:
        if self.path is None:
            return
        size = self.path.stat().st_size if self.path.exists() else 0
        try:
            _append_file(self.path, json.dumps(record) + "\n")
        except OSError as exc:
            try:  # no half-written record: the file ends with the last whole one
                os.truncate(self.path, size)
            except OSError:
                pass
            raise self._error(exc) from exc


def _distributed() -> tuple[int, int, int]:
    """(rank, local rank, world size) from torchrun's environment; (0, 0, 1) for a plain process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 0, 1
    return int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0")), world


def _launched_by_torchrun() -> bool:
    """Whether torchrun (or another launcher setting the env:// variables) started this process; then a process
    group is set up even for one process, so that one-process torchrun runs the same code as N processes."""
    return "MASTER_ADDR" in os.environ and "RANK" in os.environ and "WORLD_SIZE" in os.environ


def _device(config: TrainConfig, local_rank: int, world: int) -> torch.device:
    """The run's device, with an explicit index on CUDA (:func:`resnet_theory.engine.devices.resolve_device`)."""
    count = _devices.cuda_device_count()
    try:
        return _devices.resolve_device(
            config.device,
            cuda_devices=count,
            local_rank=local_rank,
            world=world,
            current=torch.cuda.current_device() if count else 0,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _seeds(seed: int) -> tuple[int, int]:
    model_seed, data_seed = np.random.SeedSequence(seed).generate_state(2)
    return int(model_seed), int(data_seed)


def seed_model_draws(seed: int) -> int:
    """Seed torch, numpy and ``random`` for building a run's model at ``seed``; returns the data seed."""
    model_seed, data_seed = _seeds(seed)
    torch.manual_seed(model_seed)
    np.random.seed(model_seed % 2**32)
    random.seed(model_seed)
    return data_seed


def device_datasets(config: TrainConfig, device: torch.device) -> tuple:
    """The run's training and test sets on ``device`` (test set standardised with the training statistics)
    and the images' channel count."""
    raw = load_dataset(config)
    train_images, train_labels = raw["train"]
    test_images, test_labels = raw["test"]
    train_data = _data.DeviceData(train_images, train_labels, device, standardize=config.standardize)
    test_data = _data.DeviceData(
        test_images, test_labels, device, mean=train_data.mean, std=train_data.std, standardize=config.standardize
    )
    return train_data, test_data, train_images.shape[1]


# --- the loop ---------------------------------------------------------------------------------------------
def train(config: TrainConfig) -> TrainResult:
    """Train (or resume) one run; see the module docstring. Returns the :class:`TrainResult`."""
    rank, local_rank, world = _distributed()
    config.validate(world)
    device = _device(config, local_rank, world)
    facts = _devices.describe(device)
    try:
        precision = _devices.choose_precision(config.precision, facts)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if device.type == "cuda":
        torch.cuda.set_device(device)  # before the process group: NCCL binds each rank to this GPU
    own_group = False
    distributed = world > 1 or _launched_by_torchrun()
    if distributed and not dist.is_initialized():
        backend = _devices.ddp_backend(facts)
        dist.init_process_group(backend, device_id=device if backend == "nccl" else None)
        own_group = True
    try:
        with (
            _devices.cpu_settings(flush_denormal=config.flush_denormal and device.type == "cpu"),
            _devices.backend_settings(facts, config.deterministic),
        ):
            return _train(config, rank, world, device, facts, precision, distributed)
    finally:
        if own_group:
            dist.destroy_process_group()


def _train(
    config: TrainConfig,
    rank: int,
    world: int,
    device: torch.device,
    facts: _devices.DeviceFacts,
    precision: _devices.Precision,
    distributed: bool,
) -> TrainResult:
    """The run, with its output folder prepared and locked (rank 0) for as long as it lasts."""
    lock = prepare_run_folder(Path(config.out_dir), config) if config.out_dir and rank == 0 else None
    try:
        run = _Run(config, rank, world, device, facts, precision, distributed)
        run.begin()
        run.train_steps()
        return run.finish()
    finally:
        if lock is not None:
            lock.release()


class _Run:
    """One run from its first record to its result: the model, optimiser and data stream (restored from the
    checkpoint on resume), the history and metrics file, the checkpoints, and the training loop."""

    def __init__(
        self,
        config: TrainConfig,
        rank: int,
        world: int,
        device: torch.device,
        facts: _devices.DeviceFacts,
        precision: _devices.Precision,
        distributed: bool,
    ):
        self.config, self.rank, self.world, self.device = config, rank, world, device
        self.facts, self.precision, self.distributed = facts, precision, distributed
        self.channels_last = _devices.use_channels_last(facts, precision)
        out_dir = Path(config.out_dir) if config.out_dir else None
        self.ckpt_path = out_dir / CHECKPOINT_NAME if out_dir else None
        payload = load_checkpoint(self.ckpt_path, config) if config.resume else None
        self.train_data, self.test_data, channels = device_datasets(config, device)
        data_seed = seed_model_draws(config.seed)
        self.model = build_model(config, in_channels=channels).to(device)
        if self.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        fused = {"fused": True} if _devices.fused_sgd(facts) else {}
        self.optimizer = torch.optim.SGD(
            parameter_groups(self.model, config.weight_decay), lr=config.lr, momentum=config.momentum, **fused
        )
        self.scaler = _devices.grad_scaler(facts, precision)
        generator = torch.Generator(device=device).manual_seed(data_seed)
        self.stream = BatchStream(self.train_data, config.batch_size, generator, *config.augmentation)
        self.history: list[dict] = []
        self.start_step = 0
        self.resumed = payload is not None
        if self.resumed:
            self._restore(payload)
        self.metrics = _Metrics(
            out_dir / METRICS_NAME if (out_dir and rank == 0) else None,
            keep_until_step=self.start_step if self.resumed else None,
            history=self.history if self.resumed else None,
        )
        self.net = self._wrapped(self.model)
        self.local = config.batch_size // world
        self.trainable = sum(p.numel() for p in self.model.parameters() if p.requires_grad)
        self.last_checkpoint_step = self.start_step if self.resumed else None
        self.step = self.start_step
        self.diverged, self.message = False, ""
        # the last training loss recorded before this run (a resumed run with no step left to take reports it)
        self.last_train_loss = next(
            (float(r["loss"]) for r in reversed(self.history) if r.get("kind") == "train"), float("nan")
        )
        self.images_done, self.train_seconds, self.started, self.wall = 0, 0.0, 0.0, 0.0

    def _restore(self, payload: dict) -> None:
        """The model, optimiser, gradient scaler, data stream and random states of a checkpoint."""
        try:
            self.model.load_state_dict(payload["model"])
            self.optimizer.load_state_dict(payload["optimizer"])
            if self.scaler is not None and payload.get("grad_scaler") is not None:
                self.scaler.load_state_dict(payload["grad_scaler"])
            self.stream.restore(payload["data_stream"])
            set_random_states(payload["random_states"])
        except (RuntimeError, ValueError, TypeError, KeyError, IndexError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConfigError(
                f"cannot resume from {payload['path']}: its state does not fit this run "
                f"({type(exc).__name__}: {first[:200]})"
            ) from None
        self.history = list(payload["history"])
        self.start_step = int(payload["step"])

    def _wrapped(self, model: nn.Module) -> nn.Module:
        """The module the loop calls: DistributedDataParallel under torchrun, then compiled when asked."""
        net = model
        if self.distributed:
            net = DistributedDataParallel(net, device_ids=_devices.ddp_device_ids(self.device), broadcast_buffers=False)
        if self.config.compile:  # after the DDP wrapper, so that the compiler sees the gradient buckets
            net = torch.compile(net)
        return net

    # --- records, evaluations and checkpoints ---------------------------------------------------------
    def log(self, record: dict) -> None:
        self.history.append(record)
        self.metrics.write(record)

    def begin(self) -> None:
        """The run's first record: ``start`` (and an evaluation at step 0), or ``resume``."""
        run = {
            "world_size": self.world,
            "local_batch_size": self.local,
            "device": str(self.device),
            "device_name": self.facts.name,
            "precision": self.precision.name,
        }
        if self.resumed:
            self.log(history_record("resume", self.start_step, **run))
            return
        self.log(
            history_record(
                "start",
                0,
                **run,
                distributed=_devices.ddp_backend(self.facts) if self.distributed else None,
                trainable_parameters=self.trainable,
                config=self.config.to_dict(),
            )
        )
        if self.config.eval_every:
            self.evaluate_at(0)

    def evaluate_at(self, step: int) -> dict:
        """Evaluate on the whole test set and record it. Always with the eager module (``self.model``, whose
        weights the DDP wrapper and the compiled module share): the compiled one, called under ``no_grad`` with
        the evaluation batch, would compile a second time (other grad mode, other batch size)."""
        loss, acc = evaluate(
            self.model,
            self.test_data,
            self.config.eval_batch_size,
            amp=self.precision.autocast is not None,
            rank=self.rank,
            world_size=self.world,
            channels_last=self.channels_last,
            amp_dtype=self.precision.autocast,
        )
        record = history_record("eval", step, test_loss=loss, test_accuracy=acc)
        self.log(record)
        return record

    def checkpoint(self, step: int) -> None:
        if self.ckpt_path is None:
            return
        self.last_checkpoint_step = step
        if self.rank == 0:
            save_checkpoint(
                self.ckpt_path,
                {
                    "config": self.config.to_dict(),
                    "step": step,
                    "model": self.model.state_dict(),
                    "optimizer": self.optimizer.state_dict(),
                    "data_stream": self.stream.state(),
                    "grad_scaler": self.scaler.state_dict() if self.scaler is not None else None,
                    "random_states": random_states(),
                    "history": self.history,
                },
            )
        if self.world > 1:
            dist.barrier()

    def _kept(self) -> str:
        """What a run that stops now leaves behind, for the divergence message."""
        if self.ckpt_path and _checkpoint_intact(self.ckpt_path):
            return f"the last good checkpoint ({self.ckpt_path}) is kept"
        return "no checkpoint was written before it"

    # --- the loop ---------------------------------------------------------------------------------------
    def _update(self, lr: float) -> torch.Tensor:
        """One optimisation step on this process's slice of the next global batch; returns the loss."""
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        x, y = next(self.stream)
        if self.world > 1:
            part = slice(self.rank * self.local, (self.rank + 1) * self.local)
            x, y = x[part], y[part]
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        autocast = self.precision.autocast
        with torch.autocast(self.device.type, dtype=autocast, enabled=autocast is not None):
            logits = self.net(x)
        loss = F.cross_entropy(logits.float(), y)
        self.optimizer.zero_grad(set_to_none=True)
        if self.scaler is None:
            loss.backward()
            self.optimizer.step()
        else:  # fp16: scaled loss; a step whose gradients overflowed is skipped and the scale lowered
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        return loss

    def _weights_finite(self) -> torch.Tensor:
        return torch.stack([p.detach().isfinite().all() for p in self.model.parameters()]).all()

    def train_steps(self) -> None:
        """Train up to ``config.steps``, closing a logging interval every ``log_every`` steps (and at every
        evaluation and checkpoint); stops early when the divergence guard does."""
        config = self.config
        bar = None
        if config.progress and self.rank == 0:
            bar = tqdm(
                total=config.steps,
                initial=min(self.start_step, config.steps),
                desc="train",
                unit="step",
                dynamic_ncols=True,
            )
        losses = LossAccumulator(self.device)
        self.started = losses.started
        self.net.train()
        while self.step < config.steps:
            lr = learning_rate(config, self.step)
            losses.add(self._update(lr))
            self.step += 1
            want_log = self.step % config.log_every == 0 or self.step == config.steps
            want_ckpt = config.checkpoint_every and self.step % config.checkpoint_every == 0
            want_eval = config.eval_every and self.step % config.eval_every == 0
            if not (want_log or want_ckpt or want_eval):
                continue
            # One host synchronisation per interval: the mean loss over all processes, and the divergence check.
            interval = losses.close(self.step, self._weights_finite(), dist.all_reduce if self.world > 1 else None)
            if not self._log_interval(interval, lr, bar):
                break
            if want_eval:
                self.evaluate_at(self.step)
            if want_ckpt:
                self.checkpoint(self.step)
            losses.restart()
        if bar is not None:
            bar.close()
        self.wall = time.perf_counter() - self.started

    def _log_interval(self, interval: Interval, lr: float, bar) -> bool:
        """Record a closed interval; False when the divergence guard stops the run."""
        batch = self.config.batch_size
        self.images_done += batch * interval.steps
        self.train_seconds += interval.seconds
        rate = interval.images_per_second(batch)
        record = interval.record(
            0,
            threshold=self.config.divergence_threshold(),
            lr=lr,
            images_per_s=rate,
            seconds=interval.ended - self.started,
            kept=self._kept,
        )
        self.log(record)
        if record["kind"] == "diverged":
            self.diverged, self.message = True, record["message"]
            return False
        self.last_train_loss = record["loss"]
        if bar is not None:
            bar.update(self.step - bar.n)
            bar.set_postfix(loss=f"{record['loss']:.4f}", img_s=f"{rate:.0f}")
        return True

    def finish(self) -> TrainResult:
        """The final evaluation, checkpoint and ``end`` record (unless the run diverged), and the result;
        raises :class:`TrainingDiverged` for a diverged run when ``on_divergence="raise"``."""
        step, history = self.step, self.history
        if self.diverged:
            test_loss, test_acc = float("nan"), float("nan")
        else:
            # an evaluation of these weights already recorded (before a kill and resume, too) is not repeated
            last = next((r for r in reversed(history) if r["kind"] == "eval" and r["step"] == step), None)
            final = last or self.evaluate_at(step)
            test_loss, test_acc = final["test_loss"], final["test_accuracy"]
            if self.ckpt_path is not None and self.last_checkpoint_step != step:
                self.checkpoint(step)
            self.message = finished_message(step, test_acc, test_loss)
            self.log(history_record("end", step, message=self.message, seconds=self.wall))
        ckpt = self.ckpt_path
        rate = self.images_done / self.train_seconds if self.train_seconds > 0 else float("nan")
        result = TrainResult(
            config=self.config,
            history=history,
            steps_done=step,
            final_test_accuracy=test_acc,
            final_test_loss=test_loss,
            final_train_loss=self.last_train_loss,
            diverged=self.diverged,
            message=self.message,
            checkpoint_path=str(ckpt) if ckpt and ckpt.is_file() else None,
            wall_seconds=self.wall,
            images_per_second=rate,
            trainable_parameters=self.trainable,
            model=self.model,
        )
        if self.diverged and self.config.on_divergence == "raise":
            raise TrainingDiverged(self.message, result)
        return result


# --- several runs: seeds and variants (the chapter's ablations) -------------------------------------------
def train_seeds(config: TrainConfig, seeds) -> list[TrainResult]:
    """One run per seed, otherwise identical; a diverging run is kept (``on_divergence`` is set to "stop")."""
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("train_seeds needs at least one seed")
    return [train(dataclasses.replace(config, seed=s, on_divergence="stop")) for s in seeds]


def scored_accuracy(result: TrainResult) -> float:
    """The final test accuracy, with a diverged run scored at chance (1 / classes): it learned nothing usable."""
    return 1.0 / result.config.num_classes if result.diverged else float(result.final_test_accuracy)


def summarise_runs(results: list[TrainResult]) -> dict:
    """Test accuracy over seeds (diverged runs at chance): mean, standard deviation, median, min, max, and how
    many runs diverged."""
    if not results:
        raise ValueError("summarise_runs needs at least one result")
    acc = np.array([scored_accuracy(r) for r in results])
    return {
        "runs": len(results),
        "diverged": int(sum(r.diverged for r in results)),
        "mean": float(acc.mean()),
        "std": float(np.std(acc - acc[0], ddof=1)) if len(acc) > 1 else 0.0,
        "median": float(np.median(acc)),
        "min": float(acc.min()),
        "max": float(acc.max()),
        "accuracies": acc.tolist(),
    }


# --- command line ---------------------------------------------------------------------------------------------
_OneLineParser = _validate.OneLineParser
_int_option, _float_option, _ints_option = _validate.int_option, _validate.float_option, _validate.ints_option


#: Options whose default is None (or that need a range): the parser for each, by field name.
_OPTION_TYPES = {
    "augment_pad": _int_option(0),
    "head_rank": _int_option(1),
    "max_loss": _float_option,
    "seed": _int_option(0),
    "eval_every": _int_option(0),
    "checkpoint_every": _int_option(0),
    "widths": _ints_option(1, allow_empty=False),
    "lr_milestones": _ints_option(1, allow_empty=True),
}
_BOOLEAN_OR_NONE = {
    "augment": "pad-and-crop + flip (default: on for CIFAR, off for digits)",
    "augment_flip": "random horizontal flips (default: on for CIFAR, off for digits)",
}


def _parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="python -m resnet_theory.engine.train",
        description="Train Hardt & Ma's all-convolutional ResNet (defaults: the paper's CIFAR-10 recipe). "
        "Several processes: torchrun --nproc_per_node=N -m resnet_theory.engine.train ...",
    )
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        default = f.default
        if f.name in _BOOLEAN_OR_NONE:
            parser.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=None, help=_BOOLEAN_OR_NONE[f.name]
            )
        elif isinstance(default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default)
        elif f.name in _OPTION_TYPES:
            shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
            parser.add_argument(flag, type=_OPTION_TYPES[f.name], default=default, help=f"default {shown}")
        elif isinstance(default, int):
            parser.add_argument(flag, type=_int_option(1), default=default, help=f"default {default}")
        elif isinstance(default, float):
            parser.add_argument(flag, type=_float_option, default=default, help=f"default {default}")
        else:  # strings: dataset, init, device, data_dir, out_dir, on_divergence (checked by TrainConfig)
            parser.add_argument(flag, type=str, default=default, help=f"default {default}")
    return parser


class _Terminated(KeyboardInterrupt):
    """SIGTERM (a CI timeout, ``kill``) stops a training run as Ctrl-C does: one line, the checkpoint kept."""


def _raise_terminated(signum, frame):
    raise _Terminated()


def _stop_on_sigterm():
    """Make SIGTERM raise :class:`_Terminated` (main thread only); returns the handler to restore, or None."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _raise_terminated)


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad option (2, one line already printed)
        return int(exc.code or 0)
    try:  # never into the book's sources or a build's records (resnet_theory.outputs), before anything runs
        if args.out_dir:
            check_command_output(Path(args.out_dir), "--out-dir")
    except OutputRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    config = TrainConfig(**vars(args))
    rank = _distributed()[0]
    previous = _stop_on_sigterm()
    try:
        result = train(config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except TrainingDiverged as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except _data.DatasetError as exc:  # a damaged dataset file: the data module's message names it
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except _validate.BudgetError as exc:  # a size found too large only once the run has begun
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: one line, as the book's executor says it
        kept = _kept_checkpoint(Path(config.out_dir) / CHECKPOINT_NAME) if config.out_dir else "no --out-dir"
        resumable = kept.startswith(("the last", "the previous"))
        way_on = "; continue with --resume" if resumable else ""
        name = "SIGTERM" if isinstance(exc, _Terminated) else "SIGINT"
        print(f"error: interrupted ({name}); {kept}{way_on}", file=sys.stderr)
        return 143 if name == "SIGTERM" else 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if rank == 0:
        print(
            json.dumps(
                {
                    "steps": result.steps_done,
                    "test_accuracy": result.final_test_accuracy,
                    "test_loss": result.final_test_loss,
                    "train_loss": result.final_train_loss,
                    "images_per_second": result.images_per_second,
                    "seconds": result.wall_seconds,
                    "checkpoint": result.checkpoint_path,
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
