// SPDX-License-Identifier: Apache-2.0
#include "solver/pq_tree.h"

#include <algorithm>
#include <array>
#include <set>

namespace tensormem::solver {

PQTree::PQTree(std::span<const std::uint32_t> leaves) {
  if (leaves.empty()) return;
  std::vector<std::int32_t> kids;
  kids.reserve(leaves.size());
  for (const std::uint32_t l : leaves) kids.push_back(AddLeaf(l));
  root_ = Make(Kind::kP, std::move(kids));
}

std::int32_t PQTree::Add(Kind kind, std::vector<std::int32_t> children) {
  nodes_.push_back(Node{kind, 0, std::move(children)});
  return static_cast<std::int32_t>(nodes_.size() - 1);
}

std::int32_t PQTree::AddLeaf(std::uint32_t leaf) {
  nodes_.push_back(Node{Kind::kLeaf, leaf, {}});
  return static_cast<std::int32_t>(nodes_.size() - 1);
}

std::int32_t PQTree::Make(Kind kind, std::vector<std::int32_t> children) {
  if (children.size() == 1) return children[0];
  return Add(kind, std::move(children));
}

std::vector<std::int32_t> PQTree::Shape(std::vector<std::int32_t>* parent,
                                        std::vector<std::uint32_t>* position,
                                        std::vector<std::uint32_t>* total) const {
  const std::size_t n = nodes_.size();
  parent->assign(n, -1);
  position->assign(n, 0);
  total->assign(n, 0);
  if (root_ < 0) return {};
  // Pre-order, then children before parents by walking it backwards
  // (iterative: no recursion on deep trees).
  std::vector<std::int32_t> order{root_};
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::vector<std::int32_t>& kids = nodes_[order[i]].children;
    for (std::size_t k = 0; k < kids.size(); ++k) {
      (*parent)[kids[k]] = order[i];
      (*position)[kids[k]] = static_cast<std::uint32_t>(k);
      order.push_back(kids[k]);
    }
  }
  for (std::size_t i = order.size(); i-- > 0;) {
    const Node& node = nodes_[order[i]];
    if (node.kind == Kind::kLeaf) (*total)[order[i]] = 1;
    for (const std::int32_t y : node.children) (*total)[order[i]] += (*total)[y];
  }
  return order;
}

void PQTree::Count(const std::vector<std::uint8_t>& wanted, Counts* c) const {
  std::vector<std::uint32_t> position;
  const std::vector<std::int32_t> order = Shape(&c->parent, &position, &c->total);
  c->hit.assign(nodes_.size(), 0);
  for (std::size_t i = order.size(); i-- > 0;) {
    const std::int32_t x = order[i];
    const Node& node = nodes_[x];
    if (node.kind == Kind::kLeaf) {
      c->hit[x] = node.leaf < wanted.size() && wanted[node.leaf] ? 1 : 0;
      continue;
    }
    for (const std::int32_t y : node.children) c->hit[x] += c->hit[y];
  }
}

std::int32_t PQTree::PertinentRoot(const Counts& c, std::size_t count) const {
  std::int32_t x = root_;
  while (nodes_[x].kind != Kind::kLeaf) {
    std::int32_t inside = -1;
    int hits = 0;
    for (const std::int32_t y : nodes_[x].children)
      if (c.hit[y] > 0) {
        inside = y;
        ++hits;
      }
    if (hits != 1 || c.hit[inside] != count) return x;
    x = inside;
  }
  return x;
}

char PQTree::Label(const Counts& c, std::int32_t x) const {
  if (c.hit[x] == 0) return 'E';
  return c.hit[x] == c.total[x] ? 'F' : 'P';
}

void PQTree::SplitByLabel(const Counts& c, const std::vector<std::int32_t>& kids,
                          std::vector<std::int32_t>* empty, std::vector<std::int32_t>* full,
                          std::vector<std::int32_t>* partial) const {
  for (const std::int32_t y : kids) {
    const char l = Label(c, y);
    (l == 'E' ? empty : l == 'F' ? full : partial)->push_back(y);
  }
}

