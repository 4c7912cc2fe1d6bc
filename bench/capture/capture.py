#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Captures the allocation trace of one dynamic CPU PyTorch workload.

Runs a model written in plain torch.nn with random weights (nothing downloaded) on requests of
random shapes drawn from a fixed seed, under the LD_PRELOAD tracer of PyTorch's CPU tensor
allocator (shared/capture/memtrace_flag.c: every posix_memalign/free of c10::alloc_cpu), and
writes the RAPIDS replay-log CSV that `tensormem replay` reads, gzip -9 compressed.

    /usr/bin/python3 bench/capture/capture.py --workload encoder_serving --seed 1 --out t.csv.gz

Needs Debian's CPU PyTorch (`apt-get install python3-torch libopenblas0-pthread`) and gcc. The
tracer is built from its C source into a temporary folder and the script re-executes itself
under it; only the measured requests are traced (model construction and one warm-up request
are not). One thread (torch.set_num_threads(1)), so one thread allocates.
"""
import argparse
import ctypes
import functools
import gzip
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_TRACER = os.path.join(REPO, "..", "shared", "capture", "memtrace_flag.c")

# name: (what it runs, default number of requests / steps)
WORKLOADS = {
    "encoder_serving": ("BERT-like encoder inference, batch 1-32, length 8-512 per request", 40),
    "decoder_generate": ("GPT-2-like greedy generation, KV cache grown by concatenation, random prompts", 4),
    "cnn_varsize": ("ResNet-like CNN inference on images of random size 128-512 per request", 60),
    "train_varlen": ("transformer LM training steps (AdamW), random sequence length per step", 8),
    "interleaved": ("encoder_serving and cnn_varsize requests interleaved on one allocator", 24),
    "speech_lstm": ("conv front-end + bidirectional LSTM on audio features of random length", 5),
    "moe_serving": ("mixture-of-experts encoder, top-2 routing: tokens per expert vary per request", 30),
    "unet_denoise": ("diffusion-style UNet, 8 denoising steps per request at a random resolution", 12),
}


# ---------------------------------------------------------------- tracer

def tracer_loaded():
    try:
        ctypes.CDLL(None).memtrace_start  # noqa: B018 (an attribute lookup is the test)
        return True
    except AttributeError:
        return False


def reexec_under_tracer(args):
    """Builds the tracer and runs this script again with it preloaded; returns its exit code."""
    tmp = tempfile.mkdtemp(prefix="tm_capture_")
    try:
        so = os.path.join(tmp, "memtrace_flag.so")
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", so, args.tracer, "-ldl", "-lpthread"],
                       check=True)
        csv = os.path.join(tmp, "trace.csv")
        env = dict(os.environ, LD_PRELOAD=so, MEMTRACE_OUT=csv, MEMTRACE_MIN=str(args.min_bytes))
        rc = subprocess.run([sys.executable] + sys.argv, env=env).returncode
        if rc != 0:
            return rc
        with open(csv, "rb") as src, gzip.GzipFile(args.out, "wb", compresslevel=9, mtime=0) as dst:
            shutil.copyfileobj(src, dst)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- models

def build_models(torch):
    nn = torch.nn
    F = nn.functional

    class EagerSelfAttention(nn.Module):
        """BERT-style attention written out: matmul, scale, mask, softmax, matmul."""

        def __init__(self, d, heads):
            super().__init__()
            self.h, self.dh = heads, d // heads
            self.qkv = nn.Linear(d, 3 * d)
            self.out = nn.Linear(d, d)

        def forward(self, x, mask=None):
            b, t, d = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.dh)
            if mask is not None:
                scores = scores + mask
            ctx = scores.softmax(-1) @ v
            return self.out(ctx.transpose(1, 2).reshape(b, t, d))

    class EncoderLayer(nn.Module):
        def __init__(self, d, heads, ff):
            super().__init__()
            self.attn = EagerSelfAttention(d, heads)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

        def forward(self, x, mask=None):
            x = self.ln1(x + self.attn(x, mask))
            return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))

    class Encoder(nn.Module):
        """BERT-like: embeddings, post-norm layers, a pooler."""

        def __init__(self, vocab=30522, d=256, layers=4, heads=4, ff=1024, max_len=512):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
            self.ln = nn.LayerNorm(d)
            self.layers = nn.ModuleList(EncoderLayer(d, heads, ff) for _ in range(layers))
            self.pool = nn.Linear(d, d)

        def forward(self, ids, lengths):
            b, t = ids.shape
            pos = torch.arange(t).unsqueeze(0)
            valid = pos < lengths.unsqueeze(1)
            mask = (~valid)[:, None, None, :].float() * -1e4
            x = self.ln(self.tok(ids) + self.pos(pos))
            for layer in self.layers:
                x = layer(x, mask)
            return torch.tanh(self.pool(x[:, 0]))

    class DecoderBlock(nn.Module):
        """GPT-2 block (pre-norm) with a KV cache grown by torch.cat."""

        def __init__(self, d, heads):
            super().__init__()
            self.h, self.dh = heads, d // heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.fc_out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x, cache):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
            if cache is not None:
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.dh)
            if cache is None and t > 1:  # the prompt: causal; a step sees the whole cache
                scores = scores + torch.full((t, t), float("-inf")).triu(1)
            a = scores.softmax(-1) @ v
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
            x = x + self.fc_out(F.gelu(self.fc(self.ln2(x))))
            return x, (k, v)

    class Decoder(nn.Module):
        def __init__(self, vocab=16384, d=512, layers=8, heads=8, max_len=1024, tied=True):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
            self.blocks = nn.ModuleList(DecoderBlock(d, heads) for _ in range(layers))
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)
            if tied:
                self.head.weight = self.tok.weight

        def forward(self, ids, start, caches):
            pos = torch.arange(start, start + ids.shape[1]).unsqueeze(0)
            x = self.tok(ids) + self.pos(pos)
            new = []
            for block, cache in zip(self.blocks, caches):
                x, c = block(x, cache)
                new.append(c)
            return self.head(self.ln(x)), new

    class CausalLM(nn.Module):
        """A small GPT for training: nn.TransformerEncoderLayer (pre-norm) with a causal mask."""

        def __init__(self, vocab=8192, d=256, layers=4, heads=4, max_len=512):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
            layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            t = ids.shape[1]
            mask = torch.full((t, t), float("-inf")).triu(1)
            x = self.tok(ids) + self.pos(torch.arange(t).unsqueeze(0))
            return self.head(self.ln(self.body(x, mask=mask)))

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return F.relu(y + (x if self.down is None else self.down(x)))

    class ResNet(nn.Module):
        """ResNet-18 layout."""

        def __init__(self, width=64, classes=1000):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width),
                                      nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            blocks, cin = [], width
            for i, cout in enumerate([width, 2 * width, 4 * width, 8 * width]):
                blocks += [BasicBlock(cin, cout, 1 if i == 0 else 2), BasicBlock(cout, cout, 1)]
                cin = cout
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            x = self.blocks(self.stem(x))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    class SpeechLSTM(nn.Module):
        """Conv subsampling (4x in time) of log-mel features, a bidirectional LSTM, CTC logits."""

        def __init__(self, mels=80, d=256, layers=3, vocab=128):
            super().__init__()
            self.sub = nn.Sequential(nn.Conv2d(1, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 32, 3, 2, 1), nn.ReLU())
            self.proj = nn.Linear(32 * ((mels + 3) // 4), d)
            self.lstm = nn.LSTM(d, d, layers, batch_first=True, bidirectional=True)
            self.out = nn.Linear(2 * d, vocab)

        def forward(self, feats, lengths):
            x = self.sub(feats.unsqueeze(1))  # b, 32, t/4, mels/4
            b, c, t, f = x.shape
            x = self.proj(x.permute(0, 2, 1, 3).reshape(b, t, c * f))
            packed = nn.utils.rnn.pack_padded_sequence(x, (lengths + 3) // 4, batch_first=True,
                                                       enforce_sorted=False)
            y, _ = self.lstm(packed)
            y, _ = nn.utils.rnn.pad_packed_sequence(y, batch_first=True)
            return self.out(y).log_softmax(-1)

    class MoELayer(nn.Module):
        """Switch-style feed-forward: top-2 of E experts per token, tokens gathered per expert."""

        def __init__(self, d, ff, experts):
            super().__init__()
            self.gate = nn.Linear(d, experts)
            self.experts = nn.ModuleList(nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))
                                         for _ in range(experts))

        def forward(self, x):
            b, t, d = x.shape
            flat = x.reshape(b * t, d)
            weights, chosen = self.gate(flat).softmax(-1).topk(2, dim=-1)
            out = torch.zeros_like(flat)
            for e, expert in enumerate(self.experts):
                rows, slot = (chosen == e).nonzero(as_tuple=True)
                if rows.numel():
                    out.index_add_(0, rows, expert(flat[rows]) * weights[rows, slot].unsqueeze(1))
            return out.view(b, t, d)

    class MoEEncoder(nn.Module):
        def __init__(self, vocab=16384, d=256, layers=4, heads=4, ff=512, experts=8, max_len=512):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
            self.attn = nn.ModuleList(EagerSelfAttention(d, heads) for _ in range(layers))
            self.moe = nn.ModuleList(MoELayer(d, ff, experts) for _ in range(layers))
            self.ln = nn.ModuleList(nn.LayerNorm(d) for _ in range(2 * layers))

        def forward(self, ids):
            x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]).unsqueeze(0))
            for i, (attn, moe) in enumerate(zip(self.attn, self.moe)):
                x = self.ln[2 * i](x + attn(x))
                x = self.ln[2 * i + 1](x + moe(x))
            return x

    class UNet(nn.Module):
        """A small diffusion UNet: three resolutions, skip connections concatenated, a time embedding."""

        def __init__(self, ch=4, width=64):
            super().__init__()
            w = [width, 2 * width, 4 * width]
            self.temb = nn.Sequential(nn.Linear(1, w[2]), nn.SiLU(), nn.Linear(w[2], w[2]))
            self.inp = nn.Conv2d(ch, w[0], 3, 1, 1)
            self.down = nn.ModuleList([nn.Conv2d(w[0], w[1], 3, 2, 1), nn.Conv2d(w[1], w[2], 3, 2, 1)])
            self.mid = nn.Sequential(nn.GroupNorm(8, w[2]), nn.SiLU(), nn.Conv2d(w[2], w[2], 3, 1, 1))
            self.up = nn.ModuleList([nn.ConvTranspose2d(w[2], w[1], 4, 2, 1), nn.ConvTranspose2d(2 * w[1], w[0], 4, 2, 1)])
            self.out = nn.Sequential(nn.GroupNorm(8, 2 * w[0]), nn.SiLU(), nn.Conv2d(2 * w[0], ch, 3, 1, 1))

        def forward(self, x, t):
            h0 = self.inp(x)
            h1 = F.silu(self.down[0](h0))
            h2 = F.silu(self.down[1](h1)) + self.temb(t.view(-1, 1))[:, :, None, None]
            h = self.mid(h2) + h2
            h = torch.cat([F.silu(self.up[0](h)), h1], dim=1)
            h = torch.cat([F.silu(self.up[1](h)), h0], dim=1)
            return self.out(h)

    return dict(Encoder=Encoder, Decoder=Decoder, CausalLM=CausalLM, ResNet=ResNet, SpeechLSTM=SpeechLSTM,
                MoEEncoder=MoEEncoder, UNet=UNet)


# ---------------------------------------------------------------- workloads
# Each returns (model state, a list of request closures): building models and requests is not
# traced; each closure runs one request (or training step) and is traced.

# Every request's batch is multiplied by this (--batch-scale): larger heaps from the same workloads.
BATCH_SCALE = 1


def requests(n, draw, run):
    """n requests: each one's shapes drawn now (in order, from the seed), run later."""
    return [functools.partial(run, *draw()) for _ in range(n)]


