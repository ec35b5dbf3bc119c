"""EAGLE-3 drafter (drafter-formats.md §1.3): model, training-time-test loss, GGUF export."""
import math
import numpy as np
import torch
import torch.nn.functional as F
import gguf_io as G
from common import rms_norm, rope_cache, rope_norm, swiglu, attention


class Eagle3(torch.nn.Module):
    def __init__(self, Ht, D, n_head, n_head_kv, n_ff, eps, rope_base, n_rot=None, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        dh = D // n_head
        self.Ht, self.D, self.n_head, self.n_head_kv, self.dh, self.n_ff = Ht, D, n_head, n_head_kv, dh, n_ff
        self.eps, self.rope_base, self.n_rot = eps, rope_base, n_rot or dh
        W = lambda o, i: torch.nn.Parameter(torch.randn(o, i, generator=g) * (0.02))
        self.fc = W(D, 3 * Ht)
        self.attn_norm = torch.nn.Parameter(torch.ones(D))
        self.attn_norm_2 = torch.nn.Parameter(torch.ones(D))
        self.wq, self.wk, self.wv = W(n_head * dh, 2 * D), W(n_head_kv * dh, 2 * D), W(n_head_kv * dh, 2 * D)
        self.wo = W(D, n_head * dh)
        self.ffn_norm = torch.nn.Parameter(torch.ones(D))
        self.w_gate, self.w_up, self.w_down = W(n_ff, D), W(n_ff, D), W(D, n_ff)
        self.output_norm = torch.nn.Parameter(torch.ones(D))
        self.d2t, self.head = None, None  # reduced draft vocabulary: absolute target ids, own LM head

    @torch.no_grad()
    def set_draft_vocab(self, target_output, d2t):
        """Draft over the target ids d2t (LongTensor [Vd]) with an own head, started from the target's rows."""
        self.d2t = d2t
        self.head = torch.nn.Parameter(target_output[d2t].clone())

    def draft_ids(self, logits):
        """argmax of drafter logits as target token ids."""
        i = logits.argmax(-1)
        return i if self.d2t is None else self.d2t[i]

    @torch.no_grad()
    def init_from_target_layer(self, tgt, layer, high_tap_slot=2):
        """Start from target block `layer`: its norms/attention (on the g half)/FFN, fc selecting one tap."""
        L, D = tgt.layers[layer], self.D
        self.attn_norm.copy_(L["attn_norm"]); self.attn_norm_2.copy_(L["attn_norm"])
        for w, name in ((self.wq, "attn_q"), (self.wk, "attn_k"), (self.wv, "attn_v")):
            w[:, D:].copy_(L[name])
        self.wo.copy_(L["attn_output"]); self.ffn_norm.copy_(L["ffn_norm"])
        self.w_gate.copy_(L["ffn_gate"]); self.w_up.copy_(L["ffn_up"]); self.w_down.copy_(L["ffn_down"])
        self.output_norm.copy_(tgt.output_norm)
        self.fc[:, high_tap_slot * self.Ht:(high_tap_slot + 1) * self.Ht] += torch.eye(D, self.Ht)

    def encode(self, feats):
        """feats [B,T,3Ht] (taps concatenated in target_layers order) -> g [B,T,D]."""
        return F.linear(feats, self.fc)

    def qkv(self, emb, g, pos):
        B, T, _ = g.shape
        x = torch.cat([rms_norm(emb, self.attn_norm, self.eps), rms_norm(g, self.attn_norm_2, self.eps)], -1)
        cos, sin = rope_cache(pos, self.n_rot, self.rope_base)
        q = F.linear(x, self.wq).view(B, T, self.n_head, self.dh).transpose(1, 2)
        k = F.linear(x, self.wk).view(B, T, self.n_head_kv, self.dh).transpose(1, 2)
        v = F.linear(x, self.wv).view(B, T, self.n_head_kv, self.dh).transpose(1, 2)
        return rope_norm(q, cos, sin), rope_norm(k, cos, sin), v

    def finish(self, o, g):
        """attention output heads [B,H,T,dh] -> prenorm y (r = attn + g; norm_before_residual false)."""
        B, _, T, _ = o.shape
        r = F.linear(o.transpose(1, 2).reshape(B, T, -1), self.wo) + g
        return r + swiglu(rms_norm(r, self.ffn_norm, self.eps), self.w_gate, self.w_up, self.w_down)

    def logits(self, y, out_w):
        return F.linear(rms_norm(y, self.output_norm, self.eps), out_w)

    def forward_causal(self, emb, g, pos):
        """Plain causal pass (inference): rows are (Emb(t_{P+1}), g_P) at positions pos. Returns y."""
        q, k, v = self.qkv(emb, g, pos)
        mask = pos[None, :] <= pos[:, None]
        return self.finish(attention(q, k, v, mask), g)


def _full_vocab(lp, d2t, V):
    """Draft-vocabulary log-probs scattered into the target vocabulary (-inf elsewhere)."""
    return torch.full(lp.shape[:-1] + (V,), float("-inf"), dtype=lp.dtype).index_copy(-1, d2t, lp)


def ttt_masks(T, j):
    """Training-time-test mask for unroll step j (>=1) over keys [step0 | step1 | ... | step j], each T wide:
    the step-j query at position Q sees step-0 keys at positions <= Q-j and the step-i key at Q-j+i."""
    Q = torch.arange(T)[:, None]
    K = torch.arange(T)[None, :]
    parts = [K <= Q - j] + [K == Q - j + i for i in range(1, j + 1)]
    m = torch.cat(parts, 1)
    m[:j, -T:] |= torch.eye(T, dtype=torch.bool)[:j]  # rows Q < j are invalid (no loss); keep softmax finite
    return m


def sampler_probs(logp, temp=0.8, top_k=40, top_p=0.95, min_p=0.05):
    """The distribution `augur`'s sampler draws from (sampling/sampler.h): top-k, top-p, min-p on the
    untempered log-probs, then temperature. The kept set is chosen without gradient; the result is
    differentiable in logp inside it."""
    with torch.no_grad():
        srt, idx = logp.sort(-1, descending=True)
        srt, idx = srt[..., :top_k], idx[..., :top_k]
        pk = torch.softmax(srt, -1)
        keep = (pk.cumsum(-1) - pk) < top_p                     # smallest prefix reaching top_p
        keep &= srt >= srt[..., :1] + math.log(min_p)
        mask = torch.zeros_like(logp, dtype=torch.bool).scatter_(-1, idx, keep)
    return torch.softmax((logp / temp).masked_fill(~mask, float("-inf")), -1)


def ttt_loss(model, emb, feats, tgt_logp, pos, n_steps, step_weight=0.8, accept_weight=0.0, accept_temp=0.8):
    """emb [B,T,D] = Emb(t_{P+1}), feats [B,T,3Ht] at P, tgt_logp [B,T,V] = target log-probs at row P+1.
    Step 0 uses g = fc(feats); step j uses the drafter's own y from step j-1 at P-1 as g (shifted right).
    Returns (loss, stats)."""
    T = emb.shape[1]
    g = model.encode(feats)
    ks, vs, losses, stats = [], [], [], {}
    p_t = tgt_logp.exp()
    tot_w = 0.0
    for j in range(n_steps):
        q, k, v = model.qkv(emb, g, pos)
        ks.append(k); vs.append(v)
        if j == 0:
            o = attention(q, k, v, pos[None, :] <= pos[:, None])
        else:
            o = attention(q, torch.cat(ks, 2), torch.cat(vs, 2), ttt_masks(T, j))
        y = model.finish(o, g)
        lp = torch.log_softmax(model.logits(y, model.out_w), -1)
        if model.d2t is None:
            kl = (p_t * (tgt_logp - lp)).sum(-1)[:, j:]      # rows Q < j have no valid history
        else:  # the target's mass on the draft vocabulary (the rest no draft can propose)
            kl = (p_t[..., model.d2t] * (tgt_logp[..., model.d2t] - lp)).sum(-1)[:, j:]
        w = step_weight ** j
        term = kl.mean()
        if accept_weight > 0 or j == 0:
            # Leviathan-Chen acceptance of one sampled draft: sum_x min(p'(x), q'(x)) under the sampler
            with torch.set_grad_enabled(accept_weight > 0 and torch.is_grad_enabled()):
                p_s = sampler_probs(tgt_logp, accept_temp).detach()
                lp_v = lp if model.d2t is None else _full_vocab(lp, model.d2t, tgt_logp.shape[-1])
                acc = torch.minimum(p_s, sampler_probs(lp_v, accept_temp)).sum(-1)[:, j:]
            stats[f"acc{j}"] = float(acc.mean())
            if accept_weight > 0:
                term = term + accept_weight * (1.0 - acc).mean()
        losses.append(w * term); tot_w += w
        stats[f"kl{j}"] = float(kl.mean())
        stats[f"top1_{j}"] = float((model.draft_ids(lp) == tgt_logp.argmax(-1))[:, j:].float().mean())
        g = torch.cat([torch.zeros_like(y[:, :1]), y[:, :-1]], 1)  # own y at P-1 feeds position P
    return sum(losses) / tot_w, stats


def export_gguf(model, path, target_meta, target_layers, ftype="f16", name="eagle3-drafter", extra=None):
    """Writes the drafter as llama.cpp's eagle3 GGUF (§1.1); tokenizer copied from the target."""
    K = G.KV
    U = lambda v: K(G.T_U32, int(v))
    arch = target_meta["general.architecture"].value
    meta = {"general.architecture": K(G.T_STR, "eagle3"), "general.name": K(G.T_STR, name),
            "general.file_type": U(1 if ftype == "f16" else 0),
            "eagle3.block_count": U(1), "eagle3.embedding_length": U(model.D),
            "eagle3.feed_forward_length": U(model.n_ff), "eagle3.attention.head_count": U(model.n_head),
            "eagle3.attention.head_count_kv": U(model.n_head_kv),
            "eagle3.attention.layer_norm_rms_epsilon": K(G.T_F32, float(model.eps)),
            "eagle3.rope.freq_base": K(G.T_F32, float(model.rope_base)),
            "eagle3.rope.dimension_count": U(model.n_rot),
            "eagle3.context_length": U(target_meta[f"{arch}.context_length"].value),
            "eagle3.vocab_size": U(len(target_meta["tokenizer.ggml.tokens"].value)),
            "eagle3.target_layers": K(G.T_ARR, [int(x) for x in target_layers], G.T_I32),
            "eagle3.target_hidden_size": U(model.Ht),
            "eagle3.norm_before_residual": K(G.T_BOOL, False)}
    meta.update(extra or {})
    meta.update({k: v for k, v in target_meta.items() if k.startswith("tokenizer.")})
    mt = G.G_F16 if ftype == "f16" else G.G_F32
    d = lambda p: p.detach().cpu().numpy().astype(np.float32)
    tensors = [("fc.weight", d(model.fc), mt),
               ("blk.0.attn_norm.weight", d(model.attn_norm), G.G_F32),
               ("blk.0.attn_norm_2.weight", d(model.attn_norm_2), G.G_F32),
               ("blk.0.attn_q.weight", d(model.wq), mt), ("blk.0.attn_k.weight", d(model.wk), mt),
               ("blk.0.attn_v.weight", d(model.wv), mt), ("blk.0.attn_output.weight", d(model.wo), mt),
               ("blk.0.ffn_norm.weight", d(model.ffn_norm), G.G_F32),
               ("blk.0.ffn_gate.weight", d(model.w_gate), mt), ("blk.0.ffn_up.weight", d(model.w_up), mt),
               ("blk.0.ffn_down.weight", d(model.w_down), mt),
               ("output_norm.weight", d(model.output_norm), G.G_F32)]
    if model.d2t is not None:  # own head over the draft vocabulary (target embeddings stay shared)
        tensors += [("output.weight", d(model.head), mt),
                    ("d2t", model.d2t.cpu().numpy().astype(np.int64), G.G_I64)]
    G.write_gguf(path, meta, tensors)


def load_gguf(path, tgt):
    """Loads an eagle3 GGUF written by export_gguf (shared target embeddings/output)."""
    meta, t, _ = G.read_gguf(path)
    v = lambda k: meta["eagle3." + k].value
    m = Eagle3(v("target_hidden_size"), v("embedding_length"), v("attention.head_count"),
               v("attention.head_count_kv"), v("feed_forward_length"), v("attention.layer_norm_rms_epsilon"),
               v("rope.freq_base"), v("rope.dimension_count"))
    with torch.no_grad():
        for attr, n in (("fc", "fc"), ("attn_norm", "blk.0.attn_norm"), ("attn_norm_2", "blk.0.attn_norm_2"),
                        ("wq", "blk.0.attn_q"), ("wk", "blk.0.attn_k"), ("wv", "blk.0.attn_v"),
                        ("wo", "blk.0.attn_output"), ("ffn_norm", "blk.0.ffn_norm"), ("w_gate", "blk.0.ffn_gate"),
                        ("w_up", "blk.0.ffn_up"), ("w_down", "blk.0.ffn_down"), ("output_norm", "output_norm")):
            getattr(m, attr).copy_(torch.from_numpy(t[n + ".weight"]))
        if "d2t" in t:
            m.set_draft_vocab(torch.from_numpy(t["output.weight"]), torch.arange(len(t["d2t"])))
            m.d2t = torch.from_numpy(t["d2t"].astype(np.int64))
    # tgt None: the caller supplies the LM head itself (widen's float64 check)
    m.out_w = m.head if m.d2t is not None else None if tgt is None else tgt.output
    return m, list(v("target_layers"))
