"""The build folder's files: checksums, JSON objects read defensively, atomic writes, where claims are written."""

from __future__ import annotations

import json
import os
from pathlib import Path


def sha256(data: bytes | str) -> str:
    import hashlib

    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def file_sha(path: Path) -> str | None:
    return sha256(path.read_bytes()) if path.is_file() else None


def read_json_object(path: Path) -> dict | None:
    """The JSON object stored at ``path``; None when there is none, it cannot be read, or it holds anything but
    an object (``null``, a list, a number: a damaged or hand-made file)."""
    try:
        data = json.loads(Path(path).read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a hidden temporary beside ``path``, then rename it into place: ``path`` is either the old
    file or the whole new one. A write that fails (a full disk) removes its temporary and raises."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def claims_path(notebook_path: Path) -> Path:
    return notebook_path.with_name(notebook_path.stem + ".claims.json")
