"""The print styles (``_static/book.css``, ``@media print``) that decide what the PDF leaves out, checked without a
browser: each rule's selector is matched (soupsieve, the CSS engine of BeautifulSoup) against the HTML the book's
renderers write, so that a rule cannot silently hide the wrong thing or stop matching what it should."""

from __future__ import annotations

import re
from pathlib import Path

from bs4 import BeautifulSoup

from resnet_theory.ledger import Ledger
from resnet_theory.ledger_html import claims_table_html
from resnet_theory.verdicts import Check

CSS = (Path(__file__).resolve().parents[1] / "_static" / "book.css").read_text(encoding="utf-8")


def _print_rules() -> list[tuple[str, str]]:
    """(selector, declarations) of every rule inside an ``@media print`` block."""
    css = re.sub(r"/\*.*?\*/", "", CSS, flags=re.S)
    rules = []
    for block in re.finditer(r"@media print \{((?:[^{}]*\{[^{}]*\})*)\s*\}", css):
        rules += [(s.strip(), d.strip()) for s, d in re.findall(r"([^{}]+)\{([^{}]*)\}", block.group(1))]
    return rules


def _claims():
    ledger = Ledger("alpha")
    ledger.claim(
        "hardt-ma/x", paper="hardt-ma", ref="Theorem 2.1", statement="a bound holds", section="alpha-x",
        printed=Check.at_most([1.0], 1.5, what="the value against the bound"),
        control=Check.at_most([3.0], 1.5, what="a value the claim rules out"),
        control_input="a value twice the bound, which the claim rules out",
    )  # fmt: skip
    return ledger.claims


def test_a_chapters_claims_table_is_replaced_by_a_pointer_in_print_and_the_ledgers_tables_are_not():
    """A chapter's closing table of its claims repeats rows the ledger prints with their evidence (about nine A4
    pages): in print it is hidden and one sentence points to the ledger. The ledger page's tables (its claims
    browser, its findings) match neither rule."""
    rules = _print_rules()
    ours = [(s, d) for s, d in rules if s.startswith("div.output") and "table.claims-ledger" in s]
    hide = [s for s, d in ours if "display: none" in d and "::" not in s]
    note = [(s, d) for s, d in ours if s.endswith("::before")]
    assert hide and note, "no print rule hides a chapter's claims table and says where its claims are"
    assert "claims ledger" in note[0][1]
    chapter = BeautifulSoup(
        f'<div class="output text_html">{claims_table_html(_claims(), link=False)}</div>', "html.parser"
    )
    ledger = BeautifulSoup(
        f'<div class="output text_html">{claims_table_html(_claims(), link=True)}</div>'
        '<div class="output text_html"><table class="claims-ledger claims-findings"><tr><td>a finding</td></tr>'
        "</table></div>",
        "html.parser",
    )
    assert chapter.select(hide[0]) and chapter.select(note[0][0].removesuffix("::before"))
    assert not ledger.select(hide[0]) and not ledger.select(note[0][0].removesuffix("::before"))


def test_the_ledgers_counts_table_is_set_small_on_screen_and_left_to_the_print_styles_in_print():
    """Its ninth column ("all") was cut at the column's edge at 1400 px: on screen it takes the wide tables' type and
    padding; in print the ledger's compact 8.5 pt (set in an ``@media print`` block) still applies."""
    css = re.sub(r"/\*.*?\*/", "", CSS, flags=re.S)
    screen = re.search(r"@media screen \{((?:[^{}]*\{[^{}]*\})*)\s*\}", css)
    assert screen and re.search(r"table\.claims-counts \{[^}]*font-size: 0\.8em", screen.group(1))
    assert not re.search(r"(?m)^table\.claims-counts \{[^}]*font-size", css), "a rule outside the screen block"
    assert any("table.claims-counts" in s and "font-size: 8.5pt" in d for s, d in _print_rules())


def test_a_printed_ledger_cards_location_label_is_the_screen_tables_column_header():
    """In print each claim is a card whose location reads "<the third column's header> <location>" (a ``::before``
    rule): the card said "printed in" after the column became "stated in" (most sources are not the printed text),
    so the label is checked against the header the table writes."""
    rules = [(s, d) for s, d in _print_rules() if s.endswith("td:nth-child(3)::before") and "claims-ledger" in s]
    assert rules, "no print rule labels the card's location"
    label = re.search(r'content: "([^"]*)"', rules[0][1]).group(1).strip()
    table = BeautifulSoup(claims_table_html(_claims(), link=True), "html.parser")
    assert label == table.select("table.claims-ledger thead th")[2].get_text()
