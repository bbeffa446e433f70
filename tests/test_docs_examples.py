"""Every example in README.md and docs/*.md runs, and every relative link resolves.

* The ```python blocks of a page run in order in one namespace (a later block may use what an
  earlier one defined), in a temporary folder.
* Every ``contextshift <command>`` shown in a ```bash block uses only options that command has;
  the README's command-line audit is run for real on small generated files.
* Every relative link points to an existing file, and a ``#fragment`` to a heading there.
* The operations page lists every ``CONTEXTSHIFT_*`` setting.
"""
from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from service import cli
from service.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[ \t]*$")
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
COMMAND = re.compile(r"\bcontextshift\s+(serve|audit|demo|monitor\s+run)\b(.*)")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block, in page order; indented fences (in lists) too."""
    blocks, lang, indent, lines = [], None, "", []
    for line in text.splitlines():
        match = FENCE.match(line)
        if lang is None and match:
            lang, indent, lines = match["lang"], match["indent"], []
        elif lang is not None and match and match["indent"] == indent and not match["lang"]:
            blocks.append((lang, "\n".join(lines)))
            lang = None
        elif lang is not None:
            lines.append(line[len(indent):] if line.startswith(indent) else line)
    assert lang is None, "a fenced block is not closed"
    return blocks


def prose(text: str) -> str:
    """The page without its fenced blocks (links and headings live there)."""
    out, inside = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
        elif not inside:
            out.append(line)
    return "\n".join(out)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    return {slug(m[1]) for m in re.finditer(r"^#{1,6} (.+)$", prose(text), re.M)}


def shell_commands(code: str) -> list[str]:
    """The commands of a bash block, continuation lines joined, comments cut."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [re.sub(r"\s+#.*$", "", line).strip() for line in joined.splitlines() if line.strip()]


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


PYTHON_PAGES = [p for p in PAGES if any(lang == "python" for lang, _ in fenced_blocks(p.read_text()))]


def test_the_pages_have_examples_to_run():
    names = {p.name for p in PYTHON_PAGES}
    assert {"README.md", "python.md"} <= names, names


@pytest.mark.slow
@pytest.mark.parametrize("page", PYTHON_PAGES, ids=_page_id)
def test_python_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DO_NOT_TRACK", "1")
    namespace: dict = {"__name__": "__docs_example__"}
    for number, (lang, code) in enumerate(fenced_blocks(page.read_text()), start=1):
        if lang != "python":
            continue
        try:
            exec(compile(code, f"{page.name}, block {number}", "exec"), namespace)
        except Exception as exc:  # name the block that broke, then the error
            pytest.fail(f"{_page_id(page)} block {number} failed: {type(exc).__name__}: {exc}\n{code}")


def _options_by_command() -> dict[str, set[str]]:
    parser = cli._build_parser()

    def subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        return next((a.choices for a in p._actions if isinstance(a, argparse._SubParsersAction)), {})

    found = {}
    for name, sub in subparsers(parser).items():
        nested = subparsers(sub)
        for inner_name, inner in nested.items():
            found[f"{name} {inner_name}"] = {o for a in inner._actions for o in a.option_strings}
        found[name] = {o for a in sub._actions for o in a.option_strings}
    return found


def test_cli_examples_use_existing_options():
    options = _options_by_command()
    shown = 0
    for page in PAGES:
        for lang, code in fenced_blocks(page.read_text()):
            if lang not in ("bash", "sh", "shell"):
                continue
            for command in shell_commands(code):
                match = COMMAND.search(command)
                if not match:
                    continue
                name = " ".join(match[1].split())
                shown += 1
                unknown = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", match[2])) - options[name]
                assert not unknown, f"{_page_id(page)}: `contextshift {name}` has no option {sorted(unknown)}"
    assert shown >= 5


