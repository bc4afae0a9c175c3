"""The PDF builder's small parts (the whole book printed to PDF is tested in test_book.py)."""

from __future__ import annotations

from resnet_theory.book.pdf import main, page_title

from conftest import one_line_error


def test_page_titles_drop_the_book_name():
    assert page_title("<html><title>Claims ledger &#8212; Residual Networks, Executed</title>") == "Claims ledger"
    assert page_title("<title>A: b - c</title>") == "A: b"
    assert page_title("<html></html>") == "page"


def test_no_built_book_is_one_line_and_exit_2(tmp_path, capsys):
    err = one_line_error(capsys, main, [str(tmp_path / "nowhere")], code=2)
    assert "no built book" in err and "make book" in err
