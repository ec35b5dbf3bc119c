"""Minimal GGUF v3 reader/writer (numpy only).

Reads metadata and tensors (F32/F16 as-is, Q8_0 dequantized to float32, I64/I32).
Writes F32/F16/I64 tensors with typed metadata. ggml shape {ne0, ne1} <-> numpy [ne1, ne0].
"""
import struct
import numpy as np

GGUF_MAGIC = b"GGUF"
ALIGN = 32

# metadata value types
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
_SCALAR = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i",
           T_F32: "<f", T_BOOL: "<?", T_U64: "<Q", T_I64: "<q", T_F64: "<d"}
TYPE_NAMES = {T_U8: "UINT8", T_I8: "INT8", T_U16: "UINT16", T_I16: "INT16", T_U32: "UINT32",
              T_I32: "INT32", T_F32: "FLOAT32", T_BOOL: "BOOL", T_STR: "STRING", T_ARR: "ARRAY",
              T_U64: "UINT64", T_I64: "INT64", T_F64: "FLOAT64"}

# ggml tensor types
G_F32, G_F16, G_Q8_0, G_I32, G_I64 = 0, 1, 8, 26, 27
GGML_NAMES = {G_F32: "F32", G_F16: "F16", G_Q8_0: "Q8_0", G_I32: "I32", G_I64: "I64"}
_NP = {G_F32: np.float32, G_F16: np.float16, G_I32: np.int32, G_I64: np.int64}


class KV:
    """A typed metadata value: vtype is the GGUF type; for arrays, atype is the element type."""
    def __init__(self, vtype, value, atype=None):
        self.vtype, self.value, self.atype = vtype, value, atype

    def __repr__(self):
        return f"KV({TYPE_NAMES[self.vtype]}, {self.value!r})"


class Reader:
    def __init__(self, buf):
        self.b, self.o = buf, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.o)[0]
        self.o += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = bytes(self.b[self.o:self.o + n]).decode("utf-8")
        self.o += n
        return s

    def value(self, t):
        if t == T_STR:
            return self.string()
        if t == T_ARR:
            at, n = self.take("<I"), self.take("<Q")
            if at == T_STR:
                return [self.string() for _ in range(n)], at
            if at == T_ARR:
                return [self.value(T_ARR) for _ in range(n)], at
            dt = np.dtype(_SCALAR[at])
            arr = np.frombuffer(self.b, dtype=dt, count=n, offset=self.o).copy()
            self.o += n * dt.itemsize
            return arr.tolist(), at
        return self.take(_SCALAR[t])


def _dequant_q8_0(raw, n):
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
    return (q * d).reshape(-1)[:n]


