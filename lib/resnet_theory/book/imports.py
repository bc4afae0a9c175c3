"""Which library modules a chapter's code imports, found statically and followed through those modules.

A chapter's cache key covers the source of every module of ``resnet_theory`` (or of any package inside the
book's root) that its code cells import: :func:`imported_names` reads the import statements with ``ast``, and
:class:`ModuleIndex` maps each name to its files (the ``__init__.py`` of every package on the way and the module
itself, at any depth: ``from resnet_theory.engine import train`` is ``resnet_theory/__init__.py``,
``resnet_theory/engine/__init__.py`` and ``resnet_theory/engine/train.py``) and follows those modules' own
imports, relative ones included (``from .. import validate``), to the closure.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .files import file_sha

#: Packages whose modules a chapter's key covers even when they are installed outside the book's root.
TRACKED_PACKAGES = ("resnet_theory",)


def imported_names(source: str, package: str | None = None) -> set[str] | None:
    """Every dotted module name that ``source`` may import, found statically (``ast``), or None if unparsable.

    ``import a.b`` gives ``a.b``; ``from a import b, c`` gives ``a``, ``a.b`` and ``a.c`` (the latter two
    count only if they turn out to be modules); relative imports are resolved against ``package``. Imports
    inside functions count too (a conservative superset), as do ``importlib.import_module("a.b")`` and
    ``__import__("a")`` with a literal name. IPython magics and shell lines are ignored.
    """
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if not package:
                    continue
                parts = package.split(".")
                if node.level > 1:
                    parts = parts[: -(node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base:
                names.add(base)
            names.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names if alias.name != "*")
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if fname in ("import_module", "__import__"):
                names.add(node.args[0].value)
    return names


class ModuleIndex:
    """Finds the source files of the modules a chapter imports, within the tracked packages only."""

    def __init__(self, root: Path, tracked: tuple[str, ...] = TRACKED_PACKAGES):
        self.root = root.resolve()
        self.tracked = tracked
        self._tops: dict[str, tuple[Path, bool] | None] = {}
        self._deps: dict[str, list[tuple[str, Path]]] = {}
        self._shas: dict[Path, str | None] = {}

    def _top(self, name: str) -> tuple[Path, bool] | None:
        """(location, is_package) of a tracked top-level module, None for anything else (numpy, torch...)."""
        if name not in self._tops:
            import importlib.util

            found = None
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            if spec is not None:
                if spec.submodule_search_locations:
                    location, is_package = Path(list(spec.submodule_search_locations)[0]), True
                elif spec.origin and spec.origin.endswith(".py"):
                    location, is_package = Path(spec.origin), False
                else:
                    location = None
                if location is not None:
                    location = location.resolve()
                    inside = (location == self.root or self.root in location.parents) and not (
                        {"site-packages", "dist-packages"} & set(location.parts)
                    )
                    if name in self.tracked or inside:
                        found = (location, is_package)
            self._tops[name] = found
        return self._tops[name]

    def files(self, dotted: str) -> list[tuple[str, Path]]:
        """(module name, file) for ``dotted`` and every package ``__init__`` that importing it runs."""
        parts = dotted.split(".")
        top = self._top(parts[0])
        if top is None:
            return []
        location, is_package = top
        if not is_package:
            return [(parts[0], location)] if len(parts) == 1 else []
        out = [(parts[0], location / "__init__.py")] if (location / "__init__.py").is_file() else []
        folder = location
        for i, part in enumerate(parts[1:], start=1):
            name = ".".join(parts[: i + 1])
            if (folder / part / "__init__.py").is_file():
                folder = folder / part
                out.append((name, folder / "__init__.py"))
            elif (folder / f"{part}.py").is_file():
                out.append((name, folder / f"{part}.py"))
                break
            else:
                break  # an attribute, not a module
        return out

    def all_files(self) -> list[tuple[str, Path]]:
        """Every module of every tracked package (the fallback when a cell cannot be parsed)."""
        out = []
        for name in self.tracked:
            top = self._top(name)
            if top is None:
                continue
            location, is_package = top
            if not is_package:
                out.append((name, location))
                continue
            for path in sorted(location.rglob("*.py")):
                rel = path.relative_to(location).with_suffix("")
                parts = [p for p in rel.parts if p != "__init__"]
                out.append((".".join([name, *parts]), path))
        return out

    def _imports(self, source: str, package: str | None) -> list[tuple[str, Path]]:
        names = imported_names(source, package)
        return self.all_files() if names is None else [p for n in sorted(names) for p in self.files(n)]

    def _module_imports(self, module: str, path: Path) -> list[tuple[str, Path]]:
        """The tracked modules one module imports directly (each module parsed once per index)."""
        if module not in self._deps:
            package = module if path.name == "__init__.py" else module.rpartition(".")[0]
            self._deps[module] = self._imports(path.read_text(encoding="utf-8"), package)
        return self._deps[module]

    def closure(self, sources: list[str]) -> dict[str, Path]:
        """Module name -> file for every tracked module the sources import, transitively."""
        found: dict[str, Path] = {}
        pending = [pair for source in sources for pair in self._imports(source, None)]
        while pending:
            module, path = pending.pop()
            if module in found:
                continue
            found[module] = path
            pending.extend(self._module_imports(module, path))
        return found

    def package_data(self, closure: dict[str, Path]) -> dict[str, str]:
        """Checksum of every data file (any file but Python source, bytecode and hidden files) of the packages the
        modules of ``closure`` belong to, by ``package/relative path``: what their modules may read at run time."""
        out = {}
        for top in sorted({name.split(".")[0] for name in closure}):
            location, is_package = self._top(top) or (None, False)
            if not is_package:
                continue
            for path in sorted(location.rglob("*")):
                rel = path.relative_to(location)
                hidden = any(part.startswith(".") for part in rel.parts)  # an editor's swap file, a cache
                if (
                    path.is_file()
                    and path.suffix not in (".py", ".pyc")
                    and "__pycache__" not in rel.parts
                    and not hidden
                ):
                    out[f"{top}/{rel.as_posix()}"] = self.sha(path)
        return out

    def sha(self, path: Path) -> str | None:
        """The checksum of a module's file (computed once per index: one run of the executor)."""
        if path not in self._shas:
            self._shas[path] = file_sha(path)
        return self._shas[path]
