"""Scale-out under torchrun: one process per device, DistributedDataParallel averages gradients.

The training loop samples the *global* batch identically on every rank (same seed, same data
generator) and each rank keeps its slice of the rows. DDP's gradient all-reduce then averages
the slices' mean-loss gradients, which equals the full batch's gradient when the slices are
equal in size: N processes follow the same trajectory as one process with the same global
batch (tests/train/test_distributed.py). gloo on CPU, NCCL on GPUs. Only rank 0 logs and
writes files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Distributed:
    rank: int = 0  # this process's index among all processes
    world_size: int = 1  # number of processes
    local_rank: int = 0  # this process's index on its machine (picks the GPU)

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed(device_type: str) -> Distributed:
    """Join the process group when started by torchrun (WORLD_SIZE > 1), else a single process."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1:
        return Distributed()
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device_type == "cuda" else "gloo")
    return Distributed(dist.get_rank(), world_size, int(os.environ.get("LOCAL_RANK", "0")))


def local_rows(batch: tuple[torch.Tensor, ...], ctx: Distributed) -> tuple[torch.Tensor, ...]:
    """This rank's equal share of the global batch's rows.

    Shapes:
        batch: tensors of (B, ...)   returns: tensors of (B / world_size, ...)
    """
    if ctx.world_size == 1:
        return batch
    rows = batch[0].size(0)
    if rows % ctx.world_size:
        raise ValueError(f"batch_size={rows} is not divisible by world_size={ctx.world_size}")
    share = rows // ctx.world_size
    return tuple(t[ctx.rank * share : (ctx.rank + 1) * share] for t in batch)


def mean_over_ranks(value: torch.Tensor, ctx: Distributed) -> torch.Tensor:
    """The average of a scalar across all processes (for logging losses)."""
    if ctx.world_size == 1:
        return value
    value = value.detach().clone()
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    return value / ctx.world_size


def barrier(ctx: Distributed) -> None:
    if ctx.world_size > 1:
        dist.barrier()
