// SPDX-License-Identifier: Apache-2.0
// An SVG memory map: x = task, y = address (0 at the bottom), one rectangle
// per occupancy segment, a <title> tooltip per buffer, the lower bound as a
// dashed line. Plain SVG 1.1, readable in any browser.
#include <algorithm>
#include <cstdint>
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

// Where the map is drawn: the plot area inside the margins, the task span
// [t0, t1) and the address span [0, top) it shows.
struct Frame {
  static constexpr double kLeft = 90, kRight = 20, kTop = 40, kBottom = 40;
  double w = 0, h = 0;
  TaskIndex t0 = 0, t1 = 1;
  std::uint64_t top = 1;
  double X(TaskIndex t) const { return kLeft + w * double(t - t0) / double(t1 - t0); }
  double Y(std::uint64_t a) const { return kTop + h - h * (double(a) / double(top)); }
};

Frame FrameOf(const Problem& problem, const OffsetsPlan& plan, const SvgOptions& options) {
  Frame f;
  f.w = std::max(100, options.width) - Frame::kLeft - Frame::kRight;
  f.h = std::max(100, options.height) - Frame::kTop - Frame::kBottom;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    f.t0 = i ? std::min(f.t0, problem.buffers[i].first_task) : problem.buffers[i].first_task;
    f.t1 = i ? std::max(f.t1, problem.buffers[i].last_task + 1) : problem.buffers[i].last_task + 1;
  }
  if (f.t1 <= f.t0) f.t1 = f.t0 + 1;
  f.top = std::max<std::uint64_t>({plan.total, options.lower_bound, 1});
  return f;
}

// The opening tag, the background and the title line.
void WriteTitle(std::ostream& out, const OffsetsPlan& plan, const SvgOptions& options) {
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << options.width << "\" height=\""
      << options.height << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  out << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out << "<text x=\"" << Frame::kLeft << "\" y=\"22\" font-size=\"15\">"
      << io::MarkupEscape(options.title.empty() ? "memory map" : options.title) << " — total "
      << Bytes(plan.total);
  if (options.lower_bound > 0)
    out << ", lower bound " << Bytes(options.lower_bound) << ", ratio "
        << Num(Ratio(plan.total, options.lower_bound));
  out << "</text>\n";
}

// Both axes with five ticks each, and the x axis's label.
void WriteAxes(std::ostream& out, const Frame& f, const SvgOptions& options) {
  const double left = Frame::kLeft;
  out << "<g stroke=\"#444\"><line x1=\"" << left << "\" y1=\"" << Num(f.Y(0)) << "\" x2=\""
      << Num(left + f.w) << "\" y2=\"" << Num(f.Y(0)) << "\"/><line x1=\"" << left
      << "\" y1=\"" << Num(f.Y(0)) << "\" x2=\"" << left << "\" y2=\"" << Num(f.Y(f.top))
      << "\"/></g>\n";
  for (int k = 0; k <= 4; ++k) {
    const std::uint64_t a = f.top / 4 * static_cast<std::uint64_t>(k);
    out << "<text x=\"" << (left - 6) << "\" y=\"" << Num(f.Y(a) + 4)
        << "\" text-anchor=\"end\">" << Bytes(a) << "</text>\n";
    // (t1 - t0) * k would overflow for spans near 2^62.
    const TaskIndex t = f.t0 + (f.t1 - f.t0) / 4 * k + (f.t1 - f.t0) % 4 * k / 4;
    out << "<text x=\"" << Num(f.X(t)) << "\" y=\"" << Num(f.Y(0) + 16) << "\" text-anchor=\"middle\">"
        << t << "</text>\n";
  }
  out << "<text x=\"" << Num(left + f.w / 2) << "\" y=\"" << (options.height - 6)
      << "\" text-anchor=\"middle\">task</text>\n";
}

// One group per buffer: its tooltip, a rectangle per occupancy segment.
void WriteBuffers(std::ostream& out, const Frame& f, const Problem& problem, const OffsetsPlan& plan) {
  out << "<g stroke=\"#222\" stroke-width=\"0.3\">\n";
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.size == 0) continue;
    const unsigned hue = static_cast<unsigned>((i * 137u) % 360u);
    out << "<g fill=\"hsl(" << hue << ",60%,70%)\"><title>" << io::MarkupEscape(b.id) << ": " << b.size
        << " bytes (" << Bytes(b.size) << "), tasks [" << b.first_task << ", " << b.last_task
        << "], offset " << plan.offsets[i] << "</title>";
    for (const Segment& s : Occupancy(b)) {
      const double x0 = f.X(s.first_task), x1 = f.X(s.last_task + 1);
      const double y0 = f.Y(plan.offsets[i] + s.hi), y1 = f.Y(plan.offsets[i] + s.lo);
      out << "<rect x=\"" << Num(x0) << "\" y=\"" << Num(y0) << "\" width=\""
          << Num(std::max(0.5, x1 - x0)) << "\" height=\"" << Num(std::max(0.5, y1 - y0))
          << "\"/>";
    }
    out << "</g>\n";
  }
  out << "</g>\n";
}

// The lower bound as a dashed red line (when known).
void WriteLowerBound(std::ostream& out, const Frame& f, const SvgOptions& options) {
  if (options.lower_bound == 0) return;
  const double ly = f.Y(options.lower_bound);
  out << "<line x1=\"" << Frame::kLeft << "\" y1=\"" << Num(ly) << "\" x2=\""
      << Num(Frame::kLeft + f.w) << "\" y2=\"" << Num(ly)
      << "\" stroke=\"red\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"><title>lower bound "
      << options.lower_bound << " bytes</title></line>\n";
  out << "<text x=\"" << Num(Frame::kLeft + f.w - 4) << "\" y=\"" << Num(ly - 4)
      << "\" text-anchor=\"end\" fill=\"red\">lower bound</text>\n";
}

}  // namespace

Status WriteSvg(std::ostream& out, const Problem& problem, const OffsetsPlan& plan,
                const SvgOptions& options) {
  if (plan.offsets.size() != problem.buffers.size())
    return InvalidArgument("plan has " + std::to_string(plan.offsets.size()) + " offsets for " +
                           std::to_string(problem.buffers.size()) + " buffers");
  const Frame f = FrameOf(problem, plan, options);
  WriteTitle(out, plan, options);
  WriteAxes(out, f, options);
  WriteBuffers(out, f, problem, plan);
  WriteLowerBound(out, f, options);
  out << "</svg>\n";
  if (!out) return Internal("write failed");
  return Status::Ok();
}

}  // namespace tensormem
