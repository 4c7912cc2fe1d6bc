#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a large synthetic ONNX model, for measuring the importer on big graphs.

Two shapes of graph, each of about NODES nodes on a float tensor of WIDTH
elements per row:
  chain     X -> Relu -> Relu -> ... -> Y (one node reads the previous one's output)
  residual  blocks of Relu -> Relu -> Add(block input, second Relu): every
            block input lives across its block, as in a ResNet
The batch dimension is the symbol N unless --batch fixes it (then the model
needs no --dim). Encodes the protobuf by hand, so it needs no onnx package,
and streams it to the file (a 3*10^6-node model is about 100 MB).

  scripts/make_large_onnx.py --kind chain --nodes 1000000 chain_1e6.onnx
  tensormem plan chain_1e6.onnx --dim N=1 -s greedy_by_size
"""
import argparse
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, payload):
    """A length-delimited field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def int_field(number, value):
    return varint(number << 3) + varint(value)


def text(number, s):
    return field(number, s.encode())


FLOAT = 1


def value_info(name, width, batch):
    """ValueInfoProto: name, type {tensor_type {elem_type, shape {dim, dim}}}."""
    first = int_field(1, batch) if batch else text(2, "N")
    shape = field(1, first) + field(1, int_field(1, width))
    tensor = int_field(1, FLOAT) + field(2, shape)
    return text(1, name) + field(2, field(1, tensor))


def node(op, inputs, outputs, name):
    body = b"".join(text(1, i) for i in inputs) + b"".join(text(2, o) for o in outputs)
    return field(1, body + text(3, name) + text(4, op))  # GraphProto.node = 1


def chain_nodes(count):
    prev = "X"
    for k in range(count):
        out = "Y" if k == count - 1 else f"t{k}"
        yield node("Relu", [prev], [out], f"relu{k}")
        prev = out


def residual_nodes(count):
    blocks = max(1, count // 3)
    prev = "X"
    for b in range(blocks):
        a, c = f"b{b}a", f"b{b}b"
        out = "Y" if b == blocks - 1 else f"b{b}out"
        yield node("Relu", [prev], [a], f"b{b}relu1")
        yield node("Relu", [a], [c], f"b{b}relu2")
        yield node("Add", [prev, c], [out], f"b{b}add")
        prev = out


def write_model(stream, kind, count, width, batch):
    nodes = chain_nodes(count) if kind == "chain" else residual_nodes(count)
    graph = bytearray()
    for n in nodes:
        graph += n
    graph += text(2, f"{kind}_{count}")
    graph += field(11, value_info("X", width, batch))  # input
    graph += field(12, value_info("Y", width, batch))  # output
    opset = text(1, "") + int_field(2, 17)
    stream.write(int_field(1, 8))  # ir_version
    stream.write(text(2, "make_large_onnx"))  # producer_name
    stream.write(field(8, opset))  # opset_import
    stream.write(varint(7 << 3 | 2) + varint(len(graph)))  # graph, written without a copy
    stream.write(graph)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", choices=["chain", "residual"], default="chain")
    p.add_argument("--nodes", type=int, required=True, help="number of nodes (residual: rounded to blocks of 3)")
    p.add_argument("--width", type=int, default=256, help="elements per row (default 256)")
    p.add_argument("--batch", type=int, default=0, help="a fixed batch size instead of the symbol N")
    p.add_argument("out", help="the .onnx file to write")
    a = p.parse_args()
    if a.nodes < 1:
        sys.exit("--nodes must be at least 1")
    with open(a.out, "wb") as f:
        write_model(f, a.kind, a.nodes, a.width, a.batch)


if __name__ == "__main__":
    main()
