"""Where the book's source lives: the repository, issue, edit and launch buttons, and the chapters' install cell.

The public repository's address is known only where the book is built from it, so it comes from the
environment, first found first:

1. ``BOOK_REPOSITORY_URL`` (``https://github.com/OWNER/REPO``), with ``BOOK_REPOSITORY_BRANCH`` (default
   ``main``) and optionally ``BOOK_REPOSITORY_COMMIT``;
2. on GitHub Actions (``GITHUB_ACTIONS=true``): ``GITHUB_SERVER_URL``/``GITHUB_REPOSITORY``, the pushed branch
   (``GITHUB_REF_NAME``) and commit (``GITHUB_SHA``); the Pages workflow builds the book there;
3. ``git remote get-url origin``, when it is a plain GitHub address (https or ssh).

Every value is untrusted: it must match a strict pattern (``https://github.com/`` and a GitHub owner and
repository name; a branch of letters, digits and ``._/-``; a hexadecimal commit), so it holds no quote, space,
markup or credentials before it reaches a configuration file or a page. A malformed ``BOOK_REPOSITORY_*`` or
``GITHUB_*`` value is refused (:class:`RepositoryError`); a remote that is not a plain GitHub address only leaves
the address unknown (and is never printed: it may carry a token). ``BOOK_SITE_URL``, the address the HTML is
served at (the Pages workflow sets it), is checked the same way and becomes ``html_baseurl``.

With an address, :func:`configure` turns on, in the staged ``_config.yml`` the HTML is built from, the
repository, issue, edit and source buttons (the edit and source links go to the chapter's MyST source,
``book/NAME.md``, not to the executed notebook the page is built from) and a Binder launch button (Binder
builds ``binder/``, whose ``postBuild`` writes each chapter as the ``.ipynb`` the button opens). There is no
Colab button: Colab opens only notebooks stored in a GitHub repository, and this one stores MyST markdown.
A Colab user uploads the page's downloaded ``.ipynb``, whose first code cell (:data:`INSTALL_TAG`, removed from
the HTML page) installs ``resnet_theory`` when it is missing; :func:`fill_install_cells` writes the address
(:attr:`Repository.pip_source`) into that cell of every downloadable notebook. Without an address the book
builds without these buttons, and :func:`configure` returns the one line that says so.

This module is also a Sphinx extension (``setup``), listed in the staged configuration only when the address
is known: it turns on the theme's source button, which Jupyter Book's ``html:`` section cannot.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

URL_ENV = "BOOK_REPOSITORY_URL"
BRANCH_ENV = "BOOK_REPOSITORY_BRANCH"
COMMIT_ENV = "BOOK_REPOSITORY_COMMIT"
SITE_ENV = "BOOK_SITE_URL"
DEFAULT_BRANCH = "main"
BINDERHUB_URL = "https://mybinder.org"
#: The tag of each chapter's install cell (with ``remove-cell``, so the HTML page does not show it).
INSTALL_TAG = "install-resnet-theory"
#: The line of the install cell that :func:`fill_install_cells` rewrites.
INSTALL_LINE = re.compile(r"^PACKAGE_SOURCE = None\b.*$", re.M)
#: The install cell, the first code cell of every review chapter (tests/test_repository.py checks each copy).
INSTALL_CELL = """\
# Installs resnet_theory where it is missing (Colab, a Jupyter without the book's
# environment); does nothing where it is importable, as in the book's own builds.
import importlib.util
import subprocess
import sys

