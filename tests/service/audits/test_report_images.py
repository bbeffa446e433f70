"""What the images add to the report is decided before the report is rendered, and it is rendered once.

Data: the deepfake domain generator (SYNTHETIC planted shifts), as in the pipeline tests."""
from __future__ import annotations

import pytest

import reports.html
from audit.roles import infer_roles
from domains import load_builtin, make_example
from reports import ReportImages
from service.audits.local import audit_frames

pytestmark = pytest.mark.slow  # every test here takes seconds: make test-fast skips them


def test_the_report_is_rendered_once_with_what_the_images_add(monkeypatch):
    rendered = []
    environment = reports.html._environment

    class Counted:
        def get_template(self, name):
            template = environment().get_template(name)

            class Template:
                def render(self, **context):
                    rendered.append(name)
                    return template.render(**context)
            return Template()

    monkeypatch.setattr(reports.html, "_environment", Counted)
    pack = load_builtin("deepfake")
    bench, prod = make_example("deepfake", n_benchmark=400, n_production=400, shift="planted", random_state=4)
    contexts = [c.name for c in pack.context]
    asked = []

    def images(result, production):
        asked.append((result.id, len(production)))
        top = result.limitations[0]
        return ReportImages(notes={top.key: "A note the images give."}, thumbnail_note="Why no thumbnail shows.")

    outcome = audit_frames(bench, prod, pack=pack, report_images=images,
                           benchmark_roles=infer_roles(bench.columns, context_columns=contexts),
                           production_roles=infer_roles(prod.columns, context_columns=contexts))
    assert rendered == ["report.html.j2"] and asked == [("local", len(prod))]
    assert "A note the images give." in outcome.html and "Why no thumbnail shows." in outcome.html