@pytest.mark.slow
def test_readme_cli_audit_runs(tmp_path, monkeypatch, capsys):
    """The README's command-line audit, run as written on small generated files of those names."""
    from domains.examples import make_example

    blocks = [code for lang, code in fenced_blocks((ROOT / "README.md").read_text()) if lang == "bash"]
    commands = [c for code in blocks for c in shell_commands(code)
                if COMMAND.search(c) and re.search(r" audit .*--benchmark \S+\.csv ", c)]
    assert commands, "the README shows no `contextshift audit` of CSV files"
    argv = shlex.split(commands[0])[1:]
    monkeypatch.chdir(tmp_path)
    bench, prod = make_example("medical", n_benchmark=1500, n_production=1500, shift="planted", random_state=0)
    files = {argv[argv.index(flag) + 1]: frame for flag, frame in (("--benchmark", bench), ("--production", prod))}
    for name, frame in files.items():
        frame.to_csv(name, index=False)
    assert cli.main(argv) in (0, 1), capsys.readouterr().err  # 1: the --fail-on gate tripped; 2: bad input
    for flag in ("--html", "--json"):
        if flag in argv:
            assert (tmp_path / argv[argv.index(flag) + 1]).stat().st_size > 0


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_relative_links_resolve(page):
    text = page.read_text()
    broken = []
    for target in LINK.findall(prose(text)):
        if re.match(r"[a-z][a-z+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no file {path})")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file.read_text()):
            broken.append(f"{target} (no heading #{fragment} in {file.name})")
    assert not broken, f"{_page_id(page)}: {broken}"


def test_every_docs_page_is_linked_from_the_index_and_the_readme():
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    index = set(LINK.findall((ROOT / "docs" / "index.md").read_text()))
    readme = {t.removeprefix("docs/") for t in LINK.findall((ROOT / "README.md").read_text())}
    assert pages <= {t.partition("#")[0] for t in index}
    assert pages | {"index.md"} <= {t.partition("#")[0] for t in readme}


def test_operations_page_lists_every_setting():
    text = (ROOT / "docs" / "operations.md").read_text()
    missing = [f"CONTEXTSHIFT_{name.upper()}" for name in Settings.model_fields
               if f"| `CONTEXTSHIFT_{name.upper()}` |" not in text]
    assert not missing, missing


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    assert "make run" in text and "make test" in text
    for page in PAGES:
        body = page.read_text()
        assert "../shared" not in body and not re.search(r"SPEC\s*§", body), page.name


def test_api_page_lists_every_route(tmp_path):
    from service.app import create_app

    spec = create_app(Settings(data_dir=tmp_path)).openapi()
    text = (ROOT / "docs" / "api.md").read_text()
    listed = {(m, re.sub(r"\{[^}]+\}", "{}", p)) for m, p in re.findall(r"^\| `([A-Z]+)` \| `([^`]+)`", text, re.M)}
    missing = [f"{method.upper()} {path}" for path, operations in spec["paths"].items() for method in operations
               if (method.upper(), re.sub(r"\{[^}]+\}", "{}", path)) not in listed and path != "/openapi.json"]
    assert not missing, missing


def test_cli_page_lists_every_option():
    text = (ROOT / "docs" / "cli.md").read_text()
    rows = re.findall(r"^\| `([a-z ]+)` \| (.+?) \|", text, re.M)
    documented = {(command, option) for command, cell in rows for option in re.findall(r"--[a-z-]+", cell)}
    missing = [f"{command} {option}" for command, options in _options_by_command().items() if command != "monitor"
               for option in sorted(options - {"-h", "--help"}) if (command, option) not in documented]
    assert not missing, missing


def test_operations_page_states_each_settings_default():
    text = (ROOT / "docs" / "operations.md").read_text()
    wrong = []
    for name, field in Settings.model_fields.items():
        match = re.search(rf"^\| `CONTEXTSHIFT_{name.upper()}` \| ([^|]+) \|", text, re.M)
        if not match:
            continue  # test_operations_page_lists_every_setting names it
        default = field.get_default(call_default_factory=True)
        shown = match[1].strip()
        if isinstance(default, bool):
            ok = shown == ("`on`" if default else "`off`")
        elif not default and not isinstance(default, (int, float)) or default == {}:
            ok = shown.startswith("empty") or shown == "`{}`" or shown.startswith("SQLite")
        else:
            ok = shown == f"`{default}`"
        if not ok:
            wrong.append(f"CONTEXTSHIFT_{name.upper()}: docs say {shown}, the default is {default!r}")
    assert not wrong, wrong


def test_layout_page_names_every_package():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in config["tool"]["setuptools"]["packages"]["find"]["include"]]
    text = (ROOT / "docs" / "layout.md").read_text()
    assert [p for p in packages if f"| `{p}/` |" not in text] == []
