"""Mel-frequency cepstral coefficients (MFCC) and log-mel features, on torch tensors.

The article's "audio input" section: heavy preprocessing turns sound into a sequence of dense
vectors, each describing the energy in frequency bands over ~25 ms, which the encoder takes
in place of embedded words. Each stage is a small function, batched, on any device:

    waveform (..., L)
      -> pre-emphasis              y[t] = x[t] - 0.97 x[t-1]: lifts high frequencies (optional)
      -> power_spectrogram         25 ms Hann-windowed frames every 10 ms, |FFT|^2
      -> mel_filterbank @ ...      triangular filters, evenly spaced on the mel scale
      -> log_energy                10 log10(max(energy, floor)) with a FIXED floor
      -> dct                       orthonormal DCT-II over the mel bands: decorrelated MFCCs
      -> deltas, normalization     optional: time derivatives; per-utterance mean/variance

The settings are FeatureConfig (audio/feature_config.py, which imports no torch).
Whisper's own log-mel (kind="whisper", whisper_log_mel) shares the spectrum and filterbank
stages and differs after them: log10 with a floor relative to the clip's maximum.

The log floor is fixed (never relative to the clip's maximum, as librosa's power_to_db top_db
is), so a clip and any piece of it give the same features where they overlap. Features come
out channels-first, (..., M, N), as torch.stft and Whisper produce them.

Written out, then fast: compute_features_reference runs the stages above one by one and is
the reference; compute_features gives the same values (tested) with the window and matrices
cached per setting, frames laid out frames-major for one rfft and one matmul per stage, and
in-place log. compute_features_many takes clips of different lengths in one pass: each clip's
frames are computed once, never the padding a stacked batch would need.

Defaults: 16 kHz, 400-sample (25 ms) window, 160-sample (10 ms) hop, 40 mel bands from 20 Hz
to 7.6 kHz on the Slaney scale with Slaney area normalization (librosa's defaults), 13 MFCCs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from glassformer.audio.feature_config import (  # noqa: F401  (also this module's names)
    FRAMES_PER_SECOND,
    HOP_LENGTH,
    N_FFT,
    WHISPER_DYNAMIC_RANGE,
    WHISPER_N_MELS,
    WHISPER_WINDOW_SECONDS,
    WHISPER_WINDOW_STEP,
    FeatureConfig,
    padded_length,
)
from glassformer.audio.io import SAMPLE_RATE
from glassformer.audio.mel import dct_matrix, mel_filterbank
from glassformer.errors import ConfigError


def pre_emphasize(waveform: torch.Tensor, coefficient: float) -> torch.Tensor:
    """y[t] = x[t] - coefficient * x[t - 1] (y[0] = x[0]).

    Shapes:
        waveform: (..., L)   returns: (..., L)
    """
    if coefficient == 0:
        return waveform
    return torch.cat([waveform[..., :1], waveform[..., 1:] - coefficient * waveform[..., :-1]], -1)


def n_frames(n_samples: int, hop_length: int = HOP_LENGTH) -> int:
    """Frames a centred STFT gives: 1 + L // hop (the signal is padded by n_fft // 2 each side)."""
    return 1 + n_samples // hop_length


def power_spectrogram(
    waveform: torch.Tensor,
    n_fft: int = N_FFT,
    hop_length: int = HOP_LENGTH,
    pad_mode: str = "constant",
) -> torch.Tensor:
    """|STFT|^2 with a periodic Hann window, frames centred: the signal is padded by n_fft // 2
    at each end, with zeros ("constant") or its mirror image ("reflect", as Whisper).

    Shapes:
        waveform: (..., L)   returns: (..., n_fft // 2 + 1, n_frames(L))
    """
    batch_shape = waveform.shape[:-1]
    flat = waveform.reshape(-1, waveform.size(-1))  # (B, L)
    window = torch.hann_window(n_fft, periodic=True, device=waveform.device, dtype=waveform.dtype)
    spectrum = torch.stft(
        flat,
        n_fft,
        hop_length,
        window=window,
        center=True,
        pad_mode=pad_mode,
        return_complex=True,
    )  # (B, F, N)
    power = spectrum.real.square() + spectrum.imag.square()
    return power.reshape(*batch_shape, *power.shape[-2:])  # (..., F, N)


