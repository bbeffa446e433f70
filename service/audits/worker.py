"""Background execution of audits in a thread pool, with progress written to the database."""
from __future__ import annotations

import logging
import os
import re
import shutil
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from service.audits.engine.datasets import ParquetDataset
from service.audits.engine.images import has_images, image_side
from service.audits.report_thumbnails import images_for
from service.datasets.images.derive import HASH_COLUMN
from service.datasets.images.origins import derived_ref
from service.errors import InvalidRequest, ServiceError
from service.roles import roles_for_audit

log = logging.getLogger("contextshift.worker")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[/\\][^\s'\"/\\]+){2,}")  # server paths are not the client's business


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class AuditWorker:
    """Runs submitted audits; ``runtime`` gives the stores, packs and settings."""

    def __init__(self, runtime: Any, *, max_workers: int = 1) -> None:
        self.runtime = runtime
        self.pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="audit")
        self.futures: dict[str, Future] = {}

    def submit(self, audit_id: str) -> Future:
        future = self.pool.submit(self.run, audit_id)
        self.futures[audit_id] = future
        return future

    def run(self, audit_id: str) -> None:
        audits = self.runtime.audits
        try:
            if not audits.mark_running(audit_id):  # another instance claimed it, or it is not queued
                log.info("audit %s already claimed; skipped", audit_id)
                return
            self._execute(audit_id)
        except ServiceError as exc:
            audits.mark_failed(audit_id, exc.to_body()["error"])
        except Exception as exc:  # the audit fails, the service stays up
            log.exception("audit %s failed", audit_id)  # the trace stays in the server log
            message = _PATH.sub("<path>", f"{type(exc).__name__}: {exc}")[:500]
            audits.mark_failed(audit_id, {"code": "audit_error", "message": message,
                                          "details": {"exception": type(exc).__name__}})
        finally:
            self.futures.pop(audit_id, None)

    def _execute(self, audit_id: str) -> None:
        # lazy: the audit pipeline (SciPy, ~2 s) loads at the first audit, not at API start-up
        from service.audits.pipeline import AuditInput, run_audit

        runtime = self.runtime
        row = runtime.audits.get(audit_id)
        datasets = runtime.datasets
        bench_row, prod_row = datasets.get(row.benchmark_id), datasets.get(row.production_id)
        pack = runtime.packs.get(row.domain, version=row.domain_version)
        contexts = [c.name for c in pack.context]  # roles are resolved under the audit's pack, as the CLI does
        options = {k: v for k, v in row.options.items() if k != "annotations"}
        if (options.get("engine") or runtime.settings.engine) == "dask":
            outcome = self._on_dask(audit_id, bench_row, prod_row, pack, options, contexts,
                                    self._annotations(row.options.get("annotations")))
            self._store(audit_id, outcome)
            return
        if any(has_images(r) for r in (bench_row, prod_row)):
            raise InvalidRequest("A registered dataset of image paths is audited on the Dask engine, which derives "
                                 'its images on the workers: send "options": {"engine": "dask"}.',
                                 code="images_need_dask", details={"engine": "dask"})
        production = datasets.load_frame(prod_row.id)
        audit_input = AuditInput(
            audit_id=audit_id,
            benchmark=datasets.load_frame(bench_row.id), production=production,
            benchmark_roles=roles_for_audit(bench_row.columns, context_columns=contexts),
            production_roles=roles_for_audit(prod_row.columns, context_columns=contexts),
            benchmark_ref={"id": bench_row.id, "name": bench_row.name, **derived_ref(bench_row.validation)},
            production_ref={"id": prod_row.id, "name": prod_row.name, **derived_ref(prod_row.validation)},
            pack=pack,
            options=options, annotations=self._annotations(row.options.get("annotations")),
            reference_cache=runtime.reference_cache(), benchmark_digest=bench_row.sha256,
            report_images=images_for(runtime.settings, options=options, domain=pack.name))
        outcome = run_audit(audit_input, progress=lambda p, stage: runtime.audits.set_progress(audit_id, p, stage))
        self._store(audit_id, outcome)

    def _on_dask(self, audit_id: str, bench_row, prod_row, pack, options: dict, contexts: list[str], annotations):
        """The Dask engine reads the stored Parquet partitions where they are; nothing is loaded whole.
        A registered dataset of image paths has its images derived on the cluster first, into scratch
        partitions removed after the audit (:mod:`service.audits.engine.images`)."""
        # lazy: dask.distributed and the audit pipeline (~3 s), only for audits on the Dask engine
        from service.audits.engine.cluster import get_client
        from service.audits.engine.dask_audit import audit_parquet

        runtime, datasets = self.runtime, self.runtime.datasets
        client = get_client(runtime.settings.dask_scheduler)
        scratch = datasets.tmp_dir / f"images-{audit_id}"
        if has_images(bench_row) or has_images(prod_row):
            runtime.audits.set_progress(audit_id, 0.0, "deriving context from the images on the cluster")
        try:
            sides = [image_side(client, r, [str(f) for f in datasets.dataset_files(r.id)],
                                roles_for_audit(r.columns, context_columns=contexts), settings=runtime.settings,
                                pack=pack, out_dir=scratch / which)
                     for r, which in ((bench_row, "benchmark"), (prod_row, "production"))]
            sources = [ParquetDataset.from_files(s.files, name=r.name) for s, r in zip(sides, (bench_row, prod_row))]
            sources = [replace(d, fingerprint=s.fingerprint) if s.fingerprint else d for d, s in zip(sources, sides)]
            images = {w: s.images for w, s in zip(("benchmark", "production"), sides) if s.images is not None}
            return audit_parquet(
                sources[0], sources[1], pack=pack, options=options, audit_id=audit_id,
                benchmark_roles=dict(sides[0].roles), production_roles=dict(sides[1].roles),
                refs=(dict(sides[0].ref), dict(sides[1].ref)), client=client, annotations=annotations,
                cache=runtime.reference_cache(), keep=(HASH_COLUMN,),
                report_images=images_for(runtime.settings, options=options, domain=pack.name),
                notes={"images": images} if images else None,
                progress=lambda p, stage: runtime.audits.set_progress(audit_id, p, stage))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _store(self, audit_id: str, outcome) -> None:
        runtime = self.runtime
        reports_dir = runtime.audits.reports_dir
        html_path = reports_dir / f"{audit_id}.html"
        atomic_write_text(html_path, outcome.html)
        atomic_write_text(reports_dir / f"{audit_id}.md", outcome.markdown)
        for fmt, text in (outcome.exports or {}).items():
            atomic_write_text(reports_dir / f"{audit_id}.next-round.{fmt}", text)
        if outcome.companion_html:
            atomic_write_text(reports_dir / f"{audit_id}.evidently.html", outcome.companion_html)
        runtime.audits.mark_succeeded(audit_id, outcome.result, str(html_path.name))

    def _annotations(self, dataset_id: str | None):
        if dataset_id is None:
            return None
        row = self.runtime.datasets.get(dataset_id)
        return self.runtime.datasets.load_frame(dataset_id), {c["name"]: c["role"] for c in row.columns}

    def shutdown(self, wait: bool = False) -> None:
        self.pool.shutdown(wait=wait, cancel_futures=True)
