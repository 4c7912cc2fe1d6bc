// SPDX-License-Identifier: Apache-2.0
// An SVG memory map: x = task, y = address (0 at the bottom), one rectangle
// per occupancy segment, a <title> tooltip per buffer, the lower bound as a
// dashed line. Plain SVG 1.1, readable in any browser.
#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>

#include "io/text_util.h"
#include "tensormem/io.h"

namespace tensormem {
namespace {

std::string Bytes(std::uint64_t b) {
  char buf[64];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", b / 1048576.0);
  else if (b >= (1ull << 10)) std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

Status WriteSvg(std::ostream& out, const Problem& problem, const OffsetsPlan& plan,
                const SvgOptions& options) {
  if (plan.offsets.size() != problem.buffers.size())
    return InvalidArgument("plan has " + std::to_string(plan.offsets.size()) + " offsets for " +
                           std::to_string(problem.buffers.size()) + " buffers");
  const double margin_left = 90, margin_right = 20, margin_top = 40, margin_bottom = 40;
  const double w = std::max(100, options.width) - margin_left - margin_right;
  const double h = std::max(100, options.height) - margin_top - margin_bottom;
  TaskIndex t0 = 0, t1 = 1;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    t0 = i ? std::min(t0, problem.buffers[i].first_task) : problem.buffers[i].first_task;
    t1 = i ? std::max(t1, problem.buffers[i].last_task + 1) : problem.buffers[i].last_task + 1;
  }
  if (t1 <= t0) t1 = t0 + 1;
  const std::uint64_t top = std::max<std::uint64_t>({plan.total, options.lower_bound, 1});
  auto x = [&](TaskIndex t) { return margin_left + w * double(t - t0) / double(t1 - t0); };
  auto y = [&](std::uint64_t a) { return margin_top + h - h * (double(a) / double(top)); };

  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << options.width << "\" height=\""
      << options.height << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  out << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out << "<text x=\"" << margin_left << "\" y=\"22\" font-size=\"15\">"
      << io::MarkupEscape(options.title.empty() ? "memory map" : options.title) << " — total "
      << Bytes(plan.total);
  if (options.lower_bound > 0)
    out << ", lower bound " << Bytes(options.lower_bound) << ", ratio "
        << Num(Ratio(plan.total, options.lower_bound));
  out << "</text>\n";
  // Axes.
  out << "<g stroke=\"#444\"><line x1=\"" << margin_left << "\" y1=\"" << Num(y(0)) << "\" x2=\""
      << Num(margin_left + w) << "\" y2=\"" << Num(y(0)) << "\"/><line x1=\"" << margin_left
      << "\" y1=\"" << Num(y(0)) << "\" x2=\"" << margin_left << "\" y2=\"" << Num(y(top))
      << "\"/></g>\n";
  for (int k = 0; k <= 4; ++k) {
    const std::uint64_t a = top / 4 * static_cast<std::uint64_t>(k);
    out << "<text x=\"" << (margin_left - 6) << "\" y=\"" << Num(y(a) + 4)
        << "\" text-anchor=\"end\">" << Bytes(a) << "</text>\n";
    // (t1 - t0) * k would overflow for spans near 2^62.
    const TaskIndex t = t0 + (t1 - t0) / 4 * k + (t1 - t0) % 4 * k / 4;
    out << "<text x=\"" << Num(x(t)) << "\" y=\"" << Num(y(0) + 16) << "\" text-anchor=\"middle\">"
        << t << "</text>\n";
  }
  out << "<text x=\"" << Num(margin_left + w / 2) << "\" y=\"" << (options.height - 6)
      << "\" text-anchor=\"middle\">task</text>\n";
  // Buffers.
  out << "<g stroke=\"#222\" stroke-width=\"0.3\">\n";
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.size == 0) continue;
    const unsigned hue = static_cast<unsigned>((i * 137u) % 360u);
    out << "<g fill=\"hsl(" << hue << ",60%,70%)\"><title>" << io::MarkupEscape(b.id) << ": " << b.size
        << " bytes (" << Bytes(b.size) << "), tasks [" << b.first_task << ", " << b.last_task
        << "], offset " << plan.offsets[i] << "</title>";
    for (const Segment& s : Occupancy(b)) {
      const double x0 = x(s.first_task), x1 = x(s.last_task + 1);
      const double y0 = y(plan.offsets[i] + s.hi), y1 = y(plan.offsets[i] + s.lo);
      out << "<rect x=\"" << Num(x0) << "\" y=\"" << Num(y0) << "\" width=\""
          << Num(std::max(0.5, x1 - x0)) << "\" height=\"" << Num(std::max(0.5, y1 - y0))
          << "\"/>";
    }
    out << "</g>\n";
  }
  out << "</g>\n";
  if (options.lower_bound > 0) {
    const double ly = y(options.lower_bound);
    out << "<line x1=\"" << margin_left << "\" y1=\"" << Num(ly) << "\" x2=\""
        << Num(margin_left + w) << "\" y2=\"" << Num(ly)
        << "\" stroke=\"red\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"><title>lower bound "
        << options.lower_bound << " bytes</title></line>\n";
    out << "<text x=\"" << Num(margin_left + w - 4) << "\" y=\"" << Num(ly - 4)
        << "\" text-anchor=\"end\" fill=\"red\">lower bound</text>\n";
  }
  out << "</svg>\n";
  if (!out) return Internal("write failed");
  return Status::Ok();
}

}  // namespace tensormem
