"""The repository's address (from the environment, validated), the buttons and launch links it turns on, the
chapters' install cell, Binder's install script, and the pages' description and Open Graph tags."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml

from resnet_theory.book import cli, repository
from resnet_theory.book.page_meta import meta_tags, page_description, plain_math, shorten
from resnet_theory.book.repository import (
    INSTALL_CELL,
    INSTALL_TAG,
    Repository,
    RepositoryError,
    find_repository,
    parse_github_url,
)
from resnet_theory.book.toc import toc_files
from test_executor import chapter, make_book

from conftest import ROOT

SHA = "0123456789abcdef0123456789abcdef01234567"
ENV_NAMES = (
    "BOOK_REPOSITORY_URL",
    "BOOK_REPOSITORY_BRANCH",
    "BOOK_REPOSITORY_COMMIT",
    "BOOK_SITE_URL",
    "GITHUB_ACTIONS",
    "GITHUB_SERVER_URL",
    "GITHUB_REPOSITORY",
    "GITHUB_REF_NAME",
    "GITHUB_REF_TYPE",
    "GITHUB_SHA",
    "GITHUB_EVENT_NAME",
)
FIND_SPEC = importlib.util.find_spec
REVIEWS = ("linear", "expressivity", "smooth_maps", "linear_predictors", "experiments")


@pytest.fixture
def clean_env(monkeypatch):
    """No repository or site address in the environment (as on a developer's machine, not on Actions)."""
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# --- the address: found, validated ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    [
        "https://github.com/example-org/resnet-book",
        "https://github.com/example-org/resnet-book/",
        "https://github.com/example-org/resnet-book.git",
        "https://github.com/a/b.c_d-e",
    ],
)
def test_github_addresses_are_read(value):
    owner, name = parse_github_url(value, "X")
    assert owner in ("example-org", "a") and name in ("resnet-book", "b.c_d-e")


@pytest.mark.parametrize(
    "value",
    [
        'https://github.com/o/r"><script>alert(1)</script>',
        "https://github.com/o/r'",
        "https://github.com/o/r x",
        "http://github.com/o/r",
        "https://github.com.evil.example/o/r",
        "https://gitlab.com/o/r",
        "https://github.com/o",
        "https://github.com/o/r/tree/main",
        "https://github.com/o/r?tab=readme",
        "https://github.com/o/r#x",
        "https://github.com/-o/r",
        "https://github.com/o--o/r",
        "https://github.com/o/..",
        "javascript:alert(1)",
        "https://github.com/o/r\n",
        "github.com/o/r",
        "git@github.com:o/r.git",
    ],
)
def test_malformed_addresses_are_refused_with_the_variable_named(value):
    with pytest.raises(
        RepositoryError,
        match=r"^X=.* is not a GitHub repository address: expected "
        r"https://github.com/OWNER/REPO",
    ):
        parse_github_url(value, "X")


def test_credentials_in_a_refused_address_are_not_echoed():
    with pytest.raises(RepositoryError) as caught:
        parse_github_url("https://someone:ghp_secret@github.com/o/r", "BOOK_REPOSITORY_URL")
    assert "ghp_secret" not in str(caught.value) and "***@github.com" in str(caught.value)


@pytest.mark.parametrize("branch", ["../x", "-x", "/x", "a b", 'a"b', "x.lock", "a..b", "a//b", "x/", ".x", ""])
def test_malformed_branches_are_refused(branch):
    with pytest.raises(RepositoryError, match="is not a branch name"):
        repository.check_branch(branch, "BOOK_REPOSITORY_BRANCH")


