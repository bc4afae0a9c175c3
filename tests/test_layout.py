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
