"""Shared fixtures: a fixed random state for every test; tokenizers trained once per session."""

from __future__ import annotations

from glassformer.threads import set_thread_policy

set_thread_policy(spin=False)  # before torch loads: the suite must not crawl beside a busy core

import random

import numpy as np
import pytest
import torch

from glassformer.tokenizer.bpe import BPETokenizer
from glassformer.tokenizer.training import train_bpe_tokenizer
from tests.helpers import MULTILINGUAL
from tests.installed import REQUIRE_SETUP, SETUP


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    """Under CI (GLASSFORMER_REQUIRE_SETUP=1) a test skipped for want of something make
    setup installs fails instead (tests/installed.py)."""
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_SETUP and report.skipped and SETUP in str(report.longrepr):
        report.outcome = "failed"


@pytest.fixture(autouse=True)
def isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prepared data goes to a temporary cache, never the user's ~/.cache."""
    monkeypatch.setenv("GLASSFORMER_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(autouse=True)
def seed_everything() -> None:
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)


@pytest.fixture(scope="session", params=["gpt4", "gpt2"])
def multilingual_tokenizer(request: pytest.FixtureRequest) -> BPETokenizer:
    corpus = [MULTILINGUAL * 3, "the the the then there these", "über über Über"]
    return train_bpe_tokenizer(corpus, 256 + 250 + 3, request.param, ["<pad>", "<bos>", "<eos>"])
