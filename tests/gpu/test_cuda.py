"""On a GPU, our modules compute what they compute on the CPU.

Marked gpu (deselected unless `pytest -m gpu`) and skipped where torch sees no CUDA device;
run on a lent GPU by bench/bench_gpu.sh, whose results are in docs/benchmarks.md ("On a
GPU"). float32 throughout, with TF32 matrix products off, so the tolerances are float32's;
one test checks the bf16 autocast that training uses on CUDA against float32.
"""

from __future__ import annotations

import copy

import pytest
import torch

from glassformer.decoding.config import DecodeConfig
from glassformer.decoding.search import generate
from glassformer.layers.attention import scaled_dot_product_attention
from glassformer.models.configs import GPTConfig, SpeechConfig
from glassformer.models.gpt import GPT
from glassformer.models.speech import SpeechTransformer

pytestmark = [  # deselected by default (pyproject.toml's addopts): run with -m gpu
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
]
CUDA = torch.device("cuda")


@pytest.fixture(autouse=True)
def exact_float32() -> None:
    """TF32 off: float32 products on the GPU as exact as the CPU's."""
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def on_both(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The model on the CPU and an exact copy on the GPU."""
    torch.manual_seed(0)
    return model.eval(), copy.deepcopy(model).to(CUDA).eval()


@pytest.mark.parametrize("causal", [False, True])
def test_attention_written_out_on_the_gpu_matches_the_fused_kernel(causal: bool) -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 37, 16, device=CUDA) for _ in range(3))
    mask = torch.ones(37, 37, dtype=torch.bool, device=CUDA).tril() if causal else None
    written, _ = scaled_dot_product_attention(q, k, v, mask)
    fused = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(written, fused, atol=1e-5, rtol=1e-5)


def test_gpt_logits_and_gradients_match_the_cpu() -> None:
    torch.manual_seed(0)
    cpu, gpu = on_both(GPT(GPTConfig(vocab_size=97, d_model=64, n_layers=2, d_ff=128)))
    tokens = torch.randint(0, 97, (3, 50))
    torch.testing.assert_close(gpu(tokens.to(CUDA)).cpu(), cpu(tokens), atol=1e-4, rtol=1e-4)
    for model, device in ((cpu, "cpu"), (gpu, CUDA)):
        model.train()
        logits = model(tokens.to(device))
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten().to(device)
        )
        loss.backward()
    for (name, p_cpu), p_gpu in zip(cpu.named_parameters(), gpu.parameters(), strict=True):
        torch.testing.assert_close(p_gpu.grad.cpu(), p_cpu.grad, atol=1e-4, rtol=1e-3, msg=name)


@pytest.mark.parametrize("compiled", [False, True])
def test_kv_cached_greedy_decoding_writes_the_same_tokens_as_the_cpu(compiled: bool) -> None:
    from glassformer.decoding.static import StaticStep

    torch.manual_seed(0)
    cpu, gpu = on_both(GPT(GPTConfig(vocab_size=50, d_model=32, n_layers=2, d_ff=64)))
    prompt = torch.randint(0, 50, (1, 5))
    config = DecodeConfig(max_new_tokens=30, temperature=0.0)
    with torch.no_grad():
        on_cpu = generate(lambda t, c: cpu(t, cache=c), cpu.new_cache(), prompt, config)
        if compiled:  # the compiled static-shape step (decoding/static.py), on the GPU
            step = StaticStep(gpu)
            on_gpu = generate(step, step.new_cache(), prompt.to(CUDA), config)
        else:
            on_gpu = generate(
                lambda t, c: gpu(t, cache=c), gpu.new_cache(), prompt.to(CUDA), config
            )
    assert torch.equal(on_gpu.cpu(), on_cpu)


def test_speech_transformer_matches_the_cpu_with_padding() -> None:
    torch.manual_seed(0)
    config = SpeechConfig(d_model=64, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=128)
    cpu, gpu = on_both(SpeechTransformer(config))
    features, tokens = torch.randn(2, 13, 200), torch.randint(0, 512, (2, 12))
    lengths = torch.tensor([200, 140])
    with torch.no_grad():
        want = cpu(features, tokens, lengths)
        got = gpu(features.to(CUDA), tokens.to(CUDA), lengths.to(CUDA))
    torch.testing.assert_close(got.logits.cpu(), want.logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got.ctc_logits.cpu(), want.ctc_logits, atol=1e-4, rtol=1e-4)


def test_bf16_autocast_training_loss_is_float32s_within_bf16_precision() -> None:
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=97, d_model=64, n_layers=2, d_ff=128)).to(CUDA)
    tokens = torch.randint(0, 97, (4, 64), device=CUDA)

    def loss() -> torch.Tensor:
        logits = model(tokens)
        return torch.nn.functional.cross_entropy(
            logits[:, :-1].flatten(0, 1).float(), tokens[:, 1:].flatten()
        )

    exact = loss()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        mixed = loss()
    assert torch.isfinite(mixed) and abs(mixed.item() - exact.item()) < 0.02 * exact.item()
