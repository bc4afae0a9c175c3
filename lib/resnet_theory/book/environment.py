"""The environment a run computes in: the device (part of every chapter's cache key) and the versions of the
packages the status page reports."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

#: Packages whose versions the status page reports.
REPORTED_PACKAGES = (
    "torch",
    "numpy",
    "scipy",
    "sympy",
    "matplotlib",
    "jupyter-book",
    "sphinx",
    "myst-nb",
    "papermill",
    "jupytext",
    "scikit-learn",
    "hypothesis",
)


def _no_gpu_driver() -> bool:
    """True where no GPU can be visible to torch, known without importing it: Linux with none of the NVIDIA
    driver (``/proc/driver/nvidia``, ``/dev/nvidia*``), ROCm's ``/dev/kfd`` and WSL's ``/dev/dxg``.
    Importing torch only to learn that takes seconds on every run of the executor, cached or not."""
    if not sys.platform.startswith("linux"):
        return False
    if any(Path(p).exists() for p in ("/proc/driver/nvidia", "/dev/kfd", "/dev/dxg")):
        return False
    return not any(Path("/dev").glob("nvidia*"))


def device_name() -> str:
    """The device chapters compute on (part of every chapter's cache key): the GPU torch sees, else the CPU."""
    if not _no_gpu_driver():
        try:
            import torch

            if torch.cuda.is_available():
                return f"GPU: {torch.cuda.get_device_name(0)} (x{torch.cuda.device_count()})"
        except Exception:  # pragma: no cover - torch missing or broken CUDA
            pass
    return f"CPU: {platform.processor() or platform.machine()} ({os.cpu_count()} cores)"


def environment() -> dict[str, Any]:
    from importlib import metadata

    versions = {}
    for name in REPORTED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": device_name(),
        "packages": versions,
    }
