"""Walking a sentence network (voice/sentence_network.py): how many sentences it holds, and
sentences drawn from it at random, without writing them all out.

    count_paths(network, graph)        paths from a graph's start to its end, by arithmetic
    sample_text(network, graph, rng)   one path's text, its choices made at random

A path through a call is a path through the callee times a path from where it returns, so
counting multiplies instead of enumerating (billions of sentences, counted in milliseconds).
A wildcard counts as one path and is sampled as a placeholder word: its text is free.
Not here: running the network on a text (sentence_network.NetworkRunner).
"""

from __future__ import annotations

import random

from glassformer.voice.sentence_network import ANY, Graph, Network

WILDCARD_SAMPLE = "something"  # what a sampled sentence says where free text goes
MAX_SAMPLE_STEPS = 10_000  # edges one sample may take (a walk never loops but in wildcards)


def successors(network: Network, state: int) -> list[tuple[str, int]]:
    """Each (text read, next state) of a state's own edges, calls and wildcards aside."""
    edges = [
        (char, s) for char, states in network.chars[state].items() if char != ANY for s in states
    ]
    edges += [(" ", s) for s in network.spaces[state]]
    edges += [("", s) for s in network.epsilon[state]]
    return edges


class PathCounts:
    """Paths from each state to the end of its graph, computed on demand and remembered: a
    call counts as the callee's paths times the paths from where it returns, a wildcard as
    one path. States are visited in an explicit order, never by recursion, so a long chain
    of characters cannot exhaust Python's stack."""

    def __init__(self, network: Network, finals: set[int]) -> None:
        self.network, self.finals = network, finals  # finals: the sentences' ends
        self.counted: dict[int, int] = {}

    def needs(self, state: int) -> list[int]:
        """The states whose counts this one's needs."""
        net = self.network
        needed = [s for _, s in successors(net, state)]
        needed += [c.start for c, _ in net.calls[state]] + [b for _, b in net.calls[state]]
        if state in net.wildcards:
            needed.append(net.wildcards[state])
        return needed

    def __call__(self, state: int) -> int:
        net, counted = self.network, self.counted
        todo = [state]
        while todo:
            here = todo[-1]
            if here in counted:
                todo.pop()
                continue
            missing = [s for s in self.needs(here) if s not in counted]
            if missing:
                todo.extend(missing)
                continue
            todo.pop()
            total = 1 if here in net.ends or here in self.finals else 0  # an end: one path
            total += sum(counted[s] for _, s in successors(net, here))
            total += sum(counted[c.start] * counted[b] for c, b in net.calls[here])
            if here in net.wildcards:
                total += counted[net.wildcards[here]]
            counted[here] = total
        return counted[state]


def count_paths(network: Network, graph: Graph, counts: PathCounts | None = None) -> int:
    """Paths from graph.start to graph.end (sentences, counting a wildcard once)."""
    return (counts or PathCounts(network, {graph.end}))(graph.start)


def sample_text(
    network: Network, graph: Graph, rng: random.Random, counts: PathCounts | None = None
) -> str:
    """One sentence of `graph`, every sentence equally likely: each step's options weighted
    by the paths through them (a dead end, such as a list no device fills, never taken)."""
    counts = counts or PathCounts(network, {graph.end})
    pieces: list[str] = []
    state, stack = graph.start, []
    for _ in range(MAX_SAMPLE_STEPS):
        if state == graph.end and not stack:
            break
        if state in network.ends and stack:
            state = stack.pop()
            continue
        options = [(text, s, None, counts(s)) for text, s in successors(network, state)]
        options += [
            ("", back, callee, counts(callee.start) * counts(back))
            for callee, back in network.calls[state]
        ]
        if state in network.wildcards:
            end = network.wildcards[state]
            options.append((WILDCARD_SAMPLE, end, None, counts(end)))
        options = [o for o in options if o[3] > 0]
        if not options:
            raise ValueError("the graph has no sentence")
        text, state, callee, _ = rng.choices(options, weights=[o[3] for o in options])[0]
        pieces.append(text)
        if callee is not None:
            stack.append(state)
            state = callee.start
    return " ".join("".join(pieces).split())
