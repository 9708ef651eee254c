/**
 * A Merkle tree's right edge (its "compact range"), for reading a whole log once: leaves are pushed in order and
 * only the roots of the complete subtrees the tree of n leaves splits into are kept (one per set bit of n), so the
 * root of every prefix is at hand, in O(log n) memory, as the leaves go by. Each complete subtree it forms is told to
 * `onSubtree` (level, index, hash): a reader compares the ones at tile levels with what the log stored.
 */
import { EMPTY_ROOT, type Hash, nodeHash } from "./merkle.js";

export class MerkleFrontier {
  /** The complete subtrees of the right edge, largest (leftmost) first. */
  private readonly edge: { level: number; index: number; hash: Hash }[] = [];
  private count = 0;

  constructor(private readonly onSubtree: (level: number, index: number, hash: Hash) => void = () => undefined) {}

  /** How many leaves were pushed. */
  get size(): number {
    return this.count;
  }

  /** Appends a leaf hash; every subtree it completes is merged (and told) at once. */
  push(leaf: Hash): void {
    let node = { level: 0, index: this.count, hash: leaf };
    this.count += 1;
    this.onSubtree(node.level, node.index, node.hash);
    for (let last = this.edge.at(-1); last !== undefined && last.level === node.level; last = this.edge.at(-1)) {
      this.edge.pop();
      node = { level: node.level + 1, index: last.index / 2, hash: nodeHash(last.hash, node.hash) };
      this.onSubtree(node.level, node.index, node.hash);
    }
    this.edge.push(node);
  }

  /** The root of the tree of every leaf pushed so far (RFC 6962: the right edge folded from the right). */
  root(): Hash {
    const last = this.edge.at(-1);
    if (last === undefined) return EMPTY_ROOT;
    let hash = last.hash;
    for (let i = this.edge.length - 2; i >= 0; i--) hash = nodeHash((this.edge[i] as { hash: Hash }).hash, hash);
    return hash;
  }
}
