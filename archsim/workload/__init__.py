"""Layer specs -> concrete tensors (seeded synthetic sparsity, real data loaders)."""

from archsim.workload.conv import SparseConv, materialize_conv, reference_conv
from archsim.workload.eie_format import read_eie_dir, write_eie_dir
from archsim.workload.materialize import layer_rng, quantize_to_codebook, synthetic_matvec
from archsim.workload.matvec import materialize_matvec
from archsim.workload.sparse import QuantizedMatVec

__all__ = [
    "QuantizedMatVec",
    "SparseConv",
    "layer_rng",
    "materialize_conv",
    "materialize_matvec",
    "quantize_to_codebook",
    "read_eie_dir",
    "reference_conv",
    "synthetic_matvec",
    "write_eie_dir",
]
