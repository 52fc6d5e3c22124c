"""The project's documents hold together.

* The README tour (the ``bash`` blocks between ``<!-- tour:start -->`` and ``<!-- tour:end -->``) runs in order
  from a fresh copy of the repository, each command ending with the exit code the README states (0 unless a
  trailing ``# exits N: why`` says otherwise), and writes nothing outside ``results/``.
* Every path that a command in the README or docs/ names exists in the repository or is written by an earlier
  command of the same document (``--out`` / ``--plot``); placeholders are written in capitals (``MY-GRID.toml``).
* Every "theory.md §N" citation resolves to a heading ``## §N`` (or ``### §N.k``) of docs/theory.md.
* No file of the project names the team's private working notes.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
THEORY = ROOT / "docs" / "theory.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]

TOUR_START, TOUR_END = "<!-- tour:start -->", "<!-- tour:end -->"
EXIT_NOTE = re.compile(r"#\s*exits\s+(\d+)\s*:")
TOUR_MAX_ITERS = "20"
#: run the CLI of the repository under test; -P keeps the working directory (the copy) off sys.path
RUNNER = "import sys; from signsim.cli import main; main(sys.argv[1:])"

PATH_SUFFIXES = (".toml", ".json", ".png", ".pdf", ".svg", ".npy", ".npz", ".csv", ".sh", ".py", ".svm")
REPO_DIRS = ("signsim/", "configs/", "docs/", "tests/", "benchmarks/", "examples/", "tools/", "results/")
WRITE_OPTIONS = ("--out", "--plot")

# the names of the private notes, assembled so that this file does not contain them
PRIVATE = ("shared" + "/reference", "../" + "shared", "math" + ".md", "interface" + ".md")
CITATION = re.compile(r"(?:theory|" + "ma" + "th" + r")\.md((?:\s*(?:,|and)?\s*§\s*\d+(?:\.\d+)?)+)")
CITED = re.compile(r"§\s*(\d+(?:\.\d+)?)")
CITING_PLACES = ("signsim", "tests", "benchmarks", "examples", "tools", "configs", "docs", "README.md")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".sh", ".json", ".csv", ""}


# ---------------------------------------------------------------------------------------------- parsing


def code_blocks(text: str, languages: tuple[str, ...] = ("bash",)) -> list[str]:
    """Bodies of the fenced code blocks in ``languages``, in document order."""
    blocks = re.finditer(r"^```(\w*)[^\n]*\n(.*?)^```", text, re.M | re.S)
    return [m.group(2) for m in blocks if m.group(1) in languages]


def command_lines(body: str) -> list[str]:
    """The commands of a shell block: backslash continuations joined, comment-only and blank lines dropped."""
    out, current = [], ""
    for raw in body.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.strip() and not current.strip().startswith("#"):
            out.append(current.strip())
        current = ""
    return out


def split_command(line: str) -> tuple[list[str], int]:
    """(argv, expected exit code): the trailing comment may say ``# exits N: why``."""
    argv = shlex.split(line, comments=True)
    note = EXIT_NOTE.search(line[line.find(" #"):]) if " #" in line else None
    return argv, int(note.group(1)) if note else 0


def tour_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    assert text.count(TOUR_START) == 1 and text.count(TOUR_END) == 1, "README: one tour:start and one tour:end marker"
    tour = text[text.index(TOUR_START):text.index(TOUR_END)]
    return [c for body in code_blocks(tour) for c in command_lines(body)]


def inline_commands(text: str) -> list[str]:
    """Commands quoted inline: `signsim ...`, `bash ...`, `python ...`."""
    spans = re.finditer(r"`(?:[A-Z_]+=\S+ )*((?:signsim|bash|python) [^`]+)`", text)
    return [" ".join(m.group(1).split()) for m in spans]


def is_placeholder(token: str) -> bool:
    """FILE.json, MY-GRID.toml, RUN.json, paths with an ellipsis or a glob: not real paths."""
    if any(s in token for s in ("…", "...", "*", "<", ">", "$")):
        return True
    stem = Path(token).name.split(".")[0]
    return bool(re.fullmatch(r"[A-Z0-9_-]+", stem)) and any(c.isalpha() for c in stem)


