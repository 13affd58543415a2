"""The package's module import graph, read with ``ast`` (no module is imported).

Nodes are the package's Python modules (a package is its ``__init__``). An
edge ``a -> b`` is an import statement in ``a`` that names ``b``, relative
imports resolved: ``from X import n`` points at the submodule ``X.n`` when
there is one, else at ``X``. Importing a submodule also runs its parents'
``__init__``; those implicit edges are not counted (a child importing a
sibling through a half-initialised parent is how packages work). Imports
inside ``if TYPE_CHECKING:`` do not run and are not counted. Cython sources
(``.pyx``) are not parsed.

An import inside a function body is *deferred*: it runs at call time, which
is how an import cycle is usually hidden. The accounting package
(doc/privacy/accounting.rst) has none, except for an optional dependency
whose import line (or the line above it) says so in a comment containing
"optional dependency".
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "sklearn_dpsco"
PACKAGE = "sklearn_dpsco"
ACCOUNTING = f"{PACKAGE}.accounting"


def _module_name(path, root):
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node):
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node, in_function=False):
    """Yield ``(import node, in_function)`` for every runtime import under ``node``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, in_function
        elif isinstance(child, ast.If) and _is_type_checking(child):
            for sub in child.orelse:
                yield from _walk(ast.Module(body=[sub], type_ignores=[]), in_function)
        else:
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from _walk(child, inner)


def _targets(node, module, is_package, modules):
    """The package modules an import statement in ``module`` names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        if sub in modules:
            out.append(sub)
        elif source in modules:
            out.append(source)
    return out


def build_graph(root=ROOT):
    """``(edges, deferred)``: module -> set of modules imported at module level, and
    module -> list of ``(line, statement, targets, justified)`` for imports inside functions."""
    files = {_module_name(p, root): p for p in root.rglob("*.py")}
    modules = set(files)
    edges = {m: set() for m in modules}
    deferred = {m: [] for m in modules}
    for module, path in files.items():
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        is_package = path.name == "__init__.py"
        for node, in_function in _walk(ast.parse(source, filename=str(path))):
            targets = _targets(node, module, is_package, modules)
            if not in_function:
                edges[module].update(t for t in targets if t != module)
                continue
            comment = " ".join(lines[max(node.lineno - 2, 0) : node.end_lineno])
            justified = "optional dependency" in comment and "#" in comment
            deferred[module].append((node.lineno, ast.unparse(node), set(targets) - {module}, justified))
    return edges, deferred


def with_deferred(edges, deferred):
    """The graph that also has an edge for every import inside a function."""
    out = {m: set(targets) for m, targets in edges.items()}
    for module, found in deferred.items():
        for _, _, targets, _ in found:
            out[module] |= targets
    return out


def _inside(module, package):
    return package is None or module == package or module.startswith(package + ".")


def unjustified_deferred(deferred, within=None):
    """``{module: [(line, statement), ...]}`` of the deferred imports without a justifying comment."""
    out = {}
    for module, found in deferred.items():
        bad = [(line, text) for line, text, _, justified in found if not justified]
        if bad and _inside(module, within):
            out[module] = bad
    return out


def cycles(edges, within=None):
    """The strongly connected components of more than one module (or a self-loop), sorted."""
    nodes = sorted(m for m in edges if _inside(m, within))
    keep = set(nodes)
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):  # Tarjan; the graph is small, recursion is fine
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v] & keep):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges[v]:
                out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(out)


@pytest.fixture(scope="module")
def graph():
    return build_graph()


def test_graph_reader_sees_relative_imports_and_cycles(tmp_path):
    """The reader resolves relative imports (to submodules and to packages), ignores
    TYPE_CHECKING imports, tells deferred imports apart, and finds a planted cycle."""
    pkg = tmp_path / PACKAGE / "sub"
    pkg.mkdir(parents=True)
    (tmp_path / PACKAGE / "__init__.py").write_text("from .sub import a\n")
    (pkg / "__init__.py").write_text("from ._b import thing\n")
    (pkg / "a.py").write_text("from . import _b\nfrom .. import sub\n")
    (pkg / "_b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n"
        "def f():\n    from .a import x  # not justified\n"
        "def g():\n    # optional dependency: only for plotting\n    import sklearn_dpsco.sub.a\n"
        "thing = 1\n"
        "from . import a\n"
    )
    edges, deferred = build_graph(tmp_path / PACKAGE)
    assert edges[PACKAGE] == {f"{PACKAGE}.sub.a"}
    assert edges[f"{PACKAGE}.sub"] == {f"{PACKAGE}.sub._b"}
    assert edges[f"{PACKAGE}.sub.a"] == {f"{PACKAGE}.sub._b", f"{PACKAGE}.sub"}
    assert edges[f"{PACKAGE}.sub._b"] == {f"{PACKAGE}.sub.a"}
    assert [(line, ok) for line, _, _, ok in deferred[f"{PACKAGE}.sub._b"]] == [(5, False), (8, True)]
    assert unjustified_deferred(deferred) == {f"{PACKAGE}.sub._b": [(5, "from .a import x")]}
    assert unjustified_deferred(deferred, within=f"{PACKAGE}.sub.a") == {}
    assert cycles(edges) == [[f"{PACKAGE}.sub", f"{PACKAGE}.sub._b", f"{PACKAGE}.sub.a"]]
    assert cycles(edges, within=f"{PACKAGE}.sub.a") == []
    # without the module-level back edge, the cycle is held by the deferred import only
    edges[f"{PACKAGE}.sub._b"].clear()
    assert cycles(edges) == []
    assert cycles(with_deferred(edges, deferred)) == [[f"{PACKAGE}.sub", f"{PACKAGE}.sub._b", f"{PACKAGE}.sub.a"]]


def test_accounting_has_no_import_cycle(graph):
    """Not even one held together by imports inside functions."""
    edges, deferred = graph
    assert f"{ACCOUNTING}._accountant" in edges  # the reader found the package
    assert cycles(with_deferred(edges, deferred), within=ACCOUNTING) == []


def test_accounting_has_no_deferred_imports(graph):
    """No import inside a function in accounting/ (one would be how a cycle hides)."""
    _, deferred = graph
    assert unjustified_deferred(deferred, within=ACCOUNTING) == {}


def test_package_has_no_import_cycle(graph):
    """No cycle in the whole package, counting imports inside functions too."""
    edges, deferred = graph
    assert cycles(edges) == []
    assert cycles(with_deferred(edges, deferred)) == []
