"""A reader's first tool: `jupytext --to ipynb` then `jupyter nbconvert --to notebook --execute` works with the
pinned environment (nbconvert is in requirements.lock), on a chapter-shaped MyST notebook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import MYST_HEADER

CHAPTER = (
    MYST_HEADER
    + """
# A tiny chapter

```{code-cell} ipython3
:tags: [parameters]
profile = "quick"
seed = 0
size = None
```

```{code-cell} ipython3
from myst_nb import glue
from resnet_theory.profiles import resolve_profile
from resnet_theory import linear

cfg = resolve_profile(profile, size=(size, 3, 9))
A = linear.factorize_near_identity([[0.0, -1.0], [1.0, 0.0]], cfg.size)
glue("layers", A.shape[0], display=False)
print("layers", A.shape[0])
```
"""
)


def test_jupyter_nbconvert_executes_a_converted_chapter(tmp_path):
    source = tmp_path / "tiny.md"
    source.write_text(CHAPTER)
    bindir = Path(sys.executable).parent
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run(
        [str(bindir / "jupytext"), "--to", "ipynb", str(source)], check=True, capture_output=True, env=env, timeout=120
    )
    run = subprocess.run(
        [
            str(bindir / "jupyter"),
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "--output",
            "tiny.executed.ipynb",
            str(tmp_path / "tiny.ipynb"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    notebook = json.loads((tmp_path / "tiny.executed.ipynb").read_text())
    outputs = [o for cell in notebook["cells"] if cell["cell_type"] == "code" for o in cell.get("outputs", [])]
    assert any("layers 3" in "".join(o.get("text", "")) for o in outputs), outputs