def test_the_environment_names_the_repository_first_then_github_actions_then_the_git_remote():
    explicit = {"BOOK_REPOSITORY_URL": "https://github.com/me/book", "BOOK_REPOSITORY_BRANCH": "pages/v2"}
    actions = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "org/r",
        "GITHUB_REF_NAME": "trunk",
        "GITHUB_REF_TYPE": "branch",
        "GITHUB_SHA": SHA,
        "GITHUB_EVENT_NAME": "push",
    }
    remote = "git@github.com:someone/fork.git"
    assert find_repository(explicit | actions, remote) == Repository(
        "me", "book", "pages/v2", None, "BOOK_REPOSITORY_URL"
    )
    assert find_repository(actions, remote) == Repository("org", "r", "trunk", SHA, "GitHub Actions")
    # a pull request's ref (123/merge) is no branch of the repository: the links take main
    assert (
        find_repository(actions | {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_REF_NAME": "12/merge"}, None).branch
        == "main"
    )
    assert find_repository({}, remote) == Repository("someone", "fork", "main", None, "the git remote 'origin'")
    assert find_repository({}, "https://github.com/someone/fork").name == "fork"
    # not a plain GitHub address (another host, a local path, credentials): unknown, not an error
    for other in ("https://gitlab.com/a/b.git", "/srv/git/book.git", "https://user:token@github.com/a/b.git"):
        assert find_repository({}, other) is None
    assert find_repository({}, None) is None
    # what the environment says explicitly must be well formed
    for bad in (
        {"BOOK_REPOSITORY_URL": "https://github.com/a/b<"},
        actions | {"GITHUB_REPOSITORY": "org/r s"},
        actions | {"GITHUB_SHA": "abc"},
        {"BOOK_REPOSITORY_COMMIT": SHA.upper()},
    ):
        with pytest.raises(RepositoryError):
            find_repository(bad, remote)


def test_the_site_address_is_checked():
    assert repository.site_url({"BOOK_SITE_URL": "https://me.github.io/book"}) == "https://me.github.io/book/"
    assert repository.site_url({}) is None
    for bad in ('https://me.github.io/"x', "http://me.github.io/", "https://me.github.io/?q=1", "ftp://x/"):
        with pytest.raises(RepositoryError, match="BOOK_SITE_URL"):
            repository.site_url({"BOOK_SITE_URL": bad})


def test_configure_turns_on_the_buttons_only_with_an_address(tmp_path):
    config = tmp_path / "_config.yml"
    original = (ROOT / "_config.yml").read_text()
    config.write_text(original)
    line = repository.configure(config, None)
    assert line.startswith("no repository address") and "\n" not in line
    assert config.read_text() == original
    repo = Repository("me", "book", "main", SHA)
    line = repository.configure(config, repo, "https://me.github.io/book/")
    assert "https://github.com/me/book" in line and "\n" not in line
    merged = yaml.safe_load(config.read_text())
    assert merged["repository"] == {"url": "https://github.com/me/book", "branch": "main", "path_to_book": ""}
    assert merged["html"]["use_repository_button"] and merged["html"]["use_issues_button"]
    assert merged["html"]["home_page_in_navbar"] and merged["html"]["baseurl"] == "https://me.github.io/book/"
    assert merged["launch_buttons"]["binderhub_url"] == "https://mybinder.org"
    assert "colab_url" not in merged["launch_buttons"]
    extensions = merged["sphinx"]["extra_extensions"]
    assert (
        extensions[: len(yaml.safe_load(original)["sphinx"]["extra_extensions"])]
        == yaml.safe_load(original)["sphinx"]["extra_extensions"]
        and "resnet_theory.book.repository" in extensions
    )
    assert (
        merged["sphinx"]["config"]["exclude_patterns"]
        == yaml.safe_load(original)["sphinx"]["config"]["exclude_patterns"]
    )


# --- the install cell -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", REVIEWS)
def test_every_review_chapter_opens_with_the_install_cell_removed_from_the_page(name):
    nb = jupytext.read(ROOT / "book" / f"{name}.md", fmt="md:myst")
    code = [c for c in nb.cells if c.cell_type == "code"]
    install = [i for i, c in enumerate(code) if INSTALL_TAG in c.metadata.get("tags", [])]
    assert install == [0], f"{name}: the install cell must be the first code cell, and the only one"
    assert "parameters" in code[1].metadata.get("tags", [])
    assert set(code[0].metadata["tags"]) == {"remove-cell", INSTALL_TAG}
    assert code[0].source == INSTALL_CELL, f"{name}: the install cell differs from repository.INSTALL_CELL"


def _run_install_cell(source: str, monkeypatch, importable: bool) -> list:
    """Execute an install cell with ``resnet_theory`` importable or not; return the subprocess.run calls."""
    calls = []
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: FIND_SPEC(name, *a) if importable or name != "resnet_theory" else None,
    )
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append((a, k)))
    exec(compile(source, "install-cell", "exec"), {})
    return calls


