"""Extract DeepBench's published V100 training GEMMs and convs into the CSVs that
``gpu_vs_measured.py`` and ``deepbench_conv.py`` read.

    python benchmarks/deepbench_v100_csv.py DeepBench_NV_V100.xlsx -o DIR

reads ``results/train/DeepBench_NV_V100.xlsx`` of baidu-research/DeepBench (sheets "Results
FP32" and "Results - FP16 ip, Mixed math", section "Dense Matrix Multiplication") with the
standard library only and writes ``DIR/deepbench_v100_fp32.csv`` and
``DIR/deepbench_v100_fp16.csv`` (columns row, app, m, n, k, a_t, b_t, ms; ``row`` is the sheet
row, so a CSV row can be traced back to the workbook). 160 rows each. The same sheets'
"Convolution" section goes to ``DIR/deepbench_v100_conv_fp32.csv`` and
``DIR/deepbench_v100_conv_fp16.csv`` (columns row, app, w, h, c, n, k, s, r, pad_w, pad_h,
stride_w, stride_h, fwd_ms, algo, bwd_data_ms, bwd_filter_ms: the forward time and the
forward algorithm cuDNN ran, then the backward passes' times, empty where the workbook has
none: a first layer's input gradient), 94 rows each.

Reading the numbers: DeepBench's ``code/nvidia/gemm_bench.cu`` (``time_gemm``) times 400
back-to-back ``cublasGemmEx`` calls and returns ``static_cast<int>`` microseconds per call, so
every published time is a whole number of microseconds, truncated: 0.008 ms means 8-9 us.
The matrices are column-major (cuBLAS): ``a_t = T`` means A is stored k x m with leading
dimension k, i.e. each of A's m rows is contiguous along K; ``b_t = N`` likewise means each of
B's n columns is contiguous along K.
"""

from __future__ import annotations

import argparse
import csv
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

_NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
SHEETS = {"fp32": "Results FP32", "fp16": "Results - FP16 ip, Mixed math"}
COLUMNS = ["row", "app", "m", "n", "k", "a_t", "b_t", "ms"]
CONV_COLUMNS = ["row", "app", "w", "h", "c", "n", "k", "s", "r", "pad_w", "pad_h", "stride_w",
                "stride_h", "fwd_ms", "algo", "bwd_data_ms", "bwd_filter_ms"]  # fmt: skip


def _column(ref: str) -> int:
    """0-based column index of a cell reference such as ``C12``."""
    n = 0
    for ch in re.match(r"[A-Z]+", ref).group():  # type: ignore[union-attr]
        n = n * 26 + ord(ch) - 64
    return n - 1


def read_sheets(path: Path) -> dict[str, list[tuple[int, dict[int, str]]]]:
    """Every sheet of the workbook as [(sheet row, {column: text})]."""
    with zipfile.ZipFile(path) as z:
        strings = [
            "".join(t.text or "" for t in si.iter(f"{{{_NS['m']}}}t"))
            for si in ET.fromstring(z.read("xl/sharedStrings.xml")).findall("m:si", _NS)
        ]
        rels = ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))
        target = {r.get("Id"): r.get("Target") for r in rels}
        book = ET.fromstring(z.read("xl/workbook.xml"))
        out: dict[str, list[tuple[int, dict[int, str]]]] = {}
        listed = book.find("m:sheets", _NS)
        for sheet in list(listed) if listed is not None else []:
            part = str(target[sheet.get(_REL)]).lstrip("/")
            part = part if part.startswith("xl/") else f"xl/{part}"
            rows = []
            for r in ET.fromstring(z.read(part)).iter(f"{{{_NS['m']}}}row"):
                cells: dict[int, str] = {}
                for c in r.findall("m:c", _NS):
                    v = c.find("m:v", _NS)
                    if v is None or v.text is None:
                        continue
                    cells[_column(c.get("r", "A1"))] = (
                        strings[int(v.text)] if c.get("t") == "s" else v.text
                    )
                rows.append((int(r.get("r", "0")), cells))
            out[str(sheet.get("name"))] = rows
    return out


def gemm_rows(rows: list[tuple[int, dict[int, str]]]) -> list[list[object]]:
    """The "Dense Matrix Multiplication" section: one list per GEMM in ``COLUMNS`` order."""
    out: list[list[object]] = []
    started = False
    for number, cells in rows:
        if cells.get(0) == "Dense Matrix Multiplication":
            started = True
            continue
        if not started or not cells:
            continue
        if cells.get(0):  # the next section's title
            break
        m, n, k = (int(cells[i]) for i in (2, 3, 4))
        out.append([number, cells.get(1, ""), m, n, k, cells[5], cells[6], float(cells[8])])
    return out


def _ms(text: str) -> float | str:
    """A time cell as a number, or "" for the workbook's N/A."""
    try:
        return float(text)
    except ValueError:
        return ""


def conv_rows(rows: list[tuple[int, dict[int, str]]]) -> list[list[object]]:
    """The "Convolution" section: one list per conv in ``CONV_COLUMNS`` order (the sheet's
    columns B-M, the forward time N, the forward algorithm X, the backward times O and P)."""
    out: list[list[object]] = []
    started = False
    for number, cells in rows:
        if cells.get(0, "").strip() == "Convolution":
            started = True
            continue
        if not started or not cells:
            continue
        if not cells.get(2, "").strip() or not cells[2].strip().isdigit():
            if out:
                break
            continue  # the header row
        shape = [int(float(cells[i])) for i in range(2, 13)]
        fwd = float(cells[13])
        bwd = [_ms(cells.get(i, "")) for i in (14, 15)]
        out.append([number, cells.get(1, ""), *shape, fwd, cells.get(23, "").strip(), *bwd])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("xlsx", type=Path, help="results/train/DeepBench_NV_V100.xlsx")
    ap.add_argument("-o", "--out", type=Path, default=Path("."), help="output folder")
    args = ap.parse_args()
    sheets = read_sheets(args.xlsx)
    args.out.mkdir(parents=True, exist_ok=True)
    for prec, name in SHEETS.items():
        for stem, header, rows, what in (
            (f"deepbench_v100_{prec}", COLUMNS, gemm_rows(sheets[name]), "GEMMs"),
            (f"deepbench_v100_conv_{prec}", CONV_COLUMNS, conv_rows(sheets[name]), "convs"),
        ):
            path = args.out / f"{stem}.csv"
            with path.open("w", newline="") as fh:
                w = csv.writer(fh)
                w.writerow(header)
                w.writerows(rows)
            print(f"{path}: {len(rows)} {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
