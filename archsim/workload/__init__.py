"""Layer specs -> concrete tensors (seeded synthetic sparsity, real data loaders)."""

from archsim.workload.eie_format import read_eie_dir, write_eie_dir
from archsim.workload.materialize import layer_rng, quantize_to_codebook, synthetic_matvec
from archsim.workload.matvec import materialize_matvec
from archsim.workload.sparse import QuantizedMatVec

__all__ = [
    "QuantizedMatVec",
    "layer_rng",
    "materialize_matvec",
    "quantize_to_codebook",
    "read_eie_dir",
    "synthetic_matvec",
    "write_eie_dir",
]
