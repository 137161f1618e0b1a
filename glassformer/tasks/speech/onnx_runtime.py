"""A Whisper exported by `glassformer export`, run by onnxruntime and numpy: no torch at all.

    is_exported(path)                    a folder onnx_export.py wrote?
    load_exported(folder)                -> a SpeechModel whose `model` is an OnnxNetwork
    transcribe_many(speech, clips, opts) -> a Transcript per clip, as inference.py's

Made for a small board: torch alone is 220 MB of a `transcribe` process, and a Raspberry Pi or
a Home Assistant Green has 1-4 GB for everything (docs/benchmarks.md, "Without torch"). The
path is the same as on torch, step for step, and tested equal to it on real commands
(tests/tasks/speech/test_onnx_runtime.py):

    audio -> clips.clip_audio (silence trimmed)  -> MelFeatures (numpy: Whisper's log-mel)
          -> encoder graph (the cross-attention keys and values, once per clip): a model
             with a command encoder reads a clip heard from_seconds or longer with its
             graph, at its own window (SpeechModel.reader), as on torch
          -> beam_search (numpy: the prompt prefilled once, K beams, the same rules as
             decoding/search.beam_search and the grammar's TextConstraint.allowed)
          -> transcript.written_words / scored (the same reading, confidence, rejection)
          -> a doubtful command checked against free decodes (transcript.free_hearings)
          -> a command the command encoder doubts read again by Whisper's own encoder, the
             two readings weighed (transcript.second_reading)

One difference in how the work is done, not in what it computes: the confidence's
log-probabilities are kept while searching (each beam carries the log-probability of every
token it wrote, from the unrestricted distribution, and the end's probability after each),
so the best hypothesis is never decoded a second time, as search.read_clip does by teacher
forcing. Free text cut after a loop (transcript.cut_repetition) is scored by feeding the
words it meant, one token a call.

The exported files are trusted no more than any other input: the manifest is JSON read within
its size, the tokenizer is our own format, the features' matrices are safetensors, and the
graphs are run by onnxruntime (no pickle anywhere).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from glassformer.audio.feature_config import (
    HOP_LENGTH,
    N_FFT,
    WHISPER_DYNAMIC_RANGE,
    FeatureConfig,
    padded_length,
)
from glassformer.audio.io import SAMPLE_RATE
from glassformer.decoding.constraints import FIRST_RANKED  # candidates ranked at once per beam
from glassformer.errors import CheckpointError, GlassformerError
from glassformer.tasks.speech.clips import clip_audio, most_tokens
from glassformer.tasks.speech.model import CommandEncoder, DecodingRules, SpeechModel
from glassformer.tasks.speech.options import SpeechOptions
from glassformer.tasks.speech.transcript import (
    Transcript,
    checked,
    free_hearings,
    is_doubtful,
    no_speech,
    scored,
    search_lead,
    second_reading,
    stands,
    words_before_closers,
    written_words,
)

FORMAT = "glassformer-speech-onnx"  # what onnx_export.py writes, and its version
FORMAT_VERSION = 1
MANIFEST = "model.json"
COMMAND_ENCODER_GRAPH = "command_encoder.onnx"  # a second encoder's graph, where there is one
MAX_MANIFEST_BYTES = 1 << 20  # the manifest: sizes and the decoding rules' token lists
MAX_FEATURE_BYTES = 1 << 20  # the Hann window and the filterbank: 66 KB for 80 bands
LENGTH_PENALTY = 0.6  # decoding/search.beam_search's default, which search.py uses
NEAR = 10.0  # best_first's first tier: tokens within this many nats of the best (e^-10: a
# token 22,000 times less likely than the best is seldom what a grammar needs)


def is_exported(path: str | Path) -> bool:
    """Whether `path` is a folder `glassformer export` wrote (its manifest names the format)."""
    manifest = Path(path) / MANIFEST
    if not manifest.is_file():
        return False
    from glassformer.textfiles import read_json

    try:
        return read_json(manifest, MAX_MANIFEST_BYTES).get("format") == FORMAT
    except (GlassformerError, AttributeError):
        return False


def describe_export(folder: str | Path) -> str:
    """What `glassformer info` says of an exported folder: its source, precision and size."""
    from glassformer.textfiles import read_json

    manifest = read_json(Path(folder) / MANIFEST, MAX_MANIFEST_BYTES)
    size = sum(p.stat().st_size for p in Path(folder).iterdir() if p.is_file()) / 1e6
    return (
        f"{folder}: a speech model exported by `glassformer export` from "
        f"{manifest.get('source')}, {manifest.get('precision')}, "
        f"{manifest.get('parameters', 0) / 1e6:.1f} M parameters, {size:.0f} MB; runs with "
        "onnxruntime, without torch (give it as MODEL to transcribe, serve or wyoming)"
    )


@dataclass(frozen=True)
class NetworkSizes:
    """What of a SpeechTransformer's config the transcription path reads (clips.most_tokens)."""

    max_tgt_len: int
    tgt_vocab_size: int
    n_decoder_layers: int


