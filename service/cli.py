"""The ``contextshift`` console script. Heavy imports happen inside the commands."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXIT_OK, EXIT_SHIFT, EXIT_BAD_INPUT = 0, 1, 2


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
    audit.add_argument("--annotations", metavar="FILE",
                       help="label-quality table with columns item_id, annotator_id, label")
    audit.add_argument("--html", metavar="OUT.html")
    audit.add_argument("--json", metavar="OUT.json")
    audit.add_argument("--markdown", metavar="OUT.md")
    audit.add_argument("--budget", type=int, default=500, help="rows to label next round")
    audit.add_argument("--alpha", type=float, default=0.05)
    audit.add_argument("--seed", type=int, default=0)
    audit.add_argument("--fail-on-shift", action="store_true",
                       help="exit 1 when a shift or limitation is found")

    demo = sub.add_parser("demo", help="a complete audit on generated example data (synthetic shifts)")
    demo.add_argument("--domain", default="medical", choices=["medical", "deepfake", "facial_expression"])
    demo.add_argument("--out", default="contextshift-demo", metavar="DIR")
    demo.add_argument("--rows", type=int, default=20_000, help="production rows")
    return parser


class TerminalProgress:
    """One updating line on a terminal; silent when output is redirected."""

    def __init__(self, stream=sys.stderr) -> None:
        self.stream = stream
        self.enabled = stream.isatty()

    def __call__(self, fraction: float, stage: str) -> None:
        if self.enabled:
            bar = "#" * int(fraction * 30)
            self.stream.write(f"\r[{bar:<30}] {fraction:4.0%} {stage[:40]:<40}")
            self.stream.flush()

    def done(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 80 + "\r")


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from service.app import create_app

    uvicorn.run(create_app(), host=args.host, port=args.port, log_level=args.log_level)
    return EXIT_OK


def _write(path: str | None, text: str) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")


def cmd_audit(args: argparse.Namespace) -> int:
    from service.errors import ServiceError
    from service.local import audit_frames, load_pack, read_annotations, read_dataset, read_schema

    progress = TerminalProgress()
    try:
        pack = load_pack(args.domain)
        schema = read_schema(args.schema)
        progress(0.0, "reading benchmark")
        bench, bench_roles = read_dataset(args.benchmark, schema=schema, pack=pack)
        progress(0.02, "reading production")
        prod, prod_roles = read_dataset(args.production, schema=schema, pack=pack)
        annotations = read_annotations(args.annotations)
        outcome = audit_frames(bench, prod, pack=pack, benchmark_roles=bench_roles, production_roles=prod_roles,
                               annotations=annotations,
                               options={"budget": args.budget, "alpha": args.alpha, "seed": args.seed},
                               progress=progress, names=(Path(args.benchmark).name, Path(args.production).name))
    except ServiceError as exc:
        progress.done()
        print(f"error [{exc.code}]: {exc.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    progress.done()
    _write(args.html, outcome.html)
    _write(args.json, json.dumps(outcome.result, indent=2))
    _write(args.markdown, outcome.markdown)
    verdict = outcome.result["verdict"]
    print(f"{verdict['severity'].upper()}: {verdict['summary']}")
    for item in outcome.result["limitations"][:5]:
        print(f"  {item['rank']}. [{item['kind']}] {item['statement']}")
    for label, path in (("HTML report", args.html), ("JSON", args.json), ("Markdown", args.markdown)):
        if path:
            print(f"{label}: {path}")
    found = verdict["shift_detected"] or bool(outcome.result["limitations"])
    return EXIT_SHIFT if args.fail_on_shift and found else EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from domains.examples import make_example
    from service.local import audit_frames, load_pack
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
    _write(str(out / "audit.json"), json.dumps(outcome.result, indent=2))
    print(f"{outcome.result['verdict']['severity'].upper()}: {outcome.result['verdict']['summary']}")
    print(f"Report: {(out / 'report.html').resolve()}")
    return EXIT_OK


COMMANDS = {"serve": cmd_serve, "audit": cmd_audit, "demo": cmd_demo}


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_OK
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