PACKAGE_SOURCE = None  # a downloaded notebook has the book's repository here
if importlib.util.find_spec("resnet_theory") is None:
    if PACKAGE_SOURCE is None:
        raise ModuleNotFoundError(
            "resnet_theory is not installed: see 'Running a chapter on Binder or "
            "Colab' in the book's introduction")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "myst-nb",
                    f"resnet-theory @ {PACKAGE_SOURCE}"], check=True)
    importlib.invalidate_caches()"""

_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}"
_NAME = r"(?!\.\.?(?:\.git)?/?$)[A-Za-z0-9._-]{1,100}?"
_HTTPS = re.compile(rf"https://github\.com/(?P<owner>{_OWNER})/(?P<name>{_NAME})(?:\.git)?/?")
_SSH = re.compile(rf"(?:git@github\.com:|ssh://git@github\.com/)(?P<owner>{_OWNER})/(?P<name>{_NAME})(?:\.git)?/?")
_BRANCH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*(?:/[A-Za-z0-9_][A-Za-z0-9._-]*)*")
_COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_SITE = re.compile(
    r"https://[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(?::[0-9]{1,5})?"
    r"(?:/[A-Za-z0-9._~-]+)*/?"
)


class RepositoryError(ValueError):
    """A repository address, branch, commit or site address given to the build is malformed."""


def _shown(value: str) -> str:
    """A malformed value as an error message shows it: credentials masked, cut to 80 characters, as repr."""
    value = re.sub(r"(?<=://)[^/@]*@", "***@", value)
    return repr(value if len(value) <= 80 else value[:77] + "...")


@dataclass(frozen=True)
class Repository:
    owner: str
    name: str
    branch: str = DEFAULT_BRANCH
    commit: str | None = None
    #: where the address came from (an environment variable, GitHub Actions or the git remote)
    origin: str = URL_ENV

    @property
    def url(self) -> str:
        return f"https://github.com/{self.owner}/{self.name}"

    @property
    def pip_source(self) -> str:
        """What pip installs the package from: the commit the book was built from where known, else the branch."""
        return f"git+{self.url}.git@{self.commit or self.branch}"

    def binder_url(self, path: str) -> str:
        return f"{BINDERHUB_URL}/v2/gh/{self.owner}/{self.name}/{self.branch}?urlpath=lab/tree/{path}"

    def edit_url(self, path: str) -> str:
        return f"{self.url}/edit/{self.branch}/{path}"

    def blob_url(self, path: str, line: int | None = None) -> str:
        """A file of the repository (``path`` from its root) at the built commit where known, else the branch."""
        return f"{self.url}/blob/{self.commit or self.branch}/{path}" + (f"#L{int(line)}" if line else "")


def parse_github_url(value: str, where: str) -> tuple[str, str]:
    """``(owner, name)`` of ``https://github.com/OWNER/REPO`` (a trailing ``.git`` or ``/`` is allowed)."""
    match = _HTTPS.fullmatch(value)
    if not match:
        raise RepositoryError(
            f"{where}={_shown(value)} is not a GitHub repository address: expected "
            f"https://github.com/OWNER/REPO (letters, digits, '-', '.', '_'; no quotes, spaces, "
            f"credentials or query)"
        )
    return match.group("owner"), match.group("name")


def parse_remote(value: str) -> tuple[str, str] | None:
    """``(owner, name)`` of a plain GitHub remote (https, ``git@github.com:`` or ``ssh://``), else None."""
    match = _HTTPS.fullmatch(value) or _SSH.fullmatch(value)
    return (match.group("owner"), match.group("name")) if match else None


def check_branch(value: str, where: str) -> str:
    if not _BRANCH.fullmatch(value) or ".." in value or value.endswith((".", ".lock")) or len(value) > 200:
        raise RepositoryError(
            f"{where}={_shown(value)} is not a branch name this build accepts (letters, digits "
            f"and '._/-', not starting with '.', '/' or '-')"
        )
    return value


def check_commit(value: str, where: str) -> str:
    if not _COMMIT.fullmatch(value):
        raise RepositoryError(f"{where}={_shown(value)} is not a full commit hash (40 lowercase hexadecimal digits)")
    return value


def site_url(env: Mapping[str, str]) -> str | None:
    """``BOOK_SITE_URL`` (where the HTML is served, e.g. https://OWNER.github.io/REPO/), checked; None if unset."""
    value = env.get(SITE_ENV, "")
    if not value:
        return None
    if not _SITE.fullmatch(value):
        raise RepositoryError(
            f"{SITE_ENV}={_shown(value)} is not an https address this build accepts "
            f"(https://HOST/PATH/, no query, quotes or spaces)"
        )
    return value.rstrip("/") + "/"


