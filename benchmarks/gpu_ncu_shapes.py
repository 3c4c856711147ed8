"""GEMMs for Nsight Compute, given on the command line, each called twice (L2 warm).

Each argument is ``m,n,k,a_stored,b_stored,precision`` with the storages spelled ``mk``/``km``
(A) and ``kn``/``nk`` (B), built as ``archsim probe gpu`` builds them. Run under ncu on the GPU
machine, e.g.::

    ncu --clock-control none --cache-control none --kernel-name regex:"xmma|nvjet|cutlass" \\
        --section SpeedOfLight --section MemoryWorkloadAnalysis \\
        python3 benchmarks/gpu_ncu_shapes.py 192,192,4288,mk,nk,fp8 ...
"""

import sys

from archsim.measure.backend import GemmShape
from archsim.measure.loader import load_backend

STORED = {"mk": "m x k", "km": "k x m", "kn": "k x n", "nk": "n x k"}

b = load_backend("torch")
for arg in sys.argv[1:]:
    m, n, k, a, bs, p = arg.split(",")
    op = b.gemm(GemmShape(int(m), int(n), int(k), STORED[a], STORED[bs], p))
    op()
    op()
    b.sync()
    b.release()
    print("done", arg, flush=True)
