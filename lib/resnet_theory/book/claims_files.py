"""A build's claims files, read strictly and published only when they are what the build executed.

A chapter's :meth:`resnet_theory.ledger.Ledger.show` writes ``<build>/executed/<chapter>.claims.json`` (through a
temporary the executor moves into place), and the executor records, in the chapter's execution record
``<build>/cache/<chapter>.json``, the SHA-256 of that claims file together with the SHA-256 of the executed
notebook beside it and the parameters and profile it ran with. The ledger page publishes a claims file only when
its chapter is in the TOC and that record binds it to the notebook in place (:func:`verify_claims_files`): a
claims file edited by hand, copied from another build (with or without its record), or left beside a notebook
it did not come from is refused, so the ledger and the chapter's page cannot say different things; and a claims
file the record says was written but that is missing fails the page instead of dropping the chapter's claims.
The digests catch accidents and copies; they are not a signature.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from ..ledger_html import refuse_defects
from ..record import Claim, LedgerDefect, claims_document
from .cache import cache_record_path, read_cache_record
from .files import file_sha, read_json_object
from .toc import BookError, find_root, toc_files

#: The build folder of the run (set by the executor for the pages it runs): where the claims files are.
BUILD_DIR_ENV = "RESNET_THEORY_BUILD_DIR"
#: The book's root (set by the executor for the pages it runs), where ``_toc.yml`` is.
ROOT_ENV = "RESNET_THEORY_ROOT"
CLAIMS_SUFFIX = ".claims.json"


class ClaimsFileError(LedgerDefect, ValueError):
    """A claims file that cannot be published or compared: malformed (not JSON, unknown keys, wrong types),
    a claim id recorded twice, a chapter no longer in the book's TOC, a file that differs from the one its
    chapter's execution recorded, bound to another notebook than the one in place, or missing although its
    execution record says it was written. The message names the file."""


def claims_files(directory: Path) -> list[Path]:
    """The published claims files under ``directory``. Hidden files are skipped: they are the executor's
    temporaries (``.NAME.partial-PID.claims.json``) of a chapter still executing, or of a run that was killed."""
    return [p for p in sorted(Path(directory).rglob("*" + CLAIMS_SUFFIX)) if not p.name.startswith(".")]


def read_claims_file(path: Path) -> tuple[list[Claim], list[dict]]:
    """The claims and skipped statements of one claims file; :class:`ClaimsFileError` naming the file for
    anything a chapter's :meth:`resnet_theory.ledger.Ledger.save` could not have written."""
    try:
        data = json.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ClaimsFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ClaimsFileError(f"{path}: not a claims file (not JSON: {exc})") from None
    try:
        claims, skipped = claims_document(data)
    except ValueError as exc:
        raise ClaimsFileError(f"{path}: malformed claims file: {exc}") from None
    for claim in claims:  # printed as they are by run and verdict_diff: no terminal control sequence, no newline
        if not claim.id.isprintable():
            raise ClaimsFileError(f"{path}: malformed claims file: the claim id {claim.id!r} holds control characters")
    return claims, skipped


def default_directory() -> Path | None:
    """``<build>/executed`` of the executor's build folder, when the executor says where it is."""
    build = os.environ.get(BUILD_DIR_ENV)
    return Path(build) / "executed" if build else None


def book_root() -> Path | None:
    """The book's root: the executor says where it is; else the nearest ``_toc.yml`` above the working folder."""
    if os.environ.get(ROOT_ENV):
        return Path(os.environ[ROOT_ENV])
    try:
        return find_root()
    except BookError:
        return None


def _notebook_parameters(notebook: Path) -> dict | None:
    """The parameters papermill recorded in the executed notebook (None where it recorded none)."""
    nb = read_json_object(notebook) or {}
    record = (nb.get("metadata") or {}).get("papermill")
    params = record.get("parameters") if isinstance(record, dict) else None
    return params if isinstance(params, dict) else None


def _bound_to_notebook(path: Path, entry: str, record: dict, where: Path) -> None:
    """The execution record binds the claims file to the notebook in place: its digest, its parameters, its
    profile. :class:`ClaimsFileError` otherwise."""
    notebook = path.with_name(path.name[: -len(CLAIMS_SUFFIX)] + ".ipynb")
    again = f"execute {entry} again"
    if not isinstance(record.get("notebook_sha"), str) or record["notebook_sha"] != file_sha(notebook):
        state = "is missing" if not notebook.is_file() else "is not the notebook"
        raise ClaimsFileError(
            f"{path}: the executed page {notebook.name} {state} that the execution which wrote these claims "
            f"recorded in {where} (a claims file and record from another build?): {again}"
        )
    params = record.get("parameters")
    if not isinstance(params, dict) or record.get("profile") != params.get("profile", record.get("profile")):
        raise ClaimsFileError(
            f"{path}: its execution record {where} does not say one profile and its parameters "
            f"(profile {record.get('profile')!r}, parameters {params!r}): {again}"
        )
    ran = _notebook_parameters(notebook)
    if ran is not None and json.loads(json.dumps(ran, sort_keys=True, default=repr)) != json.loads(
        json.dumps(params, sort_keys=True, default=repr)
    ):
        raise ClaimsFileError(
            f"{path}: {notebook.name} ran with parameters {ran!r}, its execution record {where} says {params!r}: "
            f"{again}"
        )


