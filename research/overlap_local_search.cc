// SPDX-License-Identifier: Apache-2.0
// Research tool, not part of the library: repair a start plan of a MiniMalloc
// CSV into a plan within HEIGHT bytes by local search over the offsets
// (docs/design/solver.md, "A plan of J at 993,280").
//
// Weighted min-conflicts ("breakout"): the cost is the sum over every two
// buffers live at once of weight x the bytes their offset ranges share. A
// step takes a random buffer that overlaps another, computes the weighted
// cost of every offset it could take (one pass over its neighbours with
// second differences: the overlap with one neighbour is a trapezoid in the
// offset), and moves there when that lowers the cost (sideways one time in
// four); otherwise the weights of its overlapping pairs grow by one, so the
// next steps push those pairs apart. It stops at no overlap (a plan) or
// after MAX_STEPS steps. The search is not complete: it proves nothing.
//
// Offsets count in granules (GRANULE must divide every size, offset and
// HEIGHT). A start plan higher than HEIGHT is first lowered one level at a
// time, removing the level that the least buffer time crosses (the buffers
// above it move down, those crossing it stay, overlapping their neighbours
// above; one whose top stays the plan's is clamped down).
//
//   g++ -O2 -std=c++20 -o /tmp/overlap_local_search research/overlap_local_search.cc
//   /tmp/overlap_local_search J.1048576.csv start.csv 993280 1024 20000000 5 plan.csv
//
// Exit 0: a plan within HEIGHT written to OUT (id,offset in bytes); 1: none
// within MAX_STEPS (the least number of overlapping buffers seen is printed);
// 2: bad input, named on stderr.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Buffer {
  std::int64_t lower, upper, size;  // size in granules; live in [lower, upper)
  std::string id;
};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "overlap_local_search: %s\n", what.c_str());
  std::exit(2);
}

std::int64_t ParseInt(const std::string& s, const std::string& where) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || end == nullptr || *end != '\0' || v < 0 || v > (std::int64_t{1} << 50))
    Fail(where + ": '" + s + "' is not a non-negative integer below 2^50");
  return v;
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) {
    while (!cell.empty() && (cell.back() == '\r' || cell.back() == ' ')) cell.pop_back();
    out.push_back(cell);
  }
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// Rows of a CSV with a header, as maps from the named columns' indices.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::size_t Column(const std::string& name, const std::string& path) const {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) Fail(path + ": no '" + name + "' column in the header");
    return static_cast<std::size_t>(it - header.begin());
  }
};

Csv ReadCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) Fail(path + ": cannot open");
  Csv csv;
  std::string line;
  if (!std::getline(in, line)) Fail(path + ": empty file");
  csv.header = SplitCsv(line);
  for (int row = 2; std::getline(in, line); ++row) {
    if (line.empty() || line == "\r") continue;
    std::vector<std::string> cells = SplitCsv(line);
    if (cells.size() < csv.header.size())
      Fail(path + ":" + std::to_string(row) + ": " + std::to_string(cells.size()) + " cells, the header has " +
           std::to_string(csv.header.size()));
    csv.rows.push_back(std::move(cells));
  }
  return csv;
}

class LocalSearch {
 public:
  LocalSearch(std::vector<Buffer> buffers, std::vector<std::int64_t> offsets, std::int64_t height,
              std::uint64_t seed)
      : b_(std::move(buffers)), o_(std::move(offsets)), h_(height), rng_(seed), adj_(b_.size()) {
    for (std::size_t i = 0; i < b_.size(); ++i)
      for (std::size_t j = i + 1; j < b_.size(); ++j)
        if (b_[i].lower < b_[j].upper && b_[j].lower < b_[i].upper) {
          adj_[i].push_back({j, weight_.size()});
          adj_[j].push_back({i, weight_.size()});
          weight_.push_back(1);
        }
  }

  std::size_t pairs() const { return weight_.size(); }

  // Lowers the plan to h_ (see the header) before the search.
  void Squeeze() {
    std::int64_t top = 0;
    for (std::size_t i = 0; i < b_.size(); ++i) top = std::max(top, o_[i] + b_[i].size);
    for (; top > h_; --top) {
      std::vector<std::int64_t> crossing(static_cast<std::size_t>(top), 0);
      for (std::size_t i = 0; i < b_.size(); ++i)
        for (std::int64_t r = o_[i]; r < o_[i] + b_[i].size; ++r) crossing[r] += b_[i].upper - b_[i].lower;
      const std::int64_t level = std::min_element(crossing.begin(), crossing.end()) - crossing.begin();
      // A buffer crossing the level keeps its offset unless its top was the
      // plan's: then it is clamped down, overlapping what lies under it.
      for (std::size_t i = 0; i < b_.size(); ++i) {
        if (o_[i] > level) --o_[i];
        o_[i] = std::min(o_[i], top - 1 - b_[i].size);
      }
    }
    for (std::size_t i = 0; i < b_.size(); ++i) o_[i] = std::min(o_[i], h_ - b_[i].size);
  }

