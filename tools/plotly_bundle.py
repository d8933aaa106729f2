"""Build step: put plotly.js's cartesian partial bundle into the package, so report pages
load about a fifth of the full bundle the plotly package ships.

Installs the npm package `plotly.js-cartesian-dist-min` at exactly the plotly.js version the
installed plotly package writes figures for (npm's configured registry; nothing is stored
in the repository), checks the version in the bundle's header, and copies the bundle to
jitbench/report/static/plotly-cartesian.min.js (git-ignored; package data when present).
Without it, pages fall back to the full bundle and still work.

Usage: python tools/plotly_bundle.py [--check]
  --check  only say which bundle the pages would use now (exit 1 when not the partial one)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's jitbench

from jitbench.report.assets import PARTIAL_BUNDLE, bundle_version, plotly_bundle

NPM_PACKAGE = "plotly.js-cartesian-dist-min"
FILE_IN_PACKAGE = "plotly-cartesian.min.js"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report the bundle in use only")
    args = parser.parse_args()
    if args.check:
        bundle = plotly_bundle()
        size = len(bundle.text.encode("utf-8"))
        print(f"pages use the {bundle.kind} plotly.js {bundle.version} bundle ({size:,} bytes)")
        return 0 if bundle.kind == "cartesian" else 1

    from plotly.offline import get_plotlyjs_version

    version = get_plotlyjs_version()
    npm = shutil.which("npm")
    if npm is None:
        print("npm not found: pages keep the full plotly.js bundle", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [npm, "install", "--prefix", tmp, "--no-save", "--no-package-lock",
               "--ignore-scripts", f"{NPM_PACKAGE}@{version}"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"npm install failed:\n{done.stderr.strip()}", file=sys.stderr)
            return 1
        source = Path(tmp) / "node_modules" / NPM_PACKAGE / FILE_IN_PACKAGE
        text = source.read_text("utf-8")
        found = bundle_version(text)
        if found != version:
            print(f"{NPM_PACKAGE} names plotly.js {found}, expected {version}", file=sys.stderr)
            return 1
        PARTIAL_BUNDLE.parent.mkdir(parents=True, exist_ok=True)
        PARTIAL_BUNDLE.write_text(text, "utf-8")
    full = len(plotly_bundle(Path("/nonexistent")).text.encode("utf-8"))
    size = len(text.encode("utf-8"))
    print(
        f"wrote {PARTIAL_BUNDLE} (plotly.js {version} cartesian, {size:,} bytes; "
        f"the full bundle is {full:,})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
