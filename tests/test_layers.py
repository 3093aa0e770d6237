"""The house is layered: every import runs down (or across one floor), none runs back up, and no module is part of
a cycle. Imports inside functions count as much as those at the top; only the package's face (`kcost/__init__`,
whose names are imported when first used) is read at its top level alone."""

from __future__ import annotations

import ast
from fnmatch import fnmatch
from pathlib import Path

from tests.conftest import ROOT

# The folders from the bottom up, each a stage of the pipeline or what the stages share; a module imports only
# from its own floor or those below.
FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("the version, errors, domain types and inputs", ("kcost.version", "kcost.errors", "kcost.model", "kcost.model.*",
                                                      "kcost.inputs", "kcost.inputs.*")),
    ("report types and providers", ("kcost.results", "kcost.results.*", "kcost.pricing.providers",
                                    "kcost.pricing.providers.*")),
    ("cache, prompts and prices", ("kcost.cache", "kcost.cache.*", "kcost.prompts", "kcost.prompts.*", "kcost.pricing",
                                   "kcost.pricing.prices", "kcost.pricing.charges", "kcost.pricing.plans")),
    ("readers", ("kcost.readers", "kcost.readers.*")),
    ("the ledger", ("kcost.ledger", "kcost.ledger.*")),
    ("billing", ("kcost.billing", "kcost.billing.*")),
    ("analysis and fleets", ("kcost.analysis", "kcost.analysis.*", "kcost.fleet", "kcost.fleet.*")),
    ("the API", ("kcost.api", "kcost.api.*")),
    ("renderers", ("kcost.render", "kcost.render.*")),
    ("live views", ("kcost.live", "kcost.live.*")),
    ("command line and the package face", ("kcost.cli", "kcost.cli.*", "kcost.launch", "kcost.__main__", "kcost")),
]


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / "kcost").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def compiled() -> set[str]:
    """The compiled modules (each a C file of the package, built beside it), by name."""
    return {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "kcost").rglob("*.c")}


COMPILED = compiled()


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The kcost modules `name` imports (a `from package import module` names the module, a compiled one too)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if name == "kcost" else list(ast.walk(tree))
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "kcost" and not node.level:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.add(sub if sub in known or sub in COMPILED else node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "kcost"}
    return out - {name}


def floor(name: str) -> int:
    for level, (_, patterns) in enumerate(FLOORS):
        if any(fnmatch(name, p) for p in patterns):
            return level
    raise AssertionError(f"{name} is on no floor: add it to FLOORS")


def test_no_import_runs_back_up() -> None:
    found = modules()
    wrong = []
    for name, path in found.items():
        for target in imports(name, path, set(found)):
            if floor(target) > floor(name):
                wrong.append(f"{name} ({FLOORS[floor(name)][0]}) imports {target} ({FLOORS[floor(target)][0]})")
    assert not wrong, "\n".join(wrong)


def test_no_cycle() -> None:
    found = modules()
    graph = {name: imports(name, path, set(found)) & set(found) for name, path in found.items()}
    # a module's package face (`kcost.readers` for `kcost.readers.discover`) is loaded with it: not an arrow back
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if node.startswith(nxt + "."):
                continue
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_renderers_import_only_report_types() -> None:
    """A renderer turns a report into text: it imports the report types (and other renderers), never what
    computes them."""
    found = modules()
    allowed = ("kcost.results", "kcost.results.*", "kcost.render", "kcost.render.*", "kcost.errors",
               "kcost.model.frozen")
    wrong = [f"{name} imports {target}" for name, path in found.items() if fnmatch(name, "kcost.render*")
             for target in imports(name, path, set(found)) if not any(fnmatch(target, p) for p in allowed)]  # fmt: skip
    assert not wrong, "\n".join(wrong)


def test_every_module_has_a_floor() -> None:
    for name in [*modules(), *COMPILED]:
        floor(name)


