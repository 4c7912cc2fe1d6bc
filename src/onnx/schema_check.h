// SPDX-License-Identifier: Apache-2.0
// What is checked of a model before ONNX's shape inference runs on it, so
// that inference cannot crash the process on a malformed model.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "tensormem/status.h"

namespace tensormem::onnx_import {

// "" and "ai.onnx": the operators of the ONNX standard.
bool IsDefaultDomain(const std::string& d);

// Every node (sub-graphs included) against its schema: input and output
// counts, required inputs, required attributes (sub-graphs too),
// attribute types. ONNX's own inference dereferences what the schema promises
// (Scan without its body, STFT with one input crashed it), so nothing
// that breaks a schema reaches it.
// Integer attributes that ONNX's shape inference divides by, or that
// make no sense below 1: it divided by a Conv's zero stride (SIGFPE, found
// by the ONNX importer fuzzer), so such values are refused before it runs.
// Test: OnnxOperatorSweep.EveryIntegerAttributeAtZeroAndBelowNeverCrashes.
// `nodes` are the file's nodes (Constant nodes included); errors begin with
// `source`.
Status CheckSchemas(const std::vector<const onnx::NodeProto*>& nodes, const onnx::ModelProto& model, int opset,
                    const std::string& source);

// ONNX's STFT inference reads the signal's dimension 1 without checking its
// rank: a signal of rank 1 (a graph input, or any node's output) crashed the
// process. Each registered STFT schema's inference is wrapped, once per
// process, to refuse such a signal first (an inference error, which the
// import reports as an unknown shape, never a crash).
// Test: OnnxImport.StftWithMalformedInputsNeverCrashes.
void GuardStftInference();

}  // namespace tensormem::onnx_import