bool PQTree::Partial(const Counts& c, std::int32_t x, std::vector<std::int32_t>* out) {
  const std::vector<std::int32_t> kids = nodes_[x].children;  // copy: Add may move nodes_
  if (nodes_[x].kind == Kind::kP) {
    std::vector<std::int32_t> empty, full, part;
    SplitByLabel(c, kids, &empty, &full, &part);
    if (part.size() > 1) return false;
    if (!empty.empty()) out->push_back(Make(Kind::kP, std::move(empty)));
    if (!part.empty() && !Partial(c, part[0], out)) return false;
    if (!full.empty()) out->push_back(Make(Kind::kP, std::move(full)));
    return true;
  }
  // A Q-node: empty children, at most one partial one, then full ones, in
  // one of its two orientations.
  for (const bool reversed : {false, true}) {
    std::vector<std::int32_t> order = kids;
    if (reversed) std::reverse(order.begin(), order.end());
    std::size_t i = 0;
    while (i < order.size() && Label(c, order[i]) == 'E') ++i;
    std::size_t j = i;
    if (j < order.size() && Label(c, order[j]) == 'P') ++j;
    bool ok = true;
    for (std::size_t k = j; k < order.size(); ++k) ok = ok && Label(c, order[k]) == 'F';
    if (!ok) continue;
    for (const std::int32_t y : order) {
      if (Label(c, y) == 'P') {
        if (!Partial(c, y, out)) return false;
      } else {
        out->push_back(y);
      }
    }
    return true;
  }
  return false;
}

bool PQTree::Reduce(const std::vector<std::uint8_t>& wanted, std::size_t count) {
  if (count <= 1) return true;
  if (root_ < 0) return false;
  Counts c;
  Count(wanted, &c);
  if (c.hit[root_] != count) return false;  // marked leaves not in the tree
  const std::int32_t r = PertinentRoot(c, count);
  if (c.hit[r] == c.total[r]) return true;  // already a subtree
  const std::vector<std::int32_t> kids = nodes_[r].children;
  std::vector<std::int32_t> out;
  if (nodes_[r].kind == Kind::kP) {
    std::vector<std::int32_t> empty, full, part;
    SplitByLabel(c, kids, &empty, &full, &part);
    if (part.size() > 2) return false;
    std::vector<std::int32_t> mid;
    if (!part.empty() && !Partial(c, part[0], &mid)) return false;
    if (!full.empty()) mid.push_back(Make(Kind::kP, std::move(full)));
    if (part.size() == 2) {
      std::vector<std::int32_t> tail;
      if (!Partial(c, part[1], &tail)) return false;
      mid.insert(mid.end(), tail.rbegin(), tail.rend());
    }
    const std::int32_t block = part.empty() ? mid[0] : Add(Kind::kQ, std::move(mid));
    if (empty.empty()) {
      nodes_[r] = nodes_[block];  // r alone over the block: r becomes it
    } else {
      empty.push_back(block);
      nodes_[r].children = std::move(empty);
    }
    return true;
  }
  // A Q-node: its marked children must be consecutive, full inside, the two
  // ends possibly partial (their full sides turned inwards).
  std::size_t i = 0, j = kids.size() - 1;
  while (i < kids.size() && Label(c, kids[i]) == 'E') ++i;
  while (j > i && Label(c, kids[j]) == 'E') --j;
  for (std::size_t k = i + 1; k < j; ++k)
    if (Label(c, kids[k]) != 'F') return false;
  out.assign(kids.begin(), kids.begin() + static_cast<std::ptrdiff_t>(i));
  for (std::size_t k = i; k <= j; ++k) {
    if (Label(c, kids[k]) != 'P') {
      out.push_back(kids[k]);
      continue;
    }
    std::vector<std::int32_t> sub;
    if (!Partial(c, kids[k], &sub)) return false;
    if (k == i)
      out.insert(out.end(), sub.begin(), sub.end());
    else
      out.insert(out.end(), sub.rbegin(), sub.rend());
  }
  out.insert(out.end(), kids.begin() + static_cast<std::ptrdiff_t>(j + 1), kids.end());
  nodes_[r].children = std::move(out);
  return true;
}

