"""Sphinx extension: author-year citations that tell two papers of one author and year apart.

sphinxcontrib-bibtex's ``author_year`` style cites both of He, Zhang, Ren and Sun's 2016 papers as "He et al.,
2016", so "[He et al., 2016, He et al., 2016]" names two different papers alike. Here, as in natbib, such papers
get a letter after the year ("2016a", "2016b", in the order of the bibliography, which sorts by author, year and
title), in the text and in the bibliography, whose labels read like the citations ("He et al., 2016a").

- :class:`AuthorYearLabels` (pybtex label style ``author_year``): one label per entry, "Last", "Last and Last"
  or "Last et al.", a comma and the year, with a letter where two entries share a label;
- :class:`AuthorYearStyle` (pybtex formatting style ``alpha_author_year``): pybtex's ``alpha`` with those labels;
- :class:`DistinctAuthorYear` (referencing style ``author_year_distinct``): ``author_year`` whose year is read
  from the entry's label, so the letter appears in the text too.

``_config.yml`` names the last two (``bibtex_default_style`` and ``bibtex_reference_style``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pybtex.plugin
from pybtex.richtext import Text
from pybtex.style.formatting.alpha import Style as AlphaStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.template import node
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import GroupReferenceStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
from sphinxcontrib.bibtex.style.referencing.basic_author_year import (
    BasicAuthorYearParentheticalReferenceStyle,
    BasicAuthorYearTextualReferenceStyle,
)
from sphinxcontrib.bibtex.style.template import join, join2, post_text, pre_text, reference

#: A label's year, with the letter that tells it apart, at its end: "He et al., 2016a" -> "2016a".
_LABEL_YEAR = re.compile(r", (\d{4}[a-z]?)$")


def _last_names(entry) -> list[str]:
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    return [" ".join(p.prelast_names + p.last_names).replace("{", "").replace("}", "") for p in persons]


class AuthorYearLabels(BaseLabelStyle):
    """Labels that read like author-year citations, with "a", "b", ... where two entries would share one."""

    def format_label(self, entry) -> str:
        names = _last_names(entry)
        if not names:
            raise ValueError(f"bibliography entry {entry.key!r} has no author or editor to cite it by")
        who = names[0] if len(names) == 1 else " and ".join(names) if len(names) == 2 else f"{names[0]} et al."
        year = entry.fields.get("year")
        if not year:
            raise ValueError(f"bibliography entry {entry.key!r} has no year to cite it by")
        return f"{who}, {year}"

    def format_labels(self, sorted_entries):
        labels = [self.format_label(entry) for entry in sorted_entries]
        count, seen = Counter(labels), Counter()
        for label in labels:
            if count[label] == 1:
                yield label
            else:
                yield label + chr(ord("a") + seen[label])
                seen[label] += 1


class AuthorYearStyle(AlphaStyle):
    """pybtex's ``alpha`` formatting, labelled by :class:`AuthorYearLabels`."""

    default_label_style = AuthorYearLabels


@node
def label_year(children, data) -> Text:
    """The year as the entry's label gives it (with its letter), else the entry's year field."""
    assert not children
    match = _LABEL_YEAR.search(data["formatted_entry"].label)
    return Text(match.group(1) if match else data["entry"].fields.get("year", "n.d."))


@dataclass
class _Parenthetical(BasicAuthorYearParentheticalReferenceStyle):
    def inner(self, role_name: str):
        return join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
            pre_text,
            reference[
                join(sep=self.author_year_sep)[self.person.author_or_editor_or_title(full="s" in role_name), label_year]
            ],
            post_text,
        ]


@dataclass
class _Textual(BasicAuthorYearTextualReferenceStyle):
    def inner(self, role_name: str):
        return join(sep=self.text_reference_sep)[
            self.person.author_or_editor_or_title(full="s" in role_name),
            join[
                self.bracket.left,
                join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[pre_text, reference[label_year], post_text],
                self.bracket.right,
            ],
        ]


@dataclass
class DistinctAuthorYear(AuthorYearReferenceStyle):
    """``author_year`` with the year (and its letter) from the entry's label, for ``{cite:p}`` and ``{cite:t}``."""

    def __post_init__(self):
        AuthorYearReferenceStyle.__post_init__(self)
        common = dict(person=self.person, pre_text_sep=self.pre_text_sep, post_text_sep=self.post_text_sep)
        replaced = {
            BasicAuthorYearParentheticalReferenceStyle: _Parenthetical(
                bracket=self.bracket_parenthetical, author_year_sep=self.author_year_sep, **common
            ),
            BasicAuthorYearTextualReferenceStyle: _Textual(
                bracket=self.bracket_textual, text_reference_sep=self.text_reference_sep, **common
            ),
        }
        self.styles = [replaced.get(type(s), s) for s in self.styles]
        self.role_style = {}
        GroupReferenceStyle.__post_init__(self)


def setup(app):
    pybtex.plugin.register_plugin("pybtex.style.labels", "author_year", AuthorYearLabels)
    pybtex.plugin.register_plugin("pybtex.style.formatting", "alpha_author_year", AuthorYearStyle)
    register_plugin("sphinxcontrib.bibtex.style.referencing", "author_year_distinct", DistinctAuthorYear)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
