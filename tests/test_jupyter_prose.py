"""The prose's numbers in JupyterLab (issue 33, item 3): the reader's notebook (resnet_theory.book.jupyter_prose), and
an executed chapter's downloadable notebook (the small book of tests/reader_book.py, executed and built as the book
is) opened in JupyterLab with jupyterlab-myst in headless Chromium, as a reader would open it, then run again."""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from resnet_theory.book import jupyter_prose
from resnet_theory.book.jupyter_prose import (
    IMPORT_CELL,
    GluedError,
    format_value,
    glued,
    reader_notebook,
    split_spec,
)
from test_book import chromium_or_skip

from conftest import MYST_HEADER, one_line_error


def _chapter(*cells) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    nb.cells = list(cells)
    return nb


def _glue_output(name: str, text: str, display: bool = False) -> dict:
    prefix = "" if display else jupyter_prose.GLUE_PREFIX
    return nbformat.v4.new_output(
        "display_data",
        data={prefix + "text/plain": text},
        metadata={"scrapbook": {"name": name, "mime_prefix": prefix}},
    )


def _executed() -> nbformat.NotebookNode:
    install = nbformat.v4.new_code_cell("pass", metadata={"tags": ["remove-cell", "install-resnet-theory"]})
    code = nbformat.v4.new_code_cell("glue(...)")
    code.outputs = [_glue_output("ratio", "0.123456"), _glue_output("verdict", "corrected"), _glue_output("n", "12")]
    prose = nbformat.v4.new_markdown_cell(
        "The ratio is {glue:text}`ratio:.3f` ({glue:text}`verdict`, n = {glue:text}`n:,d`); again "
        "{glue:text}`ratio:.3f`. A `{code}` span and {cite}`key` stay."
    )
    return _chapter(nbformat.v4.new_markdown_cell("# Title"), install, code, prose)


def test_the_spec_is_read_as_myst_nb_reads_the_role():
    assert split_spec("ratio:.3f") == ("ratio", ".3f")
    assert split_spec("verdict") == ("verdict", "")
    for bad, message in [("", "needs a name"), ("other.ipynb::x", "another notebook")]:
        with pytest.raises(GluedError, match=message):
            split_spec(bad)


def test_values_are_formatted_with_myst_nbs_own_formatter():
    from myst_nb.core.variables import format_plain_text

    for text, fmt in [("0.123456", ".3f"), ("12345", ",d"), ("'a string'", ""), ("corrected", "")]:
        assert format_value({"text/plain": text}, f"x:{fmt}" if fmt else "x") == format_plain_text(text, fmt or "s")
    assert format_value({"text/plain": "0.123456"}, "x:.1%") == "12.3%"
    with pytest.raises(GluedError, match="without a text/plain"):
        format_value({"image/png": "..."}, "x")


def test_numbers_in_python_form_read_as_on_the_html_pages():
    """A number the HTML pages rewrite (``pasted_numbers``) reads the same in JupyterLab, in plain text."""
    from myst_nb.core.variables import format_plain_text

    from resnet_theory.tables import number_html

    cases = [
        ("2e-07", ".1e", "2.0\u00d710\u207b\u2077", "2.0\u00d710<sup>\u22127</sup>"),
        ("13546816.0", ".2e", "1.35\u00d710\u2077", "1.35\u00d710<sup>7</sup>"),
        ("1e-06", ".0e", "10\u207b\u2076", "10<sup>\u22126</sup>"),
        ("-1000.0", ".0e", "-1,000", "-1,000"),
        ("inf", ".3g", "\u221e", "\u221e"),
        ("0.0", ".1e", "0", "0"),
    ]
    for text, fmt, plain, page in cases:
        assert format_value({"text/plain": text}, f"x:{fmt}") == plain
        assert number_html(format_plain_text(text, fmt)) == page, "the HTML pages write the same number"
    with pytest.raises(GluedError, match="cannot be formatted as '.3f'"):
        format_value({"text/plain": "corrected"}, "x:.3f")