def path_tokens(argv: list[str]) -> tuple[list[str], list[str]]:
    """(paths the command reads or names, paths it writes) among its arguments."""
    named, written = [], []
    previous = ""
    for token in argv[1:]:
        value = token.split("=", 1)[1] if token.startswith("--") and "=" in token else token
        option = token.split("=", 1)[0] if token.startswith("--") and "=" in token else previous
        previous = token
        if value.startswith("-") or "://" in value or ":" in value or is_placeholder(value):
            continue
        if not ("/" in value or value.endswith(PATH_SUFFIXES)):
            continue
        (written if option in WRITE_OPTIONS else named).append(value.rstrip("/"))
    return named, written


# ------------------------------------------------------------------------------------------ the tour


def _tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60, check=True).stdout
        files = [f for f in out.splitlines() if f]
    except (OSError, subprocess.SubprocessError):
        skip = {".git", "__pycache__", "results", ".pytest_cache", ".hypothesis", ".ruff_cache"}
        files = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                 if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]
    return [f for f in files if (ROOT / f).is_file()]


def _fresh_copy(dest: Path) -> None:
    """The repository's files as a fresh clone would have them (no results/, no caches)."""
    for rel in _tracked_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((ROOT / rel).read_bytes())


def _snapshot(root: Path) -> dict[str, tuple[int, int] | None]:
    out: dict[str, tuple[int, int] | None] = {}
    for p in root.rglob("*"):
        rel = p.relative_to(root).as_posix()
        st = p.stat()
        out[rel] = (st.st_size, st.st_mtime_ns) if p.is_file() else None
    return out


def test_tour_is_marked_and_annotated():
    """Cheap checks that run everywhere: the tour exists, every command is signsim's, codes are 0, 1 or 2."""
    lines = tour_commands()
    assert len(lines) >= 10
    for line in lines:
        argv, code = split_command(line)
        assert argv[0] == "signsim", line
        assert code in (0, 1, 2), line
        assert not any(t in (">", ">>", "|", "&&", ";") for t in argv), f"no shell syntax in the tour: {line}"
    assert any(split_command(line)[1] == 1 for line in lines), "the README's check-spb example exits 1"


