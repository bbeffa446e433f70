"""The audit as a library: :func:`audit.run_audit` from frames, roles, a pack and typed options to the
typed AuditResult, without the service. All data SYNTHETIC (the domain generators' planted shifts)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit import AuditData, AuditInputError, AuditOptions, run_audit
from audit.roles import infer_roles
from domains import load_builtin, make_example
from reports.result import AuditResult

ROOT = Path(__file__).resolve().parents[2]
ROLES = {"id": "id", "label": "label", "prediction": "prediction"}


@pytest.fixture(scope="module")
def medical():
    pack = load_builtin("medical")
    bench, prod = make_example("medical", n_benchmark=1500, n_production=1500, shift="planted", random_state=5)
    contexts = {c.name: "context" for c in pack.context if c.name in bench.columns}
    roles = {c: ROLES.get(c, contexts.get(c, "feature")) for c in bench.columns}
    return pack, bench, prod, roles


@pytest.mark.slow
def test_the_result_is_typed_and_its_json_is_what_the_api_serves(medical):
    pack, bench, prod, roles = medical
    seen: list[float] = []
    outcome = run_audit(AuditData(bench, roles, {"name": "derm-v1"}), AuditData(prod, roles), pack=pack,
                        options=AuditOptions(seed=3, budget=50), progress=lambda f, stage: seen.append(f))
    assert isinstance(outcome.result, AuditResult)
    assert AuditResult.model_validate(outcome.result_json) == outcome.result
    assert outcome.result.benchmark.name == "derm-v1" and outcome.result.production.name == "production"
    assert outcome.result.parameters.model_dump()["seed"] == 3
    assert seen == sorted(seen) and 0 < seen[0] and seen[-1] < 1  # progress only moves forward, never "done"
    assert outcome.result.verdict.shift_detected  # SYNTHETIC planted shifts
    assert outcome.exports is not None and len(outcome.exports["csv"].splitlines()) <= 51  # the budget, a header
    assert outcome.result.title and outcome.result.title in outcome.html


@pytest.mark.slow
def test_the_same_inputs_give_the_same_result(medical):
    pack, bench, prod, roles = medical
    once, again = (run_audit(AuditData(bench, roles), AuditData(prod, roles), pack=pack,
                             options=AuditOptions(seed=1, discovery=False)).result_json for _ in range(2))
    for result in (once, again):
        result.pop("created_at"), result.pop("timings")
    assert once == again


def test_tables_with_nothing_to_compare_are_refused_with_a_code():
    rng = np.random.default_rng(0)
    bench = pd.DataFrame({"a": rng.normal(size=50), "label": rng.choice(["x", "y"], 50)})
    prod = pd.DataFrame({"b": rng.normal(size=50)})
    with pytest.raises(AuditInputError) as raised:
        run_audit(AuditData(bench, {"a": "feature", "label": "label"}), AuditData(prod, {"b": "feature"}),
                  pack=load_builtin("generic"))
    assert raised.value.code == "cannot_audit" and "a" in raised.value.details["only_in_benchmark"]
    assert "share no feature" in raised.value.message


def test_the_options_and_errors_load_without_the_pipeline():
    """``audit.options`` and ``audit.errors`` are what the API and the CLI import at start-up."""
    probe = ("import sys, audit, audit.errors, audit.options; "
             "print(sorted(m for m in ('audit.pipeline', 'scipy', 'sklearn', 'service') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_an_audit_without_rendering_gives_the_same_result():
    """``render=False`` skips only the HTML and Markdown: the result is final before them."""
    pack = load_builtin("deepfake")
    bench, prod = make_example("deepfake", n_benchmark=400, n_production=400, shift="planted", random_state=3)
    roles = infer_roles(bench.columns, context_columns=[c.name for c in pack.context])
    outcomes = [run_audit(AuditData(bench, roles), AuditData(prod, roles), pack=pack,
                          options=AuditOptions(seed=3), render=render) for render in (True, False)]
    full, bare = (o.result.model_dump(exclude={"timings", "created_at"}) for o in outcomes)
    assert full == bare
    assert outcomes[0].html and outcomes[0].markdown and not outcomes[1].html and not outcomes[1].markdown
