#!/usr/bin/env python3
"""Capture the SSM-layer recurrence inputs of a Hugging Face model into a replayssm activation dump.

Teacher-forces a slice of a text (PG-19 by default) through a `qwen3_5` / `qwen3_5_moe` / `qwen3_next` model (GDN) or a
`nemotron_h` model (Mamba-2) and records, for every SSM layer, exactly what the model's own torch recurrence
receives and returns, in the activation-dump schema of datasets/README.md:

  GDN     /layers/<i>/{q, k, v, g, beta}     q, k after the kernel's L2 norm (x * rsqrt(sum x^2 + 1e-6), float32),
                                             one per key head (the model's repeat_interleave undone), not yet scaled
  Mamba-2 /layers/<i>/{x, B, C, dt, A, D}    dt after softplus(dt_raw + dt_bias) and the model's dt clamp
  both    /layers/<i>/o                      the recurrence output the model computed (Mamba-2: with the D skip)
          /layers/<i>/final_state            the model's state after the last token, in replayssm's layout
                                             ([Hv, V, K] / [H, P, N]; HF's GDN state [Hv, K, V] is transposed)

<i> is the model's decoder-layer index (attention / MLP layers in between are skipped). How: the module-level
functions the mixers call (`torch_chunk_gated_delta_rule`, `torch_recurrent_gated_delta_rule`,
`mamba2_chunk_scan`) are replaced by wrappers that record their arguments and call the original torch function;
a forward pre-hook on each mixer tells the wrapper which layer is running. The hub/FLA/mamba_ssm kernels are never
used: the wrappers always call the pure-torch function (its `__wrapped__` where the hub decorator wrapped it).

Models:
  --model PATH_OR_ID        a real checkpoint with its tokenizer (AutoTokenizer; the slice's text is encoded and the
                            first --tokens ids are used). Needs the weights locally or network access.
  --tiny qwen3_5|nemotron_h a random-initialised tiny config of the real architecture (seeded, no weights, no
                            tokenizer): token id = byte value (vocab 256), i.e. the text's bytes from --offset.

  python3 datasets/capture_hf.py --tiny qwen3_5 --tokens 128 --out qwen35_tiny.h5
  python3 datasets/capture_hf.py --model Qwen/Qwen3.5-4B --dtype bfloat16 --device cuda --tokens 4096 \
      --layers 0,1,2 --out qwen35_4b.h5
  replayssm reference --in qwen35_tiny.h5 --out ref.h5     # FP64 outputs of the same inputs

Needs torch, transformers (>= 5, with qwen3_5 / nemotron_h) and h5py.
"""
import argparse
import datetime
import importlib
import inspect
import os
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TEXT = os.path.join(HERE, "pg19", "test", "10146.txt")

# Which transformers module holds each architecture's recurrence, and the function names the mixers call.
ARCHS = {
    "qwen3_5": ("gdn", "transformers.models.qwen3_5.modeling_qwen3_5", "GatedDeltaNet"),
    "qwen3_5_text": ("gdn", "transformers.models.qwen3_5.modeling_qwen3_5", "GatedDeltaNet"),
    "qwen3_5_moe": ("gdn", "transformers.models.qwen3_5_moe.modeling_qwen3_5_moe", "GatedDeltaNet"),
    "qwen3_5_moe_text": ("gdn", "transformers.models.qwen3_5_moe.modeling_qwen3_5_moe", "GatedDeltaNet"),
    "qwen3_next": ("gdn", "transformers.models.qwen3_next.modeling_qwen3_next", "GatedDeltaNet"),
    "nemotron_h": ("mamba2", "transformers.models.nemotron_h.modeling_nemotron_h", "Mamba2Mixer"),
}
GDN_FUNCS = ("torch_chunk_gated_delta_rule", "torch_recurrent_gated_delta_rule")
MAMBA2_FUNCS = ("mamba2_chunk_scan",)


def unwrap(fn):
    """The pure-torch function under any hub-kernel decorator (functools.wraps sets __wrapped__)."""
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


