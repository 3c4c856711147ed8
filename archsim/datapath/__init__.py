"""Numba kernels (pure functions on arrays) and their slow literal reference twins.

The names below load on first use (PEP 562): importing one kernel module (the systolic one,
say) does not import the EIE kernels and their numba dispatchers.
"""

from __future__ import annotations

from archsim.lazy import lazy_names

#: public name -> module that defines it
_WHERE = {
    "EieEncoded": "archsim.datapath.eie_encode",
    "EieFixedPoint": "archsim.datapath.eie_prepare",
    "EieReferenceResult": "archsim.datapath.reference",
    "TIMING_FIELDS": "archsim.datapath.eie_kernels",
    "broadcast_items": "archsim.datapath.eie_prepare",
    "choose_fixed_point": "archsim.datapath.eie_prepare",
    "eie_functional": "archsim.datapath.eie_kernels",
    "eie_reference": "archsim.datapath.reference",
    "eie_timing": "archsim.datapath.eie_kernels",
    "encode_eie": "archsim.datapath.eie_encode",
    "padded_activations": "archsim.datapath.eie_prepare",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
