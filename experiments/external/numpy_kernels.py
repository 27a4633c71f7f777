"""Outside kernels in plain numpy float32, written from replayssm's documented semantics (not from its code): a GDN and
a Mamba-2 decode whose state may be stored in BF16 or FP16 after every token, as an engine with a low-precision
SSM-state cache does. Used by numpy_stored_state_gdn.py and by the Python package's tests and README example.

  placement "right"  the conventional mode: a step starts from the stored (decoded) state, its output reads the new
                     state BEFORE it is re-quantised, then the state is stored
            "after"  a misplaced quantisation: the output reads the state AFTER it is re-quantised
            "none"   no store at all (a float32 kernel)
States are [H, V, K] per head (o = S q), the transpose of flash-linear-attention's [K, V]."""
import numpy as np


def round_bf16(x):
    """float32 -> nearest BF16 (ties to even), returned as float32 (finite inputs)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).reshape(np.shape(x))


def round_fp16(x):
    """float32 -> nearest IEEE half (numpy's conversion rounds to nearest even), back to float32."""
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


STORES = {"bf16": round_bf16, "fp16": round_fp16, None: None}


def _decode(S, T, H, step, store, placement):
    if placement not in ("right", "after", "none"):
        raise ValueError(f"placement: {placement!r}")
    if store is not None and placement != "none":
        S = store(S)  # the initial state is stored too
    outs = []
    for t in range(T):
        o = np.zeros((H, S.shape[1]), np.float32)
        for h in range(H):
            Sh = step(t, h, S[h])
            if store is None or placement == "none":
                o[h] = Sh[1]
                S[h] = Sh[0]
            elif placement == "right":
                o[h] = Sh[1]
                S[h] = store(Sh[0])
            else:
                S[h] = store(Sh[0])
                o[h] = Sh[2](S[h])
        outs.append(o)
    return np.stack(outs), S


def gdn_decode(q, k, v, g, beta, scale, initial_state=None, state_format=None, placement="right"):
    """GDN: S <- exp(g) S; u = beta (v - S k); S <- S + u k^T; o = S (scale q). q, k [T, Hk, K], v [T, Hv, V],
    g, beta [T, Hv]; returns (o [T, Hv, V], final state [Hv, V, K]), float32."""
    q, k, v = (np.asarray(a, np.float32) for a in (q, k, v))
    a = np.exp(np.asarray(g, np.float64)).astype(np.float32)
    beta = np.asarray(beta, np.float32)
    T, Hk, K = q.shape
    Hv, V = v.shape[1], v.shape[2]
    ratio = Hv // Hk
    qs = (q * np.float32(scale)).astype(np.float32)
    S = np.zeros((Hv, V, K), np.float32) if initial_state is None else np.array(initial_state, np.float32)

    def step(t, h, Sh):
        kk, qq = k[t, h // ratio], qs[t, h // ratio]
        Sh = Sh * a[t, h]
        u = beta[t, h] * (v[t, h] - Sh @ kk)
        Sh = Sh + np.outer(u, kk)
        return Sh, Sh @ qq, lambda St: St @ qq

    return _decode(S, T, Hv, step, STORES[state_format], placement)


def mamba2_decode(x, B, C, dt, A, D=None, initial_state=None, state_format=None, placement="right"):
    """Mamba-2: S <- exp(dt A) S + (dt x) B^T; o = S C + D x. x [T, H, P], B, C [T, G, N], dt [T, H], A, D [H];
    returns (o [T, H, P], final state [H, P, N]), float32."""
    x, B, C = (np.asarray(a, np.float32) for a in (x, B, C))
    dt, A = np.asarray(dt, np.float64), np.asarray(A, np.float64)
    T, H, P = x.shape
    G, N = B.shape[1], B.shape[2]
    ratio = H // G
    a = np.exp(dt * A[None, :]).astype(np.float32)
    w = (dt[:, :, None] * x).astype(np.float32)
    skip = None if D is None else (np.asarray(D, np.float64)[None, :, None] * x).astype(np.float32)
    S = np.zeros((H, P, N), np.float32) if initial_state is None else np.array(initial_state, np.float32)

    def step(t, h, Sh):
        bb, cc = B[t, h // ratio], C[t, h // ratio]
        Sh = Sh * a[t, h] + np.outer(w[t, h], bb)
        extra = 0 if skip is None else skip[t, h]
        return Sh, Sh @ cc + extra, lambda St: St @ cc + extra

    return _decode(S, T, H, step, STORES[state_format], placement)
