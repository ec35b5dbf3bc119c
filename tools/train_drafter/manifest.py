"""<file>.manifest.json: every metadata key (name, GGUF type, value; arrays as length + sha256 of their
packed element bytes) and every tensor (name, ggml shape, type, sha256 of its data bytes), read back
from the written file so the C++ side can check its own loader against it."""
import hashlib, json, struct
import numpy as np
import gguf_io as G

_BLOCK = {G.G_F32: (1, 4), G.G_F16: (1, 2), G.G_Q8_0: (32, 34), G.G_I32: (1, 4), G.G_I64: (1, 8)}


def build_manifest(path):
    meta, _, infos = G.read_gguf(path, want=set())
    raw = open(path, "rb").read()
    # tensor data offsets: re-parse the tensor-info table cheaply
    r = G.Reader(memoryview(raw)); r.o = 8
    n_t, n_kv = r.take("<Q"), r.take("<Q")
    for _ in range(n_kv):
        r.string(); t = r.take("<I"); r.value(t)
    offs = []
    for _ in range(n_t):
        name = r.string(); nd = r.take("<I"); shape = [r.take("<Q") for _ in range(nd)]
        gt = r.take("<I"); off = r.take("<Q"); offs.append((name, shape, gt, off))
    align = meta["general.alignment"].value if "general.alignment" in meta else G.ALIGN
    base = (r.o + align - 1) // align * align
    m = {"file": path.split("/")[-1], "metadata": [], "tensors": []}
    for k, kv in meta.items():
        e = {"name": k, "type": G.TYPE_NAMES[kv.vtype]}
        if kv.vtype == G.T_ARR:
            e["element_type"] = G.TYPE_NAMES[kv.atype]
            e["length"] = len(kv.value)
            e["sha256"] = hashlib.sha256(G.pack_array_bytes(kv)).hexdigest()
        else:
            e["value"] = kv.value
        m["metadata"].append(e)
    for name, shape, gt, off in offs:
        n = int(np.prod(shape)) if shape else 1
        per, nb = _BLOCK[gt]
        data = raw[base + off: base + off + n // per * nb]
        m["tensors"].append({"name": name, "shape": shape, "type": G.GGML_NAMES[gt],
                             "sha256": hashlib.sha256(data).hexdigest()})
    return m


def write_manifest(path):
    with open(path + ".manifest.json", "w") as f:
        json.dump(build_manifest(path), f, indent=1)
    return path + ".manifest.json"
