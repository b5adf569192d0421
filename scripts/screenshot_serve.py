"""Take the documentation's screenshot of ``normxlogit serve`` (docs/serve.png) on the default
built-in model, in Debian's chromium through Playwright.

    python scripts/screenshot_serve.py [--output docs/serve.png] [--bench CONFIG]
"""

from __future__ import annotations

import argparse
import shutil
import socket
import threading
import time
from pathlib import Path

import uvicorn
from playwright.sync_api import sync_playwright

from normxlogit.serve import build_app

TEXT = "A gripping, beautifully acted film that never lets go."
METHODS = ("normxlogit", "integrated_gradients")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=Path("docs/serve.png"))
    parser.add_argument("--bench", action="append", default=[])
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs Debian's chromium (apt-get install -y chromium)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = build_app(bench=args.bench)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_selector("#model-status:has-text('classification')", timeout=300_000)
        page.fill("#text", TEXT)
        for box in page.query_selector_all("#methods input"):
            box.set_checked(box.get_attribute("value") in METHODS)
        page.select_option("#target", "all")
        page.click("#explain-btn")
        page.wait_for_selector(f".panel[data-method='{METHODS[-1]}']", timeout=300_000)
        for box in page.query_selector_all("#metrics input"):
            box.set_checked(box.get_attribute("value") in {"comp_cd", "suff_cd", "pi_soft_nc"})
        page.click("#evaluate-btn")
        page.wait_for_selector(".chart[data-metric='pi_soft_nc'] canvas", timeout=600_000)
        page.fill("#perturb-ratio", "0.3")
        page.dispatch_event("#perturb-ratio", "input")
        page.wait_for_selector("#perturbed-tokens .tok.perturbed")
        page.evaluate("document.querySelector('.controls').scrollIntoView()")
        args.output.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.output), full_page=True)
        browser.close()
    server.should_exit = True
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
