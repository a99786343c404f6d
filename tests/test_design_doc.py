"""DESIGN.md stays true: every path, Go name, C ABI function, Python name and setting it quotes in backticks exists.

Quoted names are classified by their shape: a path starts with one of the repository's top-level folders (or is a
bare file name with a source extension); `pkg.Name` and `Type.Member` name Go definitions in the package `pkg` or
the package that defines `Type`; a bare CamelCase name must be defined in Go or used by the shim or the Python
package; `ttpu_*` functions must be declared in bridge/torchtpu.h; `TORCHTPU_*` settings must be read somewhere
in the code; `module.name` for a module of python/torchtpu must be defined there.
"""
import functools
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "DESIGN.md"
GO_PACKAGES = ("engine", "dispatch", "pjrt", "hlo", "compile_cache", "bridge")
SOURCE_EXT = (".go", ".py", ".cpp", ".h", ".c", ".md", ".sh", ".json")
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def quoted():
    """Returns the backticked spans of DESIGN.md outside fenced code blocks."""
    text = re.sub(r"```.*?```", "", DOC.read_text(), flags=re.S)
    return sorted(set(re.findall(r"`([^`\n]+)`", text)))


def top_folders():
    return {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "build"}


@functools.cache
def sources(*exts):
    """Returns the text of the project's source files with the given extensions (no tests, no build output)."""
    out = {}
    for p in ROOT.rglob("*"):
        rel = p.relative_to(ROOT)
        if (not p.is_file() or p.suffix not in exts or rel.parts[0] in ("build", ".git", "tests")
                or p.name.endswith("_test.go")):
            continue
        out[rel] = p.read_text(errors="replace")
    return out


def go_defines(name, package=None):
    """Reports whether a Go function, method, type, field, variable or constant name is defined (in package)."""
    pat = re.compile(
        rf"^\s*(func\s+(\([^)]*\)\s*)?{name}\b|type\s+{name}\b|var\s+{name}\b|const\s+{name}\b|"
        rf"{name}(\s*,\s*{IDENT})*\s+[\w\*\[\]\.]|{name}\s*=)", re.M)
    return any(pat.search(src) for rel, src in sources(".go").items()
               if package is None or rel.parts[0] == package)


def go_type_package(name):
    """Returns the package that defines Go type name, or None."""
    pat = re.compile(rf"^type\s+{name}\b", re.M)
    for rel, src in sources(".go").items():
        if pat.search(src):
            return rel.parts[0]
    return None


def check(span):
    """Returns why span is false, or None when it holds (or is not a kind of name this test checks)."""
    first = span.split("/")[0]
    if "/" in span and first in top_folders() and not re.search(r"[<>{} ]", span):
        return None if (ROOT / span).exists() else "no such path"
    if "/" not in span and span.endswith(SOURCE_EXT) and " " not in span:
        return None if any(p.name == span for p in ROOT.rglob(span)) else "no such file"
    if span.startswith("TORCHTPU_"):
        var = re.match(r"TORCHTPU_\w+", span).group(0)
        used = any(var in src for src in sources(".go", ".py", ".cpp", ".h", ".c", ".sh").values())
        return None if used else "setting read nowhere"
    if re.fullmatch(r"ttpu_\w+", span):
        return None if re.search(rf"\b{span}\(", (ROOT / "bridge/torchtpu.h").read_text()) else "not in torchtpu.h"
    parts = span.split(".")
    if not all(re.fullmatch(IDENT, p) for p in parts):
        return None
    if len(parts) >= 2 and parts[0] in GO_PACKAGES:
        if len(parts) == 3:  # pkg.Type.Member
            return None if go_defines(parts[2], parts[0]) and go_type_package(parts[1]) == parts[0] else "not in Go"
        return None if go_defines(parts[1], parts[0]) else "not in Go"
    if len(parts) == 2 and go_type_package(parts[0]):
        return None if go_defines(parts[1], go_type_package(parts[0])) else "no such member in Go"
    module = ROOT / "python" / "torchtpu" / (parts[-2] + ".py") if len(parts) >= 2 else None
    if module is not None and parts[0] in ("torchtpu", parts[-2]) and module.exists():
        return None if re.search(rf"^(def|class)\s+{parts[-1]}\b", module.read_text(), re.M) else "not in Python"
    if len(parts) == 1 and re.fullmatch(r"[A-Za-z]*[a-z][A-Z]\w*|[A-Z][a-z]+[A-Z]\w*", span) and "_" not in span:
        if go_defines(span):
            return None
        used = any(re.search(rf"\b{span}\b", src) for src in sources(".cpp", ".h", ".py").values())
        return None if used else "defined nowhere"
    return None


def test_design_doc_names_exist():
    bad = [f"`{s}`: {why}" for s in quoted() if (why := check(s))]
    assert bad == [], "DESIGN.md quotes names that do not exist:\n" + "\n".join(bad)


def test_design_doc_checks_catch_false_names():
    """The checks fail on names that do not exist, so the test above can fail."""
    assert check("engine/no_such_file.go") == "no such path"
    assert check("engine.NoSuchFunction") == "not in Go"
    assert check("Rule.NoSuchField") == "no such member in Go"
    assert check("ttpu_no_such_export") == "not in torchtpu.h"
    assert check("TORCHTPU_NO_SUCH_SETTING=1") == "setting read nowhere"
    assert check("noSuchHelper") == "defined nowhere"
    assert check("_runtime._no_such_hook") == "not in Python"
    assert check("engine.OpOn") is None and check("Rule.TrailingSeed") is None


@pytest.mark.parametrize("span", ["refineShape", "pjrt.Buffer.ToHost", "Ctx.KnowRange", "_runtime._drain"])
def test_design_doc_checks_accept_real_names(span):
    assert check(span) is None


def test_design_doc_is_short_and_has_no_timings():
    """Measurements live in bench/results/design_figures.md with their commands, not in DESIGN.md."""
    text = DOC.read_text()
    assert len(text.splitlines()) < 310
    timings = re.findall(r"\d+(?:\.\d+)?\s*(?:µs|us|ms)\b|\d+(?:\.\d+)?\s*s a step|\d+%\s+(?:slower|faster)", text)
    assert timings == []