bool PQTree::Replace(const std::vector<std::uint8_t>& wanted, std::size_t count,
                     std::span<const std::uint32_t> leaves) {
  if (root_ < 0 || leaves.empty() || count == 0) return false;
  Counts c;
  Count(wanted, &c);
  if (c.hit[root_] != count) return false;
  const std::int32_t r = PertinentRoot(c, count);
  // Swaps child `from` of `parent` (or the root) for `to`.
  const auto swap_in = [&](std::int32_t parent, std::int32_t from, std::int32_t to) {
    if (parent < 0) {
      root_ = to;
      return;
    }
    for (std::int32_t& y : nodes_[parent].children)
      if (y == from) y = to;
  };
  if (c.hit[r] == c.total[r]) {
    const PQTree fresh(leaves);
    swap_in(c.parent[r], r, fresh.CopyInto(fresh.root_, this));
    return true;
  }
  if (nodes_[r].kind != Kind::kQ) return false;
  const std::vector<std::int32_t> kids = nodes_[r].children;
  std::size_t i = 0;
  while (i < kids.size() && Label(c, kids[i]) != 'F') ++i;
  std::size_t j = i, covered = 0;
  while (j < kids.size() && Label(c, kids[j]) == 'F') covered += c.hit[kids[j++]];
  if (covered != count) return false;  // not one block of full children
  const PQTree fresh(leaves);
  const std::int32_t block = fresh.CopyInto(fresh.root_, this);
  std::vector<std::int32_t> out(kids.begin(), kids.begin() + static_cast<std::ptrdiff_t>(i));
  out.push_back(block);
  out.insert(out.end(), kids.begin() + static_cast<std::ptrdiff_t>(j), kids.end());
  if (out.size() == 1)
    swap_in(c.parent[r], r, out[0]);
  else
    nodes_[r].children = std::move(out);
  return true;
}

PQTree::Index::Index(const PQTree& tree) : tree_(tree) {
  const std::vector<std::int32_t> order = tree.Shape(&parent_, &position_, &total_);
  hit_.assign(tree.nodes_.size(), 0);
  for (const std::int32_t x : order) {
    const Node& node = tree.nodes_[x];
    if (node.kind != Kind::kLeaf) continue;
    if (node.leaf >= node_of_leaf_.size()) node_of_leaf_.resize(node.leaf + 1, -1);
    node_of_leaf_[node.leaf] = x;
  }
}

char PQTree::Index::Label(std::int32_t x) const {
  if (hit_[x] == 0) return 'E';
  return hit_[x] == total_[x] ? 'F' : 'P';
}

const std::vector<std::int32_t>& PQTree::Index::MarkedChildren(std::int32_t x) const {
  kids_.clear();
  for (const std::int32_t y : touched_)
    if (parent_[y] == x) kids_.push_back(y);
  std::sort(kids_.begin(), kids_.end(),
            [&](std::int32_t a, std::int32_t b) { return position_[a] < position_[b]; });
  return kids_;
}

