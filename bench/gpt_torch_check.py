#!/usr/bin/env python3
"""gpt_torch_check.py - the GPT sample (samples/gpt/) rebuilt in PyTorch from
its own initial weights, trained on its own batches, loss against loss.

An independent check of the sample's model, backward pass and optimizer,
outside CI (it needs torch, which tilec does not): the same model written
the way a PyTorch user would (F.layer_norm, F.scaled_dot_product_attention,
F.gelu(approximate='tanh'), F.cross_entropy, autograd) with AdamW, warmup +
cosine learning rate and global-norm clipping as docs/gpt.md states them,
started from the weights in a step-0 checkpoint (docs/gpt.md, the format)
and fed the batches the sample drew (train --dump-batches). Prints each
step's loss from both and fails if they differ by more than --tol.

    build/samples/gpt/train --device cpu --config tiny --dtype f32 --steps 0 --save /tmp/init.ckpt --csv '' --svg ''
    build/samples/gpt/train --device cpu --config tiny --dtype f32 --steps 20 --dump-batches /tmp/b.bin \\
        --csv /tmp/loss.csv --svg ''
    python3 bench/gpt_torch_check.py /tmp/init.ckpt /tmp/b.bin /tmp/loss.csv --steps 20

The training flags (--lr, --min-lr, --warmup, --weight-decay, --max-norm,
--steps) must be the ones train ran with (train's defaults are these').
"""
import argparse
import csv
import math
import struct
import sys

import torch
import torch.nn.functional as F

VOCAB = 256


def read_checkpoint(path):
    with open(path, "rb") as f:
        head = f.read(64)
        magic, version, dtype, L, H, C, T, B, _, step, rng, n = struct.unpack("<8sII6iqQQ", head)
        if magic != b"TLCGPT1\0" or version != 1:
            sys.exit("%s: not a version 1 tilec GPT checkpoint" % path)
        master = torch.frombuffer(bytearray(f.read(4 * n)), dtype=torch.float32)
    return dict(L=L, H=H, C=C, T=T, B=B, step=step, n=n, dtype=dtype), master


def layout(L, C, T):
    """samples/gpt/model.c's gpt_params_layout: {name: (offset, shape)}, the decayed count."""
    at, out = [0], {}

    def take(name, *shape):
        n = math.prod(shape)
        out[name] = (at[0], shape)
        at[0] += (n + 7) // 8 * 8

    take("wte", VOCAB, C)
    take("wpe", T, C)
    for l in range(L):
        take("w_qkv%d" % l, C, 3 * C)
        take("w_proj%d" % l, C, C)
        take("w_fc%d" % l, C, 4 * C)
        take("w_fc2%d" % l, 4 * C, C)
    n_decay = at[0]
    take("lnf_w", C)
    take("lnf_b", C)
    for l in range(L):
        for name, k in (("ln1_w", 1), ("ln1_b", 1), ("b_qkv", 3), ("b_proj", 1), ("ln2_w", 1), ("ln2_b", 1),
                        ("b_fc", 4), ("b_fc2", 1)):
            take("%s%d" % (name, l), k * C)
    return out, n_decay, at[0]


def forward(P, where, cfg, tok, tgt):
    L, H, C = cfg["L"], cfg["H"], cfg["C"]
    B, T = tok.shape

    def p(name):
        off, shape = where[name]
        return P[off:off + math.prod(shape)].view(shape)

    x = p("wte")[tok] + p("wpe")[:T]
    for l in range(L):
        h = F.layer_norm(x, (C,), p("ln1_w%d" % l), p("ln1_b%d" % l), 1e-5)
        qkv = h @ p("w_qkv%d" % l) + p("b_qkv%d" % l)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in qkv.split(C, dim=-1))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + o @ p("w_proj%d" % l) + p("b_proj%d" % l)
        h = F.layer_norm(x, (C,), p("ln2_w%d" % l), p("ln2_b%d" % l), 1e-5)
        h = F.gelu(h @ p("w_fc%d" % l) + p("b_fc%d" % l), approximate="tanh")
        x = x + h @ p("w_fc2%d" % l) + p("b_fc2%d" % l)
    x = F.layer_norm(x, (C,), p("lnf_w"), p("lnf_b"), 1e-5)
    logits = x @ p("wte").t()
    return F.cross_entropy(logits.view(-1, VOCAB), tgt.reshape(-1))


