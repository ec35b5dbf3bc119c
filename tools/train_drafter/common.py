"""Shared torch pieces: RMSNorm, NORMAL (adjacent-pair) and NEOX (rotate-half) RoPE, SwiGLU, thread setup."""
import math
import torch

THREADS = 2  # the box is shared: keep torch at 2 threads


def setup_torch(threads=THREADS):
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1) if hasattr(torch, "set_num_interop_threads") else None


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_cache(positions, dim, base):
    """cos/sin [T, dim/2] for the given integer positions (1-D tensor)."""
    inv = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    ang = positions.to(torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def rope_norm(x, cos, sin):
    """llama.cpp ROPE_TYPE_NORM: rotate adjacent pairs (x[2i], x[2i+1]). x [..., T, dh]."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    o0 = x0 * cos - x1 * sin
    o1 = x0 * sin + x1 * cos
    return torch.stack((o0, o1), dim=-1).flatten(-2)


def rope_neox(x, cos, sin):
    """llama.cpp ROPE_TYPE_NEOX: rotate pairs (x[i], x[i + dh/2]). x [..., T, dh], cos/sin broadcast to [..., T, dh/2]."""
    h = x.shape[-1] // 2
    x0, x1 = x[..., :h], x[..., h:]
    return torch.cat((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)


def swiglu(x, wg, wu, wd):
    return torch.nn.functional.linear(torch.nn.functional.silu(torch.nn.functional.linear(x, wg))
                                      * torch.nn.functional.linear(x, wu), wd)


def attention(q, k, v, mask):
    """q [B,H,Tq,dh], k/v [B,Hkv,Tk,dh] (GQA by repeat), mask bool [Tq,Tk] or [B,1,Tq,Tk] True=visible."""
    rep = q.shape[1] // k.shape[1]
    if rep > 1:
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    s = s.masked_fill(~mask, float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v)
