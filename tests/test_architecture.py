"""The package's import structure (docs/architecture.md): layers, one-way flow, no cycle.

Every module of ``src/dpaudit`` belongs to one layer; a module may import from its own layer or
the layers below, never from a layer above, and no set of modules may import each other in a
cycle (a package ``__init__`` that imports a submodule which imports the package back counts).
The imports are read statically (``ast``), including those inside functions, so a lazy import
cannot hide an upward dependency.
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# lowest first; keep in step with the table in docs/architecture.md
LAYERS = [
    ("foundations", ["dpaudit._version", "dpaudit.errors", "dpaudit._validate", "dpaudit._torch", "dpaudit._killpoints"]),
    ("statistics and privacy", ["dpaudit.bounds", "dpaudit.privacy"]),
    ("mechanisms and datasets", ["dpaudit.datasets", "dpaudit.mechanisms", "dpaudit.examples"]),
    ("estimators", ["dpaudit.estimators"]),
    ("families", ["dpaudit.testers", "dpaudit.scores", "dpaudit.accounting", "dpaudit.dpsgd"]),
    ("search", ["dpaudit.search"]),
    ("audit", ["dpaudit.audit"]),
    ("integrations", ["dpaudit.report", "dpaudit.testing", "dpaudit.pytest_plugin", "dpaudit.library"]),
    ("command line", ["dpaudit.cli", "dpaudit.__main__"]),
]


def _layer(module: str) -> int | None:
    if module == "dpaudit":  # the top-level package only re-exports; nothing imports it
        return len(LAYERS)
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return None


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in sorted((SRC / "dpaudit").rglob("*.py")):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        is_package = name.endswith(".__init__")
        if is_package:
            name = name[: -len(".__init__")]
        out[name] = (path, is_package)
    return out


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str | None:
    if node.level == 0:
        return node.module
    parts = (module if is_package else module.rsplit(".", 1)[0]).split(".")
    if node.level > 1:
        parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts) + ("." + node.module if node.module else "")


def _import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = collections.defaultdict(set)
    for name, (path, is_package) in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(name, is_package, node)
                if not target or not target.startswith("dpaudit"):
                    continue
                submodules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in mods]
                targets = submodules or [target]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("dpaudit")]
            else:
                continue
            for t in targets:
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t != name:
                    graph[name].add(t)
    for name in mods:
        graph.setdefault(name, set())
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            advanced = False
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_has_a_layer():
    unassigned = [m for m in _modules() if _layer(m) is None]
    assert not unassigned, f"modules outside every layer (add them to LAYERS and docs/architecture.md): {unassigned}"


def test_no_module_imports_from_a_layer_above_it():
    graph = _import_graph()
    upward = [
        f"{m} ({LAYERS[_layer(m)][0]}) imports {t} ({LAYERS[_layer(t)][0]})"
        for m in sorted(graph)
        for t in sorted(graph[m])
        if _layer(m) is not None and _layer(t) is not None and _layer(t) > _layer(m)
    ]
    assert not upward, "imports against the one-way flow:\n" + "\n".join(upward)


def test_there_is_no_import_cycle():
    cycles = _cycles(_import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle_and_the_layer_map_orders_modules():
    # the checks above must be able to fail
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    assert _layer("dpaudit.cli.app") > _layer("dpaudit.audit.loop") > _layer("dpaudit.testers.base")
    assert _layer("dpaudit.testers.base") > _layer("dpaudit.estimators.base") > _layer("dpaudit.privacy.claims")
    assert _layer("dpaudit.unknown_module") is None


VALIDATOR_NAMES = {"_check_delta", "check_delta", "_check_epsilon", "check_epsilon", "_check_eps", "check_beta",
                   "_check_beta", "check_confidence", "_check_confidence", "_check_alpha", "check_alpha"}


@pytest.mark.parametrize("path", sorted((SRC / "dpaudit").rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_the_shared_validators_are_written_once(path):
    if path.name == "_validate.py":
        return
    defined = {n.name for n in ast.walk(ast.parse(path.read_text()))
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    copies = sorted(defined & VALIDATOR_NAMES)
    assert not copies, f"{path.name} defines its own {copies}: use dpaudit._validate"


def test_every_file_over_1000_lines_says_why_in_the_architecture_doc():
    # issue 38: a file in src/ over 1,000 lines is named, with its reason, in the "Files over
    # 1,000 lines" section of docs/architecture.md
    doc = (SRC.parent / "docs" / "architecture.md").read_text()
    assert "## Files over 1,000 lines" in doc
    section = doc.split("## Files over 1,000 lines", 1)[1].split("\n## ", 1)[0]
    long_files = [p.relative_to(SRC / "dpaudit").as_posix() for p in sorted((SRC / "dpaudit").rglob("*.py"))
                  if len(p.read_text().splitlines()) > 1000]
    unexplained = [f for f in long_files if f"- `{f}` (" not in section]
    assert not unexplained, f"files over 1,000 lines with no reason in docs/architecture.md: {unexplained}"


def test_the_old_examples_paths_alias_the_library_catalogue():
    # issue 38: the library targets have one home, dpaudit.mechanisms.catalogue; for a release the
    # old dpaudit.examples.<module> paths are the same module objects, so "module:NAME" targets work
    import importlib

    from dpaudit.audit.targets import load_target

    moved = ["diffprivlib_mean", "diffprivlib_mechanisms", "diffprivlib_tools", "opacus_sgd",
             "opendp_measurements", "opendp_sum", "pipelinedp_daily", "pipelinedp_metrics"]
    for name in moved:
        home = importlib.import_module(f"dpaudit.mechanisms.catalogue.{name}")
        assert importlib.import_module(f"dpaudit.examples.{name}") is home, name
        assert not (SRC / "dpaudit" / "examples" / f"{name}.py").read_text().count("\ndef "), name
    home = importlib.import_module("dpaudit.mechanisms.catalogue.opacus_sgd")
    assert load_target("dpaudit.examples.opacus_sgd:stale_noise_step")[0] is home.stale_noise_step
