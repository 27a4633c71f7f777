#!/usr/bin/env python3
"""Train the two tiny byte-level SSM language models of replayssm (GDN and Mamba-2) on PG-19 train books.

Runs on the GPU machine (PyTorch); every step is seeded. Outputs, per arch, into --out:
  tiny_<arch>.npz           every tensor (float32, values rounded to bf16-exact) plus the config as JSON
  tiny_<arch>.golden.npz    float64 log-probs [512, 256] of the exported model on the first 512 bytes of a test book
  tiny_<arch>.metrics.json  bits/byte on the test books vs a unigram baseline, train time, steps
`datasets/export_h5.py` turns the npz files into the committed HDF5 files (datasets/models/).

Math (the C++ runtime src/runtime/ recomputes exactly this in FP64; datasets/README.md states it in full):
  layer: h += mixer(rmsnorm(h) * w1); h += mlp(rmsnorm(h) * w2); logits = lm_head(rmsnorm(h) * wf); lm_head untied.
  rmsnorm(x) = x / sqrt(mean(x^2) + eps)
  conv: depthwise causal, out[t, c] = bias[c] + sum_{i<W} w[c, i] * in[t - (W-1) + i, c] (zero before t = 0)
  GDN (Qwen3.5 style):  q,k,v = silu(conv(x W^T)); q,k = l2norm(q), l2norm(k) per key head (x / sqrt(sum x^2 + eps));
     g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b); S_t = e^g S (I - beta k k^T) + beta v k^T;
     o = S_t (q / sqrt(K)); value head h reads key head h // (Hv / Hk);
     y = rmsnorm_head(o) * w_norm[V] * silu(z) (per value head over V), out = y W_out^T
  Mamba-2 (Nemotron-H style): z, x, B, C, dt = x W^T; x, B, C = silu(conv(.) + bias); dt = softplus(dt + dt_bias);
     A = -exp(A_log); S_t = exp(dt A) S + (dt x) B^T; y = S_t C + D x; head h reads group h // (H / G);
     y = rmsnorm_group(y * silu(z)) * w_norm (groups of d_inner / G channels), out = y W_out^T
  softplus(x) = x if x > 20 else log1p(exp(x)) (torch's threshold); silu(x) = x * sigmoid(x).
  MLP (SwiGLU): (silu(x W_gate^T) * (x W_up^T)) W_down^T.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SOFTPLUS_THRESHOLD = 20.0


def softplus(x):
    return torch.where(x > SOFTPLUS_THRESHOLD, x, torch.log1p(torch.exp(torch.clamp(x, max=SOFTPLUS_THRESHOLD))))


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def l2norm(x, eps):
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + eps)


def causal_conv(x, w, bias=None):
    """x [B, T, C], w [C, W] -> [B, T, C]; out[t] = bias + sum_i w[:, i] * x[t - (W-1) + i]."""
    W = w.shape[1]
    xt = F.pad(x.transpose(1, 2), (W - 1, 0))
    y = F.conv1d(xt, w.unsqueeze(1), bias, groups=w.shape[0])
    return y.transpose(1, 2)


# ----------------------------------------------------------------------------------------------------------------
# Recurrences. Shapes: per head, with S of shape [V, K] (o = S q). Inputs in [B, T, H, dim] layout.
# ----------------------------------------------------------------------------------------------------------------

def gdn_recurrent(q, k, v, g, beta, scale):
    """q,k [B,T,H,K] (already expanded to value heads, L2-normalised), v [B,T,H,V], g, beta [B,T,H]."""
    Bsz, T, H, K = q.shape
    V = v.shape[-1]
    S = q.new_zeros(Bsz, H, V, K)
    out = []
    for t in range(T):
        S = S * torch.exp(g[:, t])[..., None, None]
        kt = k[:, t]
        u = beta[:, t][..., None] * (v[:, t] - torch.einsum("bhvk,bhk->bhv", S, kt))
        S = S + u[..., :, None] * kt[..., None, :]
        out.append(torch.einsum("bhvk,bhk->bhv", S, q[:, t] * scale))
    return torch.stack(out, 1)


def mamba2_recurrent(x, Bm, Cm, dt, A, D):
    """x [B,T,H,P], Bm, Cm [B,T,H,N] (expanded to heads), dt [B,T,H], A, D [H]."""
    Bsz, T, H, P = x.shape
    N = Bm.shape[-1]
    S = x.new_zeros(Bsz, H, P, N)
    out = []
    for t in range(T):
        a = torch.exp(dt[:, t] * A)
        S = S * a[..., None, None] + (dt[:, t][..., None] * x[:, t])[..., :, None] * Bm[:, t][..., None, :]
        out.append(torch.einsum("bhpn,bhn->bhp", S, Cm[:, t]) + D[:, None] * x[:, t])
    return torch.stack(out, 1)


def _chunk(x, C):
    # [B, T, H, ...] -> [B, H, n, C, ...]
    Bsz, T, H = x.shape[:3]
    x = x.reshape(Bsz, T // C, C, H, *x.shape[3:])
    return x.transpose(1, 3).transpose(2, 3) if x.dim() > 4 else x.permute(0, 3, 1, 2)


def gdn_chunked(q, k, v, g, beta, scale, C=64):
    """Same math as gdn_recurrent, in chunks (WY form): per chunk (I + A) U = beta V - diag(beta e^gamma) K h."""
    Bsz, T, H, K = q.shape
    V = v.shape[-1]
    pad = (-T) % C
    if pad:
        q, k, v = (F.pad(t_, (0, 0, 0, 0, 0, pad)) for t_ in (q, k, v))
        g, beta = (F.pad(t_, (0, 0, 0, pad)) for t_ in (g, beta))
    q, k, v = _chunk(q, C), _chunk(k, C), _chunk(v, C)            # [B,H,n,C,d]
    g, beta = _chunk(g, C), _chunk(beta, C)                          # [B,H,n,C]
    gam = g.cumsum(-1)
    diff = gam[..., :, None] - gam[..., None, :]                     # gamma_t - gamma_j
    incl = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    strict = torch.ones(C, C, dtype=torch.bool, device=q.device).tril(-1)
    dec_incl = torch.exp(diff.masked_fill(~incl, -float("inf")))
    dec_strict = torch.exp(diff.masked_fill(~strict, -float("inf")))
    kk = k @ k.transpose(-1, -2)
    A = beta[..., :, None] * dec_strict * kk
    eye = torch.eye(C, dtype=q.dtype, device=q.device)
    Tinv = torch.linalg.solve_triangular(eye + A, eye.expand_as(A), upper=False, unitriangular=True)
    W1 = Tinv @ (beta[..., None] * v)                                # [B,H,n,C,V]
    W2 = Tinv @ ((beta * torch.exp(gam))[..., None] * k)             # [B,H,n,C,K]
    qs = q * scale
    qk = (qs @ k.transpose(-1, -2)) * dec_incl
    h = q.new_zeros(Bsz, H, K, V)                                    # h = S^T
    outs = []
    n = q.shape[2]
    for i in range(n):
        U = W1[:, :, i] - W2[:, :, i] @ h
        o = (torch.exp(gam[:, :, i])[..., None] * qs[:, :, i]) @ h + qk[:, :, i] @ U
        outs.append(o)
        gl = gam[:, :, i, -1]
        h = torch.exp(gl)[..., None, None] * h + (k[:, :, i] * torch.exp(gl[..., None] - gam[:, :, i])[..., None]).transpose(-1, -2) @ U
    o = torch.stack(outs, 2)                                         # [B,H,n,C,V]
    o = o.permute(0, 2, 3, 1, 4).reshape(Bsz, n * C, H, V)
    return o[:, :T]


def mamba2_chunked(x, Bm, Cm, dt, A, D, C=64):
    Bsz, T, H, P = x.shape
    N = Bm.shape[-1]
    pad = (-T) % C
    xin = x
    v = dt[..., None] * x
    l = dt * A
    if pad:
        v, Bm, Cm = (F.pad(t_, (0, 0, 0, 0, 0, pad)) for t_ in (v, Bm, Cm))
        l = F.pad(l, (0, 0, 0, pad))
    v, kB, qC = _chunk(v, C), _chunk(Bm, C), _chunk(Cm, C)
    gam = _chunk(l, C).cumsum(-1)
    diff = gam[..., :, None] - gam[..., None, :]
    incl = torch.ones(C, C, dtype=torch.bool, device=x.device).tril()
    dec_incl = torch.exp(diff.masked_fill(~incl, -float("inf")))
    qk = (qC @ kB.transpose(-1, -2)) * dec_incl
    intra = qk @ v                                                   # [B,H,n,C,P]
    h = x.new_zeros(Bsz, H, N, P)
    outs = []
    for i in range(v.shape[2]):
        outs.append(intra[:, :, i] + (torch.exp(gam[:, :, i])[..., None] * qC[:, :, i]) @ h)
        gl = gam[:, :, i, -1]
        h = torch.exp(gl)[..., None, None] * h + (kB[:, :, i] * torch.exp(gl[..., None] - gam[:, :, i])[..., None]).transpose(-1, -2) @ v[:, :, i]
    o = torch.stack(outs, 2).permute(0, 2, 3, 1, 4).reshape(Bsz, -1, H, P)[:, :T]
    return o + D[:, None] * xin


# ----------------------------------------------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------------------------------------------

def default_config(arch):
    common = dict(vocab=256, d_model=256, n_layers=4, d_ff=512, conv_kernel=4, norm_eps=1e-6)
    if arch == "gdn":
        return dict(arch="gdn", Hk=1, Hv=2, K=128, V=128, l2norm_eps=1e-6, gated_norm_eps=1e-6, **common)
    if arch == "mamba2":
        return dict(arch="mamba2", H=8, G=2, P=64, N=128, d_inner=512, gated_norm_eps=1e-5, **common)
    raise ValueError(arch)


def _dt_init(n, gen):
    dt = torch.exp(torch.rand(n, generator=gen) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3)).clamp(min=1e-4)
    return dt + torch.log(-torch.expm1(-dt))  # inverse softplus


class Mixer(nn.Module):
    def __init__(self, cfg, gen):
        super().__init__()
        self.cfg = cfg
        d, W = cfg["d_model"], cfg["conv_kernel"]

        def lin(o, i):
            return nn.Parameter(torch.randn(o, i, generator=gen) / math.sqrt(i))

        def conv(c):
            return nn.Parameter(torch.randn(c, W, generator=gen) / math.sqrt(W))

        if cfg["arch"] == "gdn":
            Hk, Hv, K, V = cfg["Hk"], cfg["Hv"], cfg["K"], cfg["V"]
            self.in_q, self.in_k, self.in_v, self.in_z = lin(Hk * K, d), lin(Hk * K, d), lin(Hv * V, d), lin(Hv * V, d)
            self.in_a, self.in_b = lin(Hv, d), lin(Hv, d)
            self.conv_q, self.conv_k, self.conv_v = conv(Hk * K), conv(Hk * K), conv(Hv * V)
            self.A_log = nn.Parameter(torch.log(torch.empty(Hv).uniform_(1.0, 16.0, generator=gen)))
            self.dt_bias = nn.Parameter(_dt_init(Hv, gen))
            self.norm = nn.Parameter(torch.ones(V))
            self.out = nn.Parameter(torch.randn(d, Hv * V, generator=gen) / math.sqrt(Hv * V) / math.sqrt(2 * cfg["n_layers"]))
        else:
            H, G, P, N, di = cfg["H"], cfg["G"], cfg["P"], cfg["N"], cfg["d_inner"]
            assert H * P == di
            self.in_z, self.in_x, self.in_B, self.in_C, self.in_dt = lin(di, d), lin(di, d), lin(G * N, d), lin(G * N, d), lin(H, d)
            self.conv_x, self.conv_B, self.conv_C = conv(di), conv(G * N), conv(G * N)
            self.conv_bias_x, self.conv_bias_B, self.conv_bias_C = (nn.Parameter(torch.zeros(c)) for c in (di, G * N, G * N))
            self.A_log = nn.Parameter(torch.log(torch.empty(H).uniform_(1.0, 16.0, generator=gen)))
            self.dt_bias = nn.Parameter(_dt_init(H, gen))
            self.D = nn.Parameter(torch.ones(H))
            self.norm = nn.Parameter(torch.ones(di))
            self.out = nn.Parameter(torch.randn(d, di, generator=gen) / math.sqrt(di) / math.sqrt(2 * cfg["n_layers"]))

    def recurrence_inputs(self, x):
        """x [B,T,d] (normed) -> dict of recurrence inputs in float32/64 of x's dtype, plus the gate z."""
        cfg = self.cfg
        Bsz, T, _ = x.shape
        if cfg["arch"] == "gdn":
            Hk, Hv, K, V = cfg["Hk"], cfg["Hv"], cfg["K"], cfg["V"]
            q = F.silu(causal_conv(x @ self.in_q.t(), self.conv_q)).reshape(Bsz, T, Hk, K)
            k = F.silu(causal_conv(x @ self.in_k.t(), self.conv_k)).reshape(Bsz, T, Hk, K)
            v = F.silu(causal_conv(x @ self.in_v.t(), self.conv_v)).reshape(Bsz, T, Hv, V)
            z = (x @ self.in_z.t()).reshape(Bsz, T, Hv, V)
            a, b = x @ self.in_a.t(), x @ self.in_b.t()
            return dict(q=q, k=k, v=v, z=z, a=a, b=b)
        H, G, P, N = cfg["H"], cfg["G"], cfg["P"], cfg["N"]
        z = (x @ self.in_z.t()).reshape(Bsz, T, H, P)
        xs = F.silu(causal_conv(x @ self.in_x.t(), self.conv_x, self.conv_bias_x)).reshape(Bsz, T, H, P)
        Bm = F.silu(causal_conv(x @ self.in_B.t(), self.conv_B, self.conv_bias_B)).reshape(Bsz, T, G, N)
        Cm = F.silu(causal_conv(x @ self.in_C.t(), self.conv_C, self.conv_bias_C)).reshape(Bsz, T, G, N)
        dt = x @ self.in_dt.t()
        return dict(z=z, x=xs, B=Bm, C=Cm, dt=dt)

    def forward(self, x, mode):
        cfg = self.cfg
        r = self.recurrence_inputs(x)
        with torch.autocast(device_type=x.device.type, enabled=False):
            dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
            r = {n: t.to(dtype) for n, t in r.items()}
            if cfg["arch"] == "gdn":
                Hk, Hv, K, V = cfg["Hk"], cfg["Hv"], cfg["K"], cfg["V"]
                q = l2norm(r["q"], cfg["l2norm_eps"]).repeat_interleave(Hv // Hk, dim=2)
                k = l2norm(r["k"], cfg["l2norm_eps"]).repeat_interleave(Hv // Hk, dim=2)
                g = -torch.exp(self.A_log.to(dtype)) * softplus(r["a"] + self.dt_bias.to(dtype))
                beta = torch.sigmoid(r["b"])
                fn = gdn_recurrent if mode == "recurrent" else gdn_chunked
                o = fn(q, k, r["v"], g, beta, 1.0 / math.sqrt(K))
                y = rmsnorm(o, self.norm.to(dtype), cfg["gated_norm_eps"]) * F.silu(r["z"])
                y = y.reshape(*y.shape[:2], Hv * V)
            else:
                H, G, P, N = cfg["H"], cfg["G"], cfg["P"], cfg["N"]
                dt = softplus(r["dt"] + self.dt_bias.to(dtype))
                A = -torch.exp(self.A_log.to(dtype))
                Bm = r["B"].repeat_interleave(H // G, dim=2)
                Cm = r["C"].repeat_interleave(H // G, dim=2)
                fn = mamba2_recurrent if mode == "recurrent" else mamba2_chunked
                o = fn(r["x"], Bm, Cm, dt, A, self.D.to(dtype))
                y = o * F.silu(r["z"])
                y = y.reshape(*y.shape[:2], G, H * P // G)
                y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + cfg["gated_norm_eps"])
                y = y.reshape(*y.shape[:2], H * P) * self.norm.to(dtype)
        return y.to(x.dtype) @ self.out.t()


class Layer(nn.Module):
    def __init__(self, cfg, gen):
        super().__init__()
        d, f = cfg["d_model"], cfg["d_ff"]
        self.norm1 = nn.Parameter(torch.ones(d))
        self.mixer = Mixer(cfg, gen)
        self.norm2 = nn.Parameter(torch.ones(d))
        self.w_gate = nn.Parameter(torch.randn(f, d, generator=gen) / math.sqrt(d))
        self.w_up = nn.Parameter(torch.randn(f, d, generator=gen) / math.sqrt(d))
        self.w_down = nn.Parameter(torch.randn(d, f, generator=gen) / math.sqrt(f) / math.sqrt(2 * cfg["n_layers"]))
        self.eps = cfg["norm_eps"]

    def forward(self, h, mode):
        h = h + self.mixer(rmsnorm(h, self.norm1, self.eps), mode)
        x = rmsnorm(h, self.norm2, self.eps)
        return h + (F.silu(x @ self.w_gate.t()) * (x @ self.w_up.t())) @ self.w_down.t()


class TinyLM(nn.Module):
    def __init__(self, cfg, seed):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        d = cfg["d_model"]
        self.cfg = cfg
        self.embed = nn.Parameter(torch.randn(cfg["vocab"], d, generator=gen))
        self.layers = nn.ModuleList(Layer(cfg, gen) for _ in range(cfg["n_layers"]))
        self.final_norm = nn.Parameter(torch.ones(d))
        self.lm_head = nn.Parameter(torch.randn(cfg["vocab"], d, generator=gen) / math.sqrt(d))

    def forward(self, tokens, mode="chunked"):
        h = self.embed[tokens]
        for layer in self.layers:
            h = layer(h, mode)
        return rmsnorm(h, self.final_norm, self.cfg["norm_eps"]) @ self.lm_head.t()

    def export(self):
        """name -> float32 numpy array; HDF5 paths as in datasets/README.md."""
        out = {}
        for name, p in self.named_parameters():
            path = name.replace("layers.", "layers/").replace(".mixer.", "/mixer/").replace(".", "/")
            out[path] = p.detach().float().cpu().numpy()
        return out


# ----------------------------------------------------------------------------------------------------------------
# Data and evaluation
# ----------------------------------------------------------------------------------------------------------------

def load_books(folder):
    names = sorted(n for n in os.listdir(folder) if n.endswith(".txt"))
    return {n: np.frombuffer(open(os.path.join(folder, n), "rb").read(), dtype=np.uint8) for n in names}


def unigram_bpb(train, test_books):
    counts = np.bincount(train, minlength=256).astype(np.float64) + 1.0
    logp = np.log2(counts / counts.sum())
    tot = sum(len(b) for b in test_books.values())
    return float(-sum(logp[b].sum() for b in test_books.values()) / tot)


@torch.no_grad()
def eval_bpb(model, test_books, seq, device, batch=16):
    """Non-overlapping windows of seq bytes per book (state reset per window); nats over predicted bytes."""
    model.eval()
    windows = []
    for b in test_books.values():
        for s in range(0, len(b) - 1, seq):
            w = b[s:s + seq + 1]
            if len(w) >= 2:
                windows.append(w)
    tot_nll, tot_n = 0.0, 0
    for i in range(0, len(windows), batch):
        grp = windows[i:i + batch]
        L = max(len(w) for w in grp)
        x = torch.zeros(len(grp), L, dtype=torch.long)
        m = torch.zeros(len(grp), L - 1)
        for j, w in enumerate(grp):
            x[j, :len(w)] = torch.from_numpy(w.astype(np.int64))
            m[j, :len(w) - 1] = 1
        x, m = x.to(device), m.to(device)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = model(x[:, :-1])
        nll = F.cross_entropy(logits.float().reshape(-1, 256), x[:, 1:].reshape(-1), reduction="none")
        tot_nll += float((nll * m.reshape(-1)).sum())
        tot_n += int(m.sum())
    model.train()
    return tot_nll / tot_n / math.log(2)


@torch.no_grad()
def eval_long(model, book, n, device):
    """One teacher-forced sequence of n bytes; bits/byte per power-of-two position bin."""
    model.eval()
    x = torch.from_numpy(book[:n + 1].astype(np.int64))[None].to(device)
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        logits = model(x[:, :-1])
    nll = F.cross_entropy(logits.float()[0], x[0, 1:], reduction="none").cpu().numpy() / math.log(2)
    model.train()
    bins, lo = {}, 0
    hi = 1
    while lo < n:
        bins[f"{lo}-{min(hi, n)}"] = float(nll[lo:hi].mean())
        lo, hi = hi, hi * 2
    return float(nll.mean()), bins


def golden(model, tokens):
    """float64 log-probs of the model, recurrent form, on CPU."""
    m = TinyLM(model.cfg, 0)
    m.load_state_dict({k: v.detach().cpu() for k, v in model.state_dict().items()})
    m = m.double().eval()
    with torch.no_grad():
        logits = m(torch.from_numpy(tokens.astype(np.int64))[None], mode="recurrent")[0]
        return torch.log_softmax(logits, -1).numpy()


# ----------------------------------------------------------------------------------------------------------------

def train(args):
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    device = torch.device(args.device)
    cfg = default_config(args.arch)
    for kv in args.set or []:
        k, v = kv.split("=")
        cfg[k] = type(cfg[k])(v)
    train_books = load_books(args.train_dir)
    test_books = load_books(args.test_dir)
    data = np.concatenate(list(train_books.values()))
    print(f"[{args.arch}] train bytes {len(data)} in {len(train_books)} books; test {sum(map(len, test_books.values()))} bytes in {len(test_books)} books", flush=True)
    model = TinyLM(cfg, args.seed).to(device)
    nparam = sum(p.numel() for p in model.parameters())
    print(f"[{args.arch}] params {nparam} cfg {json.dumps(cfg)}", flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and n != "embed"]
    other = [p for n, p in model.named_parameters() if not (p.dim() == 2 and n != "embed")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    rng = np.random.default_rng(args.seed)

    def batch():
        idx = rng.integers(0, len(data) - args.seq - 1, size=args.batch)
        x = np.stack([data[i:i + args.seq + 1] for i in idx]).astype(np.int64)
        return torch.from_numpy(x).to(device, non_blocking=True)

    def step_fn(it, total):
        warm = min(100, total // 10 + 1)
        lr = args.lr * (it + 1) / warm if it < warm else \
            args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (it - warm) / max(1, total - warm))))
        for gr in opt.param_groups:
            gr["lr"] = lr
        x = batch()
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, 256), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    t0 = time.time()
    total = args.steps
    if total <= 0:  # calibrate: time a few steps, then fit the budget
        for it in range(args.calib):
            step_fn(it, 10 ** 9)
        if device.type == "cuda":
            torch.cuda.synchronize()
        per = (time.time() - t0) / args.calib
        total = max(args.calib + 1, int(args.train_seconds / per))
        print(f"[{args.arch}] {per * 1e3:.1f} ms/step -> {total} steps", flush=True)
        start = args.calib
    else:
        start = 0
    for it in range(start, total):
        loss = step_fn(it, total)
        if it % 200 == 0 or it == total - 1:
            print(f"[{args.arch}] step {it}/{total} loss {loss.item() / math.log(2):.4f} bits/byte  {time.time() - t0:.0f}s", flush=True)
    train_s = time.time() - t0

    # Round every tensor to bf16-exact float32: the exported model IS the evaluated model.
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())

    uni = unigram_bpb(data, test_books)
    bpb = eval_bpb(model, test_books, args.eval_seq, device)
    first = sorted(test_books)[0] if args.golden_book is None else args.golden_book
    long_bpb, bins = eval_long(model, test_books[first], min(args.long_n, len(test_books[first]) - 1), device)
    print(f"[{args.arch}] test bits/byte {bpb:.4f} (windows of {args.eval_seq}) vs unigram {uni:.4f}; "
          f"{first} first {args.long_n} bytes in one sequence: {long_bpb:.4f}", flush=True)

    tokens = test_books[first][:args.golden_n]
    lp = golden(model, tokens)
    # float32 chunked vs float64 recurrent on the golden text: a check that training used the same math.
    with torch.no_grad():
        lp32 = torch.log_softmax(model.float()(torch.from_numpy(tokens.astype(np.int64))[None].to(device))[0].float(), -1).cpu().numpy()
    gold_dev = float(np.abs(lp32 - lp).max())
    print(f"[{args.arch}] golden: max |chunked fp32 - recurrent fp64| log-prob = {gold_dev:.3e}", flush=True)

    os.makedirs(args.out, exist_ok=True)
    tensors = model.export()
    np.savez(os.path.join(args.out, f"tiny_{args.arch}.npz"), __config__=np.array(json.dumps(cfg)), **tensors)
    np.savez(os.path.join(args.out, f"tiny_{args.arch}.golden.npz"), tokens=tokens, logprobs=lp,
             book=np.array(first), offset=np.array(0))
    metrics = dict(arch=args.arch, config=cfg, params=nparam, steps=total, seq=args.seq, batch=args.batch, lr=args.lr,
                   seed=args.seed, train_seconds=train_s, train_bytes=int(len(data)), train_books=len(train_books),
                   test_books=sorted(test_books), test_bpb=bpb, eval_seq=args.eval_seq, unigram_bpb=uni,
                   long_book=first, long_n=args.long_n, long_bpb=long_bpb, long_bins=bins,
                   golden_book=first, golden_n=int(len(tokens)), golden_chunked_fp32_maxdiff=gold_dev,
                   torch=torch.__version__, device=torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu")
    with open(os.path.join(args.out, f"tiny_{args.arch}.metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)


def selftest(args):
    """Chunked forms == recurrent forms in float64, and the recurrent form == a per-head loop of the spec."""
    torch.manual_seed(0)
    B, T, H = 2, 150, 3
    K, V = 16, 8
    q = l2norm(torch.randn(B, T, H, K, dtype=torch.float64), 1e-6)
    k = l2norm(torch.randn(B, T, H, K, dtype=torch.float64), 1e-6)
    v = torch.randn(B, T, H, V, dtype=torch.float64)
    g = -torch.rand(B, T, H, dtype=torch.float64)
    beta = torch.rand(B, T, H, dtype=torch.float64)
    r = gdn_recurrent(q, k, v, g, beta, 0.25)
    c = gdn_chunked(q, k, v, g, beta, 0.25, C=16)
    e1 = float((r - c).abs().max())
    # spec: S_t = a S (I - b k k^T) + b v k^T
    S = torch.zeros(V, K, dtype=torch.float64)
    for t in range(T):
        kt = k[1, t, 2]
        S = torch.exp(g[1, t, 2]) * S @ (torch.eye(K, dtype=torch.float64) - beta[1, t, 2] * torch.outer(kt, kt)) + beta[1, t, 2] * torch.outer(v[1, t, 2], kt)
    e0 = float((S @ (0.25 * q[1, -1, 2]) - r[1, -1, 2]).abs().max())
    x = torch.randn(B, T, H, V, dtype=torch.float64)
    dt = torch.rand(B, T, H, dtype=torch.float64) * 0.5
    A = -torch.rand(H, dtype=torch.float64) * 3
    D = torch.randn(H, dtype=torch.float64)
    r2 = mamba2_recurrent(x, k, q, dt, A, D)
    c2 = mamba2_chunked(x, k, q, dt, A, D, C=16)
    e2 = float((r2 - c2).abs().max())
    print(f"selftest: gdn spec-vs-recurrent {e0:.2e}, gdn chunked-vs-recurrent {e1:.2e}, mamba2 chunked-vs-recurrent {e2:.2e}")
    for arch in ("gdn", "mamba2"):
        cfg = default_config(arch)
        cfg.update(n_layers=2)
        m = TinyLM(cfg, 1).double()
        toks = torch.randint(0, 256, (2, 70))
        with torch.no_grad():
            e = float((m(toks, "recurrent") - m(toks, "chunked")).abs().max())
        print(f"selftest: {arch} model recurrent vs chunked logits {e:.2e}")
        assert e < 1e-9
    assert max(e0, e1, e2) < 1e-10
    print("selftest OK")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--arch", choices=["gdn", "mamba2"], required=True)
    t.add_argument("--train-dir", required=True)
    t.add_argument("--test-dir", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    t.add_argument("--seed", type=int, default=1234)
    t.add_argument("--seq", type=int, default=1024)
    t.add_argument("--batch", type=int, default=64)
    t.add_argument("--lr", type=float, default=3e-3)
    t.add_argument("--steps", type=int, default=0, help="0: calibrate to --train-seconds")
    t.add_argument("--train-seconds", type=float, default=150.0)
    t.add_argument("--calib", type=int, default=20)
    t.add_argument("--eval-seq", type=int, default=8192)
    t.add_argument("--long-n", type=int, default=131072)
    t.add_argument("--golden-book", default="10146.txt", help="test file name (the first PG-19 test book)")
    t.add_argument("--golden-n", type=int, default=512)
    t.add_argument("--set", nargs="*", help="config overrides key=value")
    sub.add_parser("selftest")
    args = ap.parse_args()
    if args.cmd == "selftest":
        selftest(args)
    else:
        train(args)


if __name__ == "__main__":
    main()
