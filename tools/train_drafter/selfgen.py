"""Self-distillation windows: a corpus prefix followed by the target's own greedy continuation.

At inference a drafter drafts inside the target's greedy (or sampled) continuation, not inside human
text: an undertrained target repeats itself, and a drafter trained only on corpus windows never sees
the features of those stretches. Each window is [corpus prefix of P tokens | target continuation, T+1-P
tokens], P uniform in [min_prefix, max_prefix] (one P per generation batch), the continuation greedy
or sampled (temperature, then the bench sampler's top-k / top-p / min-p settings; the order may
differ from augur's chain). Cached as .npy.
"""
import hashlib, os, time
import numpy as np
import torch
import torch.nn.functional as F
from common import rms_norm, rope_cache, rope_norm, swiglu
from progress import Progress


def pick(logits, temp, gen):
    """argmax (temp 0), else a draw at temp after augur's default filters: top-k 40, top-p 0.95,
    min-p 0.05 (the bench's sampled runs)."""
    if temp <= 0:
        return logits.argmax(-1)
    lp, idx = torch.topk(logits / temp, 40, -1)
    p = torch.softmax(lp, -1)
    keep = (p.cumsum(-1) - p < 0.95) & (p >= 0.05 * p[:, :1])
    p = torch.where(keep, p, torch.zeros_like(p))
    return idx.gather(-1, torch.multinomial(p, 1, generator=gen)).squeeze(-1)


@torch.no_grad()
def continue_target(tgt, prefix, n, temp=0.0, gen=None):
    """n tokens of the target after prefix [B,P], greedy or sampled: preallocated K/V and grouped-query
    attention without copies (the same arithmetic as target.py up to summation order; the windows only
    need to follow the target's likely path)."""
    B, P = prefix.shape
    o = tgt.forward(prefix)
    Hkv, dh, rep = tgt.n_head_kv, tgt.head_dim, tgt.n_head // tgt.n_head_kv
    K = [torch.zeros(B, Hkv, P + n, dh) for _ in tgt.layers]
    V = [torch.zeros(B, Hkv, P + n, dh) for _ in tgt.layers]
    for i, (k, v) in enumerate(o["cache"]):
        K[i][:, :, :P], V[i][:, :, :P] = k, v
    nxt = pick(o["logits"][:, -1], temp, gen)
    outs = [nxt]
    for p in range(P, P + n - 1):
        cos, sin = rope_cache(torch.tensor([p]), tgt.n_rot, tgt.rope_base)
        x = F.embedding(nxt[:, None], tgt.tok_embd)                     # [B,1,D]
        for i, L in enumerate(tgt.layers):
            h = rms_norm(x, L["attn_norm"], tgt.eps)
            q = F.linear(h, L["attn_q"]).view(B, 1, tgt.n_head, dh).transpose(1, 2)
            k = F.linear(h, L["attn_k"]).view(B, 1, Hkv, dh).transpose(1, 2)
            v = F.linear(h, L["attn_v"]).view(B, 1, Hkv, dh).transpose(1, 2)
            q, k = rope_norm(q, cos, sin), rope_norm(k, cos, sin)
            K[i][:, :, p:p + 1], V[i][:, :, p:p + 1] = k, v
            qg = q.reshape(B, Hkv, rep, dh)                              # head h uses kv head h // rep
            att = torch.softmax(qg @ K[i][:, :, :p + 1].transpose(-1, -2) / dh ** 0.5, -1)
            a = (att @ V[i][:, :, :p + 1]).reshape(B, 1, tgt.n_head * dh)
            x = x + F.linear(a, L["attn_output"])
            x = x + swiglu(rms_norm(x, L["ffn_norm"], tgt.eps), L["ffn_gate"], L["ffn_up"], L["ffn_down"])
        nxt = pick(F.linear(rms_norm(x[:, -1], tgt.output_norm, tgt.eps), tgt.output), temp, gen)
        outs.append(nxt)
    return torch.stack(outs, 1)


def cache_path(cache_dir, model, n_windows, T, min_prefix, max_prefix, seed, temp):
    h = hashlib.sha1(open(model, "rb").read(1 << 20)).hexdigest()[:10]
    tag = f"{os.path.basename(model)}-{h}-n{n_windows}-T{T}-p{min_prefix}-{max_prefix}-s{seed}-t{temp:g}"
    return os.path.join(cache_dir, f"selfgen-{tag}.npy")


@torch.no_grad()
def build(tgt, stream, cache_dir, model, n_windows, T=256, min_prefix=16, max_prefix=128, batch=64,
          seed=4321, temp=0.0):
    """Returns int32 [n_windows, T+1] (built once, then loaded from the cache). temp > 0: sampled."""
    path = cache_path(cache_dir, model, n_windows, T, min_prefix, max_prefix, seed, temp)
    if os.path.exists(path):
        return np.load(path)
    os.makedirs(cache_dir, exist_ok=True)
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    out = np.empty((n_windows, T + 1), dtype=np.int32)
    prog, t0 = Progress(0, f"selfgen t={temp:g}"), time.time()
    for i in range(0, n_windows, batch):
        b = min(batch, n_windows - i)
        P = int(rng.integers(min_prefix, max_prefix + 1))
        starts = rng.integers(0, len(stream) - P, size=b)
        prefix = torch.from_numpy(np.stack([stream[s:s + P] for s in starts]).astype(np.int64))
        cont = continue_target(tgt, prefix, T + 1 - P, temp, gen)
        out[i:i + b] = torch.cat([prefix, cont], 1).numpy()
        el = time.time() - t0
        prog.update(el, i + b, windows=f"{i + b}/{n_windows}", tok_s=(i + b) * (T + 1 - P) / max(el, 1e-9))
    prog.close()
    np.save(path, out)
    return out