  // Returns the number of overlapping buffers left (0: a plan) and the least seen.
  std::pair<std::size_t, std::size_t> Run(std::int64_t max_steps) {
    count_.assign(b_.size(), 0);
    where_.assign(b_.size(), -1);
    for (std::size_t i = 0; i < b_.size(); ++i) {
      for (const auto& [j, e] : adj_[i]) count_[i] += Overlap(i, j) > 0;
      Mark(i);
    }
    std::size_t least = conflicting_.size();
    std::vector<std::int64_t> diff;
    for (steps_ = 0; steps_ < max_steps && !conflicting_.empty(); ++steps_) {
      const std::size_t i = conflicting_[rng_() % conflicting_.size()];
      const std::int64_t len = b_[i].size, last = h_ - len;
      // The weighted cost of offset x, shifted by len so that every
      // neighbour's rising edge (at its offset - len + 1) has an index.
      diff.assign(static_cast<std::size_t>(last + len + 3), 0);
      auto put = [&](std::int64_t x, std::int64_t v) {
        const std::int64_t k = std::max<std::int64_t>(x + len, 0);
        if (k < static_cast<std::int64_t>(diff.size())) diff[k] += v;
      };
      for (const auto& [j, e] : adj_[i]) {
        const std::int64_t a = o_[j], z = o_[j] + b_[j].size, w = weight_[e];
        put(a - len + 1, w);
        put(std::min(a, z - len) + 1, -w);
        put(std::max(a, z - len) + 1, -w);
        put(z + 1, w);
      }
      std::int64_t slope = 0, cost = 0, current = 0, best = INT64_MAX, best_x = o_[i], ties = 0;
      for (std::int64_t k = 0; k <= last + len; ++k) {
        slope += diff[k];
        cost += slope;
        const std::int64_t x = k - len;
        if (x < 0) continue;
        if (x == o_[i]) {
          current = cost;
        } else if (cost < best) {
          best = cost, best_x = x, ties = 1;
        } else if (cost == best && rng_() % ++ties == 0) {
          best_x = x;
        }
      }
      if (best < current || (best == current && rng_() % 4 == 0)) {
        Move(i, best_x);
        least = std::min(least, conflicting_.size());
      } else {
        for (const auto& [j, e] : adj_[i])
          if (Overlap(i, j) > 0) ++weight_[e];
      }
    }
    return {conflicting_.size(), least};
  }

  const std::vector<std::int64_t>& offsets() const { return o_; }
  std::int64_t steps() const { return steps_; }

 private:
  std::int64_t Overlap(std::size_t i, std::size_t j) const {
    return std::max<std::int64_t>(0, std::min(o_[i] + b_[i].size, o_[j] + b_[j].size) - std::max(o_[i], o_[j]));
  }
  void Mark(std::size_t i) {
    if (count_[i] > 0 && where_[i] < 0) {
      where_[i] = static_cast<std::int64_t>(conflicting_.size());
      conflicting_.push_back(i);
    } else if (count_[i] == 0 && where_[i] >= 0) {
      const std::size_t last = conflicting_.back();
      conflicting_[where_[i]] = last;
      where_[last] = where_[i];
      conflicting_.pop_back();
      where_[i] = -1;
    }
  }
  void Move(std::size_t i, std::int64_t x) {
    const std::int64_t old = o_[i];
    for (const auto& [j, e] : adj_[i]) {
      const bool before = Overlap(i, j) > 0;
      o_[i] = x;
      const bool after = Overlap(i, j) > 0;
      o_[i] = old;
      if (before != after) {
        const int d = after ? 1 : -1;
        count_[i] += d;
        count_[j] += d;
        Mark(j);
      }
    }
    o_[i] = x;
    Mark(i);
  }