bool PQTree::Index::PartialAdmits(std::int32_t x) const {
  // `kids` is the shared buffer: every recursion below comes after its
  // last use.
  const std::vector<std::int32_t>& kids = MarkedChildren(x);
  if (tree_.nodes_[x].kind == Kind::kP) {
    std::int32_t part = -1;
    for (const std::int32_t y : kids)
      if (Label(y) == 'P') {
        if (part >= 0) return false;
        part = y;
      }
    return part < 0 || PartialAdmits(part);
  }
  // A Q-node: empty children, at most one partial one, then full ones to
  // one end (either orientation). The marked ones must be consecutive.
  for (std::size_t k = 1; k < kids.size(); ++k)
    if (position_[kids[k]] != position_[kids[k - 1]] + 1) return false;
  const std::size_t width = tree_.nodes_[x].children.size();
  const auto full_but = [&](std::size_t skip) {
    for (std::size_t k = 0; k < kids.size(); ++k)
      if (k != skip && Label(kids[k]) != 'F') return false;
    return true;
  };
  std::int32_t inner = -1;  // the child that may be partial
  if (position_[kids.back()] == width - 1 && full_but(0))
    inner = kids.front();
  else if (position_[kids.front()] == 0 && full_but(kids.size() - 1))
    inner = kids.back();
  else
    return false;
  return Label(inner) != 'P' || PartialAdmits(inner);
}

bool PQTree::Index::Admits(std::span<const std::uint32_t> leaves) const {
  if (leaves.size() <= 1) return true;
  if (tree_.root_ < 0) return false;
  bool ok = true;
  for (const std::uint32_t l : leaves) {
    if (l >= node_of_leaf_.size() || node_of_leaf_[l] < 0 || hit_[node_of_leaf_[l]] != 0) {
      ok = false;  // not a leaf of the tree, or given twice
      break;
    }
    for (std::int32_t x = node_of_leaf_[l]; x >= 0; x = parent_[x])
      if (hit_[x]++ == 0) touched_.push_back(x);
  }
  if (ok) {
    const std::size_t count = leaves.size();
    // The pertinent root: the lowest node holding every marked leaf.
    std::int32_t r = node_of_leaf_[leaves[0]];
    while (hit_[r] < count) r = parent_[r];  // the root holds all `count`
    if (hit_[r] != total_[r]) {
      const std::vector<std::int32_t>& kids = MarkedChildren(r);
      // At most two children may be partial (the ends of the block); they
      // are checked once `kids`, a shared buffer, is no longer needed.
      std::array<std::int32_t, 2> partial{-1, -1};
      std::size_t parts = 0;
      if (tree_.nodes_[r].kind == Kind::kP) {
        for (const std::int32_t y : kids)
          if (Label(y) == 'P') {
            if (parts == 2) ok = false;
            else partial[parts++] = y;
          }
      } else {
        // A Q-node: the marked children consecutive, full inside, the two
        // ends possibly partial.
        for (std::size_t k = 1; k < kids.size() && ok; ++k)
          ok = position_[kids[k]] == position_[kids[k - 1]] + 1 &&
               (k + 1 == kids.size() || Label(kids[k]) == 'F');
        for (const std::int32_t end : {kids.front(), kids.back()})
          if (Label(end) == 'P' && (parts == 0 || partial[0] != end)) partial[parts++] = end;
      }
      for (std::size_t k = 0; k < parts && ok; ++k) ok = PartialAdmits(partial[k]);
    }
  }
  for (const std::int32_t x : touched_) hit_[x] = 0;
  touched_.clear();
  return ok;
}

std::vector<std::uint32_t> PQTree::Leaves() const {
  std::vector<std::uint32_t> out;
  if (root_ < 0) return out;
  std::vector<std::int32_t> stack{root_};
  while (!stack.empty()) {
    const std::int32_t x = stack.back();
    stack.pop_back();
    if (nodes_[x].kind == Kind::kLeaf) {
      out.push_back(nodes_[x].leaf);
      continue;
    }
    for (auto it = nodes_[x].children.rbegin(); it != nodes_[x].children.rend(); ++it)
      stack.push_back(*it);
  }
  return out;
}

