"""``python -m resnet_theory.book``: the executor's command line (:mod:`resnet_theory.book.cli`)."""

import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while Python imports the executor: one line, as later
    print("[book] interrupted (SIGINT) before any page was executed; nothing was written", file=sys.stderr)
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
