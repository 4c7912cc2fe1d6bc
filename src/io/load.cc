// Input detection and loading of CSV/JSON problems and allocation traces
// (read as planning problems) from files.
#include <cstring>
#include <fstream>
#include <iostream>

#include "tensormem/trace.h"
#include "io/input_file.h"
#include "tensormem/io.h"

namespace tensormem {
namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<InputFormat> DetectInputFormat(const std::string& path) {
  if (path == "-") return InputFormat::kCsv;
  TM_ASSIGN_OR_RETURN(std::unique_ptr<std::istream> in, internal::OpenInputFile(path));
  char head[64] = {};
  in->read(head, sizeof head - 1);
  const std::string_view h(head, static_cast<std::size_t>(in->gcount()));
  if (EndsWith(path, ".onnx")) return InputFormat::kOnnx;
  std::size_t i = 0;
  if (h.substr(0, 3) == "\xef\xbb\xbf") i = 3;
  while (i < h.size() && std::isspace(static_cast<unsigned char>(h[i]))) ++i;
  if (i < h.size() && (h[i] == '{' || h[i] == '[')) return InputFormat::kJson;
  if (h.substr(i, 19) == "Thread,Time,Action,") return InputFormat::kTrace;
  // Binary: a protobuf ModelProto starts with field 1 (ir_version, varint),
  // tag 0x08; other binary (a CSV with a NUL byte) is read, and refused, as CSV.
  for (char c : h)
    if (c == '\0') return !h.empty() && h[0] == '\x08' ? InputFormat::kOnnx : InputFormat::kCsv;
  if (EndsWith(path, ".json")) return InputFormat::kJson;
  return InputFormat::kCsv;
}

Result<Problem> LoadProblem(const std::string& path, const ReadLimits& limits) {
  TM_ASSIGN_OR_RETURN(InputFormat format, DetectInputFormat(path));
  if (path == "-") return ReadProblemCsv(std::cin, "<stdin>", limits);
  if (format == InputFormat::kOnnx)
    return InvalidArgument(path + ": an ONNX model: import it with the ONNX importer");
  return internal::ReadInputFile(path, [&](std::istream& in) -> Result<Problem> {
    switch (format) {
      case InputFormat::kCsv: return ReadProblemCsv(in, path, limits);
      case InputFormat::kJson: return ReadProblemJson(in, path, limits);
      case InputFormat::kTrace: return ReadTraceProblem(in, path, limits);
      case InputFormat::kOnnx: break;
    }
    return InvalidArgument(path + ": unknown input format");
  });
}

}  // namespace tensormem
