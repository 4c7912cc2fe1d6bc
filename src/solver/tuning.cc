// SPDX-License-Identifier: Apache-2.0
// SolverTuning's table of keys (solver_tuning.h): each knob's name, what it
// takes, one line of help, and how it is read and shown. The CLI's
// `--tuning`, its help and errors, and Python's `tuning=` all read this
// table; CheckTuning holds the knobs' ranges.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "tensormem/solver_tuning.h"

namespace tensormem {

std::vector<SearchConfig> DefaultPortfolio() {
  // Ordered by how soon each found plans on the MiniMalloc benchmark (see
  // docs/design/solver.md): no single one finds them all quickly.
  return {
      {Branching::kLowest, CanonicalOrder::kLongestFirst},
      {Branching::kLowest, CanonicalOrder::kTotalFirst},
      {Branching::kLowest, CanonicalOrder::kLargestFirst},
      {Branching::kLowest, CanonicalOrder::kAreaFirst},
      {Branching::kRightPoint, CanonicalOrder::kLongestFirst},
      {Branching::kLowestFloating, CanonicalOrder::kTotalFirst},
      // Perfectly packed (zero-slack) problems: best fit, with restarts.
      {Branching::kLeftFit, CanonicalOrder::kTotalFirst, true},
  };
}

std::vector<SearchConfig> WeightedRestartsPortfolio() {
  return {{Branching::kLowest, CanonicalOrder::kLongestFirst, /*restarts=*/true, /*weighted=*/true}};
}

Status CheckTuning(const SolverTuning& t) {
  const auto bad = [](std::string_view what) { return InvalidArgument("tuning " + std::string(what)); };
  if (t.search_memory_bytes == 0) return bad("search_memory_bytes must be > 0");
  if (t.portfolio.empty()) return bad("portfolio must hold a search configuration");
  if (t.minimize_search != MinimizeSearch::kDescent && t.minimize_search != MinimizeSearch::kBisection)
    return bad("minimize_search is not descent or bisection");
  if (t.restriction_bound && t.restriction_node_budget == 0)
    return bad("restriction_node_budget must be > 0 (or restriction_bound off)");
  if (t.deep_probe && t.deep_probe_divisor == 0) return bad("deep_probe_divisor must be > 0 (or deep_probe off)");
  if (t.deep_probe && t.deep_probe_weight == 0) return bad("deep_probe_weight must be > 0 (or deep_probe off)");
  if (t.fit_descent && t.fit_descent_nodes == 0) return bad("fit_descent_nodes must be > 0 (or fit_descent off)");
  if (t.fit_descent && !(t.fit_descent_share > 0 && t.fit_descent_share < 1))
    return bad("fit_descent_share must be in (0, 1) (or fit_descent off)");
  if (t.relay_probe && !(t.relay_share > 0 && t.relay_share <= 1))
    return bad("relay_share must be in (0, 1] (or relay_probe off)");
  if (t.relay_probe && t.relay_node_budget == 0) return bad("relay_node_budget must be > 0 (or relay_probe off)");
  if (t.relay_probe && t.relay_samples && t.relay_sample_nodes == 0)
    return bad("relay_sample_nodes must be > 0 (or relay_samples off)");
  if (!(t.restart_weight_decay >= 0 && t.restart_weight_decay <= 1))
    return bad("restart_weight_decay must be in [0, 1], got " + std::to_string(t.restart_weight_decay));
  if (!(t.weighted_share >= 0 && t.weighted_share < 1))
    return bad("weighted_share must be in [0, 1), got " + std::to_string(t.weighted_share));
  if (!(t.weighted_run_scale > 0 && t.weighted_run_scale <= 16))
    return bad("weighted_run_scale must be in (0, 16], got " + std::to_string(t.weighted_run_scale));
  return Status::Ok();
}

namespace {

template <bool SolverTuning::*Field>
Status SetBool(SolverTuning& t, std::string_view text) {
  if (text == "true" || text == "1" || text == "on") {
    t.*Field = true;
  } else if (text == "false" || text == "0" || text == "off") {
    t.*Field = false;
  } else {
    return InvalidArgument("'" + std::string(text) + "' is not true or false");
  }
  return Status::Ok();
}

template <std::uint64_t SolverTuning::*Field>
Status SetCount(SolverTuning& t, std::string_view text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    return InvalidArgument("'" + std::string(text) + "' is not a non-negative integer below 2^64");
  t.*Field = v;
  return Status::Ok();
}

template <double SolverTuning::*Field>
Status SetNumber(SolverTuning& t, std::string_view text) {
  // strtod, not from_chars: libc++ 16 has no floating-point from_chars.
  const std::string s(text);
  char* end = nullptr;
  const double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
    return InvalidArgument("'" + s + "' is not a finite number");
  t.*Field = v;
  return Status::Ok();
}

template <bool SolverTuning::*Field>
std::string GetBool(const SolverTuning& t) {
  return t.*Field ? "true" : "false";
}
template <std::uint64_t SolverTuning::*Field>
std::string GetCount(const SolverTuning& t) {
  return std::to_string(t.*Field);
}
template <double SolverTuning::*Field>
std::string GetNumber(const SolverTuning& t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", t.*Field);
  return buf;
}

Status SetPortfolio(SolverTuning& t, std::string_view text) {
  if (text == "default") {
    t.portfolio = DefaultPortfolio();
  } else if (text == "weighted") {
    t.portfolio = WeightedRestartsPortfolio();
  } else {
    return InvalidArgument("'" + std::string(text) + "' is not default or weighted");
  }
  return Status::Ok();
}
std::string GetPortfolio(const SolverTuning& t) {
  if (t.portfolio == DefaultPortfolio()) return "default";
  if (t.portfolio == WeightedRestartsPortfolio()) return "weighted";
  return "custom";
}

Status SetMinimizeSearch(SolverTuning& t, std::string_view text) {
  if (text == "descent") {
    t.minimize_search = MinimizeSearch::kDescent;
  } else if (text == "bisection") {
    t.minimize_search = MinimizeSearch::kBisection;
  } else {
    return InvalidArgument("'" + std::string(text) + "' is not descent or bisection");
  }
  return Status::Ok();
}
std::string GetMinimizeSearch(const SolverTuning& t) {
  return t.minimize_search == MinimizeSearch::kDescent ? "descent" : "bisection";
}

#define TM_BOOL(name, help) {#name, "true|false", help, &SetBool<&SolverTuning::name>, &GetBool<&SolverTuning::name>}
#define TM_COUNT(name, value, help) \
  {#name, value, help, &SetCount<&SolverTuning::name>, &GetCount<&SolverTuning::name>}
#define TM_NUMBER(name, value, help) \
  {#name, value, help, &SetNumber<&SolverTuning::name>, &GetNumber<&SolverTuning::name>}

// The order of solver_tuning.h; its comments say more.
constexpr TuningKey kTuningKeys[] = {
    TM_BOOL(decompose, "solve time partitions no buffer crosses apart"),
    TM_BOOL(dynamic_decomposition, "split again when placed buffers leave a cut in time"),
    TM_BOOL(full_span_reduction, "put buffers spanning a whole partition at its bottom"),
    TM_BOOL(section_inference, "prune when a time section cannot hold what remains above its floor"),
    TM_BOOL(hole_inference, "with fixed buffers: prune when the rest cannot fit the holes they leave"),
    TM_BOOL(dominance, "prune partial plans a lower buffer could drop into"),
    TM_BOOL(tiling_inference, "prune when the buffers left cannot tile a zero-slack level"),
    TM_BOOL(time_sweep, "zero-slack partitions: also run the time sweep beside the portfolio"),
    {"portfolio", "default|weighted", "the searches run side by side: the default portfolio, or "
     "weighted restarts alone (restarts ordered by where earlier runs failed)", &SetPortfolio, &GetPortfolio},
    TM_COUNT(portfolio_slice_nodes, "N", "nodes each search of the portfolio runs in its turn"),
    TM_NUMBER(restart_weight_decay, "0..1", "weighted restarts: the share of a failure weight kept per run"),
    TM_NUMBER(weighted_run_scale, "(0..16]", "weighted restarts: run length against other restarts'"),
    TM_NUMBER(weighted_share, "[0..1)", "minimise on one thread: the share of the time limit given to "
              "weighted restarts after the portfolio (0: none)"),
    TM_COUNT(search_memory_bytes, "BYTES", "memory for one partition's search paths; past it searches stop"),
    TM_BOOL(heuristic_incumbent, "start from the best heuristic plan"),
    {"minimize_search", "descent|bisection", "how minimise picks the heights it probes",
     &SetMinimizeSearch, &GetMinimizeSearch},
    TM_COUNT(probe_node_budget, "N", "minimise: the node budget of one probe"),
    TM_COUNT(descent_probe_nodes, "N", "descent: nodes at one height before the step halves"),
    TM_BOOL(bound_probe, "descent: first probe the proven bound itself, one dive per search"),
    TM_BOOL(deep_probe, "descent, once stalled: probe the restarting searches near the bound"),
    TM_COUNT(deep_probe_divisor, "N", "deep probe: its height is the bound plus 1/N of the gap"),
    TM_COUNT(deep_probe_weight, "N", "deep probe: N times a descent probe's nodes"),
    TM_BOOL(fit_descent, "a capacity above the bound: the descent from the bound in turns with the fit "
            "question (false: the fit question alone)"),
    TM_COUNT(fit_descent_nodes, "N", "fit_descent: nodes of one descent turn"),
    TM_NUMBER(fit_descent_share, "(0..1)", "fit_descent: the descent's share of the nodes"),
    TM_BOOL(restriction_bound, "minimise: prove bounds on the buffers of time windows around the load "
            "peaks (helps where the hard part is local in time)"),
    TM_COUNT(restriction_node_budget, "N", "restriction bound: nodes of one window's solve"),
    TM_COUNT(restriction_windows, "N", "restriction bound: the most windows tried"),
    TM_COUNT(restriction_max_buffers, "N", "restriction bound: skip windows of more buffers"),
    TM_BOOL(relay_probe, "minimise the problem with its relay chains merged once, and take its plan"),
    TM_NUMBER(relay_share, "(0..1]", "relay probe and samples: their share of the remaining limits"),
    TM_COUNT(relay_node_budget, "N", "relay probe: the most nodes of its solve"),
    TM_COUNT(relay_after_nodes, "N", "relay probe: nodes the solve spends first"),
    TM_COUNT(relay_max_buffers, "N", "relay probe: skipped above this many buffers"),
    TM_BOOL(relay_samples, "descent stalls: ask the merged problem to fit at heights in the gap"),
    TM_COUNT(relay_sample_nodes, "N", "relay samples: the first node budget of one"),
};

#undef TM_BOOL
#undef TM_COUNT
#undef TM_NUMBER

const TuningKey* FindKey(std::string_view name) {
  for (const TuningKey& k : kTuningKeys)
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace

std::span<const TuningKey> TuningKeys() { return kTuningKeys; }

Status SetTuning(SolverTuning& tuning, std::string_view key, std::string_view value) {
  const TuningKey* k = FindKey(key);
  if (k == nullptr) {
    std::string known;
    for (const TuningKey& each : kTuningKeys) known += (known.empty() ? "" : ", ") + std::string(each.name);
    return InvalidArgument("tuning key '" + std::string(key) + "' is unknown (known: " + known + ")");
  }
  const Status st = k->set(tuning, value);
  if (!st.ok()) return InvalidArgument("tuning " + std::string(key) + ": " + st.message() + " (takes " +
                                       std::string(k->value) + ")");
  return Status::Ok();
}

Status SetTuning(SolverTuning& tuning, std::string_view assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string_view::npos)
    return InvalidArgument("tuning '" + std::string(assignment) + "' is not KEY=VALUE");
  return SetTuning(tuning, assignment.substr(0, eq), assignment.substr(eq + 1));
}

std::string TuningHelp() {
  const SolverTuning defaults;
  std::string out;
  for (const TuningKey& k : kTuningKeys)
    out += "  " + std::string(k.name) + "=" + std::string(k.value) + " (default " + k.get(defaults) + "): " +
           std::string(k.help) + "\n";
  return out;
}

}  // namespace tensormem
