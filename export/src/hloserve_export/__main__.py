"""CLI.

  python -m hloserve_export <mlp|resnet|fno|grader|classify-image|detector|two-stage|all> --out MODELS_DIR [--batch-sizes 1,4,8]
                            [--seed 0] [--frontend torch|jax] [--no-verify]
      build the example model(s) into MODELS_DIR/<name>/ and verify the written bundle(s)
  python -m hloserve_export verify BUNDLE_DIR [BUNDLE_DIR ...] [--no-run]
      check bundles from their files (manifest, weights, module signatures, reference)
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _parse_bs(s: str | None):
    if not s:
        return None
    try:
        out = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad batch sizes {s!r}")
    if not out or min(out) <= 0:
        raise argparse.ArgumentTypeError(f"bad batch sizes {s!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from .examples import EXAMPLES

    if argv and argv[0] == "verify":
        ap = argparse.ArgumentParser(prog="python -m hloserve_export verify")
        ap.add_argument("bundles", nargs="+")
        ap.add_argument("--no-run", action="store_true", help="skip running the reference")
        a = ap.parse_args(argv[1:])
        from .verify import verify_bundle

        rc = 0
        for b in a.bundles:
            try:
                print(verify_bundle(b, run_reference=not a.no_run).summary())
            except Exception as e:  # noqa: BLE001
                print(f"{b}: FAILED: {e}", file=sys.stderr)
                rc = 1
        return rc

    ap = argparse.ArgumentParser(
        prog="python -m hloserve_export",
        description="Build the example bundles (or `verify DIR...`).",
    )
    ap.add_argument("example", choices=[*EXAMPLES, "all"])
    ap.add_argument("--out", required=True, help="model repository dir; writes OUT/<name>/")
    ap.add_argument("--batch-sizes", type=_parse_bs, default=None,
                    help="comma-separated compiled batch sizes (default: per example)")  # fmt: skip
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--frontend", choices=["torch", "jax"], default=None,
                    help="resnet only: torch (default if installed) or jax")  # fmt: skip
    ap.add_argument("--no-verify", action="store_true")
    a = ap.parse_args(argv)

    from . import examples
    from .verify import verify_bundle

    command = " ".join(["python", "-m", "hloserve_export", *argv])
    names = list(EXAMPLES) if a.example == "all" else [a.example]
    for name in names:
        t0 = time.time()
        kw = {"seed": a.seed, "command": command}
        if name == "resnet" and a.frontend:
            kw["frontend"] = a.frontend
        res = examples.build(name, a.out, batch_sizes=a.batch_sizes, **kw)
        if res is None:  # a meta bundle: a manifest and a hooks module, nothing to compile
            print(f"{name}: wrote {os.path.join(a.out, name)} (kind: meta) in {time.time() - t0:.1f}s")
            continue
        sizes = ", ".join(f"{k} {v}" for k, v in sorted(res.files.items()))
        print(
            f"{name}: wrote {res.out_dir} in {time.time() - t0:.1f}s: "
            f"{res.num_parameters} parameters ({res.weights_bytes} bytes), "
            f"batch sizes {res.batch_sizes}, StableHLO {res.stablehlo_version}; {sizes}"
        )
        if not a.no_verify:
            print("  verify: " + verify_bundle(res.out_dir).summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
