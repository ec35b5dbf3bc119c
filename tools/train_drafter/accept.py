"""Greedy-drafting acceptance on held-out text: EAGLE-3 / DFlash drafters vs a plain llama draft model.

For a held-out context ending at position P the target's greedy continuation is c1..c9 (c1 = id_last,
not yet in the target's KV). A drafter proposes d1..d8 after c1 and the first mismatch with c2..c9 stops
acceptance; tau_k = 1 + (accepted drafts among the first k) = target tokens committed per target forward.
DFlash drafts d1..dn in one block forward [c1, MASK×n] (n = block_size − 1), greedy per position.
"""
import numpy as np
import torch
import torch.nn.functional as F

N_DRAFT = 8


def sample_contexts(stream, n, ctx, seed):
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(stream) - ctx - 1, size=n)
    return torch.from_numpy(np.stack([stream[s:s + ctx] for s in starts]).astype(np.int64))


@torch.no_grad()
def eagle3_drafts(tgt, dr, taps, ctx, c1):
    """ctx [B,W], c1 [B]: features of the W context rows, then greedy drafting with own y fed back."""
    B, W = ctx.shape
    o = tgt.forward(ctx, taps=taps, logits=False)
    g = dr.encode(torch.cat([o["feats"][l] for l in taps], -1))
    toks = torch.cat([ctx[:, 1:], c1[:, None]], 1)          # row P holds token t_{P+1}
    drafts = []
    for s in range(N_DRAFT):
        pos = torch.arange(toks.shape[1])
        y = dr.forward_causal(F.embedding(toks, tgt.tok_embd), g, pos)
        d = dr.draft_ids(dr.logits(y[:, -1], dr.out_w))
        drafts.append(d)
        toks = torch.cat([toks, d[:, None]], 1)
        g = torch.cat([g, y[:, -1:]], 1)
    return torch.stack(drafts, 1)


@torch.no_grad()
def dflash_drafts(tgt, dr, taps, mask_id, n, ctx, c1):
    """ctx [B,W], c1 [B]: the target's taps of the W context rows are injected at positions 0..W-1, then
    one block [c1, MASK×n] at W..W+n gives all n drafts (argmax per block position)."""
    from dflash import draft_block
    o = tgt.forward(ctx, taps=taps, logits=False)
    feats = torch.cat([o["feats"][l] for l in taps], -1)
    return draft_block(dr, feats, c1, n, mask_id, tgt.tok_embd, tgt.output)


def accepted(drafts, cont):
    """number of leading drafts equal to the target continuation (c2..)."""
    eq = (drafts == cont[:, 1:1 + drafts.shape[1]]).int()
    return eq.cumprod(1).sum(1)


def report(name, acc, n_draft=N_DRAFT, ks=(1, 4, 8)):
    """n_draft: positions shown (acceptance beyond it is cut); ks: tau_k to print."""
    acc = np.minimum(np.asarray(acc), n_draft)
    lines = [f"{name}: n={len(acc)}"]
    reach = [(acc >= i).mean() for i in range(n_draft + 1)]
    cond = [reach[i] / reach[i - 1] if reach[i - 1] > 0 else 0.0 for i in range(1, n_draft + 1)]
    lines.append("  P(draft i accepted | i-1 accepted): " + " ".join(f"{c:.3f}" for c in cond))
    lines.append("  P(draft i accepted):                " + " ".join(f"{r:.3f}" for r in reach[1:]))
    taus = {k: float(1 + np.minimum(acc, k).mean()) for k in ks}
    lines.append("  tau: " + "  ".join(f"k={k}: {v:.3f}" for k, v in taus.items()))
    return "\n".join(lines), taus, cond


@torch.no_grad()
def evaluate(tgt, heldout, drafters, n=256, ctx=128, batch=32, seed=7):
    """drafters: dict name -> fn(ctx [B,W], c1 [B]) -> drafts [B,8]. Returns dict name -> accepted counts."""
    X = sample_contexts(heldout, n, ctx, seed)
    res = {k: [] for k in drafters}
    for i in range(0, n, batch):
        cx = X[i:i + batch]
        cont = tgt.greedy(cx, N_DRAFT + 1)
        for k, fn in drafters.items():
            res[k].append(accepted(fn(cx, cont[:, 0]), cont))
    return {k: torch.cat(v).numpy() for k, v in res.items()}


def plain_draft_fn(draft_model):
    return lambda cx, c1: draft_model.greedy(torch.cat([cx, c1[:, None]], 1), N_DRAFT)


@torch.no_grad()
def mtp_drafts(tgt, mtp, ctx, c1):
    """MTP: rows (t_p, h_{p-1}) for p = 1..W-1, then (c1, h_{W-1}) at W; own h' fed back afterwards."""
    B, W = ctx.shape
    h = tgt.forward(ctx, taps=(tgt.n_layer,), logits=False)["feats"][tgt.n_layer]
    toks = torch.cat([ctx[:, 1:], c1[:, None]], 1)       # rows p = 1..W
    hs = h                                                 # h_{p-1} for those rows
    drafts = []
    for s in range(N_DRAFT):
        pos = torch.arange(1, toks.shape[1] + 1)
        hp, lg, _ = mtp.forward_rows(toks, hs, pos)
        d = lg[:, -1].argmax(-1)
        drafts.append(d)
        toks = torch.cat([toks, d[:, None]], 1)
        hs = torch.cat([hs, hp[:, -1:]], 1)
    return torch.stack(drafts, 1)
