"""What the pages load besides their HTML: the pages' own script (inline, allowed by its
sha256 hash in the content-security policy) and plotly.js, written once per output folder.

plotly.js: the cartesian partial bundle (scatter, bar, box, heatmap: every chart jitbench
draws, about a fifth of the full bundle) when it was built into the package with
`python tools/plotly_bundle.py`, else the full bundle the plotly package ships. Either
way it is the plotly.js version the installed plotly package writes figures for.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

#: Where `tools/plotly_bundle.py` puts the cartesian partial bundle (not in git).
PARTIAL_BUNDLE = Path(__file__).with_name("static") / "plotly-cartesian.min.js"

_BUNDLE_VERSION = re.compile(r"plotly\.js \(cartesian[^)]*\) v(\d+\.\d+\.\d+)")


@dataclass(frozen=True)
class PlotlyBundle:
    """plotly.js as written beside the pages: `kind` is 'cartesian' or 'full'."""

    text: str
    kind: str
    version: str


def bundle_version(text: str) -> str | None:
    """The plotly.js version named in a cartesian bundle's header comment, or None."""
    found = _BUNDLE_VERSION.search(text[:2000])
    return found.group(1) if found else None


def plotly_bundle(partial: Path = PARTIAL_BUNDLE) -> PlotlyBundle:
    """The plotly.js to write beside the pages: the cartesian partial bundle at `partial`
    when it is there and of the version the plotly package expects, else the full bundle."""
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    want = get_plotlyjs_version()
    try:
        text = partial.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    if text and bundle_version(text) == want:
        return PlotlyBundle(text, "cartesian", want)
    return PlotlyBundle(get_plotlyjs(), "full", want)


@cache
def page_script() -> str:
    """The script every page runs (templates/page.js), inline."""
    return resources.files("jitbench.report").joinpath("templates/page.js").read_text("utf-8")


#: Sets the colour theme before the first paint (no flash of the light theme).
HEAD_SCRIPT = (
    "(function(){var t=new URLSearchParams(location.search).get('theme');"
    "try{t=t||localStorage.getItem('jitbench-theme')}catch(e){}"
    "if(t==='dark'||t==='light')document.documentElement.setAttribute('data-theme',t)})();"
)


def script_hash(text: str) -> str:
    """The CSP source that allows one inline script: 'sha256-<base64 digest>'."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_security_policy(inline_scripts: Iterable[str]) -> str:
    """The pages' policy: nothing from the network, scripts only from files beside the
    page or inline ones whose hash is listed (computed here, when the page is rendered),
    so markup smuggled into a page through a results file could not run even if escaping
    failed. Styles stay inline-capable: plotly sets element styles as it draws.

    `file:` sits beside 'self' because browsers that give every local file its own origin
    would otherwise block ../plotly.min.js when a page is opened from disk.
    """
    hashes = " ".join(dict.fromkeys(script_hash(s) for s in inline_scripts))
    return (
        "default-src 'none'; "
        f"script-src 'self' file: {hashes}; "
        "style-src 'self' file: 'unsafe-inline'; "
        "img-src 'self' file: data: blob:; "
        "font-src 'self' data:; "
        "connect-src 'none'; base-uri 'none'; form-action 'none'"
    )
