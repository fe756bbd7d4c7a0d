"""Draft trees: a trunk of proposed tokens with sparse branches, verified in one pass.

A draft is a tree of verifier tokens in topological order (every node after its
parent). A linear draft is the special case where node ``i``'s parent is
``i - 1``. The trunk (the drafter's greedy proposal) is always inserted first,
so when the verifier accepts the trunk the cache can simply be cut back; a
branch the verifier takes instead is kept by selecting its cache rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class DraftTree:
    """Tokens with parent indices (-1: the node follows the verified text directly)."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    trunk_size: int = 0  # nodes 0..trunk_size-1 are the trunk, in order

    @classmethod
    def linear(cls, tokens: list[int]) -> DraftTree:
        """A plain draft: each token follows the one before."""
        return cls(list(tokens), list(range(-1, len(tokens) - 1)), len(tokens))

    @classmethod
    def from_paths(cls, trunk: list[int], branches: list[list[int]]) -> DraftTree:
        """A trie of the trunk and the branches (full token paths from the verified text);
        the prefix a branch shares with the trunk or an earlier branch is not repeated."""
        tree = cls.linear(trunk)
        index: dict[tuple[int, int], int] = {
            (p, t): i for i, (t, p) in enumerate(zip(tree.tokens, tree.parents, strict=True))
        }
        for path in branches:
            parent = -1
            for token in path:
                node = index.get((parent, token))
                if node is None:
                    node = len(tree.tokens)
                    tree.tokens.append(token)
                    tree.parents.append(parent)
                    index[(parent, token)] = node
                parent = node
        return tree

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def is_linear(self) -> bool:
        """True when no node has a sibling (one path)."""
        return len(self.tokens) == self.trunk_size

    def children(self) -> dict[int, dict[int, int]]:
        """parent index → {token: child index} (-1 is the root)."""
        out: dict[int, dict[int, int]] = {}
        for i, (token, parent) in enumerate(zip(self.tokens, self.parents, strict=True)):
            out.setdefault(parent, {}).setdefault(token, i)
        return out

    def nodes_of(self, path: list[int]) -> list[int]:
        """The nodes that hold ``path`` (tokens from the root); KeyError if the tree lacks it."""
        children, node, nodes = self.children(), -1, []
        for token in path:
            node = children[node][token]
            nodes.append(node)
        return nodes

    def depth(self, node: int) -> int:
        """1 for a child of the root."""
        d = 0
        while node >= 0:
            node = self.parents[node]
            d += 1
        return d

    def clip(self, max_depth: int) -> DraftTree:
        """The nodes at most ``max_depth`` deep (indices renumbered)."""
        keep = [i for i in range(len(self.tokens)) if self.depth(i) <= max_depth]
        if len(keep) == len(self.tokens):
            return self
        new_index = {old: new for new, old in enumerate(keep)}
        return DraftTree([self.tokens[i] for i in keep],
                         [new_index.get(self.parents[i], -1) for i in keep],
                         sum(1 for i in keep if i < self.trunk_size))

    def chain(self, node: int) -> list[int]:
        """Tokens from ``node`` down its first children (the trunk's continuation for trunk nodes)."""
        first: dict[int, int] = {}
        for i, parent in enumerate(self.parents):
            first.setdefault(parent, i)
        out = []
        while node is not None:
            out.append(self.tokens[node])
            node = first.get(node)
        return out
