"""``python -m resnet_theory.book``: the executor's command line (:mod:`resnet_theory.book.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
