// SPDX-License-Identifier: Apache-2.0
// The buffer pool's free list: free nodes in MNN's order (smallest size
// first, then the order they were inserted in), as a std::multimap keyed by
// size gives, without its tree. Sizes map monotonically to 1,920 bins (every
// size below 32 its own bin, then 32 bins per power of two, so one bin spans
// at most 1/32 of its sizes); each bin is an intrusive circular list sorted
// by size, equal sizes in insertion order, and a two-level bitmap finds the
// next non-empty bin. A bin holds few nodes of nearby sizes, so an insert
// walks back from the bin's tail a step or two and a lookup scans the bin
// from its head (1.0-1.9 nodes on average on the shared traces, at most the
// whole bin: 167 once), where the multimap walked a tree of hundreds of
// nodes and rebalanced it (half of the pool's time on delayed frees).
// Removal is O(1) through the node's own links.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace tensormem::pool {

template <typename Node>
class SizeOrderedList;

// The links a node carries while it is in a list.
template <typename Node>
struct FreeLinks {
  SizeOrderedList<Node>* list = nullptr;  // the list holding the node, null when in none
  Node* prev = nullptr;
  Node* next = nullptr;
};

// Node must have `std::uint64_t size` and `FreeLinks<Node> free` members.
template <typename Node>
class SizeOrderedList {
 public:
  static constexpr int kSubBinsLog2 = 5;
  static constexpr std::uint64_t kSubBins = std::uint64_t{1} << kSubBinsLog2;
  static constexpr std::size_t kBins = kSubBins * (64 - kSubBinsLog2 + 1);  // 1,920

  SizeOrderedList() { heads_.fill(nullptr); }
  SizeOrderedList(const SizeOrderedList&) = delete;
  SizeOrderedList& operator=(const SizeOrderedList&) = delete;

  // Monotone in the size: a <= b gives BinOf(a) <= BinOf(b).
  static std::size_t BinOf(std::uint64_t size) {
    if (size < kSubBins) return static_cast<std::size_t>(size);
    const int e = std::bit_width(size) - 1;  // >= kSubBinsLog2
    return static_cast<std::size_t>(kSubBins * static_cast<std::uint64_t>(e - kSubBinsLog2 + 1) +
                                    ((size >> (e - kSubBinsLog2)) & (kSubBins - 1)));
  }

  bool empty() const { return summary_ == 0; }

  // After every node of the same size: a multimap's emplace.
  void Insert(Node* n) {
    n->free.list = this;
    const std::size_t b = BinOf(n->size);
    Node*& head = heads_[b];
    if (head == nullptr) {
      n->free.prev = n->free.next = n;
      head = n;
      Mark(b);
      return;
    }
    Node* p = head->free.prev;  // the tail
    while (p->size > n->size) {
      if (p == head) {  // every node of the bin is larger: n is the new head
        LinkAfter(head->free.prev, n);
        head = n;
        return;
      }
      p = p->free.prev;
    }
    LinkAfter(p, n);
  }

  void Remove(Node* n) {
    const std::size_t b = BinOf(n->size);
    if (n->free.next == n) {
      heads_[b] = nullptr;
      Unmark(b);
    } else {
      n->free.prev->free.next = n->free.next;
      n->free.next->free.prev = n->free.prev;
      if (heads_[b] == n) heads_[b] = n->free.next;
    }
    n->free = FreeLinks<Node>{};
  }

  // The first node in order whose size is at least `size`, or null.
  Node* LowerBound(std::uint64_t size) const {
    const std::size_t b = BinOf(size);
    if (Node* head = heads_[b]) {
      Node* n = head;
      do {
        if (n->size >= size) return n;
        n = n->free.next;
      } while (n != head);
    }
    return FirstFrom(b + 1);
  }

  // The node after n in order, or null.
  Node* Next(const Node* n) const {
    const std::size_t b = BinOf(n->size);
    return n->free.next != heads_[b] ? n->free.next : FirstFrom(b + 1);
  }

  Node* First() const { return FirstFrom(0); }

  // The last node in order (a largest one), or null.
  Node* Last() const {
    if (summary_ == 0) return nullptr;
    const int w = std::bit_width(summary_) - 1;
    const int bit = std::bit_width(words_[static_cast<std::size_t>(w)]) - 1;
    return heads_[static_cast<std::size_t>(w) * 64 + static_cast<std::size_t>(bit)]->free.prev;
  }

  // Forgets every node (their links are left as they are).
  void Clear() {
    heads_.fill(nullptr);
    words_.fill(0);
    summary_ = 0;
  }

 private:
  static constexpr std::size_t kWords = kBins / 64;  // 30
  static_assert(kBins % 64 == 0 && kWords <= 64);

  static void LinkAfter(Node* p, Node* n) {
    n->free.prev = p;
    n->free.next = p->free.next;
    p->free.next->free.prev = n;
    p->free.next = n;
  }
  void Mark(std::size_t b) {
    words_[b / 64] |= std::uint64_t{1} << (b % 64);
    summary_ |= std::uint64_t{1} << (b / 64);
  }
  void Unmark(std::size_t b) {
    words_[b / 64] &= ~(std::uint64_t{1} << (b % 64));
    if (words_[b / 64] == 0) summary_ &= ~(std::uint64_t{1} << (b / 64));
  }
  // The head of the first non-empty bin at or after b, or null.
  Node* FirstFrom(std::size_t b) const {
    if (b >= kBins) return nullptr;
    std::size_t w = b / 64;
    std::uint64_t bits = words_[w] & (~std::uint64_t{0} << (b % 64));
    if (bits == 0) {
      const std::uint64_t later = w + 1 < 64 ? summary_ & (~std::uint64_t{0} << (w + 1)) : 0;
      if (later == 0) return nullptr;
      w = static_cast<std::size_t>(std::countr_zero(later));
      bits = words_[w];
    }
    return heads_[w * 64 + static_cast<std::size_t>(std::countr_zero(bits))];
  }

  std::array<Node*, kBins> heads_;
  std::array<std::uint64_t, kWords> words_{};
  std::uint64_t summary_ = 0;  // bit w: words_[w] != 0
};

}  // namespace tensormem::pool
