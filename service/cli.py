"""The ``contextshift`` console script. Heavy imports happen inside the commands: this module
loads only the standard library and service.errors, so ``--help`` and a cron run with no new data
stay fast (tests/service/monitors/test_monitor_cli_startup.py)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from service.errors import ServiceError

EXIT_OK, EXIT_SHIFT, EXIT_BAD_INPUT = 0, 1, 2
DEMO_OUT = "data/demo"
ROLE_NOTES = ("benchmark labels", "model outputs")  # audit notes printed: roles missing, likely columns named


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="contextshift",
                                     description="Context-shift auditing for production ML models.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = sub.add_parser("serve", help="run the REST API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--log-level", default="info")

    audit = sub.add_parser("audit", help="audit production data against a benchmark, without a server")
    audit.add_argument("--benchmark", required=True, metavar="FILE")
    audit.add_argument("--production", required=True, metavar="FILE")
    audit.add_argument("--domain", default="generic", metavar="NAME",
                       help="built-in domain pack or a pack YAML file (default: generic)")
    audit.add_argument("--schema", metavar="FILE", help='JSON {"columns": {"<column>": "<role>"}}')
    audit.add_argument("--delimiter", metavar="NAME",
                       help="CSV delimiter of both files: comma, semicolon, tab or pipe (default: read from each "
                            "file's first lines)")
    audit.add_argument("--decimal", metavar="MARK",
                       help="CSV decimal mark of both files, '.' or ',' (default: read from each file)")
    audit.add_argument("--annotations", metavar="FILE",
                       help="label-quality table with columns item_id, annotator_id, label")
    audit.add_argument("--html", metavar="OUT.html")
    audit.add_argument("--json", metavar="OUT.json")
    audit.add_argument("--markdown", metavar="OUT.md")
    audit.add_argument("--thumbnails", action="store_true",
                       help="image uploads: show thumbnails of production rows in the HTML report's top limitations")
    audit.add_argument("--thumbnails-medical", action="store_true",
                       help="with --thumbnails: show them for the dermatology domain too (its images are patient data)")
    audit.add_argument("--budget", type=int, default=500, help="rows to label next round")
    audit.add_argument("--alpha", type=float, default=0.05)
    audit.add_argument("--seed", type=int, default=0)
    audit.add_argument("--fail-on", choices=["shift", "low", "medium", "high"], metavar="LEVEL",
                       help="exit 1 when the verdict reaches LEVEL: 'shift' = a shift was detected; "
                            "low|medium|high = a limitation at least that severe (a saturated benchmark alone "
                            "never fails)")
    audit.add_argument("--fail-on-shift", action="store_true", help="the same as --fail-on shift")
    audit.add_argument("--engine", choices=["pandas", "dask"], default=os.environ.get("CONTEXTSHIFT_ENGINE", "pandas"),
                       help="pandas: in memory; dask: Parquet partitions summarised on a Dask cluster "
                            "(default: CONTEXTSHIFT_ENGINE or pandas)")
    audit.add_argument("--scheduler", metavar="ADDRESS", default=os.environ.get("CONTEXTSHIFT_DASK_SCHEDULER"),
                       help="dask.distributed scheduler (default: CONTEXTSHIFT_DASK_SCHEDULER or a local cluster)")
    audit.add_argument("--sample-rows", type=int, default=200_000, metavar="N",
                       help="dask engine: rows per dataset sampled for the row-level tests (default 200000)")

    monitor = sub.add_parser("monitor", help="scheduled monitoring, for cron or any external scheduler")
    monitor_sub = monitor.add_subparsers(dest="monitor_command", metavar="ACTION", required=True)
    monitor_run = monitor_sub.add_parser("run", help="one monitoring run: a monitor ID or --config FILE")
    monitor_run.add_argument("id", nargs="?", metavar="ID", help="monitor id (on CONTEXTSHIFT_DATABASE_URL)")
    monitor_run.add_argument("--config", metavar="FILE", help="monitor.yaml: no server, state in a file")
    monitor_run.add_argument("--fail-on-shift", action="store_true", help="exit 1 when alerts are open")

    demo = sub.add_parser("demo", help="a complete audit on generated example data (synthetic shifts)")
    demo.add_argument("--domain", default="dermatology",
                      choices=["dermatology", "deepfake", "facial_expression", "medical"],
                      help="medical is the dermatology pack's former name")
    # under data/, which the repository ignores: a demo run in a clone leaves nothing to commit
    demo.add_argument("--out", default=DEMO_OUT, metavar="DIR")
    demo.add_argument("--rows", type=int, default=20_000, help="production rows")
    return parser


class TerminalProgress:
    """One updating line on a terminal; silent when output is redirected."""

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr  # looked up now: sys.stderr may have been replaced since import
        try:
            self.enabled = bool(self.stream is not None and self.stream.isatty())
        except ValueError:  # a closed stream
            self.enabled = False

    def __call__(self, fraction: float, stage: str) -> None:
        if self.enabled:
            bar = "#" * int(fraction * 30)
            self.stream.write(f"\r[{bar:<30}] {fraction:4.0%} {stage[:40]:<40}")
            self.stream.flush()

    def done(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 80 + "\r")


def cmd_serve(args: argparse.Namespace) -> int:
    # lazy: the API (FastAPI, SQLAlchemy, pandas, ~1.6 s) is only for `serve`
    import uvicorn

    from service.app import create_app

    uvicorn.run(create_app(), host=args.host, port=args.port, log_level=args.log_level)
    return EXIT_OK


def _write(path: str | None, text: str) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")


def cmd_audit(args: argparse.Namespace) -> int:
    # lazy: the audit pipeline (pandas, SciPy, ~2.5 s) is only for `audit`
    from audit.options import AuditOptions
    from service.audits.local import audit_frames, load_pack, read_annotations, read_dataset, read_schema
    from service.datasets.csv_dialect import parse_dialect

    progress = TerminalProgress()
    try:
        dask = {"engine": "dask", "sample_rows": args.sample_rows} if args.engine == "dask" else {}
        options = AuditOptions(budget=args.budget, alpha=args.alpha, seed=args.seed,
                               report_thumbnails=bool(args.thumbnails),
                               report_thumbnails_medical=bool(args.thumbnails_medical), **dask)
    except ValueError as exc:  # pydantic's ValidationError: --alpha, --budget, --seed or --sample-rows out of range
        print(f"error [invalid_options]: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        pack = load_pack(args.domain)
        schema = read_schema(args.schema)
        if args.engine == "dask":
            from service.audits.engine.dask_audit import audit_paths  # lazy: dask.distributed (~1 s), --engine dask

            outcome = audit_paths(args.benchmark, args.production, pack=pack, schema=schema, progress=progress,
                                  options=options,
                                  scheduler=args.scheduler, annotations=read_annotations(args.annotations))
            return _finish_audit(args, outcome, progress)
        progress(0.0, "reading benchmark")
        dialect = parse_dialect(args.delimiter, args.decimal)
        provenance: tuple[dict, dict] = ({}, {})  # what was derived from the images, as the API records it
        bench, bench_roles = read_dataset(args.benchmark, schema=schema, pack=pack, dialect=dialect,
                                          provenance=provenance[0])
        progress(0.02, "reading production")
        prod, prod_roles = read_dataset(args.production, schema=schema, pack=pack, dialect=dialect,
                                        provenance=provenance[1])
        annotations = read_annotations(args.annotations)
        # lazy: thumbnails (from the image cache the derivation filled) and skin-tone notes, as the API adds
        from service.audits.report_thumbnails import images_for
        from service.settings import Settings

        outcome = audit_frames(bench, prod, pack=pack, benchmark_roles=bench_roles, production_roles=prod_roles,
                               annotations=annotations, options=options, progress=progress,
                               names=(Path(args.benchmark).name, Path(args.production).name),
                               provenance=provenance,
                               report_images=images_for(Settings(), options=options, domain=pack.name))
    except ServiceError as exc:
        progress.done()
        print(f"error [{exc.code}]: {exc.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return _finish_audit(args, outcome, progress)


def _finish_audit(args: argparse.Namespace, outcome, progress: TerminalProgress) -> int:
    progress.done()
    _write(args.html, outcome.html)
    _write(args.json, json.dumps(outcome.result_json, indent=2))
    _write(args.markdown, outcome.markdown)
    from reports import fails_gate  # lazy: reports.limitations loads NumPy and pydantic (~1.5 s alone)

    result = outcome.result
    print(verdict_line(result.verdict))
    for note in result.notes:  # what the audit could not do with these roles, and the columns to give them
        if note.part in ROLE_NOTES:
            print(f"Note ({note.part}): {note.reason}", file=sys.stderr)
    for lim in result.limitations[:5]:
        print(f"  {lim.rank}. [{lim.kind}] {lim.statement}")
    from reports.derived_note import derived_note  # lazy, like the report modules above

    derived = derived_note(result)
    if derived:
        print(derived)
    for label, path in (("HTML report", args.html), ("JSON", args.json), ("Markdown", args.markdown)):
        if path:
            print(f"{label}: {path}")
    level = args.fail_on or ("shift" if args.fail_on_shift else None)
    if level and fails_gate(result, level):
        print(f"Failing: the verdict reaches --fail-on {level}.", file=sys.stderr)
        return EXIT_SHIFT
    return EXIT_OK


def verdict_line(verdict) -> str:
    """The verdict as one line: ``MEDIUM: <summary>`` for a severity; an audit with no change or that
    cannot tell states it in its summary's first words ("No change...", "Inconclusive: ..."), so no
    severity word ("NONE") precedes them."""
    if verdict.severity == "none":
        return verdict.summary
    return f"{verdict.severity.upper()}: {verdict.summary}"


def cmd_demo(args: argparse.Namespace) -> int:
    # lazy: example data and the audit pipeline (pandas, SciPy, ~2.5 s) are only for `demo`
    from domains.examples import make_example
    from service.audits.local import audit_frames, load_pack
    from service.roles import infer_roles

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pack = load_pack(args.domain)
    print(f"Generating a synthetic {args.domain} benchmark and production set (planted context shifts)...")
    bench, prod = make_example(args.domain, n_benchmark=max(args.rows // 2, 2000), n_production=args.rows,
                               shift="planted", random_state=0)
    bench.to_csv(out / "benchmark.csv", index=False)
    prod.to_csv(out / "production.csv", index=False)
    contexts = [c.name for c in pack.context]
    progress = TerminalProgress()
    outcome = audit_frames(bench, prod, pack=pack, benchmark_roles=infer_roles(bench.columns, context_columns=contexts),
                           production_roles=infer_roles(prod.columns, context_columns=contexts),
                           progress=progress, names=("benchmark.csv", "production.csv"))
    progress.done()
    _write(str(out / "report.html"), outcome.html)
    _write(str(out / "report.md"), outcome.markdown)
    _write(str(out / "audit.json"), json.dumps(outcome.result_json, indent=2))
    verdict = outcome.result.verdict
    print(verdict_line(verdict))
    print(f"Report: {(out / 'report.html').resolve()}")
    return EXIT_OK


def _start_runtime():
    # lazy: the whole service, only for a stored monitor's run
    from service.runtime import Runtime
    from service.settings import get_settings

    return Runtime.start(get_settings())


def cmd_monitor(args: argparse.Namespace) -> int:
    # lazy: pydantic settings and YAML (~0.15 s), which `--help` and the other commands need not load
    from service.monitors.local import run_by_id, run_config

    if bool(args.id) == bool(args.config):
        print("error: give a monitor ID or --config FILE (one of them)", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        code, text = (run_config(args.config, fail_on_shift=args.fail_on_shift) if args.config
                      else run_by_id(args.id, start_runtime=_start_runtime, fail_on_shift=args.fail_on_shift))
    except ServiceError as exc:
        print(f"error [{exc.code}]: {exc.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(text, file=sys.stderr if code == EXIT_BAD_INPUT else sys.stdout)
    return code


COMMANDS = {"serve": cmd_serve, "audit": cmd_audit, "demo": cmd_demo, "monitor": cmd_monitor}


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_OK
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