@pytest.mark.slow
def test_readme_tour_runs_in_order_and_writes_under_results_only(tmp_path):
    copy = tmp_path / "repo"
    _fresh_copy(copy)
    before = _snapshot(copy)
    env = {**os.environ, "SIGNSIM_MAX_ITERS": TOUR_MAX_ITERS,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for line in tour_commands():
        argv, expected = split_command(line)
        p = subprocess.run([sys.executable, "-P", "-c", RUNNER, *argv[1:]], cwd=copy, env=env, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == expected, (f"README tour: `{line}` exited {p.returncode}, the README says {expected}\n"
                                          f"{p.stderr[-3000:]}")
        assert "diverged" not in p.stderr, f"README tour: `{line}` diverged\n{p.stderr[-3000:]}"
    after = _snapshot(copy)
    changed = sorted(rel for rel in after if after[rel] != before.get(rel) or rel not in before)
    outside = [rel for rel in changed if rel != "results" and not rel.startswith("results/")]
    assert not outside, f"the tour wrote outside results/: {outside}"
    assert not sorted(set(before) - set(after)), "the tour deleted files"


# ------------------------------------------------------------------------------------------- paths


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_a_command_names_exists_or_was_written_earlier(doc):
    text = doc.read_text(encoding="utf-8")
    commands = [c for body in code_blocks(text, ("bash", "sh", "text", "yaml", "")) for c in command_lines(body)]
    commands += inline_commands(text)
    written: set[str] = set()
    missing = []
    for line in commands:
        if line.startswith("- run: "):  # a YAML step
            line = line[len("- run: "):]
        try:
            argv = shlex.split(line, comments=True)
        except ValueError:
            continue
        if not argv or argv[0] not in ("signsim", "bash", "python", "pip"):
            continue
        for segment in " ".join(argv).split(" && "):
            seg = shlex.split(segment)
            if not seg:
                continue
            named, outs = path_tokens(seg)
            for path in named:
                earlier = any(path == w or path.startswith(w + "/") for w in written)
                if not earlier and not (ROOT / path).exists():
                    missing.append(f"{path} (in `{line}`)")
            written.update(outs)
    assert not missing, f"{doc.name}: paths that neither exist nor are written by an earlier command: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_repository_paths_quoted_in_the_docs_exist(doc):
    text = doc.read_text(encoding="utf-8")
    missing = []
    for m in re.finditer(r"`([^`\s]+)`", text):
        token = m.group(1).rstrip("/").split("::")[0]
        if token.startswith(REPO_DIRS) and not token.startswith("results/") and not is_placeholder(token) \
                and not (ROOT / token).exists():
            missing.append(token)
    assert not missing, f"{doc.name} names files that do not exist: {missing}"


# --------------------------------------------------------------------------------------- citations


def theory_headings() -> set[str]:
    text = THEORY.read_text(encoding="utf-8")
    return set(re.findall(r"^#{2,4}\s*§(\d+(?:\.\d+)?)\s", text, re.M))


def _project_files(places: tuple[str, ...]) -> list[Path]:
    files = []
    for rel in _tracked_files():
        if not rel.startswith(places) and rel not in places:
            continue
        path = ROOT / rel
        if path.suffix in TEXT_SUFFIXES:
            files.append(path)
    return files


def test_theory_keeps_the_cited_section_numbers():
    headings = theory_headings()
    for n in range(1, 10):
        assert str(n) in headings, f"docs/theory.md has no heading '## §{n} ...'"


def test_every_theory_citation_resolves_to_a_heading():
    """Citations of docs/theory.md (and, until they are replaced, of the old notes, whose section numbers
    theory.md keeps) name an existing section."""
    headings = theory_headings()
    bad = []
    for path in _project_files(CITING_PLACES):
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in CITATION.finditer(text):
            for number in CITED.findall(m.group(1)):
                if number not in headings:
                    bad.append(f"{path.relative_to(ROOT)}: §{number}")
    assert not bad, f"citations without a heading in docs/theory.md: {bad}"


# ------------------------------------------------------------------------------------- private notes


def _naming_private_notes(places: tuple[str, ...]) -> list[str]:
    hits = []
    for path in _project_files(places):
        text = path.read_text(encoding="utf-8", errors="replace")
        for name in PRIVATE:
            if name in text:
                hits.append(f"{path.relative_to(ROOT)}: {name}")
    return hits


def test_documents_do_not_name_private_notes():
    hits = _naming_private_notes(("README.md", "docs", "configs", "tests/project/test_docs.py"))
    assert not hits, hits


def test_no_file_of_the_project_names_private_notes():
    everything = tuple(sorted({rel.split("/")[0] for rel in _tracked_files()}))
    hits = _naming_private_notes(everything)
    assert not hits, f"{len(hits)} references, e.g. {hits[:5]}"


def test_every_environment_variable_signsim_reads_is_in_the_reference():
    """docs/reference.md's table of environment variables names each SIGNSIM_ variable the package reads."""
    names = {n for p in (ROOT / "signsim").rglob("*.py")
             for n in re.findall(r"\bSIGNSIM_[A-Z_]+\b", p.read_text(encoding="utf-8"))}
    section = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8").split("## Environment variables")[1]
    documented = set(re.findall(r"^\| `(SIGNSIM_[A-Z_]+)", section, flags=re.M))
    assert {"SIGNSIM_READY_FILE", "SIGNSIM_MAX_ITERS"} <= names
    assert names <= documented, sorted(names - documented)


def test_what_the_oracle_audit_found_the_docs_saying_stays_as_built(cli):
    """Issue 50's oracle audit: reference.md said EF21 with partial participation is refused (it runs, as EF21-PP:
    theory §12), and theory §8.4 said "Not yet: the pre-aggregators" (they are §8.9's). The docs say what runs, and
    it runs."""
    reference = (ROOT / "docs" / "reference.md").read_text()
    theory = (ROOT / "docs" / "theory.md").read_text()
    assert "EF21 with partial participation runs as EF21-PP" in reference
    r = cli("run", "--method", "ef21", "--problem", "quadratic", "--workers", "4", "--clients-per-round", "2",
            "--iters", "3", "--quiet")
    assert r.code == 0, r.err
    section = theory.split("### §8.4 ", 1)[1].split("\n### ", 1)[0]
    assert "Not yet" not in section and "The pre-aggregators (NNM, bucketing, clipping, ARC) are §8.9's." in section
