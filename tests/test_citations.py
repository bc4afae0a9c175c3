"""Citations that tell two papers of one author and year apart (resnet_theory.book.citations), on a small
Sphinx project with the book's bibliography and the settings of ``_config.yml``."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
import yaml
from pybtex.database import Entry, Person

from resnet_theory.book.citations import AuthorYearLabels

from conftest import ROOT


def test_the_book_config_uses_the_distinct_styles():
    sphinx = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    assert "resnet_theory.book.citations" in sphinx["extra_extensions"]
    assert sphinx["config"]["bibtex_reference_style"] == "author_year_distinct"
    assert sphinx["config"]["bibtex_default_style"] == "alpha_author_year"


def test_two_papers_of_one_author_and_year_are_told_apart(tmp_path):
    shutil.copy(ROOT / "references.bib", tmp_path)
    (tmp_path / "conf.py").write_text(
        'extensions = ["sphinxcontrib.bibtex", "resnet_theory.book.citations"]\n'
        'bibtex_bibfiles = ["references.bib"]\n'
        'bibtex_reference_style = "author_year_distinct"\nbibtex_default_style = "alpha_author_year"\n'
    )
    (tmp_path / "index.rst").write_text(
        "Test\n====\n\nBoth :cite:p:`he2016deep,he2016identity`; :cite:t:`he2016identity`; "
        ":cite:p:`hardt2017identity`.\n\n.. bibliography::\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "text", str(tmp_path), str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    text = " ".join((tmp_path / "out" / "index.txt").read_text().split())
    assert "Both [He *et al.*, 2016a, He *et al.*, 2016b]" in text
    assert "He *et al.* [2016b]" in text and "[Hardt and Ma, 2017]" in text  # one paper of a year: no letter
    bibliography = text[text.index("[Hardt and Ma, 2017] Moritz") :]
    assert re.search(
        r"\[He et al\., 2016a\] Kaiming He.*Deep Residual.*\[He et al\., 2016b\].*Identity Mappings", bibliography, re.I
    )


def test_labels_follow_the_citation_form_and_refuse_an_entry_without_year_or_author():
    labels = AuthorYearLabels()
    one = Entry("article", fields={"year": "2018"}, persons={"author": [Person("Shamir, Ohad")]})
    two = Entry("article", fields={"year": "2017"}, persons={"author": [Person("Hardt, M."), Person("Ma, T.")]})
    assert list(labels.format_labels([one, two, one])) == ["Shamir, 2018a", "Hardt and Ma, 2017", "Shamir, 2018b"]
    with pytest.raises(ValueError, match="no year"):
        labels.format_label(Entry("article", persons={"author": [Person("Shamir, Ohad")]}))
    with pytest.raises(ValueError, match="no author"):
        labels.format_label(Entry("article", fields={"year": "2018"}))
