"""The project's configuration stays consistent: pins, TOC, chapter conventions, the two commands."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from resnet_theory.book.parameters import defined_parameters
from resnet_theory.book.toc import toc_files

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def lock_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            assert "==" in line, f"requirements.lock: {line!r} is not an exact pin"
            name, version = line.split("==")
            pins[_name(name)] = version
    return pins


def top_level() -> list[str]:
    names = []
    for line in (ROOT / "requirements.in").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            names.append(_name(line))
    return names


def test_every_top_level_requirement_is_pinned_and_torch_is_the_tested_build():
    pins = lock_pins()
    missing = [n for n in top_level() if n not in pins]
    assert not missing, f"in requirements.in but not pinned in requirements.lock: {missing}"
    assert pins["torch"] == "2.13.0"
    assert pins["jupyter-book"].startswith("1."), "Jupyter Book 2 cannot build offline"


def test_environment_yml_and_make_install_the_same_environment():
    # One environment: conda creates .venv with Python and pip, and pip installs what `make install` installs
    # (requirements.lock, then the package), so there is no second list of pins to drift from the lock.
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert sorted(conda) == ["pip", "python=3.11"], "conda installs Python and pip only; the rest comes from pip"
    assert pip_section == ["-r requirements.lock", "-e ."]
    makefile = (ROOT / "Makefile").read_text()
    install = makefile.split("\n$(STAMP):", 1)[1].split("\n\n", 1)[0]
    assert "-r requirements.lock" in install and "-e ." in install
    venv = re.search(r"^VENV\s*\?=\s*(\S+)", makefile, re.M).group(1)
    command = f"conda env create -p {venv} -f environment.yml"
    assert command in (ROOT / "environment.yml").read_text() and command in (ROOT / "README.md").read_text()
    python = next(d for d in conda if d.startswith("python="))
    assert python == "python=3.11" and "Python 3.11" in (ROOT / "README.md").read_text()


def test_the_cpu_and_cuda_builds_of_torch_are_chosen_from_pytorchs_index():
    # `make install TORCH=cpu` (or a CUDA tag) installs that build of the pinned torch before the lock, whose
    # torch==2.13.0 a local build (2.13.0+cpu) satisfies; the README says how.
    import subprocess

    torch_pin = next(
        line for line in (ROOT / "requirements.lock").read_text().splitlines() if line.startswith("torch==")
    )
    dry = subprocess.run(
        ["make", "-n", "install", "TORCH=cpu", "VENV=/nonexistent-venv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f'--index-url https://download.pytorch.org/whl/cpu "{torch_pin}+cpu"' in dry
    assert dry.index("+cpu") < dry.index("-r requirements.lock")
    plain = subprocess.run(
        ["make", "-n", "install", "VENV=/nonexistent-venv"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert "download.pytorch.org" not in plain and "-r requirements.lock" in plain
    readme = (ROOT / "README.md").read_text()
    assert "make install TORCH=cpu" in readme and "TORCH=cu" in readme


def test_every_chapter_is_in_the_toc_and_every_toc_entry_exists():
    entries = toc_files(ROOT)
    sources = {p.relative_to(ROOT).with_suffix("").as_posix() for p in (ROOT / "book").glob("**/*.md")}
    assert sources == set(entries), f"not in TOC: {sources - set(entries)}; missing files: {set(entries) - sources}"
    assert entries[-1] == "book/status", "the status page must execute last"
    assert entries.index("book/ledger") > max(
        entries.index(f"book/{c}")
        for c in ("linear", "expressivity", "smooth_maps", "linear_predictors", "experiments")
    )


def test_chapters_follow_the_parameter_convention():
    import jupytext

    for entry in toc_files(ROOT):
        nb = jupytext.read(ROOT / f"{entry}.md", fmt="md:myst")
        if any(c.cell_type == "code" for c in nb.cells):
            params = defined_parameters(nb)
            assert params.get("profile") == "quick", f"{entry}: the default profile must be 'quick'"
            assert "seed" in params, f"{entry}: the parameters cell must define seed"


def test_chapters_do_not_edit_sys_path_or_set_a_figure_dropping_backend():
    for path in (ROOT / "book").glob("*.md"):
        text = path.read_text()
        assert "sys.path" not in text, f"{path.name} edits sys.path"
        assert "MPLBACKEND" not in text, f"{path.name} sets MPLBACKEND"


def test_config_builds_from_executed_notebooks_and_excludes_non_book_folders():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "off"
    excluded = set(config["sphinx"]["config"]["exclude_patterns"])
    assert {"_build", ".venv", "lib", "tests", ".pytest_cache"} <= excluded
    assert "resnet_theory.book.offline_mathjax" in config["sphinx"]["extra_extensions"]


def test_the_theme_gets_no_header_bar_and_keeps_jupyter_books_options():
    """pydata-sphinx-theme 0.17 fills a ``navbar_persistent`` it is not given with a search field, which put a
    header bar with a second search field on every page (the sidebar has one); the configuration says it is empty,
    merged into the theme options Jupyter Book derives (``recursive_update``), not replacing them, with or
    without the repository's settings that a build with an address merges in."""
    from jupyter_book.config import get_final_config

    from resnet_theory.book import repository

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    with_repo = repository._merge(
        yaml.safe_load((ROOT / "_config.yml").read_text()),
        repository.book_settings(repository.Repository("someone", "book", "main", None, "test")),
    )
    for user in (config, with_repo):
        final, _ = get_final_config(user_yaml=user, cli_config={"latex_individualpages": False}, sourcedir=ROOT)
        options = final["html_theme_options"]
        assert options["navbar_persistent"] == []
        assert options["search_bar_text"] and "launch_buttons" in options  # Jupyter Book's own, kept
        assert final["bibtex_reference_style"] == "author_year_distinct"
    assert options["use_repository_button"] is True
    assert "edit_page_url_template" in final["html_context"]


def test_readme_starts_with_the_two_commands_and_ci_calls_make_test():
    readme = (ROOT / "README.md").read_text()
    first_section = readme.split("\n## ", 2)[1]
    assert "make book" in first_section and "make test" in first_section
    ci = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert ci[-1].strip() in ("make test", "exec make test")
    assert not any("pytest" in line for line in ci), ".ci/run must go through make test"


def test_bibliography_has_the_required_entries():
    bib = (ROOT / "references.bib").read_text()
    keys = set(re.findall(r"@\w+\{([^,]+),", bib))
    required = {
        "hardt2017identity",
        "bartlett2018representing",
        "bartlett2018gradient",
        "shamir2018resnets",
        "he2016deep",
        "he2016identity",
        "ioffe2015batch",
        "springenberg2015striving",
        "huang2017densely",
        "karimi2016linear",
        "krizhevsky2009learning",
    }
    assert required <= keys
    for entry in re.findall(r"@\w+\{[^@]+", bib):
        for field in ("author", "title", "year"):
            assert re.search(rf"^\s*{field}\s*=", entry, re.M), f"{entry.splitlines()[0]} lacks {field}"
    cited = set()
    for path in (ROOT / "book").glob("*.md"):
        cited |= {
            k.strip() for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", path.read_text()) for k in group.split(",")
        }
    assert cited <= keys, f"cited but not in references.bib: {cited - keys}"
