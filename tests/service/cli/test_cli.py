"""The console script starts fast and never imports Evidently or Great Expectations up front."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest


def test_help_is_fast():
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "service.cli", "--help"], capture_output=True, text=True,
                         check=True)
    assert time.perf_counter() - started < 1.0
    assert "serve" in out.stdout


@pytest.mark.slow
def test_app_and_cli_import_no_heavy_libraries():
    code = ("import sys, service.cli, service.app; app = service.app.create_app; "
            "heavy = [m for m in ('evidently', 'great_expectations', 'matplotlib', 'sklearn') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "service.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env={**__import__("os").environ, "DO_NOT_TRACK": "1"}, timeout=300)


def _example_files(tmp_path, shift):
    from domains.examples import make_example

    bench, prod = make_example("deepfake", n_benchmark=1500, n_production=1500, shift=shift, random_state=5)
    bench.to_csv(tmp_path / "bench.csv", index=False)
    prod.to_parquet(tmp_path / "prod.parquet", index=False)
    return str(tmp_path / "bench.csv"), str(tmp_path / "prod.parquet")


@pytest.mark.slow
def test_audit_writes_reports_and_fails_on_shift(tmp_path):
    bench, prod = _example_files(tmp_path, "planted")
    html, js = tmp_path / "out" / "r.html", tmp_path / "out" / "r.json"
    res = _run("audit", "--benchmark", bench, "--production", prod, "--domain", "deepfake",
               "--html", str(html), "--json", str(js), "--fail-on-shift")
    assert res.returncode == 1, res.stderr
    assert html.stat().st_size < 1_000_000 and "Heavily compressed" in res.stdout
    import json

    result = json.loads(js.read_text())
    assert result["verdict"]["shift_detected"] is True
    # SYNTHETIC: the planted weak slice loses the same accuracy on both sides (a standing weakness); it leads
    # the weak slices; change claims rank before standing ones
    weak = [lim for lim in result["limitations"] if lim["kind"] == "underperforming_slice"]
    assert weak and weak[0]["slice"] == "heavy_compression", [(lim["kind"], lim["slice"]) for lim in weak]
    claims = [lim["claim"] for lim in result["limitations"]]
    assert claims == sorted(claims)  # "change" < "standing"
    plain = _run("audit", "--benchmark", bench, "--production", prod, "--domain", "deepfake")
    assert plain.returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("problem,expected", [
    ("missing", "file_not_found"), ("bad_domain", "unknown_domain"), ("broken", "invalid_csv")])
def test_audit_bad_input_exits_2_with_the_api_message(tmp_path, problem, expected):
    bench, prod = _example_files(tmp_path, "none")
    domain = "deepfake"
    if problem == "missing":
        bench = str(tmp_path / "nope.csv")
    elif problem == "bad_domain":
        domain = "astrology"
    else:
        (tmp_path / "broken.csv").write_bytes(b'id,x\n1,"open\n2,3\n')
        bench = str(tmp_path / "broken.csv")
    res = _run("audit", "--benchmark", bench, "--production", prod, "--domain", domain)
    assert res.returncode == 2 and f"[{expected}]" in res.stderr, res.stderr


@pytest.mark.slow
@pytest.mark.parametrize("flag,value", [("--alpha", "0.7"), ("--budget", "-1"), ("--sample-rows", "10")])
def test_options_out_of_range_exit_2_naming_the_option(tmp_path, flag, value):
    """The flags become the audit's typed options before any file is read: a value the API would
    refuse is refused here too, by name, not with a traceback."""
    engine = ("--engine", "dask") if flag == "--sample-rows" else ()
    res = _run("audit", "--benchmark", str(tmp_path / "b.csv"), "--production", str(tmp_path / "p.csv"), *engine,
               flag, value)
    assert res.returncode == 2 and "[invalid_options]" in res.stderr, res.stderr
    assert flag.lstrip("-").replace("-", "_") in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
def test_demo_prints_where_the_report_is(tmp_path):
    res = _run("demo", "--out", str(tmp_path / "demo"), "--rows", "4000")
    assert res.returncode == 0, res.stderr
    assert "Report:" in res.stdout and (tmp_path / "demo" / "report.html").exists()


def test_progress_draws_on_a_terminal_and_stays_silent_otherwise():
    import io

    from service.cli import TerminalProgress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        progress = TerminalProgress(stream)
        progress(0.5, "context shift")
        progress.done()
    assert "50%" in tty.getvalue() and "context shift" in tty.getvalue()
    assert pipe.getvalue() == ""
