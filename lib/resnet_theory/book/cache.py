"""The execution cache: a chapter is executed only when something its outputs depend on has changed.

That is: its code cells (source, and the tags that change execution), its parameters and profile, the source of
every module of ``resnet_theory`` (or of any package inside the book's root) that its code cells import
(:mod:`resnet_theory.book.imports`), the data those packages carry (every file in them that is not Python source,
such as ``resnet_theory/data/experiments_pilot.json``), the data the page's front matter names (``resnet_theory:
{data: [book/data/gpu]}``, :func:`resnet_theory.book.plan.data_paths`), and the pinned environment
(``requirements.lock``, ``pyproject.toml``, the Python version, the device). The key is recorded in
``_build/cache/<entry>.json`` with checksums of the notebook and claims files it describes. When the key matches,
the chapter is *reused*: if its prose changed, the new markdown cells are merged with the cached code cells' outputs
(the code cells are the same by construction) and the claims JSON is kept. Pages whose front matter says
``resnet_theory: {execution: always}`` execute on every run; ``in-process`` pages too, without a kernel
(:mod:`resnet_theory.book.inprocess`). ``--force`` executes everything. ``run`` always executes its chapter (and,
writing into the build folder, records its key for later ``execute`` runs).
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from .files import claims_path, file_sha, read_json_object, sha256, write_atomic
from .imports import ModuleIndex
from .plan import data_paths

#: Bump when the cache record or the key's recipe changes: every chapter is then executed once again.
CACHE_VERSION = 2  # 2: data files in the key

#: Files of the pinned environment that every chapter's key covers (when they exist at the root).
ENVIRONMENT_FILES = ("requirements.lock", "pyproject.toml")

#: Cell tags that change what papermill executes (display tags such as hide-input do not).
EXECUTION_TAGS = ("parameters", "raises-exception", "skip-execution")


def cache_components(
    root: Path, notebook, parameters: dict, device: str, modules: ModuleIndex | None = None
) -> dict[str, Any]:
    """Everything a chapter's outputs depend on, in a form that is hashed into its cache key.

    Its code cells (source and the tags that change execution, not the prose or display tags), the
    parameters and profile it runs with, the source of every tracked module it imports (transitively),
    and the pinned environment: the lock file, ``pyproject.toml``, the Python version and the device.
    """
    modules = modules or ModuleIndex(root)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    cells = [
        {"source": c.source, "tags": sorted(t for t in c.metadata.get("tags", []) if t in EXECUTION_TAGS)} for c in code
    ]
    closure = modules.closure([c.source for c in code])
    return {
        "data": {**modules.package_data(closure), **_declared_data(root, notebook)},
        "version": CACHE_VERSION,
        "code": sha256(json.dumps(cells, sort_keys=True)),
        "parameters": json.loads(json.dumps(parameters, sort_keys=True, default=repr)),
        "modules": {name: modules.sha(path) for name, path in sorted(closure.items())},
        "environment": {
            "python": platform.python_version(),
            "device": device,
            **{name: file_sha(root / name) for name in ENVIRONMENT_FILES},
        },
    }


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def _declared_data(root: Path, notebook) -> dict[str, str]:
    """Checksum of every file under the paths the page's front matter names (hidden files aside: a half-written
    copy of ``gpu_figures add``, an editor's swap file), by its path from the root."""
    out = {}
    for name in data_paths(notebook, root):
        path = root / name
        found = sorted(f for f in path.rglob("*") if f.is_file()) if path.is_dir() else []
        files = [path] if path.is_file() else [f for f in found if not _hidden(f.relative_to(path))]
        for f in files:
            out[f.relative_to(root).as_posix()] = file_sha(f)
    return out


def cache_key(components: dict[str, Any]) -> str:
    return sha256(json.dumps(components, sort_keys=True))