def _missing_claims(build: Path, executed: Path, present: set[str], entries: Sequence[str] | None) -> None:
    """A claims file that an execution record says was written and that is not there fails the page."""
    if entries is None:
        cache = build / "cache"
        entries = sorted(p.relative_to(cache).with_suffix("").as_posix() for p in cache.rglob("*.json"))
    for entry in entries:
        if entry in present:
            continue
        record = read_cache_record(build, entry)
        if record is not None and isinstance(record.get("claims_sha"), str):
            raise ClaimsFileError(
                f"{executed / (entry + CLAIMS_SUFFIX)}: missing, but executing {entry} wrote it (its execution "
                f"record {cache_record_path(build, entry)} has its SHA-256): the ledger would drop the chapter's "
                f"claims while its page shows them; execute {entry} again"
            )


def verify_claims_files(executed: Path, files: Sequence[Path], root: Path | None = None) -> None:
    """Check that the claims files in a build's ``executed`` folder are what its chapters' executions wrote:
    each file's chapter is in the book's TOC; the execution record ``<build>/cache/<chapter>.json`` has the
    file's SHA-256, and binds it to the executed notebook in place (its SHA-256, the parameters it ran with, one
    profile); and no record says a claims file was written that is not there. Raises :class:`ClaimsFileError`
    naming the file otherwise (edited by hand, copied from another build, left by a removed chapter, deleted)."""
    build = Path(executed).parent
    entries = None
    if root is not None and (Path(root) / "_toc.yml").is_file():
        entries = toc_files(Path(root))
    present = set()
    for path in files:
        entry = path.relative_to(executed).as_posix()[: -len(CLAIMS_SUFFIX)]
        present.add(entry)
        if entries is not None and entry not in entries:
            raise ClaimsFileError(
                f"{path}: claims of {entry}, which is not a chapter in {Path(root) / '_toc.yml'} "
                f"(a removed or renamed chapter): delete the file"
            )
        where = cache_record_path(build, entry)
        record = read_cache_record(build, entry)
        if record is None or "claims_sha" not in record:
            raise ClaimsFileError(
                f"{path}: no execution record ({where}) says that executing {entry} wrote it: execute {entry} again"
            )
        if record["claims_sha"] != file_sha(path):
            raise ClaimsFileError(
                f"{path}: not the file that executing {entry} wrote (its SHA-256 differs from "
                f"the one in {where}; edited by hand?): execute {entry} again"
            )
        _bound_to_notebook(path, entry, record, where)
    _missing_claims(build, Path(executed), present, entries)


def _load(directory, verify: bool | None, root: Path | None = None) -> tuple[list[Claim], list[dict]]:
    if directory is None:
        directory = default_directory()
        if directory is None:
            return [], []
        verify = True if verify is None else verify
    directory = Path(directory)
    files = claims_files(directory)
    if verify:
        verify_claims_files(directory, files, root if root is not None else book_root())
    claims: list[Claim] = []
    skipped: list[dict] = []
    where: dict[str, Path] = {}
    for path in files:
        file_claims, file_skipped = read_claims_file(path)
        for c in file_claims:
            if c.id in where:
                other = where[c.id]
                raise ClaimsFileError(
                    f"{path}: claim {c.id!r} is recorded twice"
                    + ("" if other == path else f" (also in {other})")
                    + ": claim ids must be unique across the book"
                )
            where[c.id] = path
        claims.extend(file_claims)
        skipped.extend(file_skipped)
    return claims, skipped


def load_claims(directory: str | os.PathLike | None = None, *, verify: bool | None = None) -> list[Claim]:
    """Every claim of the ``*.claims.json`` files under ``directory`` (default: the executor's build folder).

    Each file is read strictly (:func:`read_claims_file`), and a claim id may appear once in all of them; any
    problem raises :class:`ClaimsFileError` naming the file. With ``verify`` (the default when reading the
    executor's build folder, as the ledger page does) each file is also checked against what executed it
    (:func:`verify_claims_files`). Hidden files (the executor's temporaries) are skipped.
    """
    return _load(directory, verify)[0]


def load_skipped(directory: str | os.PathLike | None = None, *, verify: bool | None = None) -> list[dict]:
    """Every printed statement the chapters list as not checked (:meth:`resnet_theory.ledger.Ledger.skip`), in
    file order (the files checked as :func:`load_claims` checks them)."""
    return _load(directory, verify)[1]


def published(
    directory: str | os.PathLike | None = None, *, verify: bool | None = None, root: Path | None = None
) -> tuple[list[Claim], list[dict]]:
    """The claims and skipped statements the ledger page publishes (read and verified as :func:`load_claims`
    does, against the TOC of ``root``, by default :func:`book_root`), refused whole when any has a defect
    (:func:`resnet_theory.ledger_html.ledger_defects`): a claims file no chapter could have written, or a
    ``rests_on`` naming no claim, stops the page and the build."""
    claims, skipped = _load(directory, verify, root)
    refuse_defects(claims, skipped)
    return claims, skipped


def published_claims(directory: str | os.PathLike | None = None) -> list[Claim]:
    """The claims of :func:`published`."""
    return published(directory)[0]
