"""Turn an fc/lstm layer spec into a concrete QuantizedMatVec (synthetic or from data)."""

from __future__ import annotations

from pathlib import Path

from archsim.config.workload import FcLayer, LstmLayer
from archsim.errors import WorkloadError
from archsim.workload.eie_format import EieShapeError, read_eie_dir
from archsim.workload.materialize import synthetic_matvec
from archsim.workload.sparse import QuantizedMatVec

__all__ = ["materialize_matvec", "LayerDataError"]


class LayerDataError(WorkloadError):
    """A layer's data cannot be used; ``field`` is the layer field at fault (``data``, ``inputs``).

    The message names the layer; callers that know the workload file (the CLI) can rebuild it as
    ``<file>: layers.<i>.<field>: <problem>`` from ``layer``, ``field`` and ``problem``.
    """

    def __init__(self, layer: str, field: str, problem: str) -> None:
        self.layer = layer
        self.field = field
        self.problem = problem
        super().__init__(f"layer {layer!r}: {field}: {problem}")


def materialize_matvec(
    layer: FcLayer | LstmLayer, seed: int, base_dir: Path, codebook_entries: int = 16
) -> QuantizedMatVec:
    """Deterministic from (seed, layer.name, spec); ``data:`` is resolved against ``base_dir``."""
    if layer.batch != 1:
        raise LayerDataError(
            layer.name,
            "batch",
            f"batch={layer.batch} is only supported on tensor_core GPUs; matrix-vector engines "
            "(EIE, SCNN) take batch 1",
        )
    if layer.data is not None:
        folder = (Path(base_dir) / layer.data).resolve()
        shape = layer.matrix_shape
        try:
            data = read_eie_dir(folder, layer.name, n_rows=shape[0] if shape else None)
        except LayerDataError:
            raise
        except WorkloadError as exc:
            field = "outputs" if isinstance(exc, EieShapeError) else "data"
            raise LayerDataError(layer.name, field, str(exc)) from None
        if shape is not None and data.n_cols != shape[1]:
            raise LayerDataError(
                layer.name,
                "inputs",
                f"shape mismatch: declares {shape[1]} inputs, the data in {folder} has "
                f"{data.n_cols}; allowed: {data.n_cols} (or leave inputs out)",
            )
        if data.codebook.size > codebook_entries:
            raise LayerDataError(
                layer.name,
                "data",
                f"{folder}: codebook has {data.codebook.size} entries; the hardware holds "
                f"{codebook_entries} (encoding.codebook_entries)",
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
