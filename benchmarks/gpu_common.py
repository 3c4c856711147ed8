"""What the GPU measurement scripts share: a timestamped log line, conv shapes, torchvision nets.

Imported by the ``benchmarks/gpu_*.py`` scripts (run as ``python benchmarks/<script>.py``, so
this folder is on ``sys.path``).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from archsim.measure.backend import ConvShape

#: torchvision networks the scripts time and trace, by name (``tv``: the torchvision module)
NETS = {
    "resnet50": lambda tv: tv.models.resnet50(),
    "googlenet": lambda tv: tv.models.googlenet(aux_logits=False, init_weights=False),
    "vgg16": lambda tv: tv.models.vgg16(),
}


def log(msg: str) -> None:
    """One progress line on stderr, with the wall-clock time."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def conv_shape(
    net: str, layer: str, n: int, c: int, k: int, hw: int, r: int, stride: int, pad: int
) -> ConvShape:
    """A square conv (``hw`` x ``hw`` input, ``r`` x ``r`` filter, one group) with its output
    size."""
    q = (hw + 2 * pad - r) // stride + 1
    return ConvShape(net, layer, n, c, k, hw, hw, r, r, stride, pad, 1, q, q)


def torchvision_net(torch: Any, name: str) -> Any:
    """torchvision network ``name`` on the GPU as the scripts time it: fp16, channels-last,
    eval."""
    import torchvision

    return NETS[name](torchvision).cuda().half().to(memory_format=torch.channels_last).eval()


def forward_op(torch: Any, model: Any, batch: int) -> Any:
    """A call running ``model`` forward (no autograd) on ``batch`` random 224 x 224 images."""
    x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.float16)
    x = x.to(memory_format=torch.channels_last)

    def op() -> None:
        with torch.no_grad():
            model(x)

    return op