def tiny_config(kind, seed):
    """Tiny configs of the real architectures: 2 SSM layers around one attention layer, small heads.
    initializer_range 0.2 (HF default 0.02) so random projections give O(1) activations: with 0.02 the Mamba-2
    output is 99.9996% D skip and every GDN decay is < 0.63; with 0.2 the SSM term is ~10% of the Mamba-2 output,
    the dt clamp is hit, and GDN decays span 1e-17..0.99 with beta in 0.02..0.997."""
    if kind == "qwen3_5":
        from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5TextConfig
        return Qwen3_5TextConfig(
            vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
            layer_types=["linear_attention", "full_attention", "linear_attention"],
            num_attention_heads=2, num_key_value_heads=1, head_dim=32,
            linear_num_key_heads=1, linear_num_value_heads=2, linear_key_head_dim=16, linear_value_head_dim=16,
            linear_conv_kernel_dim=4, max_position_embeddings=4096, tie_word_embeddings=False, initializer_range=0.2)
    if kind == "nemotron_h":
        from transformers.models.nemotron_h.configuration_nemotron_h import NemotronHConfig
        return NemotronHConfig(
            vocab_size=256, hidden_size=64, intermediate_size=128,
            layers_block_type=["linear_attention", "full_attention", "linear_attention"],
            num_attention_heads=2, num_key_value_heads=1, head_dim=32,
            mamba_num_heads=4, mamba_head_dim=8, n_groups=2, ssm_state_size=16, conv_kernel=4, chunk_size=16,
            max_position_embeddings=4096, tie_word_embeddings=False, initializer_range=0.2, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    raise SystemExit(f"capture_hf: --tiny: unknown config '{kind}' (expected qwen3_5 or nemotron_h)")


def load_model(args):
    import transformers
    if args.tiny:
        torch.manual_seed(args.seed)
        cfg = tiny_config(args.tiny, args.seed)
        cls = (transformers.Qwen3_5ForCausalLM if args.tiny == "qwen3_5" else transformers.NemotronHForCausalLM)
        model = cls(cfg)
        return model, None, f"tiny-{args.tiny}-random(seed={args.seed})"
    tok = transformers.AutoTokenizer.from_pretrained(args.model)
    model = transformers.AutoModelForCausalLM.from_pretrained(args.model, dtype=getattr(torch, args.dtype))
    return model, tok, args.model


def text_tokens(args, tok):
    with open(args.text, "rb") as f:
        data = f.read()[args.offset:]
    if tok is None:  # tiny configs: one token per byte (documented in datasets/README.md)
        ids = list(data[: args.tokens])
    else:
        ids = tok(data.decode("utf-8", errors="replace"), add_special_tokens=False)["input_ids"][: args.tokens]
    if len(ids) < args.tokens:
        raise SystemExit(f"capture_hf: {args.text}: only {len(ids)} tokens after offset {args.offset}, "
                         f"--tokens {args.tokens} asked")
    return ids


class Recorder:
    """Replaces the recurrence functions in the model's module and records each SSM layer's inputs and outputs."""

    def __init__(self, module, arch, layers):
        self.module, self.arch, self.wanted = module, arch, layers
        self.current = None  # (model layer index, mixer) set by the pre-hook
        self.records = {}
        self.saved = {}
        for name in (GDN_FUNCS if arch == "gdn" else MAMBA2_FUNCS):
            if hasattr(module, name):
                orig = getattr(module, name)
                self.saved[name] = orig
                setattr(module, name, self._gdn(unwrap(orig), name) if arch == "gdn" else self._mamba2(unwrap(orig),
                                                                                                       name))
        if not self.saved:
            raise SystemExit(f"capture_hf: {module.__name__} has none of the expected recurrence functions")

    def restore(self):
        for name, fn in self.saved.items():
            setattr(self.module, name, fn)

    def pre_hook(self, index):
        def hook(mixer, args, kwargs=None):
            self.current = (index, mixer)
        return hook

    def _want(self):
        if self.current is None:
            raise RuntimeError("capture_hf: recurrence called outside a hooked mixer")
        return self.wanted is None or self.current[0] in self.wanted

    def _gdn(self, fn, name):
        # the chunk length the function uses (1 for the token-by-token form): it enters the FP32 error bound
        param = inspect.signature(fn).parameters.get("chunk_size")
        chunk_default = param.default if param is not None else 1

        def wrapper(query, key, value, g, beta, *a, **kw):
            want_state = kw.get("output_final_state", False)
            kw["output_final_state"] = True
            out, state = fn(query, key, value, g, beta, *a, **kw)
            if self._want():
                index, mixer = self.current
                ratio = query.shape[2] // mixer.num_k_heads
                q, k = query.float(), key.float()
                if kw.get("use_qk_l2norm_in_kernel", False):
                    # the kernel's own l2norm (same function, same float32 input): the values it recurs on
                    q, k = self.module.l2norm(q, dim=-1, eps=1e-6), self.module.l2norm(k, dim=-1, eps=1e-6)
                # undo repeat_interleave: value head h reads key head h // ratio
                qk, kk = q[:, :, ::ratio], k[:, :, ::ratio]
                assert torch.equal(qk.repeat_interleave(ratio, dim=2), q), "q heads are not a repeat_interleave"
                assert torch.equal(kk.repeat_interleave(ratio, dim=2), k), "k heads are not a repeat_interleave"
                self.records[index] = {
                    "q": qk[0], "k": kk[0], "v": value.float()[0], "g": g.float()[0], "beta": beta.float()[0],
                    "o": out.float()[0], "final_state": state.float()[0].transpose(-1, -2),
                    "_kernel": name, "_chunk": kw.get("chunk_size", chunk_default)}
            return out, (state if want_state else None)
        return wrapper

    def _mamba2(self, fn, name):
        def wrapper(hidden_states, dt, A, B, C, chunk_size, D=None, dt_bias=None, initial_states=None,
                    dt_softplus=False, dt_limit=(0.0, float("inf")), return_final_states=False, **kw):
            out, state = fn(hidden_states, dt, A, B, C, chunk_size, D=D, dt_bias=dt_bias,
                            initial_states=initial_states, dt_softplus=dt_softplus, dt_limit=dt_limit,
                            return_final_states=True, **kw)
            if self._want():
                index, _ = self.current
                # the function's own dt preprocessing, op for op (same bits)
                d = dt + dt_bias.to(dt.dtype) if dt_bias is not None else dt
                if dt_softplus:
                    d = F.softplus(d)
                d = torch.clamp(d, min=dt_limit[0], max=dt_limit[1])
                rec = {"x": hidden_states.float()[0], "B": B.float()[0], "C": C.float()[0], "dt": d.float()[0],
                       "A": A.float(), "o": out.float()[0], "final_state": state.float()[0], "_kernel": name,
                       "_chunk": chunk_size}
                if D is not None:
                    rec["D"] = D.float()
                self.records[index] = rec
            return (out, state) if return_final_states else out
        return wrapper


def parse_layers(s):
    if s in (None, "", "all"):
        return None
    return {int(x) for x in s.split(",")}


def capture(args):
    model, tok, model_name = load_model(args)
    model_type = model.config.model_type
    if model_type not in ARCHS:
        raise SystemExit(f"capture_hf: {model_name}: model_type '{model_type}' is not supported "
                         f"(expected one of {', '.join(sorted(ARCHS))})")
    arch, module_name, mixer_suffix = ARCHS[model_type]
    module = importlib.import_module(module_name)
    model = model.to(device=args.device, dtype=getattr(torch, args.dtype)).eval()
    rec = Recorder(module, arch, parse_layers(args.layers))
    hooks, ssm_layers = [], []
    for name, sub in model.named_modules():
        if type(sub).__name__.endswith(mixer_suffix):
            index = getattr(sub, "layer_idx", None)
            if index is None:
                index = int([p for p in name.split(".") if p.isdigit()][-1])
            ssm_layers.append(index)
            hooks.append(sub.register_forward_pre_hook(rec.pre_hook(index)))
    if not ssm_layers:
        raise SystemExit(f"capture_hf: {model_name}: no *{mixer_suffix} modules found")
    ids = text_tokens(args, tok)
    try:
        with torch.no_grad():
            model(input_ids=torch.tensor([ids], device=args.device), use_cache=False)
    finally:
        rec.restore()
        for h in hooks:
            h.remove()
    if not rec.records:
        raise SystemExit(f"capture_hf: none of --layers {args.layers} is an SSM layer (SSM layers: {ssm_layers})")
    write(args, rec, arch, model, model_name, model_type, ids, tok)
    return rec, arch


def write(args, rec, arch, model, model_name, model_type, ids, tok):
    tmp = args.out + f".tmp-{os.getpid()}"
    fields = ("q", "k", "v", "g", "beta") if arch == "gdn" else ("x", "B", "C", "dt", "A", "D")
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs["arch"] = arch
            first = rec.records[min(rec.records)]
            if arch == "gdn":
                f.attrs["scale"] = float(first["q"].shape[-1]) ** -0.5
            m = f.create_group("meta")
            m.attrs.update({
                "arch": arch, "model": model_name, "model_type": model_type, "text": os.path.abspath(args.text),
                "text_id": f"{os.path.basename(args.text)}@{args.offset}+{len(ids)}", "offset": args.offset,
                "n_tokens": len(ids), "tokenization": "bytes (token id = byte value)" if tok is None else
                f"tokenizer of {model_name}", "dtype": args.dtype, "device": args.device,
                "ssm_layers": ",".join(str(i) for i in sorted(rec.records)),
                "kernel": first["_kernel"] + " (transformers torch path)",
                "torch": str(torch.__version__), "transformers": str(__import__("transformers").__version__),
                "tool": "datasets/capture_hf.py", "command": " ".join(sys.argv),
                "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
            if arch == "gdn":
                m.attrs.update({"Hk": first["q"].shape[1], "Hv": first["v"].shape[1], "K": first["q"].shape[2],
                                "V": first["v"].shape[2]})
            else:
                m.attrs.update({"H": first["x"].shape[1], "P": first["x"].shape[2], "G": first["B"].shape[1],
                                "N": first["B"].shape[2]})
            f.create_dataset("tokens", data=np.asarray(ids, dtype=np.int32))
            opts = dict(compression="gzip", compression_opts=9, shuffle=True) if args.compress else {}
            for index in sorted(rec.records):
                r = rec.records[index]
                g = f.create_group(f"layers/{index}")
                g.attrs["kernel"] = r["_kernel"]
                g.attrs["chunk_size"] = int(r["_chunk"])
                for name in fields + ("o", "final_state"):
                    if name in r:
                        a = r[name].detach().cpu().numpy().astype(np.float32)
                        g.create_dataset(name, data=a, **(opts if a.ndim > 1 else {}))
        os.replace(tmp, args.out)  # atomic: never a half-written file under the final name
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="Hugging Face model path or id (qwen3_5, qwen3_5_moe, qwen3_next, nemotron_h)")
    src.add_argument("--tiny", choices=["qwen3_5", "nemotron_h"], help="random-initialised tiny config")
    p.add_argument("--seed", type=int, default=0, help="seed of the tiny config's random weights")
    p.add_argument("--text", default=DEFAULT_TEXT, help="text file (default: the first PG-19 test book)")
    p.add_argument("--offset", type=int, default=0, help="byte offset of the slice in the text")
    p.add_argument("--tokens", type=int, default=128, help="positions to teacher-force")
    p.add_argument("--layers", default="all", help="model layer indices to record (comma list) or 'all'")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"], help="model dtype")
    p.add_argument("--device", default="cpu", help="torch device (cpu, cuda)")
    p.add_argument("--compress", action="store_true",
                   help="gzip the arrays (helps only for long real captures; random tiny weights do not compress)")
    p.add_argument("--out", required=True, help="activation dump to write (atomically)")
    args = p.parse_args(argv)
    if args.tokens < 1 or args.offset < 0:
        raise SystemExit("capture_hf: --tokens must be >= 1 and --offset >= 0")
    rec, arch = capture(args)
    print(f"capture_hf: {len(rec.records)} {arch} layer(s) {sorted(rec.records)} x {args.tokens} tokens "
          f"-> {args.out}")


if __name__ == "__main__":
    main()
