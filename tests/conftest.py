"""Fixtures shared by the tests: the unit tests' examples and model, and the browser (the
browser tests' and the hub test's).

``helpers`` (and so TensorFlow) is imported inside the fixtures, not here: pytest-xdist's
controller process loads this file too, and never runs a test, so importing TensorFlow there
only delays the start of the workers by a few seconds.
"""

import matplotlib
import pytest

matplotlib.use("Agg")  # in this process only; notebook kernels keep the inline backend


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(scope="module")
def clips():
    """Short voicing-loss examples: voiced, mixed (silence then /a/), unvoiced and silent."""
    from helpers.audio import excerpt, load_clip, make_example
    from helpers.course import make_deterministic

    make_deterministic(0)
    vowel = load_clip("vowel_a")
    utterance = load_clip("utterance_1")
    silence = load_clip("silence")
    return {
        "voiced": make_example("voiced", *excerpt(vowel.clean, vowel.labels, 0, 12), seed=1),
        "mixed": make_example("mixed", *excerpt(utterance.clean, utterance.labels, 0, 24), seed=2),
        "unvoiced": make_example(
            "unvoiced", *excerpt(utterance.clean, utterance.labels, 26, 40), seed=3
        ),
        "silent": make_example("silent", *excerpt(silence.clean, silence.labels, 0, 12), seed=4),
    }


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium, the system's (``tests/browser/browser_support.py``), for the browser
    tests and the hub test. Without it the test skips; under CI=true it fails."""
    from browser_support import CHROMIUM, require_chromium
    from playwright.sync_api import sync_playwright

    require_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def model():
    """The waveform denoiser of notebooks 03-04, from a fixed seed (test files that need
    another model define their own ``model`` fixture)."""
    from helpers.models import make_conv_denoiser

    return make_conv_denoiser(seed=3)
