"""Gating a CI job on an audit: ``--fail-on`` reads the verdict, never a mere list of findings; an audit
with nothing comparable is refused (``cannot_audit``) by the CLI and the API alike."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from domains import make_example
from reports import fails_gate
from service.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_SHIFT, main
from tests.support.waiting import wait_until


def _write(tmp_path, domain="medical", shift="none", seed=0, n=1000):
    bench, prod = make_example(domain, n_benchmark=n, n_production=n, shift=shift, n_embedding=0,
                               random_state=seed)  # SYNTHETIC
    paths = tmp_path / f"b{seed}{shift}.csv", tmp_path / f"p{seed}{shift}.csv"
    bench.to_csv(paths[0], index=False)
    prod.to_csv(paths[1], index=False)
    return paths


def _audit(paths, *extra):
    return main(["audit", "--benchmark", str(paths[0]), "--production", str(paths[1]), "--domain", "medical",
                 *extra])


@pytest.mark.slow
def test_fail_on_shift_rarely_fails_without_a_shift(tmp_path):
    """No-shift pairs (fresh seeds): the shift gate fails about as often as the verdict's false-alarm
    rate, not on every audit that lists a standing limitation such as a saturated benchmark."""
    codes = [_audit(_write(tmp_path, seed=seed), "--fail-on", "shift") for seed in range(100, 105)]
    assert codes.count(EXIT_SHIFT) <= 1, codes


@pytest.mark.slow
def test_fail_on_levels_follow_the_verdict(tmp_path):
    paths = _write(tmp_path, shift="planted", seed=3)
    assert _audit(paths, "--fail-on", "shift") == EXIT_SHIFT
    assert _audit(paths, "--fail-on-shift") == EXIT_SHIFT  # the older spelling of the same gate
    assert _audit(paths) == EXIT_OK


def _limitation(kind, severity, **fields):
    return {"rank": 1, "key": f"{kind}:all", "kind": kind, "severity": severity, "score": 0.01, "title": kind,
            "statement": f"{kind}.", **fields}


def test_a_saturated_benchmark_alone_never_fails_the_gate():
    result = {"verdict": {"shift_detected": False, "severity": "low", "summary": "s"},
              "limitations": [_limitation("benchmark_saturation", "low")]}  # stored before ``claim`` existed
    assert not any(fails_gate(result, level) for level in ("shift", "low", "medium", "high"))
    result["limitations"].append(_limitation("untested_context", "medium"))
    assert [fails_gate(result, level) for level in ("low", "medium", "high")] == [True, True, False]
    with pytest.raises(ValueError, match="level"):
        fails_gate(result, "severe")


def _unrelated(tmp_path):
    rng = np.random.default_rng(0)
    bench = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    prod = pd.DataFrame({"c": rng.normal(size=200), "d": rng.integers(0, 3, 200)})
    paths = tmp_path / "unrelated_b.csv", tmp_path / "unrelated_p.csv"
    bench.to_csv(paths[0], index=False)
    prod.to_csv(paths[1], index=False)
    return paths


def test_cli_refuses_an_audit_with_nothing_comparable(tmp_path, capsys):
    paths = _unrelated(tmp_path)
    assert main(["audit", "--benchmark", str(paths[0]), "--production", str(paths[1])]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "cannot_audit" in err and "share no feature" in err


def _finished(client, audit_id):
    """The audit's body once it has succeeded or failed, else None."""
    body = client.get(f"/v1/audits/{audit_id}").json()
    return body if body["status"] in ("succeeded", "failed") else None


def test_api_fails_the_audit_with_the_same_code(tmp_path, client):
    ids = []
    for path, role in zip(_unrelated(tmp_path), ("benchmark", "production")):
        with open(path, "rb") as fh:
            r = client.post("/v1/datasets", files={"file": (path.name, fh, "text/csv")},
                            data={"name": path.stem, "role": role})
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    audit_id = client.post("/v1/audits", json={"benchmark": ids[0], "production": ids[1]}).json()["id"]
    body = wait_until(lambda: _finished(client, audit_id), timeout_s=60, what=f"audit {audit_id} to finish")
    assert body["status"] == "failed" and body["error"]["code"] == "cannot_audit", body
    assert "share no feature" in body["error"]["message"]