def read_gguf(path, want=None):
    """Returns (meta: dict name->KV, tensors: dict name->np.ndarray, infos: dict name->(shape, type)).
    want: optional set of tensor names to load (others only listed in infos)."""
    with open(path, "rb") as f:
        buf = f.read()
    r = Reader(memoryview(buf))
    if bytes(buf[:4]) != GGUF_MAGIC:
        raise ValueError(f"{path}: not a GGUF file")
    r.o = 4
    version = r.take("<I")
    if version not in (2, 3):
        raise ValueError(f"unsupported GGUF version {version}")
    n_t, n_kv = r.take("<Q"), r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        k = r.string()
        t = r.take("<I")
        v = r.value(t)
        meta[k] = KV(t, v[0], v[1]) if t == T_ARR else KV(t, v)
    infos = []
    for _ in range(n_t):
        name = r.string()
        nd = r.take("<I")
        shape = [r.take("<Q") for _ in range(nd)]
        gt = r.take("<I")
        off = r.take("<Q")
        infos.append((name, shape, gt, off))
    align = meta["general.alignment"].value if "general.alignment" in meta else ALIGN
    base = (r.o + align - 1) // align * align
    tensors, info_map = {}, {}
    for name, shape, gt, off in infos:
        info_map[name] = (shape, gt)
        if want is not None and name not in want:
            continue
        n = int(np.prod(shape)) if shape else 1
        np_shape = list(reversed(shape))
        start = base + off
        if gt == G_Q8_0:
            arr = _dequant_q8_0(buf[start:start + n // 32 * 34], n)
        elif gt in _NP:
            arr = np.frombuffer(buf, dtype=_NP[gt], count=n, offset=start)
            arr = arr.astype(np.float32) if gt == G_F16 else arr.copy()
        else:
            raise ValueError(f"{name}: unsupported ggml type {gt}")
        tensors[name] = arr.reshape(np_shape)
    return meta, tensors, info_map


def _pack_value(t, v, at=None):
    if t == T_STR:
        b = v.encode("utf-8")
        return struct.pack("<Q", len(b)) + b
    if t == T_ARR:
        out = [struct.pack("<IQ", at, len(v))]
        if at == T_STR:
            out += [_pack_value(T_STR, s) for s in v]
        else:
            out.append(np.asarray(v, dtype=np.dtype(_SCALAR[at])).tobytes())
        return b"".join(out)
    return struct.pack(_SCALAR[t], v)


def pack_array_bytes(kv):
    """The packed element bytes of an array value (no type/length header), for manifests."""
    if kv.atype == T_STR:
        return b"".join(_pack_value(T_STR, s) for s in kv.value)
    return np.asarray(kv.value, dtype=np.dtype(_SCALAR[kv.atype])).tobytes()


def tensor_bytes(arr, gtype):
    return np.ascontiguousarray(arr, dtype=_NP[gtype]).tobytes()


def write_gguf(path, meta, tensors):
    """meta: dict name->KV (insertion order kept); tensors: list of (name, np.ndarray, ggml type)."""
    meta = dict(meta)
    meta.setdefault("general.alignment", KV(T_U32, ALIGN))
    head = [GGUF_MAGIC, struct.pack("<IQQ", 3, len(tensors), len(meta))]
    for k, kv in meta.items():
        head.append(_pack_value(T_STR, k) + struct.pack("<I", kv.vtype) + _pack_value(kv.vtype, kv.value, kv.atype))
    blobs, off = [], 0
    for name, arr, gt in tensors:
        data = tensor_bytes(arr, gt)
        shape = list(reversed(arr.shape))
        head.append(_pack_value(T_STR, name) + struct.pack("<I", len(shape))
                    + b"".join(struct.pack("<Q", s) for s in shape) + struct.pack("<IQ", gt, off))
        pad = (-len(data)) % ALIGN
        blobs.append(data + b"\0" * pad)
        off += len(data) + pad
    h = b"".join(head)
    h += b"\0" * ((-len(h)) % ALIGN)
    with open(path, "wb") as f:
        f.write(h)
        for b in blobs:
            f.write(b)


def self_check(tmp_path):
    rng = np.random.default_rng(0)
    meta = {"general.architecture": KV(T_STR, "test"), "a.u32": KV(T_U32, 7), "a.i32arr": KV(T_ARR, [1, -2, 3], T_I32),
            "a.f32": KV(T_F32, 0.5), "a.bool": KV(T_BOOL, True), "a.strs": KV(T_ARR, ["x", "▁y", ""], T_STR),
            "a.f32arr": KV(T_ARR, [0.25, -1.5], T_F32)}
    ts = [("w16", rng.standard_normal((3, 5)).astype(np.float16), G_F16),
          ("w32", rng.standard_normal((7,)).astype(np.float32), G_F32),
          ("ids", np.array([5, 1, 9], dtype=np.int64), G_I64)]
    write_gguf(tmp_path, meta, ts)
    m2, t2, _ = read_gguf(tmp_path)
    for k, kv in meta.items():
        assert m2[k].vtype == kv.vtype and m2[k].value == kv.value and m2[k].atype == kv.atype, k
    for name, arr, _ in ts:
        assert t2[name].shape == arr.shape and np.array_equal(t2[name], arr.astype(t2[name].dtype)), name
    return True


if __name__ == "__main__":
    import sys, tempfile, os
    if len(sys.argv) > 1:
        m, _, inf = read_gguf(sys.argv[1], want=set())
        for k, v in m.items():
            s = repr(v.value)
            print(k, TYPE_NAMES[v.vtype], s if len(s) < 100 else s[:100] + "...")
        for n, (sh, gt) in inf.items():
            print(n, sh, GGML_NAMES.get(gt, gt))
    else:
        p = os.path.join(tempfile.mkdtemp(), "t.gguf")
        print("round trip ok" if self_check(p) else "FAIL")