def test_an_executed_chapter_becomes_a_notebook_whose_prose_carries_its_numbers():
    nb = _executed()
    reader = reader_notebook(nb)
    assert nb.cells[3].source.startswith("The ratio is {glue:text}"), "the chapter itself is left unchanged"
    prose = reader.cells[4]
    assert "{glue" not in prose.source
    assert prose.source.startswith('The ratio is {eval}`glued("ratio:.3f")` ({eval}`glued("verdict")`')
    assert "A `{code}` span and {cite}`key` stay." in prose.source
    shown = {e["expression"]: e["result"]["data"]["text/plain"] for e in prose.metadata["user_expressions"]}
    assert shown == {'glued("ratio:.3f")': "0.123", 'glued("verdict")': "corrected", 'glued("n:,d")': "12"}
    assert all(e["result"]["status"] == "ok" for e in prose.metadata["user_expressions"])
    # the import cell comes right after the install cell, before any glue; hidden from the HTML
    assert [c.source for c in reader.cells if c.cell_type == "code"][:2] == ["pass", IMPORT_CELL]
    assert "remove-cell" in reader.cells[2].metadata["tags"]
    nbformat.validate(reader)
    assert reader_notebook(reader) == reader, "a reader's notebook is left as it is"


def test_an_unexecuted_chapter_gets_the_expressions_without_results(tmp_path):
    path = tmp_path / "chapter.md"
    path.write_text(MYST_HEADER + "\n# T\n\nIt is {glue:text}`x:.2f`.\n\n```{code-cell} ipython3\nx = 1\n```\n")
    reader = reader_notebook(jupyter_prose.read_chapter(path))
    prose = [c for c in reader.cells if c.cell_type == "markdown"][0]
    assert 'It is {eval}`glued("x:.2f")`.' in prose.source and "user_expressions" not in prose.metadata
    assert [c.source for c in reader.cells if c.cell_type == "code"] == [IMPORT_CELL, "x = 1"]


def test_what_a_reader_notebook_cannot_show_is_refused_with_its_cell():
    nb = _executed()
    nb.cells[3].source += " And {glue:text}`missing:.2f`."
    with pytest.raises(GluedError, match=r"markdown cell 3 quotes missing:.2f, which no cell glued"):
        reader_notebook(nb)
    for other in ["{glue}`ratio`", "{glue:md}`ratio`", "```{glue:figure} ratio\n```"]:
        nb = _executed()
        nb.cells[3].source += "\n\n" + other
        with pytest.raises(GluedError, match=r"markdown cell 3: \{glue(:[a-z]+)?\} cannot be shown"):
            reader_notebook(nb)


def test_the_kernel_side_records_glued_values_and_formats_them(monkeypatch):
    monkeypatch.setattr(jupyter_prose, "_VALUES", {})
    with pytest.raises(LookupError, match="'ratio' is not computed yet: run the chapter's cells, then this cell"):
        glued("ratio:.3f")
    message = {"msg_type": "display_data", "content": _glue_output("ratio", "0.123456")}
    assert jupyter_prose._record(message) is message
    jupyter_prose._record({"msg_type": "display_data", "content": {"data": {"text/plain": "1"}, "metadata": {}}})
    assert jupyter_prose._VALUES == {"ratio": {"text/plain": "0.123456"}}
    shown = glued("ratio:.3f")
    assert shown == "0.123" and repr(shown) == "0.123", "the kernel reports it without quotes"
    assert jupyter_prose.watch() is False, "no Jupyter kernel in the test process"


def test_the_html_builds_downloads_are_rewritten_in_place(tmp_path):
    sources = tmp_path / "_sources" / "book"
    sources.mkdir(parents=True)
    nbformat.write(_executed(), sources / "ch.ipynb")
    nbformat.write(_chapter(nbformat.v4.new_markdown_cell("# Intro, no numbers")), sources / "intro.ipynb")
    assert jupyter_prose.rewrite_folder(tmp_path / "_sources") == 1
    assert "{eval}`glued(" in nbformat.read(sources / "ch.ipynb", as_version=4).cells[4].source
    assert jupyter_prose.rewrite_folder(tmp_path / "_sources") == 1, "rewriting again changes nothing"


