"""MTP / NextN layer for a llama target (drafter-formats.md §4): model, training-time-test loss, export.

Input at position p: (token t_p, h_{p-1}), h = the target's final hidden AFTER output_norm (h_nextn).
x = eh_proj·[RMSNorm(Emb(t); enorm) ; RMSNorm(h; hnorm)] (embedding first), one llama block (causal,
own KV), h' = RMSNorm(out; output_norm) (no shared_head_norm tensor -> output_norm), logits = output·h'.
Row p predicts t_{p+1} (the target's row p distribution). Drafting feeds back the MTP's own h'.
Exported as a copy of the target GGUF with block_count L+1, nextn_predict_layers 1 and blk.L.*.
"""
import numpy as np
import torch
import torch.nn.functional as F
import gguf_io as G
from common import rms_norm, rope_cache, rope_norm, swiglu, attention


class NextN(torch.nn.Module):
    def __init__(self, tgt):
        super().__init__()
        H, last = tgt.n_embd, tgt.layers[-1]
        self.tgt_cfg = (H, tgt.n_head, tgt.n_head_kv, tgt.head_dim, tgt.eps, tgt.rope_base, tgt.n_rot)
        cp = lambda t: torch.nn.Parameter(t.detach().clone())
        # start from the target's last block; eh_proj starts as [0 | I] (pass h through) + noise
        self.eh_proj = torch.nn.Parameter(torch.cat([torch.randn(H, H) * 0.02, torch.eye(H)], 1))
        self.enorm, self.hnorm = cp(torch.ones(H)), cp(torch.ones(H))
        self.blk = torch.nn.ParameterDict({k: cp(last[k]) for k in last.keys()})
        self.out_norm, self.out_w, self.emb_w = tgt.output_norm, tgt.output, tgt.tok_embd  # shared, frozen

    def forward_rows(self, tokens, h, pos, extra_kv=None, mask=None):
        H, nh, nkv, dh, eps, base, n_rot = self.tgt_cfg
        B, T = tokens.shape
        L = self.blk
        x = F.linear(torch.cat([rms_norm(F.embedding(tokens, self.emb_w), self.enorm, eps),
                                rms_norm(h, self.hnorm, eps)], -1), self.eh_proj)
        a = rms_norm(x, L["attn_norm"], eps)
        cos, sin = rope_cache(pos, n_rot, base)
        q = rope_norm(F.linear(a, L["attn_q"]).view(B, T, nh, dh).transpose(1, 2), cos, sin)
        k = rope_norm(F.linear(a, L["attn_k"]).view(B, T, nkv, dh).transpose(1, 2), cos, sin)
        v = F.linear(a, L["attn_v"]).view(B, T, nkv, dh).transpose(1, 2)
        ks, vs = (extra_kv[0] + [k], extra_kv[1] + [v]) if extra_kv else ([k], [v])
        m = mask if mask is not None else pos[None, :] <= pos[:, None]
        o = attention(q, torch.cat(ks, 2), torch.cat(vs, 2), m).transpose(1, 2).reshape(B, T, -1)
        x = x + F.linear(o, L["attn_output"])
        x = x + swiglu(rms_norm(x, L["ffn_norm"], eps), L["ffn_gate"], L["ffn_up"], L["ffn_down"])
        hp = rms_norm(x, self.out_norm, eps)
        return hp, F.linear(hp, self.out_w), (k, v)


def mtp_ttt_loss(model, tokens, h_prev, tgt_logp, n_steps, step_weight=0.8):
    """tokens [B,T] = t_p, h_prev [B,T,H] = target h_{p-1}, tgt_logp [B,T,V] = target row p."""
    from eagle3 import ttt_masks
    T = tokens.shape[1]
    pos = torch.arange(T)
    ks, vs, losses, stats, tot = [], [], [], {}, 0.0
    p_t, h = tgt_logp.exp(), h_prev
    for j in range(n_steps):
        hp, lg, (k, v) = model.forward_rows(tokens, h, pos, (ks, vs) if j else None, ttt_masks(T, j) if j else None)
        ks.append(k); vs.append(v)
        lp = torch.log_softmax(lg, -1)
        kl = (p_t * (tgt_logp - lp)).sum(-1)[:, j + 1:]   # row 0 has no h_{-1}
        losses.append(step_weight ** j * kl.mean()); tot += step_weight ** j
        stats[f"kl{j}"] = float(kl.mean())
        stats[f"top1_{j}"] = float((lp.argmax(-1) == tgt_logp.argmax(-1))[:, j + 1:].float().mean())
        h = torch.cat([torch.zeros_like(hp[:, :1]), hp[:, :-1]], 1)
    return sum(losses) / tot, stats


def export_gguf(model, tgt, path, ftype="f16"):
    """Copy of the target GGUF + one NextN block blk.L (llama.block_count = L+1, nextn_predict_layers 1)."""
    meta, t, infos = G.read_gguf(tgt.path)
    arch = meta["general.architecture"].value
    L = tgt.n_layer
    meta[f"{arch}.block_count"] = G.KV(G.T_U32, L + 1)
    meta[f"{arch}.nextn_predict_layers"] = G.KV(G.T_U32, 1)
    tensors = [(n, t[n], infos[n][1]) for n in infos]            # target tensors keep their type
    mt = G.G_F16 if ftype == "f16" else G.G_F32
    d = lambda p: p.detach().cpu().numpy().astype(np.float32)
    for k, p in model.blk.items():
        tensors.append((f"blk.{L}.{k}.weight", d(p), G.G_F32 if "norm" in k else mt))
    tensors += [(f"blk.{L}.nextn.eh_proj.weight", d(model.eh_proj), mt),
                (f"blk.{L}.nextn.enorm.weight", d(model.enorm), G.G_F32),
                (f"blk.{L}.nextn.hnorm.weight", d(model.hnorm), G.G_F32)]
    G.write_gguf(path, meta, tensors)
