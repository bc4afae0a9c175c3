"""``python -m resnet_theory.claims``: list and re-check claims (:mod:`resnet_theory.claims.cli`)."""

import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while Python imports the command (numpy, torch): one line, as later
    print("error: interrupted (SIGINT)", file=sys.stderr)
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
