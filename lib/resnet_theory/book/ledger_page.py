"""The book's ledger page (``book/ledger.md``): a build's published claims in book order (chapters in ``_toc.yml``'s
order, each chapter's claims in the order it checks them; grouped by paper on the page, with filters by paper,
verdict and source; the book's own questions apart, as its findings), each with the source of its evidence
function, the command that re-checks it alone and, when the build ran across seeds, how many seeds agree.

- **Source.** A claim's record names its evidence function's file and first line (``source_file``,
  ``source_line``); the page links them into the repository (:meth:`resnet_theory.book.repository.Repository.
  blob_url`, at the built commit where the build knows it, else the branch) when the repository's address is known,
  and shows ``path:line`` otherwise.
- **Re-check.** ``python -m resnet_theory.claims verify ID`` (:func:`resnet_theory.claims.run.verify_command`).
- **Seeds.** ``make verdicts-across-seeds`` re-checks every claim alone at several seeds (``python -m
  resnet_theory.claims verify --all --seeds ... --record``), which writes ``<build>/claims-across-seeds.json``;
  the page shows, per claim, how many seeds give this build's verdict, for the chapters executed at the profile
  the seeds were checked at. What is not shown (a damaged file, another profile) is said under the table.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..ledger_html import ClaimLinks, SeedAgreement, ledger_section
from ..record import Claim
from ..verdicts import VERDICTS
from . import repository
from .cache import read_cache_record
from .claims_files import CLAIMS_SUFFIX, book_root, claims_files, default_directory, published, read_claims_file
from .files import read_json_object
from .toc import toc_files


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


def book_order(claims: list[Claim], entries: list[str]) -> list[Claim]:
    """The claims in book order: by chapter, in the order of ``entries`` (``_toc.yml``'s, e.g. ``book/linear``),
    and within a chapter in the order the chapter checks them (the order given). A chapter the TOC does not name
    comes after the others, in the order given."""
    position = {Path(entry).name: i for i, entry in enumerate(entries)}
    return sorted(claims, key=lambda c: position.get(c.chapter, len(position)))


def _entries(executed: Path) -> dict[str, list[Claim]]:
    """chapter entry -> its claims, for the claims files under ``executed``."""
    files = claims_files(executed)
    return {p.relative_to(executed).as_posix()[: -len(CLAIMS_SUFFIX)]: read_claims_file(p)[0] for p in files}


def _seeds_problem(data: dict | None) -> str | None:
    """What is wrong with a seeds file's content (None when it is what ``verify --record`` writes)."""
    if data is None:
        return "not a JSON object"
    seeds, claims = data.get("seeds"), data.get("claims")
    if not isinstance(data.get("profile"), str) or not isinstance(seeds, list) or not isinstance(claims, dict):
        return "it needs a profile, a list of seeds and the claims"
    if not seeds or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds):
        return "its seeds are not integers"
    for cid, rec in claims.items():
        verdicts = rec.get("verdicts") if isinstance(rec, dict) else None
        if not isinstance(verdicts, list) or len(verdicts) != len(seeds):
            return f"claim {cid!r} does not have one verdict per seed"
        if not all(v is None or v in VERDICTS for v in verdicts):
            return f"claim {cid!r} has an unknown verdict"
    return None


def seed_agreement(build: Path, claims: list[Claim]) -> tuple[dict[str, SeedAgreement], list[str]]:
    """Per claim id, the verdicts that re-checking it alone at each seed gave (``<build>/claims-across-seeds.json``,
    written by ``python -m resnet_theory.claims verify --all --seeds ... --record``) beside this build's; and a line
    for what is not shown: a damaged file (shown, never trimmed), a chapter executed at another profile than the
    seeds were checked at, claims the file does not have."""
    from ..claims.cli import SEEDS_FILE

    path = build / SEEDS_FILE
    if not path.exists():
        return {}, []
    data = read_json_object(path)
    problem = _seeds_problem(data)
    if problem:
        return {}, [f"{SEEDS_FILE} is damaged ({problem}): no seeds shown; run make verdicts-across-seeds again"]
    notes, out, absent = [], {}, []
    for entry, cs in _entries(build / "executed").items():
        profile = (read_cache_record(build, entry) or {}).get("profile")
        if profile != data["profile"]:
            notes.append(f"{entry}: executed at profile {profile}, the seeds were checked at {data['profile']}")
            continue
        for c in cs:
            rec = data["claims"].get(c.id)
            if rec is None:
                absent.append(c.id)
                continue
            runs = tuple((f"seed {s}", v or "error") for s, v in zip(data["seeds"], rec["verdicts"]))
            out[c.id] = SeedAgreement(c.verdict, runs)
    if absent:
        notes.append(f"{SEEDS_FILE} has no verdicts for {', '.join(absent)}")
    return out, notes


def within_build(claims: list[Claim]) -> list[Claim]:
    """The claims with ``rests_on`` limited to what this build shows: an id that the library declares but whose
    chapter this build did not execute (``execute --only``) is left out of the page's "rests on" lists; an id
    that no claims module declares stays, and the page refuses it."""
    from ..claims.registry import all_claims

    built = {c.id for c in claims}
    declared = {d.id for d in all_claims()}
    return [
        replace(c, rests_on=[r for r in c.rests_on if r in built or r not in declared] or None) if c.rests_on else c
        for c in claims
    ]


@dataclass
class LedgerPage:
    """What the ledger page shows: the published claims and skipped statements, and per claim its links."""

    claims: list[Claim]
    skipped: list[dict]
    links: dict[str, ClaimLinks] = field(default_factory=dict)
    #: What of the seeds check is not shown, and why, one line each.
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
        claims = within_build(claims)
        if root is not None and (Path(root) / "_toc.yml").is_file():
            entries = toc_files(Path(root))
            claims = book_order(claims, entries)
            position = {Path(entry).name: i for i, entry in enumerate(entries)}
            skipped = sorted(skipped, key=lambda s: position.get(s.get("chapter"), len(position)))
        repo = repository.from_environment(root)[0] if root is not None else None
        sources = source_links(claims, repo, package_path(root))
        seeds, notes = seed_agreement(executed.parent, claims)
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
        ends with what of the seeds check is not shown, and why."""
        from IPython.display import HTML

        out = ledger_section(part, self.claims, self.skipped, self.links)
        if part == "claims" and self.notes:
            items = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
            out = HTML(out.data + f'<p>Seeds not shown:</p><ul class="claims-seed-notes">{items}</ul>')
        return out
