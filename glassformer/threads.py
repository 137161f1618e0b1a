"""How torch's CPU threads behave on a machine that is doing other work too.

OpenMP worker threads spin while they wait for the next parallel region (the default
"active" wait policy). On a quiet machine that saves microseconds; on a busy one the spinning
threads fight the other processes for the cores, and every parallel region waits for its
slowest thread: measured speech training ran 4x slower beside one busy core and 7x slower
beside a second training (docs/benchmarks.md, "Busy machine").

set_thread_policy() runs before torch is imported and sets OMP_WAIT_POLICY=PASSIVE (threads
sleep instead of spinning) unless the user's environment already says otherwise.
"""

from __future__ import annotations

import os

WAIT_POLICY = "PASSIVE"  # chosen by measurement: see docs/benchmarks.md, "Busy machine"


def set_thread_policy() -> None:
    """Set the OpenMP wait policy, unless the environment sets one (the user's choice wins).

    Must run before torch is imported: OpenMP reads its environment once, when it starts.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", WAIT_POLICY)