def encoder_requests(torch, m, rng, n):
    model = m["Encoder"]().eval()

    def run(b, t):
        b *= BATCH_SCALE
        ids = torch.randint(0, 30522, (b, t))
        lengths = torch.randint(max(1, t // 2), t + 1, (b,))
        with torch.no_grad():
            model(ids, lengths)
    return requests(n, lambda: (rng.randint(1, 32), rng.randint(8, 512)), run)


def cnn_requests(torch, m, rng, n):
    model = m["ResNet"]().eval()

    def run(b, h, w):
        with torch.no_grad():
            model(torch.randn(b * BATCH_SCALE, 3, h, w))
    return requests(n, lambda: (rng.randint(1, 8), rng.randint(128, 512), rng.randint(128, 512)), run)


def decoder_requests(torch, m, rng, n):
    model = m["Decoder"]().eval()

    def run(b, prompt, new):
        with torch.no_grad():
            ids = torch.randint(0, 16384, (b * BATCH_SCALE, prompt))
            logits, caches = model(ids, 0, [None] * len(model.blocks))
            pos = prompt
            for _ in range(new):
                nxt = logits[:, -1].argmax(-1, keepdim=True)
                del logits
                logits, caches = model(nxt, pos, caches)
                pos += 1
            del logits, caches
    return requests(n, lambda: (rng.randint(1, 8), rng.randint(16, 384), rng.randint(16, 64)), run)


def train_requests(torch, m, rng, n):
    model = m["CausalLM"]().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)

    def run(t):
        ids = torch.randint(0, 8192, (8 * BATCH_SCALE, t + 1))
        logits = model(ids[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        del logits
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return requests(n, lambda: (rng.randint(32, 512),), run)


def speech_requests(torch, m, rng, n):
    model = m["SpeechLSTM"]().eval()

    def run(b, frames):
        b *= BATCH_SCALE
        lengths = torch.randint(max(1, frames // 2), frames + 1, (b,))
        lengths[0] = frames
        with torch.no_grad():
            model(torch.randn(b, frames, 80), lengths)
    # 1-15 s of 10 ms frames
    return requests(n, lambda: (rng.randint(1, 16), rng.randint(100, 1500)), run)


def interleaved_requests(torch, m, rng, n):
    enc = encoder_requests(torch, m, rng, (n + 1) // 2)
    cnn = cnn_requests(torch, m, rng, n // 2)
    reqs = enc + cnn
    rng.shuffle(reqs)  # two models' requests in a random order, one allocator
    return reqs


def moe_requests(torch, m, rng, n):
    model = m["MoEEncoder"]().eval()

    def run(b, t):
        with torch.no_grad():
            model(torch.randint(0, 16384, (b * BATCH_SCALE, t)))
    return requests(n, lambda: (rng.randint(1, 16), rng.randint(16, 384)), run)


def unet_requests(torch, m, rng, n):
    model = m["UNet"]().eval()

    def run(b, side, steps):
        b *= BATCH_SCALE
        with torch.no_grad():
            x = torch.randn(b, 4, side, side)
            for i in range(steps):  # a fixed-shape loop inside each request, other shapes across
                eps = model(x, torch.full((b,), float(steps - i) / steps))
                x = x - 0.1 * eps
                del eps
    # latent sides 32-96 (images of 256-768 pixels), multiples of 4 for the two strided levels
    return requests(n, lambda: (rng.randint(1, 4), 4 * rng.randint(8, 24), 8), run)


BUILDERS = {
    "encoder_serving": encoder_requests,
    "decoder_generate": decoder_requests,
    "cnn_varsize": cnn_requests,
    "train_varlen": train_requests,
    "interleaved": interleaved_requests,
    "speech_lstm": speech_requests,
    "moe_serving": moe_requests,
    "unet_denoise": unet_requests,
}


def run_traced(args):
    global BATCH_SCALE
    BATCH_SCALE = args.batch_scale
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    n = args.requests or WORKLOADS[args.workload][1]
    reqs = BUILDERS[args.workload](torch, build_models(torch), rng, n)
    # One warm-up request untraced: one-time allocations (oneDNN primitives, lazy state) stay out.
    warm = BUILDERS[args.workload](torch, build_models(torch), random.Random(args.seed + 1000), 1)
    warm[0]()
    lib = ctypes.CDLL(None)
    lib.memtrace_start()
    for r in reqs:
        r()
    lib.memtrace_stop()
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True, help="the trace to write (.csv.gz)")
    p.add_argument("--requests", type=int, default=0, help="requests or steps (default: per workload)")
    p.add_argument("--batch-scale", type=int, default=1,
                   help="multiply every request's batch (training: sequences per step) by this: larger heaps")
    p.add_argument("--min-bytes", type=int, default=1, help="smallest allocation recorded (1: all)")
    p.add_argument("--tracer", default=DEFAULT_TRACER, help="memtrace_flag.c (default: shared/capture)")
    args = p.parse_args()
    if tracer_loaded():
        return run_traced(args)
    return reexec_under_tracer(args)


if __name__ == "__main__":
    sys.exit(main())
