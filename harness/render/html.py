"""HTML pieces every HTML page shares (the report, the retune's page): plain numbers, sortable tables, embedded
images, the environments side by side. Pure: values in, text out. Kept here, below its users, so no stage
imports another stage for its styling."""

from __future__ import annotations

import base64
import html
import math
from typing import Any

import numpy as np
import pandas as pd

from harness.render.envinfo import ENV_ROWS, get

CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1400px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}img{max-width:100%;border:1px solid #eee}
table{border-collapse:collapse;margin:.5em 0;font-size:12.5px}th,td{border:1px solid #ddd;padding:2px 7px}
th{background:#f4f4f4;position:sticky;top:0}table.sortable th{cursor:pointer;user-select:none}
th.asc::after{content:" ▲"}th.desc::after{content:" ▼"}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.regression td{background:#fde2e1}tr.improvement td{background:#e3f4e4}tr.failed_in_tot td{background:#f6c6c3}
tr.missing_in_tot td,tr.skipped_in_tot td{background:#fff3cd}
.note{color:#666;font-size:12px}nav a{margin-right:1em}"""

JS = """document.querySelectorAll('table.sortable').forEach(function(t){
 t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
  var asc=!th.classList.contains('asc');t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc')});
  th.classList.add(asc?'asc':'desc');var body=t.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
  rows.sort(function(a,b){var x=a.cells[i].getAttribute('data-v')||a.cells[i].textContent,
   y=b.cells[i].getAttribute('data-v')||b.cells[i].textContent;var nx=parseFloat(x),ny=parseFloat(y);
   var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return asc?c:-c});
  rows.forEach(function(r){body.appendChild(r)});});});});"""


def plain(v: float) -> str:
    """A number as a reader writes it, never in exponent notation: thousands grouped, at least one decimal and
    about four significant digits, trailing zeros dropped (58,490.1; 12.35; 0.5; 0.0001235); a whole number
    without decimals."""
    v = float(v)
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    decimals = min(max(3 - math.floor(math.log10(abs(v))), 1), 15)
    text = f"{v:,.{decimals}f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _cell(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return '<td class="num" data-v="">—</td>'
        return f'<td class="num" data-v="{float(v)!r}">{plain(v)}</td>'
    if isinstance(v, (int, np.integer)):
        return f'<td class="num" data-v="{int(v)}">{int(v):,}</td>'
    return f"<td>{html.escape(str(v))}</td>"


def html_table(df: pd.DataFrame, cls: str = "sortable", row_class: str | None = None, table_id: str = "") -> str:
    idattr = f' id="{table_id}"' if table_id else ""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for rec in df.itertuples(index=False, name=None):
        rc = ""
        if row_class and row_class in df.columns:
            rc = f' class="{html.escape(str(rec[list(df.columns).index(row_class)]))}"'
        body.append(f"<tr{rc}>" + "".join(_cell(v) for v in rec) + "</tr>")
    return f'<table class="{cls}"{idattr}><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def img(name: str, data: bytes, alt: str) -> str:
    b64 = base64.b64encode(data).decode()
    return f'<p><a href="{name}"><img src="data:image/png;base64,{b64}" alt="{html.escape(alt)}"></a></p>'


def env_table(envs: list[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    """The environments side by side: one column per (label, sidecar)."""
    rows = []
    for label, path in ENV_ROWS:
        vals = [get(env, path) for _, env in envs]
        if any(vals):
            rows.append([label, *vals])
    return pd.DataFrame(rows, columns=["", *[name for name, _ in envs]])
