"""Square GEMMs for Nsight Compute: TF32 and FP16 NN at 512, 1024 and 4096, three calls each.

Run under ncu on the GPU machine (what ``benchmarks/measured/h100_2026-11-27/ncu_gemm_1024.txt``
holds; the first 12 cuBLAS kernels)::

    ncu --clock-control none --target-processes all --kernel-name regex:"xmma|nvjet|cutlass" \\
        --launch-count 12 --section SpeedOfLight --section WarpStateStats \\
        --section LaunchStats --section Occupancy python3 benchmarks/gpu_ncu_gemms.py
"""

import torch

torch.backends.cuda.matmul.allow_tf32 = True
for s in (512, 1024, 4096):
    a, b = torch.randn(s, s, device="cuda"), torch.randn(s, s, device="cuda")
    c = torch.empty(s, s, device="cuda")
    h, hb, hc = a.half(), b.half(), c.half()
    for _ in range(3):
        torch.mm(a, b, out=c)
        torch.mm(h, hb, out=hc)
    torch.cuda.synchronize()
