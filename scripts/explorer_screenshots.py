#!/usr/bin/env python3
"""Regenerate the memory explorer's screenshots in ``docs/explorer/`` (shown by ``docs/explorer.md``).

Runs the end-to-end browser test (``tests/integration/test_explorer_browser.py``) on the embedded FalkorDB with
``AGENTX_EXPLORER_SCREENSHOTS`` pointing at the output directory: the test seeds the demo user's memory, serves the
explorer with uvicorn on a loopback port, drives Debian's headless Chromium through its views and saves a PNG of
each main one (overview, conversation, entity graph, fact, search), reduced to a 256-colour palette when Pillow is
installed. Needs ``apt-get install chromium chromium-driver`` and the dev extra (selenium, pytest).

Usage::

    python scripts/explorer_screenshots.py [--out docs/explorer]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    """Run the browser test with screenshots on; return its exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "explorer", help="where the PNGs go")
    args = parser.parse_args(argv)
    env = dict(os.environ, AGENTX_EXPLORER_SCREENSHOTS=str(args.out.resolve()), AGENTX_TEST_REQUIRE_BROWSER="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    status = subprocess.call([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                              "tests/integration/test_explorer_browser.py", "-k", "falkordb"], cwd=REPO, env=env)
    if status == 0:
        for png in sorted(args.out.glob("*.png")):
            print(f"{png.relative_to(REPO) if png.is_relative_to(REPO) else png}: {png.stat().st_size // 1024} KB")
    return status


if __name__ == "__main__":
    sys.exit(main())
