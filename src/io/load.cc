// SPDX-License-Identifier: Apache-2.0
// Input detection and loading of CSV/JSON problems and allocation traces
// (read as planning problems) from files.
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include "tensormem/trace.h"
#include "io/input_file.h"
#include "io/text_util.h"
#include "tensormem/io.h"

namespace tensormem {
namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<InputFormat> DetectInputFormat(const std::string& path) {
  std::string_view h;
  char head[64] = {};
  std::string ahead;
  std::unique_ptr<std::istream> file;
  if (IsStreamInput(path) && EndsWith(path, ".onnx")) return InputFormat::kOnnx;
  if (IsStreamInput(path)) {  // looked at without consuming it: the reader takes it next
    TM_ASSIGN_OR_RETURN(ahead, internal::PeekStreamInput(path, sizeof head - 1));
    h = ahead;
  } else {
    TM_ASSIGN_OR_RETURN(file, internal::OpenInputFile(path));
    file->read(head, sizeof head - 1);
    h = std::string_view(head, static_cast<std::size_t>(file->gcount()));
  }
  if (EndsWith(path, ".onnx")) return InputFormat::kOnnx;
  std::size_t i = 0;
  if (h.substr(0, 3) == "\xef\xbb\xbf") i = 3;
  while (i < h.size() && std::isspace(static_cast<unsigned char>(h[i]))) ++i;
  if (i < h.size() && (h[i] == '{' || h[i] == '[')) return InputFormat::kJson;
  if (h.substr(i, 19) == "Thread,Time,Action,") return InputFormat::kTrace;
  // Binary: a protobuf ModelProto starts with field 1 (ir_version, varint),
  // tag 0x08, which no text problem does (models exported by PyTorch have no
  // NUL byte near the start: without a name ending in .onnx, as on standard
  // input, that tag tells them); other binary (a CSV with a NUL byte) is
  // read, and refused, as CSV.
  if (!h.empty() && h[0] == '\x08') return InputFormat::kOnnx;
  for (char c : h)
    if (c == '\0') return InputFormat::kCsv;
  if (EndsWith(path, ".json")) return InputFormat::kJson;
  return InputFormat::kCsv;
}

Result<Problem> LoadProblem(const std::string& path, const ReadLimits& limits) {
  TM_ASSIGN_OR_RETURN(InputFormat format, DetectInputFormat(path));
  if (format == InputFormat::kOnnx) {
    if (IsStreamInput(path)) return OnnxNotFromAFileError(path);
    return InvalidArgument(path + ": an ONNX model: import it with the ONNX importer");
  }
  return internal::ReadInputFile(path, [&](std::istream& in, const std::string& source) -> Result<Problem> {
    switch (format) {
      case InputFormat::kCsv: return ReadProblemCsv(in, source, limits);
      case InputFormat::kJson: return ReadProblemJson(in, source, limits);
      case InputFormat::kTrace: return ReadTraceProblem(in, source, limits);
      case InputFormat::kOnnx: break;
    }
    return InvalidArgument(source + ": unknown input format");
  });
}

Result<std::vector<IdOffset>> LoadOffsets(const std::string& path, const ReadLimits& limits) {
  // An id,offset CSV is told by its header; anything else is a problem file.
  std::optional<std::vector<IdOffset>> rows;
  if (path != "-") {
    TM_ASSIGN_OR_RETURN(InputFormat format, DetectInputFormat(path));
    if (format == InputFormat::kCsv) {
      auto read = internal::ReadInputFile(path, [&](std::istream& in, const std::string&) -> Result<std::optional<std::vector<IdOffset>>> {
        io::CsvLines lines(in, path);
        std::vector<std::string_view> fields;
        TM_ASSIGN_OR_RETURN(const bool any, lines.Next(&fields));
        if (!any || fields.size() != 2) return std::optional<std::vector<IdOffset>>();
        const bool id_first = fields[0] == "id" && fields[1] == "offset";
        if (!id_first && !(fields[0] == "offset" && fields[1] == "id"))
          return std::optional<std::vector<IdOffset>>();
        std::vector<IdOffset> out;
        while (true) {
          TM_ASSIGN_OR_RETURN(const bool more, lines.Next(&fields, 2));
          if (!more) break;
          if (out.size() >= limits.max_buffers)
            return lines.Error("more than " + std::to_string(limits.max_buffers) + " rows");
          const io::IntParse off = io::ParseUnsigned(fields[id_first ? 1 : 0]);
          if (!off.ok)
            return lines.Error("field 'offset': " + off.error + ": " + io::Quote(fields[id_first ? 1 : 0]));
          out.push_back({std::string(fields[id_first ? 0 : 1]), off.value});
        }
        return std::optional<std::vector<IdOffset>>(std::move(out));
      });
      if (!read.ok()) return read.status();
      rows = std::move(*read);
    }
  }
  if (rows) return std::move(*rows);
  Result<Problem> loaded = LoadProblem(path, limits);
  if (!loaded.ok())  // say both forms a plan may take
    return Status(loaded.status().code(),
                  loaded.status().message() + " (a plan is id,offset rows, or a problem file with an offset per buffer)");
  Problem problem = std::move(*loaded);
  std::vector<IdOffset> out;
  out.reserve(problem.buffers.size());
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (!b.fixed_offset)
      return InvalidArgument(path + ": buffer " + std::to_string(i) + " ('" + b.id + "') has no offset");
    out.push_back({b.id, *b.fixed_offset});
  }
  return out;
}

}  // namespace tensormem