  std::vector<Buffer> b_;
  std::vector<std::int64_t> o_;
  std::int64_t h_;
  std::mt19937_64 rng_;
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> adj_;  // (neighbour, pair)
  std::vector<std::int64_t> weight_;                                   // per pair
  std::vector<int> count_;                   // overlapping neighbours per buffer
  std::vector<std::int64_t> where_;          // index in conflicting_, or -1
  std::vector<std::size_t> conflicting_;     // buffers with count_ > 0
  std::int64_t steps_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr,
                 "usage: overlap_local_search PROBLEM.csv START.csv HEIGHT GRANULE MAX_STEPS SEED OUT.csv\n"
                 "  START.csv: a plan with 'id' and 'offset' columns (bytes), one row per buffer\n");
    return 2;
  }
  const std::string problem_path = argv[1], start_path = argv[2];
  const std::int64_t height_bytes = ParseInt(argv[3], "HEIGHT");
  const std::int64_t granule = ParseInt(argv[4], "GRANULE");
  const std::int64_t max_steps = ParseInt(argv[5], "MAX_STEPS");
  const std::uint64_t seed = static_cast<std::uint64_t>(ParseInt(argv[6], "SEED"));
  if (granule == 0) Fail("GRANULE: must be positive");
  if (height_bytes % granule != 0) Fail("HEIGHT: " + std::to_string(height_bytes) + " is not a multiple of GRANULE");
  const std::int64_t height = height_bytes / granule;

  const Csv problem = ReadCsv(problem_path);
  const std::size_t c_id = problem.Column("id", problem_path), c_lo = problem.Column("lower", problem_path),
                    c_up = problem.Column("upper", problem_path), c_size = problem.Column("size", problem_path);
  std::vector<Buffer> buffers;
  std::map<std::string, std::size_t> index;
  for (std::size_t r = 0; r < problem.rows.size(); ++r) {
    const std::vector<std::string>& row = problem.rows[r];
    const std::string where = problem_path + ":" + std::to_string(r + 2);
    Buffer b{ParseInt(row[c_lo], where + " lower"), ParseInt(row[c_up], where + " upper"),
             ParseInt(row[c_size], where + " size"), row[c_id]};
    if (b.upper <= b.lower) Fail(where + ": upper " + std::to_string(b.upper) + " is not after lower " + std::to_string(b.lower));
    if (b.size % granule != 0) Fail(where + ": size " + std::to_string(b.size) + " is not a multiple of GRANULE");
    b.size /= granule;
    if (b.size > height) Fail(where + ": buffer '" + b.id + "' is larger than HEIGHT");
    if (!index.emplace(b.id, buffers.size()).second) Fail(where + ": id '" + b.id + "' appears twice");
    buffers.push_back(std::move(b));
  }
  if (buffers.empty()) Fail(problem_path + ": no buffers");

  const Csv start = ReadCsv(start_path);
  const std::size_t s_id = start.Column("id", start_path), s_off = start.Column("offset", start_path);
  std::vector<std::int64_t> offsets(buffers.size(), -1);
  for (std::size_t r = 0; r < start.rows.size(); ++r) {
    const std::string where = start_path + ":" + std::to_string(r + 2);
    const auto it = index.find(start.rows[r][s_id]);
    if (it == index.end()) Fail(where + ": id '" + start.rows[r][s_id] + "' is not in " + problem_path);
    if (offsets[it->second] >= 0) Fail(where + ": id '" + start.rows[r][s_id] + "' appears twice");
    const std::int64_t off = ParseInt(start.rows[r][s_off], where + " offset");
    if (off % granule != 0) Fail(where + ": offset " + std::to_string(off) + " is not a multiple of GRANULE");
    offsets[it->second] = off / granule;
  }
  for (std::size_t i = 0; i < buffers.size(); ++i)
    if (offsets[i] < 0) Fail(start_path + ": no offset for id '" + buffers[i].id + "'");

  LocalSearch search(buffers, offsets, height, seed);
  search.Squeeze();
  const auto t0 = std::chrono::steady_clock::now();
  const auto [left, least] = search.Run(max_steps);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (left > 0) {
    std::printf("no plan within %lld bytes: %zu buffers overlap after %lld steps (least %zu), %.1f s\n",
                static_cast<long long>(height_bytes), left, static_cast<long long>(max_steps), least, secs);
    return 1;
  }
  std::ofstream out(argv[7]);
  out << "id,offset\n";
  for (std::size_t i = 0; i < buffers.size(); ++i) out << buffers[i].id << ',' << search.offsets()[i] * granule << '\n';
  if (!out) Fail(std::string(argv[7]) + ": cannot write");
  std::printf("plan within %lld bytes after %lld steps, %.1f s (%zu pairs live at once)\n",
              static_cast<long long>(height_bytes), static_cast<long long>(search.steps()), secs, search.pairs());
  return 0;
}