class OnnxNetwork:
    """The exported encoder and decoder, in onnxruntime sessions, and the features' matrices
    (MelFeatures): a SpeechModel's `model`.

    Threads: OMP_NUM_THREADS if set (as torch reads it), else onnxruntime's choice (the
    machine's cores), never spinning (glassformer/threads.py's reason, measured again here).
    The memory arena is off and large blocks are mapped on their own (malloc.map_large_blocks):
    what a board holds between commands is the weights, not what the longest clip's
    activations left behind (measured: 150 -> 80 MB resident after 8 commands).
    """

    def __init__(self, folder: Path, manifest: dict) -> None:
        try:
            import onnxruntime as ort
        except ImportError:
            raise GlassformerError(
                f"{folder}: an exported model runs on onnxruntime: pip install onnxruntime"
            ) from None

        from glassformer.malloc import map_large_blocks

        map_large_blocks()  # an encoder pass's activations go back to the system after it
        options = ort.SessionOptions()
        options.enable_cpu_mem_arena = False
        options.log_severity_level = 3
        # threads sleep between operations instead of spinning: a spinning pool thread takes
        # the core the search's numpy work needs (2 threads: 244-249 against 301-329 ms a
        # command), and a busy machine's (319-326 against 481-500 ms beside a busy core)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        threads = os.environ.get("OMP_NUM_THREADS", "")
        if threads.isdigit() and int(threads) > 0:
            options.intra_op_num_threads = int(threads)
            options.inter_op_num_threads = 1
        self.folder, self.options = folder, options
        self.encoder = OnnxEncoder(self.session("encoder.onnx"))
        self.decoder = self.session("decoder.onnx")
        self.precision = str(manifest["precision"])
        self.parameter_count = int(manifest["parameters"])  # our module's, before export
        self.max_frames = int(manifest["max_frames"])
        layers = int(manifest["decoder_layers"])
        self.config = NetworkSizes(
            int(manifest["max_tgt_len"]), int(manifest["vocab_size"]), layers
        )
        self.empty_past = np.zeros(
            (1, int(manifest["heads"]), 0, int(manifest["head_width"])), np.float32
        )
        self.mel = MelFeatures(folder / "features.safetensors", int(manifest["n_mels"]))
        self.past_names = [f"past_{n}_{x}" for n in range(layers) for x in "kv"]
        self.cross_names = [f"cross_{n}_{x}" for n in range(layers) for x in "kv"]

    def session(self, name: str):  # noqa: ANN201 - an onnxruntime InferenceSession
        """A graph of the folder, in a session with this network's options."""
        import onnxruntime as ort

        return ort.InferenceSession(
            str(self.folder / name), self.options, providers=["CPUExecutionProvider"]
        )

    def encode(self, features: np.ndarray) -> list[np.ndarray]:
        """Shapes: features (M, N) -> each decoder layer's cross keys, values: (1, H, S, Dh)"""
        return self.encoder.encode(features)

    def decode(
        self, tokens: np.ndarray, past: list[np.ndarray], cross: list[np.ndarray]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """New tokens after `past` -> the last position's logits and the grown past.

        Shapes:
            tokens: (R, T) int64   past: (R, H, t, Dh) each   returns: (R, V), (R, H, t + T, Dh)
        """
        feed = {"tokens": tokens, **dict(zip(self.past_names, past, strict=True))}
        feed.update(zip(self.cross_names, cross, strict=True))
        logits, *grown = self.decoder.run(None, feed)
        return logits, grown

    def start_past(self) -> list[np.ndarray]:
        """The past of a decode that starts from nothing: (1, H, 0, Dh) per key and value."""
        return [self.empty_past] * len(self.past_names)


class OnnxEncoder:
    """An exported encoder graph (OnnxNetwork's own, or a CommandEncoder's `network`):
    features to each decoder layer's cross-attention keys and values."""

    def __init__(self, session) -> None:  # noqa: ANN001  (an onnxruntime InferenceSession)
        self.session = session

    def encode(self, features: np.ndarray) -> list[np.ndarray]:
        """Shapes: features (M, N) -> each decoder layer's cross keys, values: (1, H, S, Dh)"""
        return self.session.run(None, {"features": features[None]})


def load_exported(folder: str | Path, device: str = "cpu") -> SpeechModel:
    """An exported folder -> a SpeechModel on onnxruntime, with no grammar (use_grammar).

    Raises:
        CheckpointError: a manifest of another format or version, or a field missing.
        GlassformerError: a device other than the CPU.
    """
    from glassformer.tasks.speech.vocabulary import read_vocabulary
    from glassformer.textfiles import read_json
    from glassformer.tokenizer.io import load_tokenizer

    folder = Path(folder)
    if device != "cpu":
        raise GlassformerError(f"{folder}: an exported model runs on the CPU only, not {device}")
    manifest = read_json(folder / MANIFEST, MAX_MANIFEST_BYTES)
    if manifest.get("format") != FORMAT or manifest.get("version") != FORMAT_VERSION:
        raise CheckpointError(f"{folder / MANIFEST}: not a version-1 {FORMAT} manifest")
    try:
        network = OnnxNetwork(folder, manifest)
        rules = DecodingRules.from_json(manifest["decoding"], str(folder / MANIFEST))
        features = FeatureConfig.whisper(int(manifest["n_mels"]))
        if "window_step" in manifest:  # a model fitted to shorter windows (bench/fit_window.py)
            features = dataclasses.replace(features, window_step=float(manifest["window_step"]))
    except (KeyError, TypeError, ValueError) as error:  # a ConfigError is a ValueError
        raise CheckpointError(f"{folder / MANIFEST}: {error!r}") from None
    commands = None
    if "command_encoder" in manifest:
        commands = read_command_encoder(network, features, manifest["command_encoder"], folder)
    tokenizer = load_tokenizer(folder / "tokenizer.json")
    reading = read_vocabulary(tokenizer, rules, network.config.tgt_vocab_size)
    return SpeechModel(network, tokenizer, features, rules, reading, command_encoder=commands)


def read_command_encoder(
    network: OnnxNetwork, features: FeatureConfig, table: object, folder: Path
) -> CommandEncoder:
    """The manifest's "command_encoder" table: the graph, read at its window by clips heard
    from_seconds or longer, its doubtful commands read again below recheck_below.

    Raises:
        CheckpointError: a table without its fields, another file than the graph's own
            name, a missing graph, or settings out of range (CommandEncoder.checked).
    """
    where = str(folder / MANIFEST)
    name, unbuilt = CommandEncoder.from_table(table, features, where)
    if name != COMMAND_ENCODER_GRAPH:  # never a path out of the folder
        raise CheckpointError(
            f'{where}: "command_encoder" file={name!r}, not {COMMAND_ENCODER_GRAPH}'
        )
    if not (folder / name).is_file():
        raise CheckpointError(f"{folder / name}: missing")
    return dataclasses.replace(unbuilt, network=OnnxEncoder(network.session(name)))


class MelFeatures:
    """Whisper's log-mel in numpy (audio/features.whisper_log_mel's values): the exported
    Hann window and filterbank, the frames' FFT, log10, a floor 8 below the clip's peak."""

    def __init__(self, path: Path, n_mels: int) -> None:
        from safetensors import SafetensorError
        from safetensors.numpy import load_file

        if not path.is_file() or path.stat().st_size > MAX_FEATURE_BYTES:
            raise CheckpointError(f"{path}: missing, or larger than a window and filterbank")
        try:
            tensors = load_file(str(path))
        except (SafetensorError, OSError) as error:
            raise CheckpointError(f"{path}: {error}") from None
        if set(tensors) != {"window", "mel_filters"}:
            raise CheckpointError(f"{path}: holds {sorted(tensors)}, not a window and filterbank")
        self.window = tensors["window"].astype(np.float32)  # (n_fft,)
        self.filters = tensors["mel_filters"].astype(np.float32)  # (M, n_fft // 2 + 1)
        if self.window.shape != (N_FFT,) or self.filters.shape != (n_mels, N_FFT // 2 + 1):
            raise CheckpointError(f"{path}: a window and filterbank of the wrong shapes")

    def __call__(self, audio: np.ndarray, config: FeatureConfig) -> np.ndarray:
        """Shapes: audio (L,) float32 -> (M, N): padded as the config says, N = L' // hop"""
        missing = padded_length(config, len(audio)) - len(audio)
        audio = np.pad(audio.astype(np.float32), (0, max(0, missing)))
        padded = np.pad(audio, N_FFT // 2, mode="reflect")  # centred frames, mirrored ends
        frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP_LENGTH][:-1]
        spectrum = np.fft.rfft(frames * self.window, axis=-1)  # (N, F)
        power = (spectrum.real**2 + spectrum.imag**2).astype(np.float32)
        log_spec = np.log10(np.maximum(self.filters @ power.T, 1e-10))  # (M, N)
        log_spec = np.maximum(log_spec, log_spec.max() - WHISPER_DYNAMIC_RANGE)
        return ((log_spec + 4.0) / 4.0).astype(np.float32)


def transcribe_many(
    speech: SpeechModel, waveforms: list[np.ndarray], options: SpeechOptions
) -> list[Transcript]:
    """inference.transcribe_many on onnxruntime: each clip alone (a board serves one voice)."""
    if options.constrain and speech.grammar is None:
        raise GlassformerError("constrained decoding needs a grammar (--grammar G.yaml)")
    return [transcribe_clip(speech, w, options) for w in waveforms]


def transcribe_clip(
    speech: SpeechModel, waveform: np.ndarray, options: SpeechOptions
) -> Transcript:
    """One clip, read by the encoder its length calls for (inference.transcribe_many's rule):
    a command the command encoder doubts is read again by the model's own, and the surer of
    the two readings stands."""
    heard = clip_audio(speech, waveform)
    encoder, features = speech.reader(len(heard) / SAMPLE_RATE)
    result = read_clip(speech, encoder, features, heard, options)
    commands = speech.command_encoder
    if (
        commands is not None
        and encoder is commands.network
        and options.constrain
        and commands.doubts(result.intent, result.confidence, result.margin)
    ):
        own = read_clip(speech, speech.model, speech.features, heard, options)
        result = second_reading(result, own)
    return result


def read_clip(
    speech: SpeechModel,
    encoder,  # noqa: ANN001  (an OnnxNetwork or OnnxEncoder: what reads the features)
    features: FeatureConfig,
    heard: np.ndarray,
    options: SpeechOptions,
) -> Transcript:
    """A clip clip_audio cut, read by `encoder` at `features`, decoded, and a doubtful
    command checked against the free words (search.checked_against_free_text)."""
    network: OnnxNetwork = speech.model
    cross = encoder.encode(network.mel(heard, features)[:, : network.max_frames])
    limit = most_tokens(speech, len(heard) / SAMPLE_RATE)
    command = decode_clip(speech, cross, options, limit)
    if not options.constrain or not is_doubtful(command, options.reject_ratio):
        return command
    # what does the model write without the grammar? (search.checked_against_free_text)
    free = dataclasses.replace(options, constrain=False, beam_size=1)
    hearings: list[Transcript] = []
    for model in free_hearings(speech):
        if not stands(command, hearings, options.reject_ratio):
            break
        hearings.append(decode_clip(model, cross, free, limit, hear_silence=False))
    return checked(command, hearings, options.reject_ratio)


def decode_clip(
    speech: SpeechModel,
    cross: list[np.ndarray],
    options: SpeechOptions,
    limit: int,
    hear_silence: bool = True,
) -> Transcript:
    """One clip's beam search and the reading of its best hypothesis (search.decode_clips
    and search.read_clip for one clip). `hear_silence`: False for a free hearing that checks a
    command, whose no-speech probability nobody reads (the command's own is kept:
    transcript.checked): its own pass over the prompt (heard_silence) is then not run, and
    the hearing's no_speech is 0."""
    from glassformer.tasks.speech.vocabulary import grammar_constraint

    grammar = grammar_constraint(speech, options.beam_size) if options.constrain else None
    found = beam_search(speech, cross, options.beam_size, limit, grammar, hear_silence)
    chosen, text, command = written_words(speech, found.best, found.ended, options, limit)
    start = len(speech.start)
    picked, ends = found.picked, found.ends
    if chosen != found.best[start : start + len(chosen)]:  # cut after a loop: other tokens
        picked, ends = teacher_forced(speech, cross, chosen)
    n = len(chosen) + 1  # the written tokens, then the end
    end_probability = float(ends[words_before_closers(speech, chosen)])
    return scored(
        text, command, picked[:n].tolist(), end_probability, options, found.margin,
        found.no_speech,
    )  # fmt: skip


@dataclass(frozen=True)
class Found:
    """A search's best hypothesis: its tokens (prompt, written, <eos> padding), whether it
    ended, and per written position the unrestricted log-probability of its token and the
    probability of the end (<eos> or a closer) there."""

    best: list[int]
    ended: bool
    picked: np.ndarray  # (T',)
    ends: np.ndarray  # (T',)
    margin: float  # the best's lead over the next hypothesis with other words (search_lead)
    no_speech: float  # the model's no-speech probability (transcript.no_speech)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Shapes: (R, V) -> (R, V)"""
    peak = logits.max(axis=-1, keepdims=True)
    return logits - (peak + np.log(np.exp(logits - peak).sum(axis=-1, keepdims=True)))


def normalizers(logits: np.ndarray, suppress: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's log-normalizer over the whole vocabulary (what the confidence reads: a
    token's log-probability is its logit minus it), and the search's, over the vocabulary
    without the suppressed tokens (search.py's suppress_tokens then log_softmax). One pass of
    exp over the logits: the suppressed share is taken out of the whole normalizer, except in
    a row where it is most of it (there, that row's is summed again without them).

    Shapes:
        logits: (R, V) float32   returns: (R, 1), (R, 1)
    """
    peak = logits.max(axis=-1, keepdims=True)
    total = peak + np.log(np.exp(logits - peak).sum(axis=-1, keepdims=True))  # (R, 1)
    share = np.exp(logits[:, suppress] - total).sum(axis=-1, keepdims=True)  # (R, 1)
    search = total + np.log1p(-np.minimum(share, 0.5))
    for row in np.flatnonzero(share[:, 0] > 0.5):
        kept = np.delete(logits[row], suppress)
        search[row, 0] = kept.max() + np.log(np.exp(kept - kept.max()).sum())
    return total, search


def search_scores(logits: np.ndarray, suppress: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """normalizers' whole one, and the search's log-probabilities: the suppressed tokens at
    -inf, the rest renormalized without them.

    Shapes:
        logits: (R, V) float32   returns: (R, 1), (R, V)
    """
    total, search = normalizers(logits, suppress)
    log_probs = logits - search
    log_probs[:, suppress] = -np.inf
    return total, log_probs


def end_probabilities(logits: np.ndarray, total: np.ndarray, ends: list[int]) -> np.ndarray:
    """Shapes: logits (R, V), their log-normalizers (R, 1) -> (R,): p(<eos>) + p(closers)"""
    return np.exp(logits[:, ends] - total).sum(axis=-1)


def beam_search(
    speech: SpeechModel,
    cross: list[np.ndarray],
    beam_size: int,
    limit: int,
    grammar,  # noqa: ANN001  (a TextConstraint, or None: free text)
    hear_silence: bool = True,
) -> Found:
    """decoding/search.beam_search for one clip, with search.py's restrictions
    (vocabulary.start_rule, the grammar; its at_most, a batch's per-clip limit, is the loop's
    own limit here), on numpy arrays: the prompt runs once, then K beams (at first, the
    prompt's one) each take one token a step; a beam with nothing allowed dies; the end
    compares score / ((5 + length) / 6) ** 0.6. Returns the best hypothesis and its
    log-probabilities, and with `hear_silence` the model's no-speech probability (heard_silence;
    else 0).
    """
    network: OnnxNetwork = speech.model
    rules, start, K = speech.rules, speech.start, beam_size
    eos, ends_at = rules.eos, [rules.eos, *speech.reading.closers]
    # one beam to start from: the first step's K best extensions of it become the K beams
    logits, past = network.decode(np.array([start], np.int64), network.start_past(), cross)
    no_speech = heard_silence(speech, cross) if hear_silence else 0.0
    tokens = np.array([start], np.int64)  # (1, T0), then (K, T)
    scores, finished, lengths = np.zeros(1), np.zeros(1, bool), np.zeros(1)
    picked, ends = np.zeros((1, 0)), np.zeros((1, 0))  # per beam, per written position
    suppress = np.array(rules.suppress, np.int64)
    at_start = list(rules.suppress_at_start)
    for step in range(limit):
        banned = at_start if step == 0 else []
        if grammar is None:
            total, log_probs = search_scores(logits, suppress)  # (R, 1), (R, V)
            log_probs[:, banned] = -np.inf
            beam, next_tokens, scores = best_extensions(scores, log_probs, finished, eos, K)
        else:  # only the few tokens the grammar allows are scored: no (R, V) sums
            total, search = normalizers(logits, suppress)
            ranking = logits.copy()
            ranking[:, [*suppress, *banned]] = -np.inf
            live = ~finished & (scores > -np.inf)
            allowed = allowed_tokens(grammar, tokens, ranking, live, len(start))
            beam, next_tokens, scores = best_allowed(
                scores, allowed, ranking, search, finished, eos, K
            )
        chosen = logits[beam, next_tokens] - total[beam, 0]  # unrestricted log-probabilities
        picked = np.concatenate([picked[beam], chosen[:, None]], axis=1)
        ending = end_probabilities(logits, total, ends_at)[beam]
        ends = np.concatenate([ends[beam], ending[:, None]], axis=1)
        past = follow_beams(past, beam)  # keys and values follow beams
        tokens = np.concatenate([tokens[beam], next_tokens[:, None]], axis=1)
        lengths = lengths[beam] + ~finished[beam]
        finished = finished[beam] | (next_tokens == eos) | (scores == -np.inf)
        if finished.all():
            break
        logits, past = network.decode(next_tokens[:, None], past, cross)
    else:  # the limit cut the search: the end's probability after the last token, too
        total, _ = normalizers(logits, suppress)  # the last step fed its tokens already
        picked = np.concatenate([picked, (logits[:, eos] - total[:, 0])[:, None]], axis=1)
        ending = end_probabilities(logits, total, ends_at)
        ends = np.concatenate([ends, ending[:, None]], axis=1)
    normalized = scores / ((5.0 + lengths) / 6.0) ** LENGTH_PENALTY
    order = np.argsort(-normalized, kind="stable")  # best first, ties keep their order
    rows = tokens.tolist()
    margin = search_lead(speech, [rows[n] for n in order], normalized[order].tolist())
    best = int(order[0])
    found = bool(scores[best] > -np.inf)
    return Found(rows[best], found, picked[best], ends[best], margin, no_speech)


def heard_silence(speech: SpeechModel, cross: list[np.ndarray]) -> float:
    """transcript.no_speech for one clip: the prompt up to <|startoftranscript|> run on its
    own (the graph gives the last position's logits only). Its own pass, not the prompt's
    split in two: in int8 the graph quantizes each call's activations with one scale, so a
    split prompt moved every confidence by up to 0.14 and turned 8 of the benchmark's 1,650
    answers (docs/benchmarks.md, "The keys and values that follow the beams")."""
    network: OnnxNetwork = speech.model
    slot = speech.no_speech_slot()
    if slot is None:
        return no_speech(speech, None)
    prefix = np.array([speech.start[: slot[0] + 1]], np.int64)
    logits, _ = network.decode(prefix, network.start_past(), cross)
    return no_speech(speech, logits[0])


def follow_beams(past: list[np.ndarray], beam: np.ndarray) -> list[np.ndarray]:
    """Each beam's keys and values after a step: row k becomes row beam[k]'s. A beam that
    kept its own row costs nothing: only the rows that moved are copied, in place (the
    arrays are this search's own, fresh from the graph), where gathering every row copied
    the whole past of every layer at each step a beam moved (about 9 ms a command). At the
    first step the prompt's one row becomes the K beams'.

    Shapes:
        past: (R, H, t, Dh) each   beam: (K,) rows of R   returns: (K, H, t, Dh) each
    """
    if len(beam) != past[0].shape[0]:
        return [p[beam] for p in past]
    moved = np.flatnonzero(beam != np.arange(len(beam)))
    if moved.size:
        sources = beam[moved]
        for p in past:
            p[moved] = p[sources]  # the right side is a copy: no row is read after its write
    return past


def best_extensions(
    scores: np.ndarray, log_probs: np.ndarray, finished: np.ndarray, eos: int, K: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The K best one-token extensions of R beams (R = 1 at the first step, then K), over
    every token: a beam's score plus a token's log-probability (a finished beam extends with
    eos, at no cost), best first. Whisper's 51,864 tokens are always more than K.

    Shapes:
        scores: (R,)   log_probs: (R, V)   returns: beams (K,), tokens (K,), scores (K,)
    """
    V = log_probs.shape[1]
    log_probs[finished] = -np.inf
    log_probs[finished, eos] = 0.0
    candidates = (scores[:, None] + log_probs).reshape(-1)  # (R*V,)
    top = np.argpartition(-candidates, K - 1)[:K]
    top = top[np.argsort(-candidates[top], kind="stable")]  # best first
    return top // V, top % V, candidates[top].astype(np.float64)


def allowed_tokens(
    grammar,  # noqa: ANN001  (a TextConstraint)
    tokens: np.ndarray,
    ranking: np.ndarray,
    live: np.ndarray,
    start: int,
) -> list[list[int]]:
    """TextConstraint.__call__ on numpy arrays: the tokens the grammar allows each live beam
    (grammar.allowed, tried from the most likely down); none for the others.

    Shapes:
        tokens: (K, T)   ranking: (K, V), the logits with impossible tokens at -inf   live: (K,)
    """
    rows = tokens.tolist()
    return [
        grammar.allowed(grammar.text(rows[n]), best_first(ranking[n])) if live[n] else []
        for n in range(len(rows))
    ]


def best_allowed(
    scores: np.ndarray,
    found: list[list[int]],
    ranking: np.ndarray,
    search: np.ndarray,
    finished: np.ndarray,
    eos: int,
    K: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """best_extensions over the allowed tokens only: the same beams, tokens and scores as
    over the whole (K, V) array with everything else at -inf, from a few dozen candidates.
    Ties go to the lower beam, then the lower token, as a stable sort of the flat array
    would; a slot with no finite candidate left gets a beam extended by eos at -inf (the
    whole array's search would fill it with some -inf candidate: it can never win).

    Shapes:
        scores: (R,)   ranking: (R, V)   search: (R, 1), the search's log-normalizers
        returns: beams (K,), tokens (K,), scores (K,)
    """
    R = len(scores)
    beams = [n for n in range(R) for _ in found[n]]
    ids = [t for n in range(R) for t in found[n]]
    values = (scores[beams] + (ranking[beams, ids] - search[beams, 0])).tolist()
    for n in np.flatnonzero(finished & (scores > -np.inf)):  # extends with eos at no cost
        beams.append(int(n))
        ids.append(eos)
        values.append(float(scores[n]))
    order = sorted(range(len(ids)), key=lambda c: (-values[c], beams[c], ids[c]))[:K]
    beam = [beams[c] for c in order] + [n if n < R else 0 for n in range(len(order), K)]
    chosen = [ids[c] for c in order] + [eos] * (K - len(order))
    kept = [values[c] for c in order] + [-np.inf] * (K - len(order))
    return np.array(beam), np.array(chosen, np.int64), np.array(kept, np.float64)


def best_first(scores: np.ndarray):  # noqa: ANN201
    """Token ids from the most likely down, never an impossible one (constraints.best_first).

    In three tiers, each asked for only when the grammar wants more: the tokens within NEAR
    of the best (one comparison over the row and a sort of the few it finds: the grammar
    usually takes its tokens among them, and a partition of 51,864 scores cost 12 ms of a
    command's 140), then the FIRST_RANKED best, then the whole vocabulary sorted. Each tier
    skips what an earlier one gave, and every token of a tier scores at least as high as any
    left for a later one, so the order is the whole sort's (ties: the lower token first in
    the first tier).
    """
    peak = scores.max()
    if peak == -np.inf:
        return
    seen: set[int] = set()
    near = np.flatnonzero(scores >= peak - NEAR)
    if near.size <= FIRST_RANKED:
        near = near[np.argsort(-scores[near], kind="stable")]
        for token in near.tolist():
            yield token
        seen.update(near.tolist())
    first = min(FIRST_RANKED, scores.size)
    top = np.argpartition(-scores, first - 1)[:first]
    top = top[np.argsort(-scores[top], kind="stable")]
    for token in top.tolist():
        if scores[token] == -np.inf:
            return
        if token not in seen:
            yield token
    if first == scores.size:
        return
    seen.update(top.tolist())
    for token in np.argsort(-scores, kind="stable").tolist():
        if scores[token] == -np.inf:
            return
        if token not in seen:
            yield token


def teacher_forced(
    speech: SpeechModel, cross: list[np.ndarray], chosen: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """The log-probability of each of `chosen` then <eos>, and the end's probability at each
    position, fed one token a call after the prompt (the graph returns the last position's
    logits only). For free text cut after a loop: a few tokens."""
    network: OnnxNetwork = speech.model
    eos, ends_at = speech.rules.eos, [speech.rules.eos, *speech.reading.closers]
    logits, past = network.decode(np.array([speech.start], np.int64), network.start_past(), cross)
    picked, ends = [], []
    for token in [*chosen, eos]:
        raw = log_softmax(logits)
        picked.append(raw[0, token])
        ends.append(np.exp(raw[0, ends_at]).sum())
        if token != eos:
            logits, past = network.decode(np.array([[token]], np.int64), past, cross)
    return np.array(picked), np.array(ends)
