"""Validation page: claims grouped by model with pass/fail counts, escaped, self-contained."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from archsim.errors import ArchsimError
from archsim.report import render_validation_report, write_validation_report


def test_grouped_with_counts(claims: pd.DataFrame) -> None:
    html = render_validation_report(claims, title="Paper vs archsim")
    sections = re.findall(r'<section id="model-\d+" class="model">\s*<h2>(.*?)</h2>', html, re.S)
    names = [re.sub(r"<.*", "", s, flags=re.S).strip() for s in sections]
    assert names == ["eie", "scnn", "tensor_core"]
    assert re.sub(r"\s+", " ", sections[0]).count("2 pass") == 1 and "1 fail" in sections[0]
    assert "fail" not in sections[2].replace("pass", "")  # all passed: no fail badge
    assert html.count('<tr class="fail">') == 2 and html.count('<tr class="pass">') == 4
    cards = dict(re.findall(r'<div class="k">(\w+)</div><div class="v">(\d+)</div>', html))
    assert cards == {"claims": "6", "pass": "4", "fail": "2", "models": "3"}


def test_values_formatted_and_escaped(claims: pd.DataFrame) -> None:
    html = render_validation_report(claims, title="a <b> & c")
    assert "a &lt;b&gt; &amp; c" in html and "uniform &lt;sparsity&gt;" in html
    assert "-28.2 %" in html  # VGG-6: (24.7 - 34.4) / 34.4
    assert "\u00b125.0 %" in html and "TFLOP/s" in html
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://', "")


def test_unit_optional_and_missing_columns(claims: pd.DataFrame, tmp_path: Path) -> None:
    html = render_validation_report(claims.drop(columns=["unit"]), title="t")
    assert "<th>unit</th>" not in html
    with pytest.raises(ArchsimError, match="status.*missing.*required: model"):
        write_validation_report(claims.drop(columns=["status"]), tmp_path, title="t")
    assert list(tmp_path.iterdir()) == []
    out = write_validation_report(claims, tmp_path, title="t")
    assert out == tmp_path / "validation.html" and out.read_text().startswith("<!DOCTYPE html>")