def test_the_install_cell_does_nothing_where_the_package_is_importable(monkeypatch):
    assert _run_install_cell(INSTALL_CELL, monkeypatch, importable=True) == []


def test_the_install_cell_without_an_address_stops_and_points_to_the_intro(monkeypatch):
    with pytest.raises(ModuleNotFoundError, match="Running a chapter on Binder or Colab"):
        _run_install_cell(INSTALL_CELL, monkeypatch, importable=False)
    assert "## Running a chapter on Binder or Colab" in (ROOT / "book" / "intro.md").read_text()


def test_a_downloaded_notebook_installs_the_package_from_the_books_commit(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A chapter"),
        nbformat.v4.new_code_cell(INSTALL_CELL, metadata={"tags": ["remove-cell", INSTALL_TAG]}),
        nbformat.v4.new_code_cell("PACKAGE_SOURCE = None  # not the install cell"),
    ]
    path = tmp_path / "_sources" / "book" / "chapter.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    (tmp_path / "_sources" / "book" / "plain.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    repo = Repository("me", "book", "main", SHA)
    assert repository.fill_install_cells(tmp_path / "_sources", None) == 0
    assert repository.fill_install_cells(tmp_path / "_sources", repo) == 1
    filled = nbformat.read(path, as_version=4)
    assert f'PACKAGE_SOURCE = "git+https://github.com/me/book.git@{SHA}"' in filled.cells[1].source
    assert filled.cells[2].source == "PACKAGE_SOURCE = None  # not the install cell"
    calls = _run_install_cell(filled.cells[1].source, monkeypatch, importable=False)
    assert len(calls) == 1
    argv, kwargs = calls[0][0][0], calls[0][1]
    assert argv[:4] == [sys.executable, "-m", "pip", "install"] and kwargs == {"check": True}
    assert argv[-2:] == ["myst-nb", f"resnet-theory @ git+https://github.com/me/book.git@{SHA}"]
    assert _run_install_cell(filled.cells[1].source, monkeypatch, importable=True) == []
    # a notebook whose install cell lost its line is an error, not a silent download without the address
    broken = nbformat.read(path, as_version=4)
    broken.cells[1].source = "print('no address line')"
    nbformat.write(broken, path)
    with pytest.raises(RepositoryError, match="expected one"):
        repository.fill_install_cells(tmp_path / "_sources", repo)


# --- the built book -----------------------------------------------------------------------------------------
def _small_book(tmp_path: Path) -> Path:
    intro = "# Intro\n\nThis small book has one chapter, and this paragraph describes it for search engines.\n"
    good = chapter(
        "Good", 'profile = "quick"\nseed = 0', "import matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0])\nplt.show()"
    )
    install = f"```{{code-cell}} ipython3\n:tags: [remove-cell, {INSTALL_TAG}]\n{INSTALL_CELL}\n```\n\n"
    good = good.replace(
        "# Good\n",
        "# Good\n\nThe map $x \\mapsto x + g(x)$ with $\\|g\\| < 1$ is a residual "
        "layer & this chapter draws <b>one</b> line.\n\n" + install,
    )
    root = make_book(tmp_path / "src", {"intro": intro, "good": good})
    (root / "_config.yml").write_text(
        (root / "_config.yml")
        .read_text()
        .replace("sphinx:\n", "sphinx:\n  extra_extensions: [resnet_theory.book.page_meta]\n")
    )
    return root


def _links(page: Path) -> set[str]:
    import html

    return {html.unescape(h) for h in re.findall(r'href="(https://[^"]+)"', page.read_text())}


