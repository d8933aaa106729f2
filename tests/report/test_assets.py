"""What pages load besides their HTML: the plotly bundle and the content-security policy."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from plotly.offline import get_plotlyjs, get_plotlyjs_version

from jitbench.report import assets, pages
from jitbench.results import Run


def test_the_partial_bundle_is_used_only_at_the_right_version(tmp_path: Path) -> None:
    version = get_plotlyjs_version()
    partial = tmp_path / "plotly-cartesian.min.js"
    partial.write_text(f"/**\n* plotly.js (cartesian - minified) v{version}\n*/\nvar Plotly;")
    bundle = assets.plotly_bundle(partial)
    assert (bundle.kind, bundle.version) == ("cartesian", version)
    assert bundle.text == partial.read_text()
    partial.write_text("/**\n* plotly.js (cartesian - minified) v0.0.1\n*/\nvar Plotly;")
    assert assets.plotly_bundle(partial).kind == "full"  # stale: figures target another
    missing = assets.plotly_bundle(tmp_path / "absent.js")
    assert missing.kind == "full" and missing.text == get_plotlyjs()


def _inline_scripts(html: str) -> list[str]:
    """Every script element without src whose type makes the browser run it."""
    out = []
    for attrs, body in re.findall(r"<script([^>]*)>(.*?)</script>", html, flags=re.S):
        if "src=" in attrs or "application/json" in attrs:
            continue
        out.append(body)
    return out


def test_every_inline_script_is_allowed_by_its_hash_and_nothing_else(run: Run) -> None:
    html = pages.render_run_page(run)
    [policy] = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    script_src = next(d for d in policy.split(";") if d.strip().startswith("script-src"))
    assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src
    scripts = _inline_scripts(html)
    assert len(scripts) == 2  # the theme and the page script
    for body in scripts:
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in script_src
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy
