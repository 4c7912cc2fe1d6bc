// SPDX-License-Identifier: Apache-2.0
// A PQ-tree (Booth and Lueker, 1976): every order of a set of leaves that
// keeps each of some given subsets consecutive, held at once.
//
// A P-node's children may come in any order, a Q-node's in its order or
// reversed; the orders a tree allows are the leaf sequences (frontiers) of
// those arrangements. Reduce(S) restricts the tree to the orders where S is
// consecutive (the template matching of Booth and Lueker, done by a pass
// that counts the wanted leaves under every node instead of a bubble-up:
// the trees of the time sweep hold tens to hundreds of leaves). Replace(S,
// L) swaps the block of a consecutive S for a P-node over the new leaves L.
// The time sweep (time_sweep.h) needs nothing else; the tests compare every
// reduction against brute force over permutations.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tensormem::solver {

class PQTree {
 public:
  enum class Kind : std::uint8_t { kLeaf, kP, kQ };

  // The empty tree (no leaves).
  PQTree() = default;
  // Any order of these leaves (one P-node; a single leaf alone).
  explicit PQTree(std::span<const std::uint32_t> leaves);

  bool empty() const { return root_ < 0; }

  // `wanted[leaf] != 0` marks the subset (sized past every leaf of the
  // tree); `count` of the tree's leaves are marked. Restricts the tree to
  // the orders where they are consecutive. False when no such order exists:
  // the tree is then unchanged.
  bool Reduce(const std::vector<std::uint8_t>& wanted, std::size_t count);
  // The marked leaves, consecutive in every allowed order (after a Reduce
  // that succeeded), become a P-node over `leaves` (at least one). False,
  // tree unchanged, when they are not one block.
  bool Replace(const std::vector<std::uint8_t>& wanted, std::size_t count,
               std::span<const std::uint32_t> leaves);

  // The leaves, in some allowed order.
  std::vector<std::uint32_t> Leaves() const;
  // The allowed order whose P-children are sorted by their (lowest key,
  // highest key) and whose Q-nodes are turned so that the first child's
  // pair is not above the last's; key[leaf] gives each leaf's key.
  std::vector<std::uint32_t> KeyedFrontier(
      const std::vector<std::pair<std::uint64_t, std::uint32_t>>& key) const;
  // Every allowed order (small trees only: tests).
  std::vector<std::vector<std::uint32_t>> AllFrontiers() const;

  // Answers "would Reduce succeed?" for many subsets of one tree without
  // copying it: parents, leaf counts and each leaf's node are indexed once,
  // and a question walks up from its leaves only. The time sweep asks it
  // for every candidate group at a boundary (most cannot be consecutive);
  // copying and reducing the tree for each was most of its time. The tree
  // must outlive the index and not change while it is used.
  class Index {
   public:
    explicit Index(const PQTree& tree);
    // The same answer as Reduce on a copy of the tree, where `leaves` are
    // the marked ones; false when one is not a leaf of the tree or is given
    // twice.
    bool Admits(std::span<const std::uint32_t> leaves) const;

   private:
    // Like PQTree::Partial, without building the result.
    bool PartialAdmits(std::int32_t x) const;
    char Label(std::int32_t x) const;
    // The marked children of x (those on a marked leaf's path), by position
    // in x's child list: only these are looked at, so a question costs the
    // paths of its leaves, not the width of the nodes on them.
    // The result is a buffer shared by every call.
    const std::vector<std::int32_t>& MarkedChildren(std::int32_t x) const;
    const PQTree& tree_;
    std::vector<std::int32_t> parent_;
    std::vector<std::uint32_t> position_;  // in the parent's child list
    std::vector<std::uint32_t> total_;
    std::vector<std::int32_t> node_of_leaf_;  // -1: not in the tree
    mutable std::vector<std::uint32_t> hit_;  // 0 between questions
    mutable std::vector<std::int32_t> touched_;
    mutable std::vector<std::int32_t> kids_;  // MarkedChildren's buffer
  };

  // The same tree without the nodes earlier operations left unreachable.
  PQTree Compacted() const;
  std::size_t node_count() const { return nodes_.size(); }

 private:
  struct Node {
    Kind kind = Kind::kLeaf;
    std::uint32_t leaf = 0;
    std::vector<std::int32_t> children;
  };
  // Per node: leaves below, marked leaves below, parent (-1 at the root).
  struct Counts {
    std::vector<std::uint32_t> total, hit;
    std::vector<std::int32_t> parent;
  };

  std::int32_t Add(Kind kind, std::vector<std::int32_t> children);
  std::int32_t AddLeaf(std::uint32_t leaf);
  // A node of `kind` over the children, or the child itself when alone.
  std::int32_t Make(Kind kind, std::vector<std::int32_t> children);
  // The reachable nodes in pre-order; per node its parent (-1 at the root
  // and for unreachable nodes), its position in the parent's child list and
  // its leaves below.
  std::vector<std::int32_t> Shape(std::vector<std::int32_t>* parent,
                                  std::vector<std::uint32_t>* position,
                                  std::vector<std::uint32_t>* total) const;
  void Count(const std::vector<std::uint8_t>& wanted, Counts* c) const;
  std::int32_t PertinentRoot(const Counts& c, std::size_t count) const;
  // 'E'mpty, 'F'ull or 'P'artial.
  char Label(const Counts& c, std::int32_t x) const;
  // The children by label, in their order.
  void SplitByLabel(const Counts& c, const std::vector<std::int32_t>& kids,
                    std::vector<std::int32_t>* empty, std::vector<std::int32_t>* full,
                    std::vector<std::int32_t>* partial) const;
  // A partial node below the pertinent root as a child list, its empty
  // end first and its full end last; false when it cannot be turned so.
  bool Partial(const Counts& c, std::int32_t x, std::vector<std::int32_t>* out);
  void Frontiers(std::int32_t x, std::vector<std::vector<std::uint32_t>>* out) const;
  std::int32_t CopyInto(std::int32_t x, PQTree* to) const;

  std::vector<Node> nodes_;
  std::int32_t root_ = -1;
};

}  // namespace tensormem::solver
