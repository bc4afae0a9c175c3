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
    cores_plus_one = str(len(os.sched_getaffinity(0)) + 1)
    runs = {}
    for target in ("check", "test"):
        run = subprocess.run(["make", "-n", target], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
        runs[target] = []
        for line in (line for line in run.stdout.splitlines() if " -m pytest" in line):
            words = shlex.split(line)
            # make test's command runs between "status=0;" and "|| status=$?" (the handling of PYTEST_ARGS)
            words = words[words.index("PYTHONDONTWRITEBYTECODE=") : words.index("||") if "||" in words else None]
            # an empty PYTHONDONTWRITEBYTECODE turns it off (Python reads only a non-empty value)
            assert words[1] == f"PYTHONPYCACHEPREFIX={ROOT / '.venv' / 'pycache'}", line
            runs[target].append(words)
    (check,) = runs["check"]
    assert check[check.index("-n") + 1] == cores_plus_one, check  # cores it may use
    # make test: the fast tier as make check runs it, in parallel, then the book and browser tests in one process
    # (each parallel process would execute the book again); the two markers split every test between them
    fast, slow = runs["test"]
    assert fast[fast.index("-m", fast.index("pytest")) + 1] == "not book and not browser", fast
    assert fast[fast.index("-n") + 1] == cores_plus_one and "loadfile" in fast, fast
    assert slow[slow.index("-m", slow.index("pytest")) + 1] == "book or browser", slow
    assert "-n" not in slow and not any(w.startswith("--numprocesses") for w in slow), slow


def _imported_top_names(source: str) -> set[str]:
    """The top-level names of every absolute import in ``source``, but those inside ``try: ... except ImportError``
    (optional: the code goes on without them)."""
    import ast

    # a chapter's cell may hold lines for IPython (%magic, !shell): not Python, and no import
    tree = ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()))
    optional = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.Try)
        and any(
            isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError") for h in node.handlers
        )
        for statement in node.body
        for inner in ast.walk(statement)
    }
    names = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_package_declares_what_the_chapters_import():
    """A downloaded notebook's install cell (Colab) installs ``myst-nb`` and this package: every distribution the
    review chapters' code cells and the library they use import must come with them (pyproject's unpinned
    ``dependencies`` and what those require), or a chapter stops at an import there. The library is read whole
    (but the book tooling, ``resnet_theory/book``, and the benchmarks, which a chapter never runs), so a function
    that imports late is covered too. Found by an audit: the list was empty, so scikit-learn (the digits data),
    tqdm and threadpoolctl came only with requirements.lock."""
    import importlib.metadata as md
    import sys

    block = re.search(r"^dependencies = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), re.M | re.S)
    declared = re.findall(r'^\s*"([^"]+)",', block[1], re.M)
    assert "torch" in declared and all(re.fullmatch(r"[a-z][a-z0-9-]*", d) for d in declared), declared
    pages = [p for p in sorted((ROOT / "book").glob("*.md")) if p.stem not in ("ledger", "status")]  # built in-process
    import jupytext

    cells = [c.source for p in pages for c in jupytext.read(p, fmt="md:myst").cells if c.cell_type == "code"]
    names = set().union(*map(_imported_top_names, cells))
    assert {"torch", "resnet_theory"} <= names, names
    library = ROOT / "lib" / "resnet_theory"
    for path in library.rglob("*.py"):
        if path.relative_to(library).parts[0] not in ("book", "benchmarks"):
            names |= _imported_top_names(path.read_text())

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    owners = md.packages_distributions()
    needed = {norm(d) for n in names - set(sys.stdlib_module_names) - {"resnet_theory"} for d in owners.get(n, [n])}
    closure, todo = set(), [norm(n) for n in [*declared, "myst-nb"]]
    while todo:
        name = todo.pop()
        if name not in closure:
            closure.add(name)
            try:
                requires = md.requires(name) or []
            except md.PackageNotFoundError:  # a requirement for another platform (colorama on Windows): not here
                continue
            todo += [norm(re.match(r"[A-Za-z0-9_.\-]+", r)[0]) for r in requires if "extra ==" not in r]
    assert needed - closure == set(), f"imported by the chapters but not declared in pyproject.toml: {needed - closure}"