def _names_imported(path: Path) -> set[str]:
    """Every top-level package a module imports, at its top or inside a function."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
    return out


def test_only_the_command_line_imports_click() -> None:
    """The core is a library: argv and flags end in kcost/cli."""
    wrong = [name for name, path in modules().items()
             if not fnmatch(name, "kcost.cli*") and "click" in _names_imported(path)]  # fmt: skip
    assert not wrong, wrong


def test_only_the_settings_module_reads_a_config_file() -> None:
    """One home for run settings: only kcost.api.settings parses TOML or looks for kcost.toml / pyproject.toml."""
    wrong = []
    for name, path in modules().items():
        if name == "kcost.api.settings":
            continue
        tree = ast.parse(path.read_text())
        strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        docstrings = {
            ast.get_docstring(n, clean=False)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
        }
        if {"tomllib", "tomli"} & _names_imported(path) or {"kcost.toml", "pyproject.toml"} & (strings - docstrings):
            wrong.append(name)
    assert not wrong, wrong


def test_no_generic_module_names_a_specific_reader() -> None:
    """The pipeline is format-blind: outside the readers (the registry apart, which lists them), no module imports
    a reader's module, and the code that finds sessions imports no reader's module (the turn specs' included) and
    names no format, neither a log's nor a turn spec's."""
    from kcost.readers.registry import NAMES, READERS, TURN_FORMATS, TURN_SPECS

    found = modules()
    specific = {e.target.partition(":")[0] for e in READERS}
    wrong = [f"{name} imports {target}" for name, path in found.items() if not name.startswith("kcost.readers.")
             for target in imports(name, path, set(found)) if target in specific]  # fmt: skip
    assert not wrong, "\n".join(wrong)
    discover = found["kcost.readers.discover"]
    tree = ast.parse(discover.read_text())
    named = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    formats = set(NAMES) | set(TURN_FORMATS)
    assert not named & formats, f"kcost.readers.discover names {sorted(named & formats)}"
    readers = {e.target.partition(":")[0] for e in (*READERS, *TURN_SPECS)} | {"kcost.readers.specs.turnspec"}
    assert not imports("kcost.readers.discover", discover, set(found)) & readers


def unit(name: str) -> str:
    """The folder a module belongs to (`kcost.readers` for `kcost.readers.agents.codex`; `kcost.pricing.providers`
    apart from the rest of `kcost.pricing`, a floor below it), or the module itself."""
    parts = name.split(".")
    return ".".join(parts[:3] if parts[:3] == ["kcost", "pricing", "providers"] else parts[:2])


def test_no_cycle_between_packages() -> None:
    """Packages are layers too: no package imports a module that imports back into it (`kcost.prompts` and
    `kcost.model.session`, `kcost.results` and `kcost.cache` were such pairs)."""
    found = modules()
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        if name == "kcost":  # the package face, on the top floor, re-exports what it is asked for
            continue
        here = unit(name)
        graph.setdefault(here, set()).update(unit(t) for t in imports(name, path, set(found)) if unit(t) != here)
    graph = {k: v - {"kcost"} for k, v in graph.items()}
    cycles = []
    for start in sorted(graph):
        stack, seen = [(start, [start])], set()
        while stack:
            node, trail = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    cycles.append(" -> ".join([*trail, nxt]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*trail, nxt]))
    assert not cycles, "\n".join(cycles)


MAX_COMPLEXITY = 20  # a function that needs more wants named steps


def test_no_function_is_above_the_complexity_bound() -> None:
    """McCabe's cyclomatic complexity of every function of the package, as the `mccabe` checker counts it."""
    import mccabe

    wrong = []
    for name, path in modules().items():
        visitor = mccabe.PathGraphingAstVisitor()
        visitor.preorder(ast.parse(path.read_text()), visitor)
        wrong += [f"{name}: {graph.entity} {graph.complexity()}" for graph in visitor.graphs.values()
                  if graph.complexity() > MAX_COMPLEXITY]  # fmt: skip
    assert not wrong, "\n".join(wrong)