def lr_at(a, step):
    if step <= a.warmup:
        return a.lr * step / (a.warmup or 1)
    t = min((step - a.warmup) / max(a.steps - a.warmup, 1), 1.0)
    return a.min_lr + 0.5 * (1 + math.cos(math.pi * t)) * (a.lr - a.min_lr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="the step-0 checkpoint (train --steps 0 --save FILE)")
    ap.add_argument("batches", help="train --dump-batches FILE")
    ap.add_argument("losses", help="train --csv FILE")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--warmup", type=int, default=-1, help="default steps / 10, as train's")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--max-norm", type=float, default=1.0)
    ap.add_argument("--tol", type=float, default=1e-4, help="the largest |loss difference| allowed")
    a = ap.parse_args()
    if a.warmup < 0:
        a.warmup = a.steps // 10
    torch.manual_seed(0)
    torch.set_default_dtype(torch.float32)
    cfg, master = read_checkpoint(a.checkpoint)
    if cfg["step"] != 0:
        sys.exit("%s: a checkpoint of step %d; the check starts from step 0" % (a.checkpoint, cfg["step"]))
    where, n_decay, n = layout(cfg["L"], cfg["C"], cfg["T"])
    if n != cfg["n"]:
        sys.exit("the layout here has %d parameters, the checkpoint %d" % (n, cfg["n"]))
    B, T = cfg["B"], cfg["T"]
    R = B * T
    raw = open(a.batches, "rb").read()
    if len(raw) < a.steps * 8 * R:
        sys.exit("%s: %d steps of batches, not %d" % (a.batches, len(raw) // (8 * R), a.steps))
    theirs = [float(r["train_loss"]) for r in csv.DictReader(open(a.losses))]
    P = master.clone().requires_grad_()
    m, v = torch.zeros_like(master), torch.zeros_like(master)
    decay = torch.zeros_like(master)
    decay[:n_decay] = 1
    worst = 0.0
    print("%5s %12s %12s %10s" % ("step", "tilec", "pytorch", "|diff|"))
    for step in range(1, a.steps + 1):
        ints = torch.frombuffer(bytearray(raw[(step - 1) * 8 * R:step * 8 * R]), dtype=torch.int32).long()
        tok, tgt = ints[:R].view(B, T), ints[R:].view(B, T)
        P.grad = None
        loss = forward(P, where, cfg, tok, tgt)
        loss.backward()
        with torch.no_grad():
            g = P.grad
            norm = g.norm().item()
            clip = min(1.0, a.max_norm / norm) if a.max_norm > 0 and norm > 0 else 1.0
            g = g * clip
            b1, b2, eps, lr = 0.9, 0.95, 1e-8, lr_at(a, step)
            m.mul_(b1).add_((1 - b1) * g)
            v.mul_(b2).add_((1 - b2) * g * g)
            mhat, vhat = m / (1 - b1 ** step), v / (1 - b2 ** step)
            P.sub_(lr * (a.weight_decay * decay * P + mhat / (vhat.sqrt() + eps)))
        diff = abs(loss.item() - theirs[step - 1])
        worst = max(worst, diff)
        print("%5d %12.6f %12.6f %10.2e" % (step, theirs[step - 1], loss.item(), diff))
    print("largest |difference| over %d steps: %.2e (tolerance %.0e)" % (a.steps, worst, a.tol))
    return 0 if worst <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