def what_changed(old: dict[str, Any] | None, new: dict[str, Any]) -> str:
    """A short reason for executing: which of the key's components differ from the cached record's."""
    if not old:
        return "no cached outputs"
    reasons = []
    if old.get("version") != new["version"]:
        return "the cache format changed"
    if old.get("code") != new["code"]:
        reasons.append("code cells changed")
    if old.get("parameters") != new["parameters"]:
        reasons.append("parameters changed")
    old_modules, new_modules = old.get("modules", {}), new["modules"]
    changed = sorted(m for m in set(old_modules) | set(new_modules) if old_modules.get(m) != new_modules.get(m))
    if changed:
        reasons.append("modules changed: " + ", ".join(changed))
    old_data, new_data = old.get("data", {}), new["data"]
    changed = sorted(f for f in set(old_data) | set(new_data) if old_data.get(f) != new_data.get(f))
    if changed:
        reasons.append("data changed: " + ", ".join(changed))
    if old.get("environment") != new["environment"]:
        keys = sorted(k for k in new["environment"] if old.get("environment", {}).get(k) != new["environment"][k])
        reasons.append("environment changed: " + ", ".join(keys))
    return "; ".join(reasons) or "cached outputs could not be verified"


def cache_record_path(build_dir: Path, entry: str) -> Path:
    return build_dir / "cache" / f"{entry}.json"


def read_cache_record(build_dir: Path, entry: str) -> dict | None:
    """The cache record of a chapter as written (None if there is none or it cannot be read), unverified."""
    return read_json_object(cache_record_path(build_dir, entry))


def write_cache_record(build_dir: Path, entry: str, record: dict) -> None:
    """Record a chapter's execution (its key, components and the checksums of the files it wrote)."""
    write_atomic(cache_record_path(build_dir, entry), json.dumps(record, indent=1, default=str))


def load_cache_record(build_dir: Path, entry: str, notebook_path: Path) -> dict | None:
    """The cache record of a chapter, if its notebook and claims files are the ones it describes."""
    record = read_cache_record(build_dir, entry)
    if record is None:
        return None
    if record.get("notebook_sha") != file_sha(notebook_path):
        return None
    if record.get("claims_sha") != file_sha(claims_path(notebook_path)):
        return None
    return record


def rerender_from_cache(source: Path, notebook_path: Path) -> bool:
    """Merge the chapter's current prose (from ``source``) with its cached code-cell outputs, executing nothing.

    The code cells are the same by construction of the key (checked again here); markdown cells and
    display metadata (tags, alt text) come from the current source. Returns False when the cached
    notebook does not match, so the caller executes instead.
    """
    import jupytext
    import nbformat

    fresh = jupytext.read(source, fmt="md:myst")
    cached = nbformat.read(notebook_path, as_version=4)
    injected = [c for c in cached.cells if "injected-parameters" in c.metadata.get("tags", [])]
    cached_code = [
        c for c in cached.cells if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])
    ]
    fresh_code = [c for c in fresh.cells if c.cell_type == "code"]
    if len(cached_code) != len(fresh_code) or any(a.source != b.source for a, b in zip(cached_code, fresh_code)):
        return False
    cells, code = [], iter(cached_code)
    for cell in fresh.cells:
        if cell.cell_type == "code":
            old = next(code)
            cell = nbformat.from_dict(dict(cell))
            metadata = {k: v for k, v in old.metadata.items() if k in ("papermill", "execution")}
            cell.metadata = nbformat.from_dict({**metadata, **cell.metadata})
            cell.outputs, cell.execution_count = old.outputs, old.execution_count
            if "id" in old:
                cell["id"] = old["id"]
            cells.append(cell)
            if injected and "parameters" in cell.metadata.get("tags", []):
                cells.extend(injected)
        else:
            cells.append(cell)
    merged = nbformat.from_dict(dict(cached))
    merged.cells = cells
    if merged.get("nbformat_minor", 0) >= 5:  # cell ids required: give new prose cells fresh ones
        import uuid

        for cell in merged.cells:
            cell.setdefault("id", uuid.uuid4().hex[:8])
    else:
        for cell in merged.cells:
            cell.pop("id", None)
    write_atomic(notebook_path, nbformat.writes(merged))
    return True