def test_a_build_with_the_address_has_the_buttons_the_filled_install_cell_and_open_graph(tmp_path, clean_env, capsys):
    clean_env.setenv("BOOK_REPOSITORY_URL", "https://github.com/example-org/resnet-book")
    clean_env.setenv("BOOK_REPOSITORY_COMMIT", SHA)
    clean_env.setenv("BOOK_SITE_URL", "https://example-org.github.io/resnet-book/")
    root, build = _small_book(tmp_path), tmp_path / "build"
    assert cli.main(["execute", "--jobs", "1", "--root", str(root), "--build-dir", str(build)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[book] repository ")]
    assert lines == [
        "[book] repository https://github.com/example-org/resnet-book, branch main (from "
        "BOOK_REPOSITORY_URL): repository, issue, edit and Binder buttons on the pages"
    ]
    page = build / "html" / "book" / "good.html"
    base = "https://github.com/example-org/resnet-book"
    assert _links(page) >= {
        base,
        f"{base}/edit/main/book/good.md",
        f"{base}/blob/main/book/good.md?plain=1",
        f"{base}/issues/new?title=Issue%20on%20page%20%2Fbook/good.html&body=Your%20issue%20content%20here.",
        "https://mybinder.org/v2/gh/example-org/resnet-book/main?urlpath=lab/tree/book/good.ipynb",
    }
    assert not any("colab" in link for link in _links(page))
    source = page.read_text()
    assert "PACKAGE_SOURCE" not in source and "importlib" not in source  # the install cell is not on the page
    download = nbformat.read(build / "html" / "_sources" / "book" / "good.ipynb", as_version=4)
    install = [c for c in download.cells if INSTALL_TAG in c.metadata.get("tags", [])]
    assert len(install) == 1 and f'"git+{base}.git@{SHA}"' in install[0].source
    # the executed notebook (the cache's copy) keeps the cell as written
    executed = nbformat.read(build / "executed" / "book" / "good.ipynb", as_version=4)
    assert [c.source for c in executed.cells if INSTALL_TAG in c.metadata.get("tags", [])] == [INSTALL_CELL]
    # description and Open Graph, escaped, with absolute addresses
    description = (
        "The map x \u21a6 x + g(x) with \u2016g\u2016 &lt; 1 is a residual layer &amp; this chapter draws one line."
    )
    assert f'<meta name="description" content="{description}" />' in source
    assert f'<meta property="og:description" content="{description}" />' in source
    assert '<meta property="og:title" content="Good" />' in source
    assert '<meta property="og:url" content="https://example-org.github.io/resnet-book/book/good.html" />' in source
    image = re.search(r'<meta property="og:image" content="([^"]+)" />', source).group(1)
    assert image.startswith("https://example-org.github.io/resnet-book/_images/") and image.endswith(".png")
    assert (build / "html" / image.split("/resnet-book/", 1)[1]).is_file()


def test_a_build_without_an_address_has_no_buttons_and_says_so_in_one_line(tmp_path, clean_env, capsys):
    root, build = _small_book(tmp_path), tmp_path / "build"
    assert cli.main(["execute", "--jobs", "1", "--root", str(root), "--build-dir", str(build)]) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if "repository" in line and line.startswith("[book]")] == [
        "[book] no repository address (BOOK_REPOSITORY_URL unset, not on GitHub Actions, no GitHub remote "
        "'origin'): built without repository, issue, edit and launch buttons"
    ]
    for name in ("intro", "good"):
        page = build / "html" / "book" / f"{name}.html"
        assert not {link for link in _links(page) if "github.com" in link or "mybinder" in link}, name
        assert '<meta name="description"' in page.read_text() and "og:url" not in page.read_text()
    download = nbformat.read(build / "html" / "_sources" / "book" / "good.ipynb", as_version=4)
    assert [c.source for c in download.cells if INSTALL_TAG in c.metadata.get("tags", [])] == [INSTALL_CELL]


@pytest.mark.parametrize(
    "name, value",
    [
        ("BOOK_REPOSITORY_URL", 'https://github.com/o/r"><script>x</script>'),
        ("BOOK_REPOSITORY_BRANCH", "main; rm -rf /"),
        ("BOOK_SITE_URL", "https://o.github.io/r/<x>"),
    ],
)
def test_a_malformed_address_is_refused_before_anything_runs(tmp_path, clean_env, capsys, name, value):
    clean_env.setenv("BOOK_REPOSITORY_URL", "https://github.com/o/r")
    clean_env.setenv(name, value)
    root, build = _small_book(tmp_path), tmp_path / "build"
    assert cli.main(["execute", "--jobs", "1", "--root", str(root), "--build-dir", str(build)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {name}=") and err.count("\n") == 1, err
    assert not (build / "executed").exists()


# --- Binder ---------------------------------------------------------------------------------------------------
def test_binder_installs_the_cpu_torch_the_lock_and_the_package_and_writes_the_notebooks(tmp_path):
    """binder/postBuild, run with a stand-in ``python`` that records its pip commands (no network): the CPU
    build of the pinned torch from PyTorch's index first, then the lock, then the package; and every page of
    the book written as the notebook its Binder button opens, install cell included."""
    env_yml = yaml.safe_load((ROOT / "binder" / "environment.yml").read_text())
    assert env_yml["dependencies"] == ["python=3.11", "pip"]
    repo = tmp_path / "repo"
    (repo / "book").mkdir(parents=True)
    for page in (ROOT / "book").glob("*.md"):
        shutil.copy(page, repo / "book")
    shutil.copy(ROOT / "requirements.lock", repo)
    shutil.copytree(ROOT / "binder", repo / "binder")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "pip.log"
    (bin_dir / "python").write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    (bin_dir / "python").chmod(0o755)
    (bin_dir / "jupytext").symlink_to(Path(sys.executable).parent / "jupytext")
    env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin")
    subprocess.run(["bash", "binder/postBuild"], cwd=repo, env=env, check=True, capture_output=True, text=True)
    torch_pin = next(
        line for line in (ROOT / "requirements.lock").read_text().splitlines() if line.startswith("torch==")
    )
    *pips, prose = log.read_text().splitlines()
    assert pips == [
        f"-m pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu {torch_pin}+cpu",
        "-m pip install --no-cache-dir -r requirements.lock",
        "-m pip install --no-cache-dir --no-deps --no-build-isolation -e .",
        "-m pip install --no-cache-dir -c requirements.lock -r requirements-jupyter.txt",
    ]
    # last, the chapters as reader's notebooks (resnet_theory.book.jupyter_prose), over the jupytext ones
    command, _, pages = prose.partition(" book/")
    assert command == "-m resnet_theory.book.jupyter_prose" and pages.endswith(" -o book")
    assert sorted(("book/" + pages).removesuffix(" -o book").split()) == sorted(
        f"book/{p.name}" for p in ROOT.glob("book/*.md")
    )
    for entry in toc_files(ROOT):
        nb = nbformat.read(repo / f"{entry}.ipynb", as_version=4)
        if entry.split("/")[-1] in REVIEWS:
            assert nb.cells[[c.cell_type for c in nb.cells].index("code")].source == INSTALL_CELL


# --- description and Open Graph -----------------------------------------------------------------------------
def test_math_in_a_description_reads_as_text():
    assert plain_math(r"x \mapsto x + g(x)") == "x \u21a6 x + g(x)"
    assert plain_math(r"\max_i \|A_i\| = O(1/\ell)") == "max_i \u2016A_i\u2016 = O(1/\u2113)"
    assert plain_math(r"\mathbb{R}^d, \lambda, \Omega") == "R^d, \u03bb, \u03a9"


def test_descriptions_are_cut_at_a_sentence_or_a_word():
    assert shorten("Short.") == "Short."
    sentences = "A first sentence that is long enough to keep. " * 6
    cut = shorten(sentences, 200)
    assert len(cut) <= 200 and cut.endswith("keep.")
    words = "word " * 60
    cut = shorten(words, 200)
    assert len(cut) <= 200 and cut.endswith("word\u2026")


def test_the_description_is_the_first_paragraph_of_prose():
    from docutils.core import publish_doctree

    doctree = publish_doctree(
        "Title\n=====\n\n.. note::\n\n   A note that is long enough to be taken for the "
        "description, but is an admonition.\n\nShort.\n\nThe first real paragraph of "
        "prose, long enough to describe the page.\n"
    )
    assert page_description(doctree) == "The first real paragraph of prose, long enough to describe the page."


def test_meta_tags_escape_every_value():
    tags = meta_tags('A "title" <b>', "x < y & z", "Book", None, None)
    assert '<meta property="og:title" content="A &quot;title&quot; &lt;b&gt;" />' in tags
    assert '<meta name="description" content="x &lt; y &amp; z" />' in tags
    assert "og:url" not in tags and "og:image" not in tags


def test_the_book_configuration_loads_the_page_metadata_extension():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "resnet_theory.book.page_meta" in config["sphinx"]["extra_extensions"]
    assert config["html"]["use_repository_button"] is False  # the build turns it on where the address is known
