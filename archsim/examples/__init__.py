"""Worked examples shipped with archsim (need the ``[onnx]`` extra)."""