def git_remote(root: Path) -> str | None:
    """``git remote get-url origin`` in ``root``, or None (no git, no repository, no such remote)."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "remote", "get-url", "origin"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else None


def find_repository(env: Mapping[str, str], remote: str | None) -> Repository | None:
    """The book's repository from the environment (see the module's docstring), or None where it is unknown.

    ``remote`` is the git remote's address (:func:`git_remote`), looked at only when the environment names
    none. Raises :class:`RepositoryError` on a malformed value."""
    branch = env.get(BRANCH_ENV)
    if branch:
        check_branch(branch, BRANCH_ENV)
    commit = env.get(COMMIT_ENV)
    if commit:
        check_commit(commit, COMMIT_ENV)
    if env.get(URL_ENV):
        owner, name = parse_github_url(env[URL_ENV], URL_ENV)
        return Repository(owner, name, branch or DEFAULT_BRANCH, commit or None, URL_ENV)
    if env.get("GITHUB_ACTIONS") == "true" and env.get("GITHUB_REPOSITORY"):
        server = env.get("GITHUB_SERVER_URL", "https://github.com")
        owner, name = parse_github_url(f"{server}/{env['GITHUB_REPOSITORY']}", "GITHUB_SERVER_URL/GITHUB_REPOSITORY")
        if (
            not branch
            and env.get("GITHUB_REF_TYPE") == "branch"
            and env.get("GITHUB_EVENT_NAME") in ("push", "workflow_dispatch", "schedule")
        ):
            branch = check_branch(env.get("GITHUB_REF_NAME", ""), "GITHUB_REF_NAME")
        if not commit and env.get("GITHUB_SHA"):
            commit = check_commit(env["GITHUB_SHA"], "GITHUB_SHA")
        return Repository(owner, name, branch or DEFAULT_BRANCH, commit or None, "GitHub Actions")
    parts = parse_remote(remote) if remote else None
    if parts:
        return Repository(*parts, branch or DEFAULT_BRANCH, commit or None, "the git remote 'origin'")
    return None


def book_settings(repo: Repository, site: str | None = None) -> dict:
    """What the staged ``_config.yml`` gains when the address is known (merged by :func:`configure`)."""
    # The pages are built from executed notebooks (book/NAME.ipynb); their source is book/NAME.md.
    edit = f"{repo.url}/edit/{repo.branch}/{{{{ file_name | replace('.ipynb', '.md') }}}}"
    settings = {
        "repository": {"url": repo.url, "branch": repo.branch, "path_to_book": ""},
        "html": {"use_repository_button": True, "use_issues_button": True, "use_edit_page_button": True},
        "launch_buttons": {"notebook_interface": "jupyterlab", "binderhub_url": BINDERHUB_URL},
        "sphinx": {
            "extra_extensions": [__name__],
            "config": {"html_context": {"edit_page_url_template": edit, "edit_page_provider_name": "GitHub"}},
        },
    }
    if site:
        settings["html"]["baseurl"] = site
    return settings


def _merge(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        elif isinstance(value, list) and isinstance(base.get(key), list):
            base[key] = base[key] + [v for v in value if v not in base[key]]
        else:
            base[key] = value
    return base


def configure(config_path: Path, repo: Repository | None, site: str | None = None) -> str:
    """Merge :func:`book_settings` into the staged ``_config.yml`` (and ``html.baseurl`` from ``site``); return
    the one line the build prints about it."""
    import yaml

    config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    if repo is None:
        if site:
            _merge(config, {"html": {"baseurl": site}})
            config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        return (
            f"no repository address ({URL_ENV} unset, not on GitHub Actions, no GitHub remote 'origin'): "
            f"built without repository, issue, edit and launch buttons"
        )
    _merge(config, book_settings(repo, site))
    config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return (
        f"repository {repo.url}, branch {repo.branch} (from {repo.origin}): repository, issue, edit and "
        f"Binder buttons on the pages"
    )


def fill_install_cells(sources: Path, repo: Repository | None) -> int:
    """Write ``repo.pip_source`` into the install cell of every notebook under ``sources`` (the HTML's
    ``_sources``, what the download button serves); returns how many notebooks were changed."""
    if repo is None:
        return 0
    import nbformat

    line = f"PACKAGE_SOURCE = {json.dumps(repo.pip_source)}  # the repository this book was built from"
    changed = 0
    for path in sorted(sources.rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        cells = [c for c in nb.cells if c.cell_type == "code" and INSTALL_TAG in c.metadata.get("tags", [])]
        for cell in cells:
            source, count = INSTALL_LINE.subn(line, cell.source)
            if count != 1:
                raise RepositoryError(
                    f"{path.name}: its {INSTALL_TAG} cell has {count} lines 'PACKAGE_SOURCE = None ...' (expected one)"
                )
            cell.source = source
        if cells:
            nbformat.write(nb, path)
            changed += 1
    return changed


def from_environment(root: Path, env: Mapping[str, str] | None = None) -> tuple[Repository | None, str | None]:
    """The repository and the site address for a build in ``root``, from ``os.environ`` (or ``env``)."""
    env = os.environ if env is None else env
    remote = None if env.get(URL_ENV) or env.get("GITHUB_ACTIONS") == "true" else git_remote(root)
    return find_repository(env, remote), site_url(env)


# --- the Sphinx extension ----------------------------------------------------------------------------------
def _source_button(app, config):
    options = config.html_theme_options
    if options.get("repository_url"):
        options.setdefault("use_source_button", True)


def setup(app):
    app.connect("config-inited", _source_button)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
