"""replayssm from Python: the FP64 reference of Gated DeltaNet and Mamba-2 decode, the bit-exact state formats, the
CPU emulation of every decode mode (where the state is stored, in which format) and the one comparison with its
named tolerances -- the same C++ code as the `replayssm` tool, so results equal the CLI's bit for bit.

    import replayssm
    o, S = replayssm.reference.gdn(q, k, v, g, beta)                   # FP64, [T, Hv, V] and [Hv, V, K]
    replayssm.compare(my_o, o, rel_rms=1e-5)                           # max-abs, rel-RMS, first bad index
    q8 = replayssm.formats.quantize(S, "fp8_e4m3", scaling="row")      # codes, scales, dequantized
    r = replayssm.emulate.decode("gdn", "conventional_shared/bf16", q=q, k=k, v=v, g=g, beta=beta)

Submodules: reference, formats, emulate, io, testing. Shapes: replayssm.reference's docstring; the state is [V, K]
per head, the transpose of flash-linear-attention's [K, V]."""
from . import _core
from ._compare import Comparison, Tolerance, compare, memory_of, tolerance
from . import emulate, formats, io, reference, testing

__version__ = _core.__version__
git_sha = _core.git_sha

__all__ = ["Comparison", "Tolerance", "compare", "memory_of", "tolerance", "emulate", "formats", "io", "reference",
           "testing", "__version__"]
