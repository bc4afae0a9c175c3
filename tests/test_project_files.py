"""The files a reuser looks for: the licence, how to cite the book, what changed."""

from __future__ import annotations

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
