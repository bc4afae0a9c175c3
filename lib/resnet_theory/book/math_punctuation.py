"""Sphinx extension: punctuation right after inline math stays on the math's line.

MathJax typesets inline math as a box, and a browser may break the line after a box even before a full stop, so
"... the bound $\\gamma/m$." can put the "." alone at the start of the next line. On HTML pages each inline math
node followed directly by punctuation (``.,;:!?)``, with any closing quote or bracket) is wrapped, with that
punctuation, in a ``<span class="math-nowrap" style="white-space: nowrap">``; the text after it is untouched.
Inline math longer than ``LONG_INLINE`` characters of TeX gets the class ``math-long`` (see ``book.css``).
(The chapter sources keep the punctuation on the math's line too: ``tests/test_reading.py`` checks that.)
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

#: The punctuation that must not start a line after inline math.
PUNCTUATION = re.compile(r"^[.,;:!?)\]\u2019\u201d]+")
#: Inline math with more TeX than this is marked ``math-long``: book.css lets it scroll in its own box on a phone
#: (MathJax 3 does not break lines, so a long formula would otherwise run past the screen's edge).
LONG_INLINE = 60
OPEN = '<span class="math-nowrap" style="white-space: nowrap">'


class KeepPunctuationWithMath(SphinxPostTransform):
    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs) -> None:
        for math in list(self.document.findall(nodes.math)):
            if len(math.astext()) > LONG_INLINE:
                math["classes"].append("math-long")
            parent = math.parent
            index = parent.index(math)
            if index + 1 >= len(parent) or not isinstance(parent[index + 1], nodes.Text):
                continue
            text = parent[index + 1].astext()
            match = PUNCTUATION.match(text)
            if not match:
                continue
            rest = text[match.end() :]
            wrapped = [
                nodes.raw("", OPEN, format="html"),
                math,
                nodes.Text(match.group(0)),
                nodes.raw("", "</span>", format="html"),
            ]
            if rest:
                wrapped.append(nodes.Text(rest))
            # Replace by position: Text nodes are strings, so ``parent.remove(text)`` would take the first
            # *equal* node, which may be another math's "." earlier in the paragraph.
            parent[index : index + 2] = wrapped


def setup(app):
    app.add_post_transform(KeepPunctuationWithMath)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
