"""Numba kernels (pure functions on arrays) and their slow literal reference twins."""

from archsim.datapath.eie_encode import EieEncoded, encode_eie
from archsim.datapath.eie_kernels import TIMING_FIELDS, eie_functional, eie_timing
from archsim.datapath.eie_prepare import (
    EieFixedPoint,
    broadcast_items,
    choose_fixed_point,
    padded_activations,
)
from archsim.datapath.reference import EieReferenceResult, eie_reference

__all__ = [
    "EieEncoded",
    "EieFixedPoint",
    "EieReferenceResult",
    "TIMING_FIELDS",
    "broadcast_items",
    "choose_fixed_point",
    "eie_functional",
    "eie_reference",
    "eie_timing",
    "encode_eie",
    "padded_activations",
]