def log_energy(energy: torch.Tensor, floor: float = 1e-10) -> torch.Tensor:
    """10 log10(max(energy, floor)): decibels with a fixed floor (never relative to the clip)."""
    return 10.0 * torch.log10(energy.clamp(min=floor))


def deltas(features: torch.Tensor, width: int = 2) -> torch.Tensor:
    """Regression slope over +-width frames (HTK's formula), edges repeated:
    d[t] = sum_n n (c[t+n] - c[t-n]) / (2 sum_n n^2).

    Shapes:
        features: (..., M, N)   returns: (..., M, N)
    """
    padded = torch.cat(
        [
            features[..., :1].expand(*features.shape[:-1], width),
            features,
            features[..., -1:].expand(*features.shape[:-1], width),
        ],
        dim=-1,
    )
    N = features.size(-1)
    numerator = sum(
        n * (padded[..., width + n : width + n + N] - padded[..., width - n : width - n + N])
        for n in range(1, width + 1)
    )
    return numerator / (2 * sum(n * n for n in range(1, width + 1)))


def normalize_utterance(features: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Mean 0, variance 1 for each coefficient over the utterance's frames.

    Shapes:
        features: (..., M, N)   returns: (..., M, N)
    """
    mean = features.mean(dim=-1, keepdim=True)
    std = features.std(dim=-1, keepdim=True, unbiased=False)
    return (features - mean) / (std + eps)


def pad_to_window(waveform: torch.Tensor, config: FeatureConfig) -> torch.Tensor:
    """Zero-pad the last axis to padded_length() (no change for longer audio or no window).

    Shapes:
        waveform: (..., L)   returns: (..., max(L, padded_length(L)))
    """
    missing = padded_length(config, waveform.size(-1)) - waveform.size(-1)
    return F.pad(waveform, (0, missing)) if missing > 0 else waveform


def compute_features_reference(
    waveform: torch.Tensor, config: FeatureConfig | None = None, warp: float = 1.0
) -> torch.Tensor:
    """The whole pipeline of the module docstring, stage by stage; `warp` != 1 perturbs the
    vocal-tract length (training augmentation, see warp_frequency). Audio shorter than the
    config's window_seconds is zero-padded to it first. compute_features is the fast twin.

    Shapes:
        waveform: (..., L)   returns: (..., config.n_features, N), N = n_frames(L) for MFCC
        and log-mel, L // hop for Whisper's (L after padding)
    """
    c = config or FeatureConfig()
    waveform = pad_to_window(waveform, c)
    if c.kind == "whisper":
        return whisper_log_mel_reference(waveform, c.n_mels)  # (..., M, L // hop)
    power = power_spectrogram(pre_emphasize(waveform, c.pre_emphasis), c.n_fft, c.hop_length)
    filters = mel_filterbank(
        c.n_mels, c.n_fft, c.sample_rate, c.f_min, c.f_max, c.mel_scale, c.mel_norm, warp
    ).to(power)  # (M, F)
    features = log_energy(filters @ power, c.log_floor)  # (..., M, N)
    if c.kind == "mfcc":
        features = dct_matrix(c.n_mfcc, c.n_mels).to(power) @ features  # (..., n_mfcc, N)
    return add_deltas_and_normalize(features, c)


def add_deltas_and_normalize(features: torch.Tensor, c: FeatureConfig) -> torch.Tensor:
    """The optional last stages, as the config says: (..., M, N) -> (..., n_features, N)."""
    if c.deltas:
        first = deltas(features)
        features = torch.cat([features, first, deltas(first)], dim=-2)  # (..., 3 * M, N)
    return normalize_utterance(features) if c.normalize else features


@functools.lru_cache(maxsize=32)
def feature_matrices(
    c: FeatureConfig, warp: float, device: torch.device, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The Hann window, the filterbank and 10 x the DCT for one setting, made once per device
    and dtype (read-only). Each filter weight is repeated for a bin's re^2 and im^2, so the
    filterbank's matmul also adds them into |X|^2; the 10 turns log10 into decibels inside
    the DCT's matmul.

    Shapes:
        returns: window (n_fft,), filters (2 * (n_fft // 2 + 1), M), dct (n_mfcc, M)
    """
    window = torch.hann_window(c.n_fft, periodic=True, dtype=dtype, device=device)
    filters = mel_filterbank(
        c.n_mels, c.n_fft, c.sample_rate, c.f_min, c.f_max, c.mel_scale, c.mel_norm, warp
    )  # (M, F)
    filters = filters.repeat_interleave(2, dim=1).T.contiguous().to(device, dtype)  # (2F, M)
    return window, filters, 10.0 * dct_matrix(c.n_mfcc, c.n_mels).to(device, dtype)


def squared_spectrum(
    flat: torch.Tensor,
    n_fft: int,
    hop_length: int,
    pad_mode: str,
    window: torch.Tensor,
    center: bool = True,
) -> torch.Tensor:
    """The STFT's real and imaginary parts squared, frames-major (re^2, im^2 side by side).
    center=False: the caller has padded the signal already.

    Shapes:
        flat: (B, L)   returns: (B, N, 2 * (n_fft // 2 + 1)), N = n_frames(L) when centred
    """
    spectrum = torch.stft(
        flat,
        n_fft,
        hop_length,
        window=window,
        center=center,
        pad_mode=pad_mode,
        return_complex=True,
    )  # (B, F, N), stored frames-major
    parts = torch.view_as_real(spectrum.transpose(-1, -2)).square_()  # (B, N, F, 2)
    return parts.flatten(-2)  # (B, N, 2F), a view


def log_bands(
    flat: torch.Tensor, c: FeatureConfig, warp: float, center: bool = True
) -> torch.Tensor:
    """Log-mel bands (kind logmel) or MFCCs (kind mfcc) of each row, before deltas.

    Shapes:
        flat: (B, L)   returns: (B, n_mfcc or M, N), N = n_frames(L) when centred
    """
    window, filters, dct = feature_matrices(c, warp, flat.device, flat.dtype)
    parts = squared_spectrum(flat, c.n_fft, c.hop_length, "constant", window, center)
    bands = (parts @ filters).clamp_(min=c.log_floor).log10_()  # (B, N, M)
    if c.kind == "mfcc":
        return dct @ bands.transpose(-1, -2)  # (B, n_mfcc, N), in decibels
    return bands.mul_(10.0).transpose(-1, -2).contiguous()  # (B, M, N), decibels


def compute_features(
    waveform: torch.Tensor, config: FeatureConfig | None = None, warp: float = 1.0
) -> torch.Tensor:
    """compute_features_reference's values, computed fast (see the module docstring).

    Example: 1 s of 16 kHz audio (16,000 samples) -> MFCCs (13, 101).

    Shapes:
        waveform: (..., L)   returns: (..., config.n_features, N), N = n_frames(L) for MFCC
        and log-mel, L // hop for Whisper's (L after padding)
    """
    c = config or FeatureConfig()
    waveform = pad_to_window(waveform, c)
    if c.kind == "whisper":
        return whisper_log_mel(waveform, c.n_mels)  # (..., M, L // hop)
    flat = pre_emphasize(waveform, c.pre_emphasis).reshape(-1, waveform.size(-1))  # (B, L)
    features = log_bands(flat, c, warp)  # (B, M, N)
    features = features.reshape(*waveform.shape[:-1], *features.shape[-2:])  # (..., M, N)
    return add_deltas_and_normalize(features, c)


def compute_features_many(
    waveforms: Sequence[torch.Tensor], config: FeatureConfig | None = None, warp: float = 1.0
) -> list[torch.Tensor]:
    """compute_features for each clip, clips of any lengths in one pass, no padding frames.

    The clips are laid end to end, each starting on a hop boundary with at least n_fft // 2
    zeros before and after it, so each clip's frames in the joined signal are exactly its
    own centred frames; the few frames over the gaps are computed and dropped. The joined
    signal starts with n_fft // 2 zeros: the centring padding, written once.

    Shapes:
        waveforms: each (L_i,)   returns: each (config.n_features, n_frames(L_i))
    """
    c = config or FeatureConfig()
    if c.kind == "whisper" or c.window_seconds > 0:  # every clip is padded to the window
        return [compute_features(waveform, c, warp) for waveform in waveforms]
    if any(waveform.dim() != 1 for waveform in waveforms):
        shapes = [tuple(w.shape) for w in waveforms if w.dim() != 1][:3]
        raise ConfigError(f"compute_features_many takes 1-D clips, not shapes {shapes}")
    if not waveforms:
        return []
    half, hop = c.n_fft // 2, c.hop_length
    pieces, starts, end = [waveforms[0].new_zeros(half)], [], 0  # the centring zeros, once
    for waveform in waveforms:
        starts.append(end)  # where the clip starts, after the leading zeros
        end = -(-(end + len(waveform) + half) // hop) * hop  # the next start: hop-aligned
        gap = end - starts[-1] - len(waveform)  # zeros up to the next clip's start
        pieces += [pre_emphasize(waveform, c.pre_emphasis), waveform.new_zeros(gap)]
    bands = log_bands(torch.cat(pieces)[None], c, warp, center=False)[0]  # (M, all frames)
    return [
        add_deltas_and_normalize(bands[:, start // hop : start // hop + n_frames(len(w), hop)], c)
        for start, w in zip(starts, waveforms, strict=True)
    ]


def whisper_log_mel_reference(waveform: torch.Tensor, n_mels: int = WHISPER_N_MELS) -> torch.Tensor:
    """Whisper's input features for 16 kHz audio (openai-whisper's log_mel_spectrogram).

    Mirror-padded frames with the last one dropped, Slaney bands over 0-8 kHz, log10, a floor
    8 (80 dB) below the clip's own maximum, then (x + 4) / 4. In a batch every clip keeps its
    own maximum, so a batched clip gives exactly what it gives alone. whisper_log_mel is the
    fast twin.

    Example: 2 s of audio (32,000 samples) -> (80, 200) features.

    Shapes:
        waveform: (..., L)   returns: (..., n_mels, L // 160)
    """
    power = power_spectrogram(waveform, N_FFT, HOP_LENGTH, pad_mode="reflect")[..., :-1]
    filters = mel_filterbank(n_mels, N_FFT, SAMPLE_RATE, 0.0, SAMPLE_RATE / 2, "slaney", "slaney")
    log_spec = torch.log10((filters.to(power) @ power).clamp(min=1e-10))  # (..., M, N)
    return whisper_scale(log_spec)


def whisper_log_mel(waveform: torch.Tensor, n_mels: int = WHISPER_N_MELS) -> torch.Tensor:
    """whisper_log_mel_reference's values, computed fast as compute_features is.

    Example: 2 s of audio (32,000 samples) -> (80, 200) features.

    Shapes:
        waveform: (..., L)   returns: (..., n_mels, L // 160)
    """
    flat = waveform.reshape(-1, waveform.size(-1))  # (B, L)
    config = FeatureConfig.whisper(n_mels)
    window, filters, _ = feature_matrices(config, 1.0, flat.device, flat.dtype)
    parts = squared_spectrum(flat, N_FFT, HOP_LENGTH, "reflect", window)[:, :-1]  # (B, N, 2F)
    log_spec = (parts @ filters).clamp_(min=1e-10).log10_().transpose(-1, -2)  # (B, M, N)
    log_spec = log_spec.reshape(*waveform.shape[:-1], *log_spec.shape[-2:])  # (..., M, N)
    return whisper_scale(log_spec).contiguous()


def whisper_scale(log_spec: torch.Tensor) -> torch.Tensor:
    """Whisper's floor 8 below each clip's peak, then (x + 4) / 4; (..., M, N) either way."""
    peak = log_spec.amax(dim=(-2, -1), keepdim=True)  # each clip's loudest band and frame
    log_spec = torch.maximum(log_spec, peak - WHISPER_DYNAMIC_RANGE)
    return (log_spec + 4.0) / 4.0
