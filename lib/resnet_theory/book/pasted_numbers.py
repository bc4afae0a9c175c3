"""Sphinx extension: a number glued into the prose reads as a reader writes it, not as Python prints it.

A chapter quotes a computed number with ``{glue:text}`name:.1e``` (or ``:.3g``), and Python's format gives
``3.4e-16``, ``1e+07`` or ``inf``. On HTML pages each glued text (myst-nb's ``pasted-text``) is rewritten as the
book's tables write numbers (:func:`resnet_theory.tables.number_html`): ``3.4×10<sup>−16</sup>``, ``10<sup>7</sup>``,
``∞``; its value and its class are kept, and text without a Python number form is left as it is.
"""

from __future__ import annotations

import html

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

from ..tables import PYTHON_NUMBER, number_html

#: The class myst-nb gives the inline node of a ``{glue:text}`` role.
PASTED = "pasted-text"


class WritePastedNumbers(SphinxPostTransform):
    default_priority = 890
    formats = ("html",)

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(nodes.inline)):
            text = node.astext()
            if PASTED not in node["classes"] or not PYTHON_NUMBER.search(text):
                continue
            node.children = []
            node += nodes.raw("", number_html(html.escape(text)), format="html")


def setup(app):
    app.add_post_transform(WritePastedNumbers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
