"""Every public function and class of the library has a docstring, and every public function that
raises an exception says so in a ``Raises`` section (the engineering standard: argument shapes,
returns, errors and source). Parsed from the source with ``ast``: no imports, under a second.

CLI command modules (``dpaudit.cli``) are exempt from the ``Raises`` rule: their errors are exit
codes, documented in ``--help`` and README's exit-code table; library-environment workers
(``dpaudit.library.envs``) run in other interpreters and are exempt too."""
import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "dpaudit"
MODULES = sorted(p for p in SRC.rglob("*.py") if "envs" not in p.relative_to(SRC).parts[:2])


def _public(tree):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            yield node


def _raises(fn) -> bool:
    """A ``raise`` of a named exception in the function's own body (not in nested functions or
    classes: those document themselves; a bare re-``raise`` passes on what it caught)."""
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Raise) and node.exc is not None:
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def test_modules_found():
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_public_api_documents_itself_and_its_errors(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cli = path.relative_to(SRC).parts[0] == "cli"
    problems = []
    for node in _public(tree):
        doc = ast.get_docstring(node)
        if not doc:
            problems.append(f"{node.name} (line {node.lineno}): no docstring")
        elif isinstance(node, ast.FunctionDef) and not cli and _raises(node) and "Raises" not in doc \
                and "raise" not in doc.lower():
            problems.append(f"{node.name} (line {node.lineno}): raises but its docstring has no Raises section")
    assert not problems, "\n".join(problems)