def test_the_command_line(tmp_path, capsys):
    nbformat.write(_executed(), tmp_path / "ch.ipynb")
    assert jupyter_prose.main([str(tmp_path / "ch.ipynb"), "-o", str(tmp_path / "out")]) == 0
    assert "4 numbers in the prose" in capsys.readouterr().out
    assert (tmp_path / "out" / "ch.ipynb").is_file()
    err = one_line_error(capsys, jupyter_prose.main, [str(tmp_path / "nope.ipynb"), "-o", str(tmp_path)])
    assert "no such file" in err
    err = one_line_error(capsys, jupyter_prose.main, [str(tmp_path / "ch.ipynb"), "-o", str(tmp_path)])
    assert "would overwrite its source" in err
    bad = _executed()
    bad.cells[3].source += " {glue:text}`missing`"
    nbformat.write(bad, tmp_path / "bad.ipynb")
    err = one_line_error(capsys, jupyter_prose.main, [str(tmp_path / "bad.ipynb"), "-o", str(tmp_path / "o")], code=1)
    assert "which no cell glued" in err
    (tmp_path / "x.txt").write_text("x")
    err = one_line_error(capsys, jupyter_prose.main, [str(tmp_path / "x.txt"), "-o", str(tmp_path / "o")], code=1)
    assert "not a notebook (.ipynb) or a MyST chapter (.md)" in err


def test_the_command_line_replaces_only_what_it_wrote_and_keeps_a_readers_edits(tmp_path, capsys, monkeypatch):
    """Found by a misuse audit: ``-o book/`` replaced a notebook paired with its chapter, ``-o lib/...`` wrote into
    the package, and ``make jupyter`` wrote over the notebooks a reader had edited in ``_build/jupyter``."""
    from test_executor import make_book

    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "ch": "# Ch\n"})
    (root / "lib").mkdir()
    monkeypatch.chdir(tmp_path)
    nbformat.write(_executed(), tmp_path / "ch.ipynb")
    source = str(tmp_path / "ch.ipynb")
    # Binder writes each chapter's notebook beside its chapter: allowed while nothing else stands there
    assert jupyter_prose.main([source, "-o", str(root / "book")]) == 0
    assert jupyter_prose.existing_target(root / "book" / "ch.ipynb") == "written"
    assert jupyter_prose.main([source, "-o", str(root / "book")]) == 0, "what it wrote it may write again"
    capsys.readouterr()
    # a notebook paired with its chapter (jupytext), or any other file: never replaced
    paired = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("mine")]))
    (root / "book" / "ch.ipynb").write_text(paired)
    err = one_line_error(capsys, jupyter_prose.main, [source, "-o", str(root / "book")])
    assert "is not a reader's notebook this command wrote" in err
    assert (root / "book" / "ch.ipynb").read_text() == paired
    for folder, words in (
        (root / "lib", "inside the book's sources"),
        (root / "book" / "sub", "inside the book's sources"),
        (tmp_path / "ch.ipynb", "not a folder"),
    ):
        err = one_line_error(capsys, jupyter_prose.main, [source, "-o", str(folder)])
        assert words in err, err
    assert not (root / "lib" / "ch.ipynb").exists() and not (root / "book" / "sub").exists()
    # a reader's notebook edited (or run) since it was written is moved aside, not lost
    out = tmp_path / "jupyter"
    assert jupyter_prose.main([source, "-o", str(out)]) == 0
    edited = nbformat.read(out / "ch.ipynb", as_version=4)
    edited.cells[3].source += " My note."
    nbformat.write(edited, out / "ch.ipynb")
    mine = (out / "ch.ipynb").read_text()
    capsys.readouterr()
    assert jupyter_prose.main([source, "-o", str(out)]) == 0
    kept = [p for p in out.iterdir() if p.name.startswith("ch.edited-")]
    assert len(kept) == 1 and kept[0].read_text() == mine
    assert f"your edited copy kept as {kept[0].name}" in capsys.readouterr().out
    assert jupyter_prose.existing_target(out / "ch.ipynb") == "written"
    # two chapters of one name, a truncated notebook: one line each, nothing written
    (tmp_path / "other").mkdir()
    nbformat.write(_executed(), tmp_path / "other" / "ch.ipynb")
    err = one_line_error(capsys, jupyter_prose.main, [source, str(tmp_path / "other" / "ch.ipynb"), "-o", str(out)])
    assert "would both be written to" in err
    (tmp_path / "cut.ipynb").write_text((tmp_path / "ch.ipynb").read_text()[:200])
    err = one_line_error(capsys, jupyter_prose.main, [str(tmp_path / "cut.ipynb"), "-o", str(out)], code=1)
    assert "cut.ipynb: cannot be read as a notebook (NotJSONError" in err
    assert not (out / "cut.ipynb").exists()


