"""Numbers glued into the prose read as the tables write them (resnet_theory.book.pasted_numbers): the linear
chapter said "a relative 3.4e-16" and "a factor of up to 1e+07" (issue 33 review)."""

from __future__ import annotations

import yaml

from conftest import ROOT, sphinx_page


def test_the_book_loads_the_extension():
    sphinx = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    assert "resnet_theory.book.pasted_numbers" in sphinx["extra_extensions"]


def test_glued_python_numbers_are_written_as_numbers_and_other_text_is_kept(tmp_path):
    """myst-nb's ``{glue:text}`` is an inline node of class ``pasted-text``; a role of that class stands in for it
    (the same node, without executing a notebook)."""
    body = (
        ".. role:: pasted-text\n\n"
        "A relative :pasted-text:`3.4e-16`, up to :pasted-text:`1e+07`, :pasted-text:`inf` and "
        ":pasted-text:`-1e+03`; kept: :pasted-text:`0.674`, :pasted-text:`13,546,816`, :pasted-text:`x<1e-3`, "
        "and 2e-05 outside a glued number.\n"
    )
    page = sphinx_page(tmp_path, "resnet_theory.book.pasted_numbers", body)
    span = '<span class="pasted-text">'
    assert f"A relative {span}3.4\u00d710<sup>\u221216</sup></span>, up to {span}10<sup>7</sup></span>" in page
    assert f"{span}\u221e</span> and {span}-1,000</span>;" in page
    assert f"kept: {span}0.674</span>, {span}13,546,816</span>, {span}x&lt;0.001</span>" in page
    assert "and 2e-05 outside a glued number." in page
