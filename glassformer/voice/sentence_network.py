"""Sentence templates as a network of characters: a grammar's constraint, never its sentences.

Home Assistant's sentences for English, with a home of 200 devices, are billions of strings;
written out they could never be a constraint. Their templates (parsed by hassil) are small:

    turn on [the] {name} [in [the] {area}]     a Sequence of text, Alternatives (the optional
                                                [the]), list references {name}, and rules <x>

Each template becomes a small graph whose edges read one character; each expansion rule and
each slot list becomes one graph of its own, which a template enters through a call edge and
leaves back to where it was called (a recursive transition network, as speech grammars are
run: no rule calls itself, so every stack is a few calls deep). A list of 200 names is built
once, not once per sentence that names a device.

Running the network reads the text a character at a time, all paths at once (Earley's
parser on a network of characters: NetworkRunner), each position's items computed from the
ones before it. Spaces are read loosely, as hassil reads them: a run of template spaces
matches one space of the text (an optional word skipped leaves two), and spaces at the start
or the end are optional. A wildcard ({search_query}) reads any text of at least one
character and at most MAX_FREE_CHARACTERS. Texts are normalized before they arrive
(voice/homeassistant.py's `fold`).

Not here: hassil's template syntax (hassil parses it), slot values (hassil reads them from
the text the network accepted), and which lists and rules a language has (voice/homeassistant.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

ANY = "\x00"  # an edge that reads any character but a space (a wildcard's)
MAX_CONFIGS = 50_000  # items at one position; a text that needs more is cut there
MAX_FREE_CHARACTERS = 40  # a wildcard's text at most: a shopping item, a song's name


@dataclass
class Graph:
    """A part of the network: where it starts and ends (its states live in the Network)."""

    start: int
    end: int


@dataclass
class Network:
    """States and their edges. chars[s]: character -> next states; spaces[s]: states a space
    leads to; epsilon[s]: states reached reading nothing; calls[s]: (callee, return state)."""

    chars: list[dict[str, list[int]]] = field(default_factory=list)
    spaces: list[list[int]] = field(default_factory=list)
    epsilon: list[list[int]] = field(default_factory=list)
    calls: list[list[tuple[Graph, int]]] = field(default_factory=list)
    ends: set[int] = field(default_factory=set)  # a callee's end: return to the caller
    wildcards: dict[int, int] = field(default_factory=dict)  # a wildcard's start -> its end

    def state(self) -> int:
        self.chars.append({})
        self.spaces.append([])
        self.epsilon.append([])
        self.calls.append([])
        return len(self.chars) - 1

    def graph(self) -> Graph:
        return Graph(self.state(), self.state())

    def text(self, text: str, graph: Graph) -> None:
        """Edges that read `text` from graph.start to graph.end."""
        here = graph.start
        for position, char in enumerate(text):
            there = graph.end if position == len(text) - 1 else self.state()
            if char == " ":
                self.spaces[here].append(there)
            else:
                self.chars[here].setdefault(char, []).append(there)
            here = there
        if not text:
            self.epsilon[here].append(graph.end)

    def any_text(self, graph: Graph) -> None:
        """Edges that read free text: 1 to MAX_FREE_CHARACTERS characters of any kind but a
        space first (a wildcard's: "add {item} to my list"). Bounded, so that a wildcard at
        a template's start cannot turn the constraint into no constraint at all."""
        here = self.state()
        self.wildcards[graph.start] = graph.end
        self.chars[graph.start][ANY] = [here]
        for _ in range(MAX_FREE_CHARACTERS - 1):
            there = self.state()
            self.chars[here][ANY] = [there]
            self.spaces[here].append(there)
            self.epsilon[here].append(graph.end)
            here = there
        self.epsilon[here].append(graph.end)

    def call(self, callee: Graph, graph: Graph) -> None:
        """graph.start -> the callee -> graph.end."""
        self.calls[graph.start].append((callee, graph.end))
        self.ends.add(callee.end)

    @property
    def size(self) -> int:
        return len(self.chars)


Item = tuple[int, int]  # a state, and the position its graph was entered at (its origin)


@dataclass(frozen=True)
class Chart:
    """What is known after a prefix of the text (Earley's chart at that position): the items,
    which callers wait for each graph called here (its start -> (return state, origin)), and
    the items that read each character next (a space: " "), so that a step looks only at
    the items its character moves: the beam tries dozens of tokens from one prefix."""

    items: frozenset[Item]
    waiting: dict[int, frozenset[Item]]
    reads: dict[str, tuple[tuple[int, int], ...]]  # character -> (next state, origin) pairs


class NetworkRunner:
    """Runs a Network from its sentence starts: which texts start a sentence, which are one.

    A configuration does not carry its stack of calls: an item is a state and the position
    where its graph was entered, and each position keeps who called which graph there
    (Earley's parser, on a network of characters). A rule that 500 templates call is entered
    once per position, not once per caller: Dutch's full set kept 20,000 stacks at the first
    character, 300 items this way.

    Args:
        network: the states and edges.
        starts: each sentence's graph (a template's, with its calls).
        allowed: a character -> whether the grammar's texts may hold it (others never do;
            ANY edges read only these).
    """

    def __init__(
        self, network: Network, starts: Iterable[Graph], allowed: Callable[[str], bool]
    ) -> None:
        self.network, self.allowed = network, allowed
        starts = list(starts)
        self.finals = frozenset(graph.end for graph in starts)
        self.callee_start = {  # a callee's end -> its start
            callee.end: callee.start for calls in network.calls for callee, _ in calls
        }
        self.initial = self.close([], {(graph.start, 0) for graph in starts}, after_space=True)

    def close(self, charts: list[Chart], seeds: set[Item], after_space: bool) -> Chart:
        """The chart at position len(charts) from the items reached there: epsilon edges,
        calls entered (predicted), graphs finished returned to their callers (completed),
        and after a space (or at the start) the template's spaces."""
        net, here = self.network, len(charts)
        items, todo = set(seeds), list(seeds)
        waiting: dict[int, set[Item]] = {}
        finished: set[int] = set()  # graphs entered here and already finished here
        while todo:
            state, origin = todo.pop()
            following = [(s, origin) for s in net.epsilon[state]]
            if after_space:
                following += [(s, origin) for s in net.spaces[state]]
            for callee, back in net.calls[state]:
                waiting.setdefault(callee.start, set()).add((back, origin))
                following.append((callee.start, here))
                if callee.start in finished:  # it finished here before this caller came
                    following.append((back, origin))
            if state in net.ends:
                start = self.callee_start[state]
                if origin == here:
                    finished.add(start)
                    following += waiting.get(start, ())
                else:
                    following += charts[origin].waiting.get(start, ())
            for item in following:
                if item not in items:
                    items.add(item)
                    todo.append(item)
            if len(items) > MAX_CONFIGS:
                break  # a grammar this ambiguous is cut here rather than hang the decoder
        reads: dict[str, list[Item]] = {}
        for state, origin in items:
            for char, states in net.chars[state].items():
                reads.setdefault(char, []).extend((s, origin) for s in states)
            if net.spaces[state]:
                reads.setdefault(" ", []).extend((s, origin) for s in net.spaces[state])
        waits = {k: frozenset(v) for k, v in waiting.items()}
        return Chart(frozenset(items), waits, {c: tuple(r) for c, r in reads.items()})

    def step(self, charts: list[Chart], char: str) -> Chart:
        """The chart after reading one more character, given every chart before it."""
        reads = charts[-1].reads
        reached = set(reads.get(char, ()))
        if char != " " and self.allowed(char):
            reached.update(reads.get(ANY, ()))
        elif char != " ":
            reached = set()
        if not reached:
            return EMPTY
        return self.close(charts, reached, after_space=char == " ")

    def is_final(self, charts: list[Chart]) -> bool:
        """Whether a sentence may end after these charts' text (trailing template spaces are
        optional)."""
        ended = self.close(charts[:-1], set(charts[-1].items), after_space=True)
        return any(state in self.finals and origin == 0 for state, origin in ended.items)

    def can_read_more(self, chart: Chart) -> bool:
        """Whether some edge still reads a character from here."""
        return bool(chart.reads)


EMPTY = Chart(frozenset(), {}, {})
