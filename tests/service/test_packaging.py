"""What can be checked of the Dockerfile, Makefile and CI without a Docker engine."""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def test_dockerfile_runs_serve_as_non_root():
    text = _dockerfile()
    users = re.findall(r"^USER\s+(\S+)", text, flags=re.M)
    assert users and users[-1] not in ("root", "0")
    cmd = json.loads(re.search(r"^CMD\s+(\[.*\])", text, flags=re.M).group(1))
    assert cmd[:2] == ["contextshift", "serve"]


def test_dockerfile_copies_every_package_it_installs():
    text = _dockerfile()
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in cfg["tool"]["setuptools"]["packages"]["find"]["include"]]
    for package in packages:
        assert re.search(rf"^COPY\s+{package}\s", text, flags=re.M), package
    assert "pip install" in text


def test_console_script_and_readme_commands_agree():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert cfg["project"]["scripts"]["contextshift"] == "service.cli:main"
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert "make run" in readme and "make test" in readme
    assert "contextshift serve" in makefile and "contextshift serve" in _dockerfile()
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_pins_the_stack_notes_require():
    deps = " ".join(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    assert "evidently>=0.7.23,<0.8" in deps and "pandas>=2.2,<3" in deps and "plotly>=5.10,<6" in deps
