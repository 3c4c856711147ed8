"""Slow literal twins of ``systolic_kernels`` (small inputs only).

* ``scalesim_memory_reference`` builds SCALE-Sim 3.0.0's operand, prefetch and demand matrices
  as it does (concatenated folds, skew, flips, anti-diagonal roll-out) and runs them row by row
  through literal re-implementations of its read buffer (Python sets of addresses per line),
  estimated-bandwidth read buffer (never stalls) and write buffer (a list of drain lines). It
  must give the same fields as ``scalesim_memory``.
* ``array_reference`` simulates the R x C array register by register, cycle by cycle, for the
  OS, WS and IS dataflows, and returns the GEMM output it computes and the cycles it took in the
  paper's per-fold form (``2R + C + T - 2``: skewed fill, T MAC steps, R drain cycles).
"""

from __future__ import annotations

import math

import numpy as np

from archsim.datapath.systolic_folds import SCALESIM_FIELDS, spatio_temporal

__all__ = ["scalesim_memory_reference", "array_reference", "operand_matrices"]


def operand_matrices(geometry: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SCALE-Sim's IFMAP (M x K, im2col, -1 outside), FILTER (K x N), OFMAP (M x N) addresses."""
    ih, iw, fh, fw, ch, stride, oh, ow, nf = geometry
    window = fh * fw * ch
    m = oh * ow
    ifmap = np.full((m, window), -1, dtype=np.int64)
    for i in range(m):
        orow, ocol = divmod(i, ow)
        irow, icol = orow * stride, ocol * stride
        for j in range(window):
            c_row, rem = divmod(j, fw * ch)
            c_col, c_ch = divmod(rem, ch)
            if c_row + irow < ih and c_col + icol < iw:
                ifmap[i, j] = (c_row * iw + c_col) * ch + c_ch + (irow * iw + icol) * ch
    filt = np.array([[n * window + k for n in range(nf)] for k in range(window)], dtype=np.int64)
    ofmap = np.array([[i * nf + n for n in range(nf)] for i in range(m)], dtype=np.int64)
    return ifmap, filt, ofmap


def _skew(mat: np.ndarray) -> np.ndarray:
    rows, cols = mat.shape
    out = np.full((rows + cols - 1, cols), -1, dtype=mat.dtype)
    for c in range(cols):
        out[c : c + rows, c] = mat[:, c]
    return out


def _pad_cols(mat: np.ndarray, width: int) -> np.ndarray:
    if mat.shape[1] < width:
        mat = np.concatenate([mat, np.full((mat.shape[0], width - mat.shape[1]), -1)], axis=1)
    return mat


def _pad_rows(mat: np.ndarray, height: int) -> np.ndarray:
    if mat.shape[0] < height:
        mat = np.concatenate([mat, np.full((height - mat.shape[0], mat.shape[1]), -1)], axis=0)
    return mat


def _gap(rows: int, cols: int) -> np.ndarray:
    return np.full((rows, cols), -1, dtype=np.int64)


def _roll_out(mat: np.ndarray) -> list[int]:
    """Anti-diagonal order: diagonal d, rows from high to low."""
    rows, cols = mat.shape
    out = []
    for d in range(rows + cols):
        for r in range(min(d, rows - 1), max(0, d - cols + 1) - 1, -1):
            out.append(int(mat[r, d - r]))
    return out


def _matrices(df: str, rows: int, cols: int, ifm: np.ndarray, flt: np.ndarray, ofm: np.ndarray):
    """(ifmap prefetch list, filter prefetch list, ifmap/filter/ofmap demand matrices)."""
    R, C = rows, cols
    m, k = ifm.shape
    n = flt.shape[1]
    sr, sc, t = spatio_temporal(df, m, n, k)
    rf, cf = math.ceil(sr / R), math.ceil(sc / C)
    dem_i, dem_f, dem_o = [], [], []
    if df == "os":
        it = ifm.T
        pre_i = _roll_out(
            np.concatenate([_pad_cols(it[:, f * R : (f + 1) * R], R) for f in range(rf)])
        )
        pre_f = _roll_out(
            np.concatenate([_pad_cols(flt[:, f * C : (f + 1) * C], C) for f in range(cf)])
        )
        for fc in range(cf):
            for fr in range(rf):
                a = _pad_cols(it[:, fr * R : (fr + 1) * R], R)
                dem_i.append(_skew(np.concatenate([a, _gap(C - 1, R)])))
                b = _pad_cols(flt[:, fc * C : (fc + 1) * C], C)
                dem_f.append(_skew(np.concatenate([b, _gap(R - 1, C)])))
                o = _pad_rows(_pad_cols(ofm[fr * R : (fr + 1) * R, fc * C : (fc + 1) * C], C), R)
                dem_o.append(_skew(np.concatenate([_gap(t - 1, C), np.flip(o, 0)])))
    elif df == "ws":
        pre_i = _roll_out(
            np.concatenate([_pad_cols(ifm[:, f * R : (f + 1) * R], R) for f in range(rf)])
        )
        pre_f = [
            int(x)
            for x in np.concatenate(
                [_pad_cols(flt[:, f * C : (f + 1) * C], C) for f in range(cf)]
            ).ravel()
        ]
        for fc in range(cf):
            for fr in range(rf):
                a = _pad_cols(ifm[:, fr * R : (fr + 1) * R], R)
                dem_i.append(_skew(np.concatenate([_gap(R, R), a, _gap(C - 1, R)])))
                w = _pad_rows(_pad_cols(flt[fr * R : (fr + 1) * R, fc * C : (fc + 1) * C], C), R)
                dem_f.append(np.concatenate([np.flip(w, 0), _gap(R + C + t - 2, C)]))
                o = _pad_cols(ofm[:, fc * C : (fc + 1) * C], C)
                dem_o.append(_skew(np.concatenate([_gap(2 * R - 1, C), o])))
    else:
        it = ifm.T
        pre_i = [
            int(x)
            for x in np.concatenate(
                [_pad_cols(it[:, f * C : (f + 1) * C], C) for f in range(cf)]
            ).ravel()
        ]
        pre_f = _roll_out(
            np.concatenate([_pad_cols(flt[f * R : (f + 1) * R, :].T, R) for f in range(rf)])
        )
        for fc in range(cf):
            for fr in range(rf):
                a = _pad_rows(_pad_cols(it[fr * R : (fr + 1) * R, fc * C : (fc + 1) * C], C), R)
                dem_i.append(np.concatenate([np.flip(a, 0), _gap(R + C + t - 2, C)]))
                b = _pad_cols(flt[fr * R : (fr + 1) * R, :].T, R)
                dem_f.append(_skew(np.concatenate([_gap(R, R), b, _gap(C - 1, R)])))
                o = _pad_cols(ofm[fc * C : (fc + 1) * C, :].T, C)
                dem_o.append(_skew(np.concatenate([_gap(2 * R - 1, C), o])))
    return pre_i, pre_f, np.concatenate(dem_i), np.concatenate(dem_f), np.concatenate(dem_o)


class _EstimateBuffer:
    """SCALE-Sim 3.0.0's CALC-mode read buffer (``read_buffer_estimate_bw``), literally: new
    addresses fill sets of words/100 addresses; a hit is membership in one of the active
    window's sets; each filled set after the window moves it on by the prefetch sets."""

    def __init__(self, words: int) -> None:
        self.per_set = words // 100
        self.sets: list[set[int]] = []
        self.current: set[int] = set()
        self.start, self.end, self.prefetch = 0, 49, 50
        self.accesses = 0  # every inserted address is prefetched once
        self.first_request: int | None = None
        self.first_cycle: int | None = None  # first DRAM read: the first prefetch's first cycle
        self.move_cycle = -2  # the request cycle of the window's last move

    @property
    def last_cycle(self) -> int:
        """Last DRAM response: the final prefetch runs up to the last move's cycle (or ends
        at cycle -2 when the window never moved), answered one cycle later."""
        return self.move_cycle + 1

    def _first_prefetch(self, end: int, words: int) -> None:
        """SCALE-Sim's first prefetch ends at ``end`` at 10 words per cycle; DRAM latency 1."""
        self.first_cycle = end - math.ceil(words / 10) + 1 + 1

    def service(self, row: np.ndarray, cycle: int) -> None:
        for a in row:
            if a == -1:
                continue
            a = int(a)
            if self.first_request is None:
                self.first_request = cycle
            window = self.sets[self.start : min(len(self.sets), self.end + 1)]
            if any(a in s for s in window) or a in self.current:
                continue
            self.current.add(a)
            self.accesses += 1
            if len(self.current) == self.per_set:
                self.sets.append(self.current)
                self.current = set()
                if len(self.sets) == self.end + 1:
                    if self.first_cycle is None:
                        assert self.first_request is not None
                        self._first_prefetch(self.first_request - 2, self.prefetch * self.per_set)
                    self.start += self.prefetch
                    self.end += self.prefetch
                    self.move_cycle = cycle

    def complete(self) -> None:
        """The end of the layer: without a window move yet, every set is prefetched now."""
        if self.first_cycle is None:
            n_sets = len(self.sets) + (1 if self.current else 0)
            self._first_prefetch(-2, n_sets * self.per_set)


class _ReadBuffer:
    """SCALE-Sim's USER-mode read buffer: sets of addresses, a circular active window."""

    def __init__(self, size: int, bw: int, prefetch: list[int]) -> None:
        self.bw = bw
        self.active = math.ceil(size * 0.5)
        self.pre = size - self.active
        eps = math.ceil(size / 100)
        self.lines: list[set[int]] = []
        cur: set[int] = set()
        ctr = 0
        for a in prefetch:
            if a != -1:
                cur.add(a)
                ctr += 1
            if ctr >= eps:
                self.lines.append(cur)
                cur, ctr = set(), 0
        self.lines.append(cur)
        n = len(self.lines)
        self.a_lines = min(math.ceil(self.active / eps), n)
        self.p_lines = min(math.ceil(self.pre / eps), n - self.a_lines)
        self.fetch_rows = math.ceil(len(prefetch) / bw)
        self.started = False
        self.window = (0, self.a_lines)
        self.last = 0
        self.accesses = 0
        self.prefetches = 0
        self.first_cycle = 0

    def _hit(self, addr: int) -> bool:
        s, e = self.window
        ids = range(s, e) if s < e else [*range(s, len(self.lines)), *range(e)]
        return any(addr in self.lines[i] for i in ids)

    def service(self, row: np.ndarray, cycle: int) -> int:
        if not self.started:  # prefetch the active buffer so it is ready at ``cycle``
            nl = min(math.ceil(self.active / self.bw), self.fetch_rows)
            # requests at cycle - nl - 1 + i, answered one cycle later: all before ``cycle``
            responses = [cycle - nl + i for i in range(nl)]
            self.last = max(responses)
            self.first_cycle = min(responses)
            self.accesses += nl * self.bw
            self.started = True
        offset = 1
        for addr in row:
            if addr == -1:
                continue
            while not self._hit(int(addr)):
                n = len(self.lines)
                s = (self.window[0] + self.p_lines) % n
                self.window = (s, (s + self.a_lines) % n)
                nl = math.ceil(self.pre / self.bw)
                self.last = max(self.last + i + 1 + 1 for i in range(nl))
                self.accesses += nl * self.bw
                self.prefetches += 1
                pot = self.last - (cycle + offset)
                offset += pot
                if pot > 0:
                    offset += pot
        return cycle + offset


class _WriteBuffer:
    """SCALE-Sim's OFMAP write buffer: lines of ``bw`` words drained half a buffer at a time."""

    def __init__(self, size: int, bw: int) -> None:
        self.total = size
        self.active = math.ceil(size * 0.5)
        self.drain = size - self.active
        self.bw = bw
        self.free = size
        self.lines: list[list[int]] = []
        self.cur: list[int] = []
        self.start = 0
        self.drain_end = 0
        self.accesses = 0
        self.drains = 0
        self.cycles: list[int] = []

    def _store(self, a: int) -> None:
        self.cur.append(a)
        self.free -= 1
        if len(self.cur) == self.bw:
            self.lines.append(self.cur)
            self.cur = []

    def _flush(self) -> None:
        if self.cur:
            self.lines.append(self.cur + [-1] * (self.bw - len(self.cur)))
            self.cur = []

    def _empty(self, start_cycle: int) -> int:
        n_lines = math.ceil(self.drain / self.bw)
        end = min(self.start + n_lines, len(self.lines))
        chunk = self.lines[self.start : end]
        data = len(chunk) * self.bw - sum(1 for x in chunk[-1] if x == -1)
        self.accesses += data
        self.drains += 1
        cyc = [start_cycle + i for i in range(len(chunk))]
        self.cycles += cyc
        self.free += data
        self.start = end
        return max(cyc)

    def service(self, row: np.ndarray, cycle: int) -> int:
        now = cycle
        for a in row:
            if a == -1:
                continue
            self._store(int(a))
            if now < self.drain_end:
                if not self.free > 0:
                    now = self.drain_end
            elif self.free < self.total - self.drain:
                self._flush()
                self.drain_end = self._empty(now)
        return now

    def empty_all(self, cycle: int) -> None:
        self._flush()
        while self.start < len(self.lines):
            self.drain_end = self._empty(cycle)
            cycle = self.drain_end + 1


def scalesim_memory_reference(
    dataflow: str,
    rows: int,
    cols: int,
    geometry: tuple[int, ...],
    *,
    user_bandwidth: bool,
    ifmap_sram_words: int,
    filter_sram_words: int,
    ofmap_sram_words: int,
    ifmap_words_per_cycle: int,
    filter_words_per_cycle: int,
    ofmap_words_per_cycle: int,
) -> dict[str, int]:
    """Literal twin of ``systolic_kernels.scalesim_memory`` (same arguments and fields)."""
    ifm, flt, ofm = operand_matrices(tuple(int(x) for x in geometry))
    pre_i, pre_f, dem_i, dem_f, dem_o = _matrices(dataflow, rows, cols, ifm, flt, ofm)
    rb_i = _ReadBuffer(ifmap_sram_words, ifmap_words_per_cycle, pre_i)
    rb_f = _ReadBuffer(filter_sram_words, filter_words_per_cycle, pre_f)
    wb = _WriteBuffer(ofmap_sram_words, ofmap_words_per_cycle)
    est_i, est_f = _EstimateBuffer(ifmap_sram_words), _EstimateBuffer(filter_sram_words)
    stalls = 0
    out_cycle = 0
    served: dict[str, list[int]] = {"ifmap": [], "filter": [], "ofmap": []}
    for i in range(dem_o.shape[0]):
        cycle = i + stalls
        if user_bandwidth:
            at_i = rb_i.service(dem_i[i], cycle)
            at_f = rb_f.service(dem_f[i], cycle)
        else:
            est_i.service(dem_i[i], cycle)
            est_f.service(dem_f[i], cycle)
            at_i = at_f = cycle + 1  # CALC mode never stalls a read: hit latency 1
        out_cycle = wb.service(dem_o[i], cycle)
        for name, row, at in (("ifmap", dem_i[i], at_i), ("filter", dem_f[i], at_f),
                              ("ofmap", dem_o[i], out_cycle)):  # fmt: skip
            if (row != -1).any():
                served[name].append(at)
        stalls += max(at_i - cycle - 1, at_f - cycle - 1, out_cycle - cycle)
    wb.empty_all(out_cycle)
    if not user_bandwidth:
        est_i.complete()
        est_f.complete()
    values = {
        "total_cycles": out_cycle,
        "stall_cycles": stalls,
        "ifmap_dram_reads": (rb_i if user_bandwidth else est_i).accesses,
        "filter_dram_reads": (rb_f if user_bandwidth else est_f).accesses,
        "ofmap_dram_writes": wb.accesses,
        "ifmap_dram_start": (rb_i if user_bandwidth else est_i).first_cycle,
        "filter_dram_start": (rb_f if user_bandwidth else est_f).first_cycle,
        "ofmap_dram_stop": max(wb.cycles) if wb.cycles else 0,
        "ifmap_prefetches": rb_i.prefetches,
        "filter_prefetches": rb_f.prefetches,
        "ofmap_drains": wb.drains,
        "ifmap_dram_stop": rb_i.last if user_bandwidth else est_i.last_cycle,
        "filter_dram_stop": rb_f.last if user_bandwidth else est_f.last_cycle,
        "ofmap_dram_start": min(wb.cycles) if wb.cycles else -1,
    }
    for name, cycles in served.items():
        values[f"{name}_sram_start"] = cycles[0] if cycles else -1
        values[f"{name}_sram_stop"] = cycles[-1] if cycles else -1
    return {k: int(values[k]) for k in SCALESIM_FIELDS}


def array_reference(a: np.ndarray, b: np.ndarray, rows: int, cols: int, dataflow: str):
    """Run ``a @ b`` (M x K times K x N, integers) on an R x C array, register by register.

    Returns ``(output, cycles, macs)``: the M x N result the PEs accumulated, the cycles of all
    folds (each ``2R + C + T - 2``: OS fills R+C-2 skew cycles, does T MAC steps, then shifts
    the R result rows out; WS/IS first shift the stationary R x C block in over R cycles, then
    stream T vectors with partial sums flowing down) and the MACs performed on real operands.
    """
    m, k = a.shape
    n = b.shape[1]
    R, C = rows, cols
    out = np.zeros((m, n), dtype=np.int64)
    sr, sc, t_len = spatio_temporal(dataflow, m, n, k)
    cycles = 0
    macs = 0
    for fc in range(math.ceil(sc / C)):
        for fr in range(math.ceil(sr / R)):
            if dataflow == "os":
                rows_idx = [fr * R + i for i in range(R)]
                cols_idx = [fc * C + j for j in range(C)]
                acc = [[0] * C for _ in range(R)]
                h = [[None] * C for _ in range(R)]  # values moving right (IFMAP)
                v = [[None] * C for _ in range(R)]  # values moving down (FILTER)
                cyc = 0
                while cyc < t_len + R + C - 2:
                    h = [[None] + row[:-1] for row in h]
                    v = [[None] * C] + v[:-1]
                    for i in range(R):
                        t = cyc - i
                        if 0 <= t < t_len and rows_idx[i] < m:
                            h[i][0] = int(a[rows_idx[i], t])
                    for j in range(C):
                        t = cyc - j
                        if 0 <= t < t_len and cols_idx[j] < n:
                            v[0][j] = int(b[t, cols_idx[j]])
                    for i in range(R):
                        for j in range(C):
                            if h[i][j] is not None and v[i][j] is not None:
                                acc[i][j] += h[i][j] * v[i][j]
                                macs += 1
                    cyc += 1
                for _ in range(R):  # drain: the bottom row leaves each cycle
                    cyc += 1
                for i in range(R):
                    for j in range(C):
                        if rows_idx[i] < m and cols_idx[j] < n:
                            out[rows_idx[i], cols_idx[j]] = acc[i][j]
            else:
                # stationary block: W[i][j] (WS: F[k, n]; IS: I^T[k, m]); streamed vector x[t][i]
                ks = [fr * R + i for i in range(R)]
                js = [fc * C + j for j in range(C)]
                cyc = R  # shift the stationary block in, one row per cycle
                if dataflow == "ws":
                    w = [[int(b[ks[i], js[j]]) if ks[i] < k and js[j] < n else None
                          for j in range(C)] for i in range(R)]  # fmt: skip
                else:
                    w = [[int(a[js[j], ks[i]]) if ks[i] < k and js[j] < m else None
                          for j in range(C)] for i in range(R)]  # fmt: skip
                h = [[None] * C for _ in range(R)]
                ps = [[None] * C for _ in range(R)]  # partial sums moving down
                step = 0
                while step < t_len + R + C - 2:
                    h = [[None] + row[:-1] for row in h]
                    for i in range(R):
                        t = step - i
                        if 0 <= t < t_len and ks[i] < k:
                            h[i][0] = (
                                (t, int(a[t, ks[i]])) if dataflow == "ws" else (t, int(b[ks[i], t]))
                            )
                    new_ps = [[None] * C for _ in range(R)]
                    for i in range(R):
                        for j in range(C):
                            above = ps[i - 1][j] if i > 0 else None
                            t_here = step - i - j
                            if not 0 <= t_here < t_len:
                                continue
                            val = above[1] if above is not None else 0
                            if h[i][j] is not None and w[i][j] is not None:
                                val += h[i][j][1] * w[i][j]
                                macs += 1
                            new_ps[i][j] = (t_here, val)
                    for j in range(C):  # the bottom row's sums leave the array
                        got = new_ps[R - 1][j]
                        if got is not None and js[j] < (n if dataflow == "ws" else m):
                            tt, val = got
                            if dataflow == "ws":
                                out[tt, js[j]] += val
                            else:
                                out[js[j], tt] += val
                    ps = new_ps
                    step += 1
                cyc += step
            cycles += cyc
    return out, cycles, macs
