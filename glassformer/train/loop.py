"""The training loop: one readable function, in nanoGPT's order.

    batch -> forward -> loss -> backward -> clip -> step -> schedule -> log -> eval -> checkpoint

It knows nothing about text, speech or translation: a TrainTask supplies batches and the loss
(tasks/textgen.py, ...). Everything a run produces goes under its output directory:

    OUT/last/          checkpoint + optimizer, RNG and progress state (resume from here)
    OUT/best/          checkpoint with the lowest validation loss so far
    OUT/metrics.jsonl  one row per step (train loss, lr, tokens/s) and per evaluation
    OUT/loss.png       the loss curve, redrawn at every evaluation
    OUT/.lock          held while a run trains here, so a second run into OUT is refused

Checkpoints are written atomically, OUT/last before OUT/best; a NaN or infinite loss, or a
checkpoint that cannot be written (a full disk), stops the run with OUT/last still holding
the last good state. Everything in OUT is checked before training starts
(train/outputs.py), and the thread count is saved with the train state, so a resumed run
starts with the threads the checkpoint was taken with.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from glassformer.devices import resolve_device
from glassformer.errors import CheckpointError, GlassformerError
from glassformer.threads import ThreadGovernor
from glassformer.train import distributed, schedule
from glassformer.train.checkpoint import load_checkpoint, save_checkpoint
from glassformer.train.config import TrainConfig
from glassformer.train.curves import MetricsLog, plot_loss_curve
from glassformer.train.lock import run_directory_lock
from glassformer.train.outputs import CURVE_FILE, METRICS_FILE, check_run_directory
from glassformer.train.state import read_train_state, write_train_state

Batch = tuple[torch.Tensor, ...]


class TrainTask(Protocol):
    """What the loop needs from a task."""

    def get_batch(self, split: str, generator: torch.Generator) -> Batch:
        """A global batch ("train" or "val"); tensors with the batch on dimension 0."""

    def loss(self, model: nn.Module, batch: Batch, label_smoothing: float) -> torch.Tensor:
        """Mean loss per target token of `batch`."""

    def count_tokens(self, batch: Batch) -> int:
        """Target tokens in `batch` (for tokens/s)."""

    def checkpoint_metadata(self) -> dict[str, Any]:
        """Entries for each checkpoint's config.json."""

    def write_files(self, directory: Path) -> None:
        """Files each checkpoint needs besides the weights (the tokenizer)."""

    def extra_metrics(self, val_loss: float) -> dict[str, float]:
        """More validation figures derived from the loss (e.g. bits per byte)."""


@dataclass(frozen=True)
class TrainResult:
    step: int  # the last step trained
    train_loss: float  # loss of the last step
    val_loss: float  # validation loss at the end
    best_val_loss: float  # lowest validation loss seen
    tokens_per_second: float  # training throughput of this process's run
    seconds: float  # wall-clock time of this call


class TrainingDiverged(GlassformerError):
    """The loss became NaN or infinite."""


