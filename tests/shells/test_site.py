"""The documentation site: built from this checkout with warnings as errors, then opened in headless Chromium."""

import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
GALLERY = sorted(path.stem for path in (ROOT / "examples").glob("plot_*.py"))  # every example the site runs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("sphinx_gallery", reason="needs the docs extra: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    # The README's command, into a temporary folder (and its doctrees beside it, not in docs/).
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q",
                          "-d", str(out / "doctrees"), str(ROOT / "docs"), str(out / "html")],
                         capture_output=True, text=True, cwd=ROOT, timeout=1800)
    assert run.returncode == 0, run.stderr[-4000:]
    return out / "html"


def test_every_gallery_example_ran_and_drew_its_figures(site):
    assert len(GALLERY) >= 7
    for name in GALLERY:
        page = (site / "auto_examples" / f"{name}.html").read_text()
        figures = sorted((site / "_images").glob(f"sphx_glr_{name}_*.png"))
        figures = [f for f in figures if "thumb" not in f.name]
        assert figures, f"{name} drew no figure"
        for figure in figures:
            assert figure.name in page
    from PIL import Image

    for figure in (site / "_images").glob("sphx_glr_*_001.png"):
        pixels = np.asarray(Image.open(figure).convert("L"), dtype=float)
        assert pixels.std() > 5, f"{figure.name} is blank"


def test_every_public_callable_has_a_page(site):
    from test_docs import _faces

    pages = {page.stem.rsplit(".", 1)[-1] for page in (site / "generated").glob("*.html")}
    missing = sorted({f"{face.__name__}.{name}" for face in _faces() for name in face.__all__
                      if callable(getattr(face, name)) and name not in pages})
    assert not missing, f"public callables without an API page (add them to docs/api.rst): {missing}"


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (.ci/run installs it)")
@pytest.mark.parametrize("page", ["index.html", "auto_examples/plot_dependence_change.html",
                                  "auto_examples/index.html", "guide/compare.html", "api.html"])
def test_pages_open_in_a_browser_with_their_figures_loaded(site, page, tmp_path):
    """Every image on the page has loaded (natural width > 0), and the page is not blank."""
    html = site / page
    probe = html.with_name(f"probe-{html.name}")
    script = ("<script>window.addEventListener('load', function () {var images = Array.from(document.images);"
              "document.title = 'images:' + images.length + ':' + "
              "images.filter(function (i) {return i.complete && i.naturalWidth > 0;}).length;});</script>")
    probe.write_text(html.read_text().replace("</body>", script + "</body>"))
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000",
                          "--dump-dom", probe.resolve().as_uri()], capture_output=True, text=True, timeout=120).stdout
    total, loaded = (int(v) for v in dom.split("<title>images:")[1].split("</title>")[0].split(":"))
    assert loaded == total
    if "auto_examples/plot_" in page:
        assert total >= 1
    screenshot = tmp_path / "page.png"
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,1600",
                    f"--screenshot={screenshot}", html.resolve().as_uri()], capture_output=True, timeout=120)
    from PIL import Image

    pixels = np.asarray(Image.open(screenshot).convert("L"), dtype=float)
    assert pixels.std() > 10  # not a blank page
