"""Shared fixtures: every test starts from the same random state."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def seed_everything() -> None:
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
