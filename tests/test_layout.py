"""The package's layout stays what its map says (issue 25): papers and the chapter API at the top, the training
engine and the book tooling in their own subpackages, each ``__init__`` a map with one line per module, book
modules under 500 lines, no function over 100 lines anywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "lib" / "resnet_theory"
PACKAGES = [PACKAGE, PACKAGE / "engine", PACKAGE / "book", PACKAGE / "benchmarks", PACKAGE / "claims"]
MAX_FUNCTION_LINES = 100
MAX_BOOK_MODULE_LINES = 500


def long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > limit
    ]


def test_long_functions_are_found():
    body = "\n".join(f"    x{i} = {i}" for i in range(101))
    assert long_functions(f"def f():\n{body}\n", MAX_FUNCTION_LINES) == [("f", 102)]
    assert long_functions("def f():\n    return 1\n", MAX_FUNCTION_LINES) == []


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_over_100_lines(path):
    assert not long_functions(path.read_text(), MAX_FUNCTION_LINES), f"{path.name}: split these by concept"


@pytest.mark.parametrize("path", sorted((PACKAGE / "book").glob("*.py")), ids=lambda p: p.name)
def test_book_modules_stay_under_500_lines(path):
    assert len(path.read_text().splitlines()) < MAX_BOOK_MODULE_LINES


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_each_package_map_names_every_module(package):
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    dotted = ".".join(package.relative_to(PACKAGE.parent).parts)
    modules = sorted(p.stem for p in package.glob("*.py") if not p.stem.startswith("_"))
    modules += sorted(p.name for p in package.iterdir() if (p / "__init__.py").is_file())
    missing = [m for m in modules if f"{dotted}.{m}`" not in doc]
    assert not missing, f"{dotted}/__init__.py: the map has no line for {missing}"


def imported_modules(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module ``source`` (the code of ``module``) imports, anywhere in it (lazy imports in functions
    included), relative imports resolved; ``from X import name`` counts as ``X`` and ``X.name``."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            out.add(target)
            out.update(f"{target}.{alias.name}" for alias in node.names)
    return out


def test_imports_are_resolved_relative_to_their_module():
    found = imported_modules("from ..book import toc\ndef f():\n    from . import x\n", "resnet_theory.claims.cli")
    assert {"resnet_theory.book", "resnet_theory.book.toc", "resnet_theory.claims.x"} <= found
    assert "resnet_theory.book" in imported_modules("from . import book\n", "resnet_theory", is_package=True)
    assert "resnet_theory.book.toc" in imported_modules("import resnet_theory.book.toc\n", "resnet_theory.ledger")


@pytest.mark.parametrize(
    "path",
    sorted(p for p in PACKAGE.rglob("*.py") if "book" not in p.relative_to(PACKAGE).parts[:1]),
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_nothing_outside_the_book_tooling_imports_it(path):
    """The chapter API, the papers, the claims and the engine never import ``resnet_theory.book`` (issue 30): the
    book tooling reads them, not the other way round, so editing the executor never touches a chapter's code."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    is_package = parts[-1] == "__init__"
    module = ".".join(parts[:-1] if is_package else parts)
    up = sorted(m for m in imported_modules(path.read_text(), module, is_package) if m.startswith("resnet_theory.book"))
    assert not up, f"{module} imports {up}"
