#!/usr/bin/env python3
"""gpt_bench.py - the GPT sample's training step on the GPU against the same
model in PyTorch eager, in one run (issue 21's bar).

    python3 bench/gpt_bench.py --train build-gpu/samples/gpt/train [--configs small,gpt2] [--steps 40]

For each configuration (samples/gpt/model.c's: small = 6 layers, 384 wide,
seq 256, batch 64; gpt2 = 12 layers, 768 wide, seq 1024, batch 16; both
with the sample's byte vocabulary of 256, so gpt2 here is GPT-2 124M's
blocks with 86M parameters, not its 50257-token embedding):

  - tilec: samples/gpt/train --device cuda --config NAME --steps N, with
    its step replayed as a graph (the default) and with --graph off; the
    time of a step is train's own (the CSV's ms: the batch's copies, the
    step's launches and reading back the loss and the norm), the median
    over the steps after the first three (the first compiles the kernels,
    the second captures the graph);
  - PyTorch eager: the same model as a PyTorch user writes it (one
    nn.Parameter per tensor, f32 master weights, torch.autocast to bf16,
    F.scaled_dot_product_attention, F.gelu(approximate="tanh"),
    F.cross_entropy, torch.optim.AdamW with its default implementation,
    clip_grad_norm_), each step ending in loss.item() as the sample's
    does; the median step after five warmup steps.

Both train on their own data (the sample its addition corpus, torch random
tokens whose targets are a function of each token): the time of a step
does not depend on the tokens. The loss of
each run's first and last step is printed to show both are training.
Prints a table with each configuration's tokens per second and tilec's
ratio to PyTorch eager (above 1: tilec is faster). Needs torch and a GPU;
scripts/gpu-check.sh runs it.
"""
import argparse
import csv
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

CONFIGS = {  # samples/gpt/model.c's configs[]
    "tiny": dict(L=2, H=2, C=64, T=64, B=8),
    "small": dict(L=6, H=6, C=384, T=256, B=64),
    "gpt2": dict(L=12, H=12, C=768, T=1024, B=16),
}
VOCAB = 256


def tilec_step_ms(train, device, name, steps, graph):
    """train's median ms a step after the first three, and its first and last losses."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "loss.csv")
        cmd = [train, "--device", device, "--config", name, "--steps", str(steps), "--eval-every", str(steps + 1),
               "--eval-batches", "1", "--graph", "on" if graph else "off", "--csv", path, "--svg", ""]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("%s exited %d:\n%s%s" % (" ".join(cmd), r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        with open(path) as f:
            rows = list(csv.DictReader(f))
    ms = [float(x["ms"]) for x in rows[3:]]
    return statistics.median(ms), float(rows[0]["train_loss"]), float(rows[-1]["train_loss"])


def torch_step_ms(cfg, device, steps):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    L, H, C, T, B = cfg["L"], cfg["H"], cfg["C"], cfg["T"], cfg["B"]
    dev = device
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.fc, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = (z.view(b, t, H, C // H).transpose(1, 2) for z in self.qkv(self.ln1(x)).split(C, dim=-1))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, C)
            x = x + self.proj(o)
            return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(VOCAB, C), nn.Embedding(T, C)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = nn.LayerNorm(C)

        def forward(self, tok, tgt):
            x = self.wte(tok) + self.wpe(torch.arange(tok.shape[1], device=tok.device))
            for blk in self.blocks:
                x = blk(x)
            logits = self.lnf(x) @ self.wte.weight.t()  # the head tied to the token embedding
            return F.cross_entropy(logits.view(-1, VOCAB).float(), tgt.view(-1))

    torch.manual_seed(1)
    model = GPT().to(dev)
    for n_, p in model.named_parameters():
        if p.dim() >= 2:
            nn.init.normal_(p, std=0.02)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    tok = torch.randint(0, VOCAB, (steps, B, T), device=dev)
    tgt = (tok * 7 + 3) % VOCAB  # a function of the token, for the loss to fall
    times, losses = [], []
    for i in range(steps):
        sync()
        t0 = time.perf_counter()
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = model(tok[i], tgt[i])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        times.append((time.perf_counter() - t0) * 1e3)
    del model, opt
    if dev == "cuda":
        torch.cuda.empty_cache()
    return statistics.median(times[5:]), losses[0], losses[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                    "build-gpu", "samples", "gpt", "train"))
    ap.add_argument("--configs", default="small,gpt2")
    ap.add_argument("--steps", type=int, default=40, help="steps a run (at least 8)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: a smoke test of this script (tilec's CPU device, torch on the CPU), no timing worth "
                         "reading")
    a = ap.parse_args()
    if a.steps < 8:
        sys.exit("gpt_bench: --steps must be at least 8")
    failed = False
    rows = []
    for name in a.configs.split(","):
        if name not in CONFIGS:
            sys.exit("gpt_bench: no config named '%s' (%s)" % (name, ", ".join(CONFIGS)))
        cfg = CONFIGS[name]
        tokens = cfg["B"] * cfg["T"]
        row = [name]
        for label, fn in (("tilec graph", lambda: tilec_step_ms(a.train, a.device, name, a.steps, True)),
                          ("tilec", lambda: tilec_step_ms(a.train, a.device, name, a.steps, False)),
                          ("torch eager", lambda: torch_step_ms(cfg, a.device, a.steps))):
            try:
                ms, first, last = fn()
                print("%s %s: %.2f ms a step, %.0f tokens/s; loss %.4f -> %.4f" % (name, label, ms, tokens / ms * 1e3,
                                                                                  first, last), flush=True)
                if not (math.isfinite(last) and last < first):
                    print("FAILED: %s %s: the loss did not fall" % (name, label))
                    failed = True
                row.append(ms)
            except Exception as e:  # a failed run is reported, the others still timed
                print("FAILED: %s %s: %s" % (name, label, e))
                failed = True
                row.append(float("nan"))
        rows.append((row, tokens))
    print("\n== gpt training step, bf16, ms (tokens/s); ratio: PyTorch eager's time / tilec's")
    print("| config | tilec, graph | tilec, no graph | PyTorch eager | ratio (graph) | ratio (no graph) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (name, g, e, t), tokens in rows:
        cell = lambda ms: "%.2f (%.0fK)" % (ms, tokens / ms) if math.isfinite(ms) else "failed"
        print("| %s | %s | %s | %s | %.2fx | %.2fx |" % (name, cell(g), cell(e), cell(t), t / g, t / e))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
