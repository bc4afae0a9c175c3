"""The files a reuser looks for: the licence, how to cite the book, what changed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_licence_covers_code_and_text():
    text = (ROOT / "LICENSE").read_text()
    assert "MIT License" in text and "Permission is hereby granted" in text
    assert "CC BY 4.0" in text and "creativecommons.org/licenses/by/4.0" in text


def test_citation_file_is_valid_cff_and_cites_the_papers_of_the_bibliography():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    for key in ("cff-version", "message", "title", "authors", "version", "license"):
        assert cff.get(key), f"CITATION.cff lacks {key!r}"
    assert cff["cff-version"] == "1.2.0"
    assert set(cff["license"]) == {"MIT", "CC-BY-4.0"}
    bib = (ROOT / "references.bib").read_text()
    bib_titles = {re.sub(r"[{}]", "", t).lower() for t in re.findall(r"title\s*=\s*\{(.+)\},?\n", bib)}
    for ref in cff["references"]:
        assert ref["title"].lower() in bib_titles, f"{ref['title']!r} is not in references.bib"
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert cff["version"] == version, "CITATION.cff and pyproject.toml give different versions"


def test_the_readme_points_to_the_licence_the_citation_and_the_changelog():
    readme = (ROOT / "README.md").read_text()
    for name in ("LICENSE", "CITATION.cff", "CHANGELOG.md"):
        assert name in readme and (ROOT / name).is_file()


def test_make_kernel_registers_the_projects_environment():
    import subprocess

    out = subprocess.run(["make", "-n", "kernel"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "-m ipykernel install --user --name resnet-theory" in out
    assert "make kernel" in (ROOT / "README.md").read_text()


def test_make_check_runs_a_process_more_than_cores_and_keeps_bytecode_out_of_the_sources():
    import os
    import shlex
    import subprocess

    # with OMP_NUM_THREADS=1, as make check itself sets it (nproc would count 1 core)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for target in ("check", "test"):
        run = subprocess.run(["make", "-n", target], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
        out = run.stdout
        line = next(line for line in out.splitlines() if " -m pytest" in line)
        words = shlex.split(line)
        # an empty PYTHONDONTWRITEBYTECODE turns it off (Python reads only a non-empty value)
        assert words[:2] == ["PYTHONDONTWRITEBYTECODE=", f"PYTHONPYCACHEPREFIX={ROOT / '.venv' / 'pycache'}"], line
        if target == "check":
            assert words[words.index("-n") + 1] == str(len(os.sched_getaffinity(0)) + 1), line  # cores it may use


def test_the_package_declares_what_the_chapters_import():
    """A downloaded notebook's install cell (Colab) installs ``myst-nb`` and this package: every distribution the
    review chapters' imports load must come with them (pyproject's unpinned ``dependencies`` and what those
    require), or the chapter stops at its first import there. Found by an audit: the list was empty, so
    scikit-learn (the digits data), tqdm and threadpoolctl came only with requirements.lock."""
    import subprocess
    import sys

    block = re.search(r"^dependencies = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), re.M | re.S)
    declared = re.findall(r'^\s*"([^"]+)",', block[1], re.M)
    assert "torch" in declared and all(re.fullmatch(r"[a-z][a-z0-9-]*", d) for d in declared), declared
    pages = [p for p in sorted((ROOT / "book").glob("*.md")) if "```{code-cell}" in p.read_text()]
    code = [
        cell
        for page in pages
        if page.stem not in ("ledger", "status")  # built in the book's own process, never run in Colab
        for cell in re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```", page.read_text(), re.M | re.S)
    ]
    imports = sorted(
        {
            line.split()[1]
            for cell in code
            for line in cell.splitlines()
            if re.match(r"(from|import) [A-Za-z_][\w.]*", line)
            and line.split()[1].split(".")[0] not in sys.stdlib_module_names
        }
    )
    assert "resnet_theory.claims.chapter" in imports and "torch" in imports
    probe = r"""
import importlib, importlib.metadata as md, json, re, sys
for name in sys.argv[2:]:
    importlib.import_module(name)
def norm(name): return re.sub(r"[-_.]+", "-", name).lower()
owners = md.packages_distributions()
loaded = {norm(d) for m in list(sys.modules) for d in owners.get(m.split(".")[0], [])}
closure, todo = set(), [norm(n) for n in json.loads(sys.argv[1])]
while todo:
    name = todo.pop()
    if name in closure:
        continue
    closure.add(name)
    try:
        requires = md.requires(name) or []
    except md.PackageNotFoundError:
        continue
    todo += [norm(re.match(r"[A-Za-z0-9_.\-]+", r)[0]) for r in requires if "extra ==" not in r]
print(json.dumps(sorted(loaded - closure)))
"""
    given = json.dumps([*declared, "myst-nb", "resnet-theory"])
    out = subprocess.run(
        [sys.executable, "-c", probe, given, *imports], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == [], f"imported by the chapters but not declared in pyproject.toml: {out.stdout}"
