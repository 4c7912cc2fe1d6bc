// SPDX-License-Identifier: Apache-2.0
// Research tool, not part of the library: a MiniMalloc CSV's fit question
// ("do the buffers fit in HEIGHT bytes?") as a SAT problem in DIMACS CNF,
// to compare a CDCL solver (Debian's cadical) with `tensormem solve
// --capacity` (docs/design/solver.md, "A SAT model of the fit question").
//
// Offsets count in granules (GRANULE must divide every size and HEIGHT).
// Order encoding: y(i, v) = [offset_i >= v] for v in 1..HEIGHT - size_i,
// y(i, v) -> y(i, v - 1). For every two buffers live at once, b(i, j) = "i
// lies below j" or b(j, i); b(i, j) and offset_i >= v imply offset_j >= v +
// size_i. Redundant, with SLACK_LIMIT > 0: at every maximal set of buffers
// live at once whose free bytes are at most SLACK_LIMIT granules, a level
// no live buffer covers is counted, and at most the free granules may be
// uncovered (a sequential counter). The largest buffer is kept in the lower
// half (a plan mirrored top to bottom is a plan).
//
//   g++ -O2 -std=c++20 -o /tmp/sat_order_encoding research/sat_order_encoding.cc
//   /tmp/sat_order_encoding J.1048576.csv 993280 1024 0 J.cnf J.map
//   cadical -q J.cnf > J.out      # exit 10: SAT, 20: UNSAT
//   python3 research/sat_decode.py J.out J.map 1024 > plan.csv
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Buffer {
  std::int64_t lower, upper, size;  // size in granules; live in [lower, upper)
  std::string id;
};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "sat_order_encoding: %s\n", what.c_str());
  std::exit(2);
}

std::int64_t ParseInt(const std::string& s, const std::string& where) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || end == nullptr || *end != '\0' || v < 0) Fail(where + ": '" + s + "' is not a non-negative integer");
  return v;
}

class Cnf {
 public:
  std::int64_t NewVars(std::int64_t n) {
    const std::int64_t first = vars_ + 1;
    vars_ += n;
    return first;
  }
  void Add(std::initializer_list<std::int64_t> lits) { Add(std::vector<std::int64_t>(lits)); }
  void Add(const std::vector<std::int64_t>& lits) {
    for (const std::int64_t l : lits) text_ += std::to_string(l) + ' ';
    text_ += "0\n";
    ++clauses_;
  }
  void Write(std::FILE* out) const {
    std::fprintf(out, "p cnf %lld %lld\n", static_cast<long long>(vars_), static_cast<long long>(clauses_));
    std::fwrite(text_.data(), 1, text_.size(), out);
  }
  std::int64_t vars() const { return vars_; }
  std::int64_t clauses() const { return clauses_; }