# --- an executed chapter opened in JupyterLab with jupyterlab-myst, as a reader opens the downloaded notebook -------
def jupyterlab_or_skip() -> None:
    """JupyterLab and jupyterlab-myst (``make jupyter-install``); a skip with the reason where they are missing, a
    failure in CI."""
    import importlib.util

    missing = [m for m in ("jupyterlab", "jupyterlab_myst") if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{', '.join(missing)} required in CI (make test installs them: make jupyter-install)")
        pytest.skip(f"{', '.join(missing)} not installed (make jupyter-install); the JupyterLab check did not run")


def test_nbformat_imports_without_the_iri_grammar_jupyterlab_brings():
    """``make jupyter-install`` removes rfc3987-syntax again (see the Makefile): with it, every process that imports
    nbformat (the executor, each chapter's worker, papermill, Sphinx) builds about 35 Earley parsers first."""
    probe = "import sys, nbformat, jsonschema; print('rfc3987_syntax' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stdout + proc.stderr


@contextlib.contextmanager
def jupyterlab(folder: Path):
    """A JupyterLab server on ``folder`` (a free local port, a token, its settings and workspaces in ``folder``);
    yields its address with the token, as ``url + "/lab/tree/NAME.ipynb?token=..."`` takes it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = os.urandom(12).hex()
    state = folder / ".jupyter-state"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(state / "config"), JUPYTER_RUNTIME_DIR=str(state / "runtime"))
    args = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}"]
    args += [f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={folder}"]
    args += ["--LabApp.expose_app_in_browser=True", f"--LabApp.workspaces_dir={state / 'workspaces'}"]
    args += [f"--LabApp.user_settings_dir={state / 'settings'}"]
    log = (folder / "jupyterlab.log").open("w")
    server = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"JupyterLab exited: {(folder / 'jupyterlab.log').read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not answer within 120 s") from None
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", token
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


#: The rendered text of every markdown cell of the open notebook, one string per cell.
PROSE = "Array.from(document.querySelectorAll('.jp-MarkdownCell')).map(function (c) { return c.innerText; })"
#: The state of the open notebook's kernel ("idle" once it has started and is waiting).
KERNEL = (
    "(function () { var w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
    " var c = w && w.sessionContext;"
    " var k = c && c.session && c.session.kernel; return k ? k.status : 'no kernel'; })()"
)
#: The text of every code cell's output.
OUTPUTS = "Array.from(document.querySelectorAll('.jp-Cell-outputArea')).map(function (c) { return c.innerText; })"


def _until(browser, tab, script: str, done, what: str, timeout: float = 180.0):
    deadline = time.monotonic() + timeout
    while True:
        value = browser.evaluate(tab, script)
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"JupyterLab never showed {what}; last seen: {json.dumps(value)[:1500]}")
        time.sleep(0.5)


def _sentence(prose: list[str], start: str) -> str:
    """The sentence of the rendered prose that begins with ``start`` (up to a full stop before a space or the end)."""
    found = re.search(re.escape(start) + r".*?\.(?=\s|$)", " ".join(" ".join(prose).split()))
    return found.group(0) if found else ""


@pytest.mark.browser
def test_an_executed_chapter_opened_in_jupyterlab_shows_its_numbers_and_a_rerun_updates_them(reader_html, tmp_path):
    """The notebook the built book offers for download (``_sources``) opened in JupyterLab with jupyterlab-myst: the
    prose shows the glued numbers, never a raw role; Run All shows the new run's numbers after their cell, and
    Render All Markdown Cells those quoted before the cell that computes them."""
    from resnet_theory.book.browser import find_chromium
    from resnet_theory.book.devtools import Browser

    chromium_or_skip()
    jupyterlab_or_skip()
    page = (reader_html / "book" / "reader.html").read_text()
    assert 'Its error is <span class="pasted-text">3.4\u00d710<sup>\u221216</sup></span>.' in page
    shutil.copy(reader_html / "_sources" / "book" / "reader.ipynb", tmp_path / "reader.ipynb")
    executed = nbformat.read(tmp_path / "reader.ipynb", as_version=4)
    pid = jupyter_prose.glued_values(executed)["reader_pid"]["text/plain"]
    with jupyterlab(tmp_path) as (url, token), Browser(find_chromium(), timeout=240) as browser:
        tab = browser.open(f"{url}/lab/tree/reader.ipynb?token={token}", 1400, 3000)
        prose = _until(browser, tab, PROSE, lambda p: "is 0.123," in " ".join(p), "the executed numbers")
        assert _sentence(prose, "The answer is") == f"The answer is 0.123, computed by process {pid}."
        assert _sentence(prose, "Quoted before") == f"Quoted before the cell that computes it: process {pid}."
        assert _sentence(prose, "Its error is") == "Its error is 3.4\u00d710\u207b\u00b9\u2076.", "as on the page"
        assert not [p for p in prose if "{glue" in p or "{eval}" in p or "glued(" in p], prose
        # Run All in the reader's kernel: the output says which process ran it, the prose after it follows
        _until(browser, tab, KERNEL, lambda status: status == "idle", "its kernel started")
        browser.evaluate(tab, "window.jupyterapp.commands.execute('notebook:run-all-cells').then(function () {})")

        def ran(outputs):
            return [n for n in re.findall(r"kernel process (\d+)", " ".join(outputs)) if n != pid]

        rerun = ran(_until(browser, tab, OUTPUTS, ran, "the notebook run again"))[0]
        _until(browser, tab, PROSE, lambda p: f"by process {rerun}." in " ".join(p), "the new run's number after it")
        browser.evaluate(tab, "window.jupyterapp.commands.execute('notebook:render-all-markdown').then(function () {})")
        prose = _until(
            browser, tab, PROSE, lambda p: f"it: process {rerun}." in " ".join(p), "the number quoted before"
        )
        assert _sentence(prose, "Quoted before") == f"Quoted before the cell that computes it: process {rerun}."
        assert _sentence(prose, "The answer is") == f"The answer is 0.123, computed by process {rerun}."


# --- the book's own downloads: the numbers a JupyterLab reader sees are the numbers the pages show -----------------
PASTED_SPAN = re.compile(r'<span class="pasted-text">(.*?)</span>', re.S)


def _page_numbers(page: str) -> set[str]:
    """The glued texts of a built page as plain text: a ``<sup>`` power in superscript characters (as
    :func:`resnet_theory.tables.number_text` writes it), Sphinx's curly apostrophes straight."""
    superscript = str.maketrans(
        "\u22120123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
    )

    def plain(span: str) -> str:
        span = re.sub(r"<sup>(.*?)</sup>", lambda m: m.group(1).translate(superscript), span)
        return html.unescape(re.sub(r"<[^>]+>", "", span)).replace("\u2019", "'")

    return {plain(m.group(1)) for m in PASTED_SPAN.finditer(page)}


def test_the_downloaded_chapters_show_the_numbers_their_pages_show(built_book):
    """Every number a chapter's downloadable notebook shows in JupyterLab (its ``user_expressions``) is one its page
    shows, written the same way (``3.4×10⁻¹⁶``, not ``3.4e-16``), and the other way round."""
    for chapter in ("linear", "expressivity", "smooth_maps", "linear_predictors", "experiments"):
        download = nbformat.read(built_book.html / "_sources" / "book" / f"{chapter}.ipynb", as_version=4)
        shown = {
            e["result"]["data"]["text/plain"].replace("\u2019", "'")
            for c in download.cells
            if c.cell_type == "markdown"
            for e in c.metadata.get("user_expressions", [])
        }
        page = _page_numbers((built_book.html / "book" / f"{chapter}.html").read_text())
        assert len(shown) > 30, f"{chapter}: {len(shown)} numbers in its prose"
        assert shown == page, f"{chapter}: JupyterLab only {sorted(shown - page)}; page only {sorted(page - shown)}"
