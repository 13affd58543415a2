"""Every reference in code and docs points at a file of this repository.

Code comments cite the algorithm specifications as ``doc/algorithms.rst, P4``,
the design rules as ``doc/design.rst, contract rule 3`` and the privacy
arguments as ``doc/privacy/<page>.rst``. These tests fail when a tracked file
names a document that is not in the repository (the old working notes), when
a cited ``doc/`` file does not exist, when a cited section id is not in
doc/algorithms.rst, or when a ``:ref:`` target of the specification pages has
no label.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("sklearn_dpsco", "tests", "benchmarks", "examples", "doc", "README.md")
CODE = ("sklearn_dpsco", "tests", "benchmarks", "examples", "README.md")
THIS = Path(__file__).resolve()

#: Documents outside this repository that code and docs must not cite.
FOREIGN = re.compile(r"ALGORITHMS\.md|DESIGN\.md|STYLE\.md|PRIVACY_TESTING\.md|\.\./shared\b")
DOC_PATH = re.compile(r"doc/[\w/]+\.(?:rst|md)")
#: ``doc/algorithms.rst, <id>``: P1-P5, a section (§6.2), or a box id (ALD-1, G-Alg 1, L-Lemma 2.8, ...).
SPEC_ID = re.compile(r"doc/algorithms\.rst,\s+(P\d|§\d+(?:\.\d+)?|ALD-\d|[A-Z]-[A-Z][A-Za-z]* [A-Z]?\d*(?:\.\d+)?\b)")
#: Pages written as ``:ref:`text <label>```; only our own label families are checked.
REF_TARGET = re.compile(r":ref:`[^`<]*<((?:alg|design)-[^>]+)>`")
LABEL = re.compile(r"^\.\. _([^:]+):\s*$", re.M)
#: Files the docs build generates (named in doc/README.md, never committed).
GENERATED = {"doc/sg_execution_times.rst"}


def _tracked_files():
    """Text files under the scanned paths (git's list, or a walk without git)."""
    try:
        out = subprocess.run(["git", "ls-files", "--", *SCANNED], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
        paths = [ROOT / p for p in out]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for s in SCANNED for p in ([ROOT / s] if (ROOT / s).is_file() else (ROOT / s).rglob("*"))]
        paths = [p for p in paths if p.is_file() and not {"_build", "auto_examples", "generated"} & set(p.parts)]
    files = {}
    for p in paths:
        if not p.is_file():  # deleted in the work tree but still in the index
            continue
        try:
            files[p.relative_to(ROOT).as_posix()] = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # images and other binary files
            continue
    return files


@pytest.fixture(scope="module")
def files():
    found = _tracked_files()
    assert "doc/algorithms.rst" in found and "sklearn_dpsco/__init__.py" in found
    return found


def _hits(files, pattern, roots):
    for path, text in sorted(files.items()):
        if not path.startswith(roots) or (ROOT / path).resolve() == THIS:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            for m in pattern.finditer(line):
                yield path, lineno, m


def test_no_reference_to_documents_outside_the_repository(files):
    bad = [f"{p}:{n}: {m.group(0)}" for p, n, m in _hits(files, FOREIGN, SCANNED)]
    assert not bad, "cite doc/algorithms.rst, doc/design.rst or doc/privacy/testing.rst instead:\n" + "\n".join(bad)


def test_cited_doc_files_exist(files):
    bad = [f"{p}:{n}: {m.group(0)}" for p, n, m in _hits(files, DOC_PATH, CODE)
           if m.group(0) not in GENERATED and not (ROOT / m.group(0)).is_file()]
    assert not bad, "missing files:\n" + "\n".join(bad)


def _spec_ids(text):
    """Every citable id of doc/algorithms.rst: P1-P5, section numbers and box ids."""
    ids = set(re.findall(r"^\*\*(P\d)\.", text, re.M))
    lines = text.splitlines()
    for title, underline in zip(lines, lines[1:]):
        if not (underline and set(underline) <= set("=-~^") and len(underline) >= 3 and title.strip()):
            continue
        m = re.match(r"(\d+(?:\.\d+)?)\.?\s", title)
        if m:
            ids.add("§" + m.group(1))
            continue
        head = title.split(". ", 1)[0]
        for part in re.split(r" / | and ", head):  # "G-Thm 3.6 / Cor 3.7", "A-Alg 4 and A-Alg 5"
            ids.add(part.strip())
    return ids


def test_cited_algorithm_ids_exist(files):
    ids = _spec_ids(files["doc/algorithms.rst"])
    assert {"P1", "P4", "§6.2", "ALD-1", "G-Alg 1", "G-Def 3.4", "L-Lemma 2.8", "F-Alg 2"} <= ids  # the parser works
    bad = [f"{p}:{n}: {m.group(1)}" for p, n, m in _hits(files, SPEC_ID, SCANNED) if m.group(1) not in ids]
    assert not bad, "ids not in doc/algorithms.rst:\n" + "\n".join(bad)


def test_ref_targets_of_the_specification_pages_exist(files):
    labels = {label for path, text in files.items() if path.startswith("doc/") for label in LABEL.findall(text)}
    bad = [f"{p}:{n}: {m.group(1)}" for p, n, m in _hits(files, REF_TARGET, ("doc",)) if m.group(1) not in labels]
    assert not bad, "unknown :ref: targets:\n" + "\n".join(bad)
