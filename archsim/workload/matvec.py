"""Turn an fc/lstm layer spec into a concrete QuantizedMatVec (synthetic or from data)."""

from __future__ import annotations

from pathlib import Path

from archsim.config.workload import FcLayer, LstmLayer
from archsim.errors import WorkloadError
from archsim.workload.eie_format import read_eie_dir
from archsim.workload.materialize import synthetic_matvec
from archsim.workload.sparse import QuantizedMatVec

__all__ = ["materialize_matvec"]


def materialize_matvec(
    layer: FcLayer | LstmLayer, seed: int, base_dir: Path, codebook_entries: int = 16
) -> QuantizedMatVec:
    """Deterministic from (seed, layer.name, spec); ``data:`` is resolved against ``base_dir``."""
    if layer.data is not None:
        folder = (Path(base_dir) / layer.data).resolve()
        shape = layer.matrix_shape
        data = read_eie_dir(folder, layer.name, n_rows=shape[0] if shape else None)
        if shape is not None and data.n_cols != shape[1]:
            raise WorkloadError(
                f"{folder}: shape mismatch: layer {layer.name!r} declares {shape[1]} inputs, "
                f"the data has {data.n_cols}"
            )
        if data.codebook.size > codebook_entries:
            raise WorkloadError(
                f"{folder}: codebook has {data.codebook.size} entries; the hardware holds "
                f"{codebook_entries}"
            )
        return data
    rows, cols = layer.matrix_shape  # type: ignore[misc]
    return synthetic_matvec(
        layer.name,
        rows,
        cols,
        float(layer.weight_density),  # type: ignore[arg-type]
        float(layer.activation_density),  # type: ignore[arg-type]
        layer.bias,
        seed,
        codebook_entries,
    )
