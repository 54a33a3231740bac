"""The type stub (``strata/_strata.pyi``) against the extension module: every
exception the stub declares exists at runtime with the same base, every
alias names a class the stub defines and is that class at runtime, and
every exception the module exports is in the stub. (The stub once declared
``class InvalidArgument`` and then ``InvalidArgument = InvalidArgumentError``
with ``InvalidArgumentError`` undefined, which type checkers reject.)"""

import ast
from pathlib import Path

import strata
from strata import _strata

STUB = Path(__file__).resolve().parents[1] / "strata" / "_strata.pyi"


def stub_tree():
    return ast.parse(STUB.read_text(encoding="utf-8"), filename=str(STUB))


def stub_exceptions(tree):
    """``{name: base}`` for the stub's exception classes, and
    ``{alias: target}`` for its module-level aliases of them."""
    classes, aliases = {}, {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            if bases and (bases[0] == "Exception" or bases[0] in classes):
                classes[node.name] = bases[0]
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    aliases[t.id] = node.value.id
    return classes, aliases


def test_every_stub_exception_exists_at_runtime():
    classes, aliases = stub_exceptions(stub_tree())
    assert "StrataError" in classes and "InvalidArgumentError" in classes, classes
    for name, base in classes.items():
        runtime = getattr(_strata, name, None)
        assert isinstance(runtime, type) and issubclass(runtime, BaseException), name
        want = Exception if base == "Exception" else getattr(_strata, base)
        assert runtime.__bases__ == (want,), (name, runtime.__bases__)
        assert getattr(strata, name) is runtime, name
    exception_aliases = {a: t for a, t in aliases.items() if t in classes}
    assert exception_aliases == {"InvalidArgument": "InvalidArgumentError"}, aliases
    for alias, target in exception_aliases.items():
        assert getattr(_strata, alias) is getattr(_strata, target), alias
    assert strata.InvalidArgument is strata.InvalidArgumentError


def test_every_runtime_exception_is_in_the_stub():
    classes, aliases = stub_exceptions(stub_tree())
    for name in dir(_strata):
        obj = getattr(_strata, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert name in classes or name in aliases, f"{name} is not in {STUB.name}"


def test_every_alias_names_something_the_stub_defines():
    tree = stub_tree()
    defined = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.ImportFrom, ast.Import)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            assert node.value.id in defined, f"{STUB.name}: {node.value.id} is not defined"