def learning_rate(config: TrainConfig, step: int, d_model: int) -> float:
    if config.schedule == "cosine":
        return schedule.warmup_cosine(
            step, config.lr, config.min_lr, config.warmup_steps, config.steps
        )
    if config.schedule == "inverse_sqrt":
        return schedule.inverse_sqrt(step, d_model, config.warmup_steps, config.lr)
    return schedule.constant(step, config.lr, config.warmup_steps)


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices and embeddings (dim >= 2), none on biases and norms.

    Uses torch's fused AdamW kernel (one kernel for all parameters instead of a few per tensor).
    """
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": config.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    betas = (config.beta1, config.beta2)
    return torch.optim.AdamW(groups, lr=config.lr, betas=betas, eps=config.adam_eps, fused=True)


def autocast_context(
    config: TrainConfig, device: torch.device
) -> contextlib.AbstractContextManager:
    """bf16 autocast on CUDA by default; never by default on CPU (bf16 matmul is ~100x slower)."""
    use_bf16 = config.precision == "bf16" or (config.precision == "auto" and device.type == "cuda")
    if not use_bf16:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


@torch.no_grad()
def evaluate(
    model: nn.Module,
    task: TrainTask,
    config: TrainConfig,
    device: torch.device,
    ctx: distributed.Distributed,
) -> float:
    """Mean validation loss over `eval_batches` batches, the same batches at every call."""
    model.eval()
    generator = torch.Generator().manual_seed(config.seed + 1)
    total = torch.zeros((), device=device)
    for _ in range(config.eval_batches):
        batch = distributed.local_rows(task.get_batch("val", generator), ctx)
        with autocast_context(config, device):
            total += task.loss(model, tuple(t.to(device) for t in batch), 0.0).float()
    model.train()
    return distributed.mean_over_ranks(total / config.eval_batches, ctx).item()


def train(
    model: nn.Module,
    task: TrainTask,
    config: TrainConfig,
    out: str | Path,
    resume: bool = False,
    progress: bool = True,
) -> TrainResult:
    """Train `model` on `task` for config.steps optimizer steps, writing under `out`.

    Raises:
        GlassformerError: OUT is in use by another run (train/lock.py), a file the run writes
            there is not ours to replace (train/outputs.py), the device is not there, the
            loss diverged, or a checkpoint could not be written (OUT/last keeps the last one
            that was).
    """
    out = check_run_directory(out)
    wants_cuda = config.device.startswith("cuda") or (
        config.device == "auto" and torch.cuda.is_available()
    )
    ctx = distributed.init_distributed("cuda" if wants_cuda else "cpu")
    device = resolve_device(config.device, ctx.local_rank if ctx.world_size > 1 else 0)
    # one run per OUT (train/lock.py): taken before anything in OUT is read or written
    with run_directory_lock(out) if ctx.is_main else contextlib.nullcontext():
        return train_on(model, task, config, out, resume, progress, ctx, device)


def train_on(
    model: nn.Module,
    task: TrainTask,
    config: TrainConfig,
    out: Path,
    resume: bool,
    progress: bool,
    ctx: distributed.Distributed,
    device: torch.device,
) -> TrainResult:
    """The loop itself, once train() has chosen the device and locked OUT."""
    from glassformer.progress import progress_bar

    model.to(device).train()
    optimizer = make_optimizer(model, config)
    data_generator = torch.Generator().manual_seed(config.seed)
    step, best_val, val_loss, threads = 0, math.inf, math.inf, None
    if resume:
        last = out / "last"
        model.load_state_dict(load_checkpoint(last).state_dict())
        saved = read_train_state(last, optimizer, data_generator)
        step, best_val, val_loss = saved["step"], saved["best_val_loss"], saved["val_loss"]
        threads = saved.get("threads")  # the count the checkpoint's steps ran with
    wrapped = torch.compile(model) if config.compile else model  # checkpoints save `model`
    if ctx.world_size > 1:
        device_ids = [device.index] if device.type == "cuda" else None
        wrapped = nn.parallel.DistributedDataParallel(wrapped, device_ids=device_ids)
    log = MetricsLog(out / METRICS_FILE, step if resume else None) if ctx.is_main else None

    saved_step = step if resume else None  # the step OUT/last holds

    def save(directory: Path, with_state: bool) -> None:
        nonlocal saved_step
        progress_state = {"step": step, "best_val_loss": best_val, "val_loss": val_loss}
        progress_state["threads"] = torch.get_num_threads()

        def write_extra(tmp: Path) -> None:
            task.write_files(tmp)
            if with_state:
                write_train_state(tmp, optimizer, data_generator, progress_state)

        if ctx.is_main:
            metadata = {**task.checkpoint_metadata(), "train": config.__dict__, "step": step}
            try:
                save_checkpoint(model, directory, metadata, write_extra)
            except CheckpointError as error:  # e.g. a full disk: stop, saying what is left
                held = f"resume from step {saved_step}" if saved_step is not None else "none yet"
                raise CheckpointError(
                    f"{error}; training stopped at step {step} ({out / 'last'}: {held})"
                ) from None
            if with_state:
                saved_step = step
        distributed.barrier(ctx)

    d_model = model.config.d_model
    micro_batches = config.grad_accum
    bar = progress_bar(
        progress and ctx.is_main, total=config.steps, initial=step, desc="training", unit="step"
    )
    # on a CPU, as many threads as the other processes leave idle cores (glassformer/threads.py)
    governor = ThreadGovernor() if config.adapt_threads and device.type == "cpu" else None
    if governor is not None and threads is not None:
        governor.start_at(threads)  # as the steps before the checkpoint ran
    start, tokens_seen, loss_value = time.perf_counter(), 0, math.nan
    out_of_time = False
    while step < config.steps and not out_of_time:
        step_start = time.perf_counter()
        if governor is not None:
            governor.tick()
        lr = learning_rate(config, step, d_model)
        for group in optimizer.param_groups:
            group["lr"] = lr
        batch = distributed.local_rows(
            task.get_batch("train", data_generator), ctx
        )  # this rank's rows
        loss_sum = torch.zeros((), device=device)
        for index, micro in enumerate(zip(*(t.chunk(micro_batches) for t in batch), strict=True)):
            sync = index == micro_batches - 1 or ctx.world_size == 1
            with (
                contextlib.nullcontext() if sync else wrapped.no_sync(),
                autocast_context(config, device),
            ):
                loss = task.loss(
                    wrapped, tuple(t.to(device) for t in micro), config.label_smoothing
                )
            (loss / micro_batches).backward()
            loss_sum += loss.detach().float() / micro_batches
        loss_value = distributed.mean_over_ranks(loss_sum, ctx).item()
        if not math.isfinite(loss_value):
            raise TrainingDiverged(
                f"loss became {loss_value} at step {step + 1}; stopped before updating weights. "
                f"The last good checkpoint is {out / 'last'}; try a lower --lr or --grad-clip"
            )
        if config.grad_clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        if config.max_minutes > 0:  # every process must agree, or DDP would wait forever
            late = torch.tensor(float(time.perf_counter() - start >= config.max_minutes * 60))
            out_of_time = distributed.mean_over_ranks(late.to(device), ctx).item() > 0

        step_tokens = task.count_tokens(batch) * ctx.world_size
        tokens_seen += step_tokens
        tokens_per_second = step_tokens / (time.perf_counter() - step_start)
        if log is not None:
            log.write(
                {
                    "step": step,
                    "train_loss": loss_value,
                    "lr": lr,
                    "tokens_per_s": tokens_per_second,
                    "threads": torch.get_num_threads(),
                }
            )
            bar.set_postfix(
                loss=f"{loss_value:.4f}", tok_s=f"{tokens_per_second:,.0f}", refresh=False
            )
            bar.update()
        last_step = step == config.steps or out_of_time
        new_best = False
        if step % config.eval_every == 0 or last_step:
            val_loss = evaluate(model, task, config, device, ctx)
            if log is not None:
                perplexity = math.exp(min(val_loss, 50.0))
                elapsed = round(time.perf_counter() - start, 1)  # this call's training time
                row = {"step": step, "val_loss": val_loss, "val_ppl": perplexity, "time_s": elapsed}
                log.write({**row, **task.extra_metrics(val_loss)})
                line = f"step {step}: train loss {loss_value:.4f}, val loss {val_loss:.4f}"
                bar.write(line, file=sys.stderr)  # tqdm's default is stdout: a caller's
                plot_loss_curve(log.read(), out / CURVE_FILE)
            new_best = val_loss < best_val
            best_val = min(best_val, val_loss)
        # OUT/last first: if the disk fills up, the run can still be resumed
        if step % config.checkpoint_every == 0 or last_step:
            save(out / "last", with_state=True)
        if new_best:
            save(out / "best", with_state=False)
    bar.close()
    if governor is not None:
        governor.restore()
    seconds = time.perf_counter() - start
    return TrainResult(
        step, loss_value, val_loss, best_val, tokens_seen / max(seconds, 1e-9), seconds
    )
