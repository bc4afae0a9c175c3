"""The book's ledger page (``book/ledger.md``): a build's published claims, each with the source of its evidence
function, the command that re-checks it alone and, when the build ran across seeds, how many seeds agree.

- **Source.** A claim's record names its evidence function's file and first line (``source_file``,
  ``source_line``); the page links them into the repository (:meth:`resnet_theory.book.repository.Repository.
  blob_url`, at the built commit where the build knows it, else the branch) when the repository's address is known,
  and shows ``path:line`` otherwise.
- **Re-check.** ``python -m resnet_theory.claims verify ID`` (:func:`resnet_theory.claims.run.verify_command`).
- **Seeds.** ``make verdicts-across-seeds`` executes the book again at other seeds in ``<build>/seed-N``. The page
  counts a seed build's verdicts for a chapter only when its claims files pass the same checks as this build's
  (:func:`resnet_theory.book.claims_files.verify_claims_files`) and the chapter was executed there with the same
  code cells, modules, environment and parameters but the seed; a seed build that does not qualify is named, with
  why, under the table.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..ledger_html import ClaimLinks, SeedAgreement, ledger_section
from ..record import Claim, LedgerDefect
from . import repository
from .cache import read_cache_record
from .claims_files import (
    CLAIMS_SUFFIX,
    book_root,
    claims_files,
    default_directory,
    published,
    read_claims_file,
    verify_claims_files,
)

SEED_BUILD = re.compile(r"^seed-(\d+)$")


def package_path(root: Path | None) -> str | None:
    """Where the package's folder (``lib``, holding ``resnet_theory``) is in the repository rooted at ``root``;
    None when the package is not inside it (installed elsewhere)."""
    import resnet_theory

    if root is None:
        return None
    folder = Path(resnet_theory.__file__).resolve().parents[1]
    try:
        return folder.relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return None


def source_links(
    claims: list[Claim], repo: repository.Repository | None, prefix: str | None
) -> dict[str, tuple[str, str | None]]:
    """claim id -> (``path:line`` of its evidence function, its address in ``repo`` or None)."""
    out = {}
    for c in claims:
        if not c.source_file:
            continue
        label = f"{c.source_file}:{c.source_line}" if c.source_line else c.source_file
        url = None
        if repo is not None and prefix is not None:
            path = c.source_file if prefix in ("", ".") else f"{prefix}/{c.source_file}"
            url = repo.blob_url(path, c.source_line)
        out[c.id] = (label, url)
    return out


def _entries(executed: Path) -> dict[str, list[Claim]]:
    """chapter entry -> its claims, for the claims files under ``executed``."""
    files = claims_files(executed)
    return {p.relative_to(executed).as_posix()[: -len(CLAIMS_SUFFIX)]: read_claims_file(p)[0] for p in files}


def _without_seed(components: object) -> object:
    if not isinstance(components, dict):
        return None
    params = components.get("parameters")
    params = {k: v for k, v in params.items() if k != "seed"} if isinstance(params, dict) else params
    return {**components, "parameters": params}


def _seed_label(record: dict | None, fallback: str) -> str:
    params = (record or {}).get("parameters")
    seed = params.get("seed") if isinstance(params, dict) else None
    return f"seed {seed}" if isinstance(seed, int) else fallback


def seed_agreement(build: Path, claims: list[Claim], root: Path | None) -> tuple[dict[str, SeedAgreement], list[str]]:
    """Per claim id, this build's verdict and each comparable seed build's (see the module docstring), and a
    line for each seed build, or chapter of one, that is not counted."""
    seeds = sorted(
        (int(m.group(1)), p / "executed")
        for p in build.glob("seed-*")
        if (m := SEED_BUILD.match(p.name)) and (p / "executed").is_dir()
    )
    if not seeds:
        return {}, []
    main = _entries(build / "executed")
    entry_of = {c.id: entry for entry, cs in main.items() for c in cs}
    runs: dict[str, list[tuple[str, str]]] = {
        c.id: [(_seed_label(read_cache_record(build, entry_of[c.id]), "this build"), c.verdict)]
        for c in claims
        if c.id in entry_of
    }
    notes = []
    for number, executed in seeds:
        name = f"seed-{number}"
        try:
            verify_claims_files(executed, claims_files(executed), root)
            other = _entries(executed)
        except LedgerDefect as exc:
            notes.append(f"{name} not counted: {exc}")
            continue
        for entry, cs in main.items():
            mine, theirs = read_cache_record(build, entry), read_cache_record(executed.parent, entry)
            if entry not in other or theirs is None:
                notes.append(f"{name}: {entry} not counted (not executed there)")
                continue
            if _without_seed((mine or {}).get("components")) != _without_seed(theirs.get("components")):
                notes.append(f"{name}: {entry} not counted (executed with other code, modules, environment or knobs)")
                continue
            verdicts = {c.id: c.verdict for c in other[entry]}
            label = _seed_label(theirs, f"seed {number}")
            for c in cs:
                if c.id in runs:
                    runs[c.id].append((label, verdicts.get(c.id, "missing")))
    return {cid: SeedAgreement(tuple(r)) for cid, r in runs.items() if len(r) > 1}, notes


@dataclass
class LedgerPage:
    """What the ledger page shows: the published claims and skipped statements, and per claim its links."""

    claims: list[Claim]
    skipped: list[dict]
    links: dict[str, ClaimLinks] = field(default_factory=dict)
    #: Seed builds (or chapters of them) not counted, one line each.
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_build(cls, executed: Path | None = None, root: Path | None = None) -> LedgerPage:
        """The page of the build whose ``executed`` folder is given (default: the executor's build folder)."""
        from ..claims.run import verify_command

        executed = Path(executed) if executed is not None else default_directory()
        if executed is None:
            return cls([], [])
        root = root if root is not None else book_root()
        claims, skipped = published(executed, verify=True, root=root)
        repo = repository.from_environment(root)[0] if root is not None else None
        sources = source_links(claims, repo, package_path(root))
        seeds, notes = seed_agreement(executed.parent, claims, root)
        links = {
            c.id: ClaimLinks(
                command=verify_command(c.id),
                source_label=sources.get(c.id, (None, None))[0],
                source_url=sources.get(c.id, (None, None))[1],
                seeds=seeds.get(c.id),
            )
            for c in claims
        }
        return cls(claims, skipped, links, notes)

    def section(self, part: str):
        """One part of the page (:func:`resnet_theory.ledger_html.ledger_section`); the table of every claim
        ends with the seed builds that were not counted."""
        from IPython.display import HTML

        out = ledger_section(part, self.claims, self.skipped, self.links)
        if part == "claims" and self.notes:
            items = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
            out = HTML(out.data + f'<p>Seed builds not counted:</p><ul class="claims-seed-notes">{items}</ul>')
        return out