 private:
  std::int64_t vars_ = 0, clauses_ = 0;
  std::string text_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) Fail("usage: PROBLEM.csv HEIGHT GRANULE SLACK_LIMIT OUT.cnf OUT.map");
  const std::int64_t granule = ParseInt(argv[3], "GRANULE");
  if (granule == 0) Fail("GRANULE: must be positive");
  const std::int64_t height_bytes = ParseInt(argv[2], "HEIGHT");
  if (height_bytes % granule != 0) Fail("HEIGHT: not a multiple of GRANULE");
  const std::int64_t height = height_bytes / granule;
  const std::int64_t slack_limit = ParseInt(argv[4], "SLACK_LIMIT");

  std::ifstream in(argv[1]);
  if (!in) Fail(std::string(argv[1]) + ": cannot open");
  std::string line;
  std::getline(in, line);
  if (line.rfind("id,lower,upper,size", 0) != 0) Fail(std::string(argv[1]) + ":1: expected the header id,lower,upper,size");
  std::vector<Buffer> buffers;
  for (int row = 2; std::getline(in, line); ++row) {
    if (line.empty()) continue;
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    const std::string where = std::string(argv[1]) + ":" + std::to_string(row);
    if (f.size() < 4) Fail(where + ": expected id,lower,upper,size");
    Buffer b{ParseInt(f[1], where + " lower"), ParseInt(f[2], where + " upper"), ParseInt(f[3], where + " size"), f[0]};
    if (b.upper <= b.lower) Fail(where + ": upper must exceed lower");
    if (b.size % granule != 0) Fail(where + ": size not a multiple of GRANULE");
    b.size /= granule;
    if (b.size > height) Fail(where + ": size above HEIGHT, no plan (nothing written)");
    buffers.push_back(b);
  }
  const std::size_t n = buffers.size();
  if (n == 0) Fail(std::string(argv[1]) + ": no buffers");

  Cnf cnf;
  // y(i, v), v in 1..room[i]: offset_i >= v.
  std::vector<std::int64_t> room(n), base(n);
  for (std::size_t i = 0; i < n; ++i) {
    room[i] = height - buffers[i].size;
    base[i] = cnf.NewVars(room[i]) - 1;
  }
  const auto y = [&](std::size_t i, std::int64_t v) { return base[i] + v; };
  for (std::size_t i = 0; i < n; ++i)
    for (std::int64_t v = 2; v <= room[i]; ++v) cnf.Add({-y(i, v), y(i, v - 1)});

  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j)
      if (buffers[i].lower < buffers[j].upper && buffers[j].lower < buffers[i].upper) pairs.emplace_back(i, j);
  for (const auto& [i, j] : pairs) {
    const std::int64_t below = cnf.NewVars(2);  // below: i under j; below + 1: j under i
    cnf.Add({below, below + 1});
    for (int dir = 0; dir < 2; ++dir) {
      const std::size_t a = dir == 0 ? i : j, c = dir == 0 ? j : i;
      const std::int64_t b = below + dir, sa = buffers[a].size;
      if (sa > room[c]) {  // c cannot sit above a
        cnf.Add({-b});
        continue;
      }
      if (sa >= 1) cnf.Add({-b, y(c, sa)});
      const std::int64_t most = room[c] - sa;  // offset_a <= most
      if (most < room[a]) cnf.Add({-b, -y(a, most + 1)});
      for (std::int64_t v = 1; v <= std::min(room[a], most); ++v) cnf.Add({-b, -y(a, v), y(c, v + sa)});
    }
  }

  std::size_t counted = 0;
  if (slack_limit > 0) {
    // The maximal live sets (a subset's count follows from its superset's).
    std::vector<std::int64_t> starts;
    for (const Buffer& b : buffers) starts.push_back(b.lower);
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    std::vector<std::vector<std::size_t>> sets;
    for (const std::int64_t t : starts) {
      std::vector<std::size_t> s;
      for (std::size_t i = 0; i < n; ++i)
        if (buffers[i].lower <= t && t < buffers[i].upper) s.push_back(i);
      sets.push_back(s);
    }
    std::sort(sets.begin(), sets.end());
    sets.erase(std::unique(sets.begin(), sets.end()), sets.end());
    std::vector<std::int64_t> cover(n, 0);  // first var of z(i, level), 0: not made
    for (std::size_t s = 0; s < sets.size(); ++s) {
      bool maximal = true;
      for (std::size_t o = 0; o < sets.size() && maximal; ++o)
        if (o != s && sets[o].size() > sets[s].size() &&
            std::includes(sets[o].begin(), sets[o].end(), sets[s].begin(), sets[s].end()))
          maximal = false;
      std::int64_t load = 0;
      for (const std::size_t i : sets[s]) load += buffers[i].size;
      if (!maximal || load > height || height - load > slack_limit) continue;
      const std::int64_t free = height - load;
      ++counted;
      for (const std::size_t i : sets[s]) {
        if (cover[i] != 0) continue;
        cover[i] = cnf.NewVars(height);  // z(i, l): buffer i covers level l
        for (std::int64_t l = 0; l < height; ++l) {
          const std::int64_t z = cover[i] + l, lo = l - buffers[i].size + 1;  // lo <= offset <= l
          if (lo > room[i]) {
            cnf.Add({-z});
            continue;
          }
          std::vector<std::int64_t> back{z};
          if (lo >= 1) {
            cnf.Add({-z, y(i, lo)});
            back.push_back(-y(i, lo));
          }
          if (l + 1 <= room[i]) {
            cnf.Add({-z, -y(i, l + 1)});
            back.push_back(y(i, l + 1));
          }
          cnf.Add(back);
        }
      }
      const std::int64_t uncovered = cnf.NewVars(height);
      for (std::int64_t l = 0; l < height; ++l) {
        std::vector<std::int64_t> c{uncovered + l};
        for (const std::size_t i : sets[s]) c.push_back(cover[i] + l);
        cnf.Add(c);
      }
      if (free == 0) {
        for (std::int64_t l = 0; l < height; ++l) cnf.Add({-(uncovered + l)});
        continue;
      }
      // At most `free` uncovered levels: Sinz's sequential counter.
      const std::int64_t count = cnf.NewVars(height * free);
      const auto r = [&](std::int64_t l, std::int64_t k) { return count + l * free + k; };
      for (std::int64_t l = 0; l < height; ++l) {
        const std::int64_t x = uncovered + l;
        cnf.Add({-x, r(l, 0)});
        if (l == 0) continue;
        for (std::int64_t k = 0; k < free; ++k) cnf.Add({-r(l - 1, k), r(l, k)});
        for (std::int64_t k = 1; k < free; ++k) cnf.Add({-x, -r(l - 1, k - 1), r(l, k)});
        cnf.Add({-x, -r(l - 1, free - 1)});
      }
    }
  }

  std::size_t largest = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (buffers[i].size > buffers[largest].size) largest = i;
  if (room[largest] / 2 + 1 <= room[largest]) cnf.Add({-y(largest, room[largest] / 2 + 1)});

  std::FILE* out = std::fopen(argv[5], "w");
  if (out == nullptr) Fail(std::string(argv[5]) + ": cannot write");
  cnf.Write(out);
  std::fclose(out);
  std::FILE* map = std::fopen(argv[6], "w");
  if (map == nullptr) Fail(std::string(argv[6]) + ": cannot write");
  std::fprintf(map, "id,lower,upper,size,first_var,room\n");
  for (std::size_t i = 0; i < n; ++i)
    std::fprintf(map, "%s,%lld,%lld,%lld,%lld,%lld\n", buffers[i].id.c_str(),
                 static_cast<long long>(buffers[i].lower), static_cast<long long>(buffers[i].upper),
                 static_cast<long long>(buffers[i].size * granule), static_cast<long long>(base[i] + 1),
                 static_cast<long long>(room[i]));
  std::fclose(map);
  std::fprintf(stderr, "buffers %zu, overlapping pairs %zu, counted sets %zu: %lld variables, %lld clauses\n", n,
               pairs.size(), counted, static_cast<long long>(cnf.vars()), static_cast<long long>(cnf.clauses()));
  return 0;
}
