"""Pairing as a maximum-weight perfect matching with lexicographic penalties.

Each possible pair carries a tuple of penalties, most important first (e.g. a rematch, then a
score difference). The weights make one unit of a level outweigh every lower level summed over
any matching, so the matching minimises the first level, then the second, and so on: a pairing
without rematches is found whenever one exists. Edmonds' blossom algorithm (networkx) is exact
with integer weights and polynomial (O(n³)), so the cost of a round is bounded by its field size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import networkx as nx

Node = TypeVar("Node")
Penalties = tuple[int, ...]


def best_pairing(
    nodes: Sequence[Node], penalties: Callable[[Node, Node], Penalties], hard_levels: int = 0
) -> list[tuple[Node, Node]]:
    """A perfect matching of `nodes` (an even count) minimising the penalties lexicographically;
    pairs as (earlier node, later node) in `nodes` order, sorted by the earlier node's place.

    `hard_levels`: the first levels are tried as exclusions first (a sparser graph, much faster);
    when that leaves no perfect matching, every pair is allowed and the weights decide."""
    assert len(nodes) % 2 == 0, "pair an even number of nodes (add a bye or wait node)"
    if not nodes:
        return []
    table = {(i, j): penalties(nodes[i], nodes[j]) for i in range(len(nodes)) for j in range(i + 1, len(nodes))}
    matched = None
    if hard_levels:
        allowed = {edge: levels for edge, levels in table.items() if not any(levels[:hard_levels])}
        matched = _matching(len(nodes), allowed)
    if matched is None:
        matched = _matching(len(nodes), table)
    assert matched is not None, "a complete graph on an even count has a perfect matching"
    return [(nodes[i], nodes[j]) for i, j in matched]


def _matching(count: int, table: dict[tuple[int, int], Penalties]) -> list[tuple[int, int]] | None:
    """The best perfect matching over the allowed pairs in `table`, or None if there is none."""
    if not table:
        return None
    weights = lexicographic_weights(table, count // 2)
    graph: nx.Graph[int] = nx.Graph()
    graph.add_nodes_from(range(count))
    graph.add_weighted_edges_from((i, j, weights[i, j]) for i, j in table)
    matching = nx.max_weight_matching(graph, maxcardinality=True)
    if 2 * len(matching) != count:
        return None
    return sorted((min(pair), max(pair)) for pair in matching)


def lexicographic_weights(table: dict[tuple[int, int], Penalties], pairs: int) -> dict[tuple[int, int], int]:
    """Positive integer weights whose maximum over perfect matchings (of `pairs` pairs) is the
    lexicographic minimum of the summed penalties."""
    levels = len(next(iter(table.values())))
    ranges = [max(p[level] for p in table.values()) for level in range(levels)]
    scale = [1] * levels
    for level in range(levels - 2, -1, -1):
        scale[level] = scale[level + 1] * (pairs * ranges[level + 1] + 1)
    total = sum(scale[level] * ranges[level] for level in range(levels)) + 1
    return {edge: total - sum(s * p for s, p in zip(scale, levels_, strict=True)) for edge, levels_ in table.items()}
