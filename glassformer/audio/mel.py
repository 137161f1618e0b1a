"""The mel scale and the matrices built on it: the filterbank and the DCT (audio/features.py).

    hz_to_mel, mel_to_hz   the Slaney (librosa) or HTK (Kaldi, torchaudio) mel scale
    mel_filterbank         triangular filters evenly spaced in mel, (M, n_fft // 2 + 1)
    warp_frequency         vocal-tract-length perturbation of the filter edges (training)
    dct_matrix             the orthonormal DCT-II that turns log-mel bands into MFCCs

Each matrix is built once per setting (functools.lru_cache) and shared: treat them as
read-only.
"""

from __future__ import annotations

import functools
import math

import torch


def hz_to_mel(hz: torch.Tensor, scale: str) -> torch.Tensor:
    """HTK: 2595 log10(1 + f / 700). Slaney: linear below 1 kHz (3 mels per 200 Hz), then
    logarithmic, 27 mels per factor 6.4 (Auditory Toolbox; librosa's default)."""
    if scale == "htk":
        return 2595.0 * torch.log10(1.0 + hz / 700.0)
    linear = hz / (200.0 / 3)
    log_step = math.log(6.4) / 27.0
    return torch.where(
        hz >= 1000.0, 15.0 + torch.log(hz.clamp(min=1e-10) / 1000.0) / log_step, linear
    )


def mel_to_hz(mel: torch.Tensor, scale: str) -> torch.Tensor:
    """The inverse of hz_to_mel."""
    if scale == "htk":
        return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
    log_step = math.log(6.4) / 27.0
    return torch.where(mel >= 15.0, 1000.0 * torch.exp(log_step * (mel - 15.0)), mel * (200.0 / 3))


@functools.lru_cache(maxsize=64)
def mel_filterbank(
    n_mels: int,
    n_fft: int,
    sample_rate: int,
    f_min: float,
    f_max: float,
    scale: str = "slaney",
    norm: str = "slaney",
    warp: float = 1.0,
) -> torch.Tensor:
    """Triangular filters with centres evenly spaced in mels, as weights over FFT bins.

    `warp` != 1 moves the filter edges by warp_frequency: vocal-tract-length perturbation.

    Filter m rises linearly from the centre of filter m-1 to its own centre and falls to the
    centre of filter m+1 (edges in Hz). Slaney normalization divides each by its width,
    2 / (right - left), so every filter has the same area.

    Cached: the same arguments return the same tensor (treat it as read-only).

    Shapes:
        returns: (M, n_fft // 2 + 1)
    """
    fft_hz = torch.linspace(0, sample_rate / 2, n_fft // 2 + 1, dtype=torch.float64)  # (F,)
    mel_edges = torch.linspace(
        hz_to_mel(torch.tensor(f_min, dtype=torch.float64), scale),
        hz_to_mel(torch.tensor(f_max, dtype=torch.float64), scale),
        n_mels + 2,
        dtype=torch.float64,
    )
    hz_edges = warp_frequency(mel_to_hz(mel_edges, scale), warp, f_max)  # (M + 2,)
    left, centre, right = hz_edges[:-2, None], hz_edges[1:-1, None], hz_edges[2:, None]  # (M, 1)
    rising = (fft_hz - left) / (centre - left)  # (M, F)
    falling = (right - fft_hz) / (right - centre)
    weights = torch.clamp(torch.minimum(rising, falling), min=0.0)  # (M, F)
    if norm == "slaney":
        weights = weights * (2.0 / (right - left))
    return weights.float()


def warp_frequency(hz: torch.Tensor, warp: float, f_max: float) -> torch.Tensor:
    """Vocal-tract-length warping (Jaitly & Hinton 2013): frequencies scale by `warp`, a
    longer (warp < 1) or shorter (warp > 1) vocal tract, up to a knee; above it a straight
    line takes the rest of the band to f_max, so the band's edges stay where they are.

    A filter edge at h * warp reads the energy that a speaker with the warped tract would put
    at h. warp 1 is the identity.
    """
    if warp == 1.0:
        return hz
    knee = 0.8 * f_max * min(warp, 1.0) / warp  # input frequency where the straight part starts
    above = warp * knee + (hz - knee) * (f_max - warp * knee) / (f_max - knee)
    return torch.where(hz <= knee, hz * warp, above)


@functools.lru_cache(maxsize=8)
def dct_matrix(n_out: int, n_in: int) -> torch.Tensor:
    """Orthonormal DCT-II: row k is cos(pi k (2n + 1) / (2 n_in)), scaled so rows are unit length.

    Shapes:
        returns: (n_out, n_in); features (..., n_in, N) -> matrix @ features = (..., n_out, N)
    """
    n = torch.arange(n_in, dtype=torch.float64)
    k = torch.arange(n_out, dtype=torch.float64)[:, None]
    basis = torch.cos(math.pi * k * (2 * n + 1) / (2 * n_in))  # (n_out, n_in)
    basis[0] *= 1.0 / math.sqrt(2.0)
    return (basis * math.sqrt(2.0 / n_in)).float()
