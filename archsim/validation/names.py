"""What ``archsim validate``'s command line names, without importing any claim or model."""

from __future__ import annotations

from pathlib import Path

__all__ = ["EIE_DATA_RELATIVE", "MODELS"]

#: the models with claims, in report order (``runner.CLAIMS`` keys)
MODELS = ("eie", "scnn", "tensor_core", "multigpu", "networks")

#: Where the real AlexNet FC8 layer in EIE's format lives, relative to a checkout's parent.
EIE_DATA_RELATIVE = Path("shared") / "data" / "eie_alexnet_fc8"