std::vector<std::uint32_t> PQTree::KeyedFrontier(
    const std::vector<std::pair<std::uint64_t, std::uint32_t>>& key) const {
  using Key = std::pair<std::uint64_t, std::uint32_t>;
  struct Part {
    std::pair<Key, Key> range;
    std::vector<std::uint32_t> order;
  };
  // Recursive: the depth is the tree's, small next to the leaves.
  const auto go = [&](const auto& self, std::int32_t x) -> Part {
    const Node& node = nodes_[x];
    if (node.kind == Kind::kLeaf) return Part{{key[node.leaf], key[node.leaf]}, {node.leaf}};
    std::vector<Part> parts;
    parts.reserve(node.children.size());
    for (const std::int32_t y : node.children) parts.push_back(self(self, y));
    if (node.kind == Kind::kP)
      std::stable_sort(parts.begin(), parts.end(),
                       [](const Part& a, const Part& b) { return a.range < b.range; });
    else if (parts.back().range < parts.front().range)
      std::reverse(parts.begin(), parts.end());
    Part out{parts.front().range, {}};
    for (Part& p : parts) {
      out.range.first = std::min(out.range.first, p.range.first);
      out.range.second = std::max(out.range.second, p.range.second);
      out.order.insert(out.order.end(), p.order.begin(), p.order.end());
    }
    return out;
  };
  if (root_ < 0) return {};
  return go(go, root_).order;
}

void PQTree::Frontiers(std::int32_t x, std::vector<std::vector<std::uint32_t>>* out) const {
  const Node& node = nodes_[x];
  if (node.kind == Kind::kLeaf) {
    out->push_back({node.leaf});
    return;
  }
  std::vector<std::vector<std::vector<std::uint32_t>>> kid(node.children.size());
  for (std::size_t k = 0; k < node.children.size(); ++k) Frontiers(node.children[k], &kid[k]);
  std::vector<std::size_t> arrangement(node.children.size());
  for (std::size_t k = 0; k < arrangement.size(); ++k) arrangement[k] = k;
  std::set<std::vector<std::uint32_t>> seen;
  const auto expand = [&](const std::vector<std::size_t>& arr) {
    // Every choice of one order per child, in this arrangement.
    std::vector<std::size_t> pick(arr.size(), 0);
    for (;;) {
      std::vector<std::uint32_t> order;
      for (std::size_t k = 0; k < arr.size(); ++k) {
        const auto& o = kid[arr[k]][pick[k]];
        order.insert(order.end(), o.begin(), o.end());
      }
      seen.insert(std::move(order));
      std::size_t k = 0;
      while (k < arr.size() && ++pick[k] == kid[arr[k]].size()) pick[k++] = 0;
      if (k == arr.size()) return;
    }
  };
  if (node.kind == Kind::kP) {
    do expand(arrangement);
    while (std::next_permutation(arrangement.begin(), arrangement.end()));
  } else {
    expand(arrangement);
    std::reverse(arrangement.begin(), arrangement.end());
    expand(arrangement);
  }
  out->assign(seen.begin(), seen.end());
}

std::vector<std::vector<std::uint32_t>> PQTree::AllFrontiers() const {
  std::vector<std::vector<std::uint32_t>> out;
  if (root_ >= 0) Frontiers(root_, &out);
  return out;
}

std::int32_t PQTree::CopyInto(std::int32_t x, PQTree* to) const {
  const Node& node = nodes_[x];
  if (node.kind == Kind::kLeaf) return to->AddLeaf(node.leaf);
  std::vector<std::int32_t> kids;
  kids.reserve(node.children.size());
  for (const std::int32_t y : node.children) kids.push_back(CopyInto(y, to));
  return to->Add(node.kind, std::move(kids));
}

PQTree PQTree::Compacted() const {
  PQTree out;
  if (root_ >= 0) {
    out.nodes_.reserve(nodes_.size());
    out.root_ = CopyInto(root_, &out);
  }
  return out;
}

}  // namespace tensormem::solver
