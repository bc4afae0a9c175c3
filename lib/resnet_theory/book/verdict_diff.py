"""Compare the claims ledgers of several book builds: same claim ids, same verdicts?

A verdict the book publishes should not depend on the seed: the claims ledger of a build at
``-p seed 1`` must list the same claims, under the same ids, with the same verdicts as the build at
seed 0. This module reads the ``*.claims.json`` files that :meth:`resnet_theory.ledger.Ledger.show`
writes beside each executed chapter and reports every difference:

- a claim id present in one build and not in another (ids must be stable across builds);
- a claim whose verdict differs between builds;
- a claim whose negative control holds in some build (a defect the ledger refuses anyway).

Usage, after building the book at several seeds (``make verdicts-across-seeds`` does both steps)::

    python -m resnet_theory.book.verdict_diff _build _build/seed-1 _build/seed-2

Each argument is a build directory (its ``executed/`` folder is read), an ``executed/`` folder, any
folder holding ``*.claims.json`` files, or one claims file (such as the ``x.claims.json`` that
``python -m resnet_theory.book run CHAPTER -o x.ipynb`` writes beside its notebook)::

    python -m resnet_theory.book.verdict_diff seed0.claims.json seed3.claims.json

The exit status is 0 when every build agrees, 1 when they differ, 2 when an argument cannot be read.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..claims.registry import retired_into
from ..record import Claim, control_holds
from ..validate import OneLineParser
from .claims_files import CLAIMS_SUFFIX, load_claims, read_claims_file


def claims_folder(path: str | Path) -> Path:
    """The folder to read claims from: ``<build>/executed`` if it exists, else ``path`` itself."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"no such build folder: {str(path)!r}")
    executed = path / "executed"
    folder = executed if executed.is_dir() else path
    if not any(not p.name.startswith(".") for p in folder.rglob("*.claims.json")):  # as load_claims reads them
        raise FileNotFoundError(f"no *.claims.json under {str(folder)!r}: was the book executed there?")
    return folder


@dataclass
class VerdictDiff:
    """What differs between the ledgers of several builds (``labels[i]`` names build ``i``)."""

    labels: list[str]
    #: claim id -> verdict per build (``None`` where the build lacks the claim), over every id seen.
    verdicts: dict[str, list[str | None]]
    #: claim ids whose negative control holds in at least one build: id -> labels of those builds.
    controls_holding: dict[str, list[str]] = field(default_factory=dict)

    @property
    def missing(self) -> dict[str, list[str]]:
        """Claim ids absent from some build: id -> labels of the builds that lack it."""
        return {
            cid: [lab for lab, v in zip(self.labels, vs) if v is None]
            for cid, vs in self.verdicts.items()
            if any(v is None for v in vs)
        }

    @property
    def changed(self) -> dict[str, list[str | None]]:
        """Claim ids present in every build whose verdicts are not all equal."""
        return {cid: vs for cid, vs in self.verdicts.items() if all(v is not None for v in vs) and len(set(vs)) > 1}

    @property
    def agree(self) -> bool:
        return not self.missing and not self.changed and not self.controls_holding

    def report(self) -> str:
        lines = [f"{len(self.verdicts)} claims over {len(self.labels)} builds: " + ", ".join(self.labels)]
        for cid, vs in sorted(self.changed.items()):
            lines.append(f"VERDICT DIFFERS  {cid}: " + ", ".join(f"{lab}={v}" for lab, v in zip(self.labels, vs)))
        for cid, labs in sorted(self.missing.items()):
            into = retired_into(cid)
            moved = f" (a retired id: merged into {into[0]}, {into[1]})" if into else ""
            lines.append(f"ID MISSING       {cid}: absent from " + ", ".join(labs) + moved)
        for cid, labs in sorted(self.controls_holding.items()):
            lines.append(f"CONTROL HOLDS    {cid}: in " + ", ".join(labs))
        if self.agree:
            counts: dict[str, int] = {}
            for vs in self.verdicts.values():
                counts[vs[0]] = counts.get(vs[0], 0) + 1
            lines.append(
                "every build has the same claim ids and the same verdicts: "
                + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
            )
        return "\n".join(lines)


def compare_claims(builds: Sequence[Sequence[Claim]], labels: Sequence[str]) -> VerdictDiff:
    """Compare the claims of several builds, one list of claims per build."""
    if len(builds) != len(labels):
        raise ValueError(f"compare_claims: {len(builds)} builds but {len(labels)} labels")
    if len(builds) < 2:
        raise ValueError(f"compare_claims: need at least two builds to compare, got {len(builds)}")
    by_id = []
    for label, claims in zip(labels, builds):
        ids = [c.id for c in claims]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"build {label!r} records claim ids more than once: {repeated}")
        by_id.append({c.id: c for c in claims})
    every_id = sorted(set().union(*by_id))
    verdicts = {cid: [b[cid].verdict if cid in b else None for b in by_id] for cid in every_id}
    holding: dict[str, list[str]] = {}
    for label, b in zip(labels, by_id):
        for cid, claim in b.items():
            if control_holds(claim):
                holding.setdefault(cid, []).append(label)
    return VerdictDiff(list(labels), verdicts, holding)


def read_build(path: str | Path) -> list[Claim]:
    """The claims of one argument: a claims file (``*.claims.json``), read strictly, or a build or claims folder
    (:func:`claims_folder`)."""
    path = Path(path)
    if path.is_file():
        if not path.name.endswith(CLAIMS_SUFFIX):
            raise ValueError(f"{str(path)!r} is a file but not a claims file (*{CLAIMS_SUFFIX})")
        return read_claims_file(path)[0]
    return load_claims(claims_folder(path))


def compare_builds(paths: Sequence[str | Path]) -> VerdictDiff:
    """Compare the ledgers of the builds, claims folders or claims files at ``paths``."""
    return compare_claims([read_build(p) for p in paths], [str(p) for p in paths])


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m resnet_theory.book.verdict_diff",
        description="Compare the claims ledgers of several book builds or claims files (claim ids and verdicts).",
    )
    parser.add_argument(
        "builds", nargs="+", help="build folders (their executed/ is read) or claims files (*.claims.json), two or more"
    )
    args = parser.parse_args(argv)
    if len(args.builds) < 2:
        parser.error("give at least two build folders or claims files to compare")
    try:
        diff = compare_builds(args.builds)
    except (FileNotFoundError, ValueError) as err:
        print(f"verdict_diff: {err}", file=sys.stderr)
        return 2
    print(diff.report())
    return 0 if diff.agree else 1


if __name__ == "__main__":
    sys.exit(main())
