"""Publish a comparison to a Google spreadsheet through gspread (service-account credentials).

Two worksheets per title, replaced on every publish and nothing else touched:

* ``TITLE · summary`` — status line, counts per verdict, per kernel, both environments side by side, the rule;
* ``TITLE · cases`` — one row per case, worst first, colored by verdict, frozen header, a filter.

A publish is a handful of API calls whatever the number of cases: one metadata read, one ``batchUpdate`` that
deletes and re-adds our worksheets, one ``values:batchUpdate`` per ~2 MB of cells, one ``batchUpdate`` of formatting
(conditional rules per verdict instead of per-cell colors). Requests failing with 408/429/5xx are retried with
exponential backoff (``Retry-After`` honoured). The credentials are read from a file path or an environment
variable and are never printed: errors name the source, not the content.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from harness.compare.compare import Comparison, worst_first
from harness.errors import HarnessError, counted
from harness.publish.http import RETRY_STATUS, retry_wait
from harness.render.envinfo import side_by_side
from harness.render.vocabulary import LOOKS, rgb
from harness.results.load import params_of

SHEETS_ROOT = "https://sheets.googleapis.com"
#: points gspread at another Sheets v4 server (tests, proxies); unset in production
ENDPOINT_ENV = "HARNESS_SHEETS_ENDPOINT"
#: where credentials come from when ``--credentials`` is not given, in this order. Each holds a file path or the
#: service-account JSON itself.
CREDENTIAL_ENVS = ("HARNESS_SHEETS_CREDENTIALS", "GOOGLE_APPLICATION_CREDENTIALS")
SCOPES = ("https://www.googleapis.com/auth/spreadsheets",)
#: Google advises payloads of about 2 MB per request
CHUNK_BYTES = 2_000_000
#: Google's limit is 10 million cells per spreadsheet; leave room for the user's other worksheets
MAX_CELLS = 5_000_000

#: the cases worksheet's columns: after kernel and case, one column per parameter (the union over the kernels,
#: so a filter on M works across the GEMMs), then these
CASE_COLUMNS = (
    "kernel",
    "case_id",
    "dtype",
    "golden_us",
    "tot_us",
    "delta_us",
    "delta_pct",
    "limit_us",
    "verdict",
    "confidence",
    "delta_lo_pct",
    "delta_hi_pct",
    "golden_status",
    "tot_status",
    "golden_config",
    "tot_config",
    "note",
)
#: background colors (RGB 0..1) of a case row, by verdict; verdicts without a fill stay white
VERDICT_COLORS: dict[str, tuple[float, float, float]] = {v: rgb(look.fill) for v, look in LOOKS.items() if look.fill}


# --------------------------------------------------------------------------------------------- pure parts


def spreadsheet_id(ref: str) -> str:
    """The key of a spreadsheet given as its ID or any of its URLs."""
    ref = ref.strip()
    if "/" not in ref:
        if not ref:
            raise HarnessError("--spreadsheet is empty: give the spreadsheet's ID or URL")
        return ref
    marker = "/spreadsheets/d/"
    if marker in ref:
        key = ref.split(marker, 1)[1].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        if key:
            return key
    raise HarnessError(f"--spreadsheet {ref!r}: not a spreadsheet URL (expected …/spreadsheets/d/ID/…)")


def _number(v: Any) -> Any:
    """A JSON-safe cell: finite floats rounded, NaN/inf as empty, everything else as text."""
    if v is None:
        return ""
    if isinstance(v, (float, np.floating)):
        return round(float(v), 4) if np.isfinite(v) else ""
    if isinstance(v, (int, np.integer)):
        return int(v)
    return str(v)


def case_rows(cmp: Comparison, max_rows: int | None = None) -> tuple[list[list[Any]], int]:
    """Header + one row per case (worst first, at most ``max_rows``); returns the rows and how many were left out."""
    t = cmp.table
    order = worst_first(t)
    kept = order if max_rows is None else order[:max_rows]
    cols = [c for c in CASE_COLUMNS if c in t.columns]
    sub = t.iloc[kept]
    params = [params_of(p) for p in sub["params"]] if "params" in sub.columns else [{} for _ in range(len(sub))]
    names = list(dict.fromkeys(k for p in params for k in p))
    data = [[*cols[:2], *names, *cols[2:]]]
    for p, rec in zip(params, sub[cols].itertuples(index=False, name=None), strict=True):
        data.append([_number(v) for v in (*rec[:2], *(p.get(n) for n in names), *rec[2:])])
    return data, len(order) - len(kept)


def summary_rows(cmp: Comparison, title: str, left_out: int, cases_sheet: str) -> list[list[Any]]:
    counts = cmp.counts()
    reg, fail = counts["regression"], counts["failed_in_tot"]
    status = "no regressions" if reg + fail == 0 else f"{counted(reg, 'regression')}, {counted(fail, 'TOT failure')}"
    skipped_tot, skipped_golden = counts["skipped_in_tot"], counts["skipped_in_golden"] + counts["skipped_in_both"]
    rows: list[list[Any]] = [
        [title],
        ["status", status],
        *([["skipped under TOT", f"{skipped_tot} (unsupported under TOT; not blocking)"]] if skipped_tot else []),
        *([["skipped under golden", f"{skipped_golden} (unsupported there; not failures)"]] if skipped_golden else []),
        ["cases", len(cmp.table)],
        ["published", time.strftime("%Y-%m-%d %H:%M:%S %Z")],
        ["details", f"worksheet '{cases_sheet}'" + (f" ({left_out} cases left out: cell limit)" if left_out else "")],
        [],
        ["verdict", "cases"],
    ]
    rows += [[v, n] for v, n in counts.items() if n]
    pk = cmp.per_kernel()
    if len(pk):
        rows += [[], ["kernel", *pk.columns]]
        rows += [[str(k), *(int(x) for x in r)] for k, r in pk.iterrows()]
    envs = side_by_side(cmp.golden_env, cmp.tot_env)
    rows += [[], ["", "golden", "TOT"], ["results file", cmp.golden_path, cmp.tot_path]]
    rows += [[label, g, t] for label, g, t in envs]
    rows += [[], ["rule", cmp.rule.describe()]]
    rows += [[f"rule.{k}", v] for k, v in cmp.rule.record().items()]
    return rows


def _a1(title: str) -> str:
    return "'" + title.replace("'", "''") + "'"


def _color(rgb: tuple[float, float, float]) -> dict[str, float]:
    return {"red": rgb[0], "green": rgb[1], "blue": rgb[2]}


def format_requests(summary_id: int, cases_id: int, n_rows: int, n_cols: int, verdict_col: int) -> list[dict]:
    """One batchUpdate's worth of formatting: bold frozen headers, a filter, a color rule per verdict."""
    bold = {"userEnteredFormat": {"textFormat": {"bold": True}}}
    reqs: list[dict] = [
        {
            "repeatCell": {
                "range": {"sheetId": cases_id, "startRowIndex": 0, "endRowIndex": 1},
                "cell": bold,
                "fields": "userEnteredFormat.textFormat.bold",
            }
        },
        {
            "repeatCell": {
                "range": {"sheetId": summary_id, "startRowIndex": 0, "endRowIndex": 2},
                "cell": bold,
                "fields": "userEnteredFormat.textFormat.bold",
            }
        },
        {
            "setBasicFilter": {
                "filter": {
                    "range": {
                        "sheetId": cases_id,
                        "startRowIndex": 0,
                        "endRowIndex": n_rows,
                        "startColumnIndex": 0,
                        "endColumnIndex": n_cols,
                    }
                }
            }
        },
    ]
    col = _column_letter(verdict_col)
    for i, (verdict, fill) in enumerate(VERDICT_COLORS.items()):
        reqs.append(
            {
                "addConditionalFormatRule": {
                    "index": i,
                    "rule": {
                        "ranges": [
                            {
                                "sheetId": cases_id,
                                "startRowIndex": 1,
                                "endRowIndex": max(n_rows, 2),
                                "startColumnIndex": 0,
                                "endColumnIndex": n_cols,
                            }
                        ],
                        "booleanRule": {
                            "condition": {
                                "type": "CUSTOM_FORMULA",
                                "values": [{"userEnteredValue": f'=${col}2="{verdict}"'}],
                            },
                            "format": {"backgroundColor": _color(fill)},
                        },
                    },
                }
            }
        )
    for sid, cols in ((cases_id, n_cols), (summary_id, 4)):
        reqs.append(
            {
                "autoResizeDimensions": {
                    "dimensions": {"sheetId": sid, "dimension": "COLUMNS", "startIndex": 0, "endIndex": cols}
                }
            }
        )
    return reqs


def _column_letter(idx: int) -> str:
    s, n = "", idx + 1
    while n:
        n, r = divmod(n - 1, 26)
        s = chr(65 + r) + s
    return s


def replace_requests(
    existing: dict[str, int], titles: Iterable[str], sizes: dict[str, tuple[int, int]], frozen: dict[str, int]
) -> list[dict]:
    """Delete each of our worksheets that exists and add it back empty, interleaved so the spreadsheet never has
    zero worksheets (Google refuses that) and the others are never touched."""
    reqs: list[dict] = []
    for title in titles:
        if title in existing:
            reqs.append({"deleteSheet": {"sheetId": existing[title]}})
        rows, cols = sizes[title]
        reqs.append(
            {
                "addSheet": {
                    "properties": {
                        "title": title,
                        "gridProperties": {
                            "rowCount": max(rows, 2),
                            "columnCount": max(cols, 1),
                            "frozenRowCount": frozen.get(title, 0),
                        },
                    }
                }
            }
        )
    return reqs


def value_batches(
    summary_title: str, summary: list[list[Any]], cases_title: str, cases: list[list[Any]], limit: int = CHUNK_BYTES
) -> Iterator[list[dict]]:
    """``values:batchUpdate`` bodies of about ``limit`` bytes each: the summary, then the cases in row blocks."""
    data: list[dict] = [{"range": f"{_a1(summary_title)}!A1", "values": summary}]
    size = len(json.dumps(summary))
    start = 0
    for i, row in enumerate(cases):
        n = len(json.dumps(row)) + 1
        if size + n > limit and i > start:
            data.append({"range": f"{_a1(cases_title)}!A{start + 1}", "values": cases[start:i]})
            yield data
            data, size, start = [], 0, i
        size += n
    if len(cases) > start:
        data.append({"range": f"{_a1(cases_title)}!A{start + 1}", "values": cases[start:]})
    if data:
        yield data


# --------------------------------------------------------------------------------------------- credentials


def load_credentials(path: str | None = None, environ: dict[str, str] | None = None) -> tuple[dict, str]:
    """The service-account info and a description of where it came from (never its content)."""
    environ = dict(os.environ) if environ is None else environ
    sources: list[tuple[str, str]] = []
    if path:
        sources.append((path, f"--credentials {path}"))
    else:
        for name in CREDENTIAL_ENVS:
            if environ.get(name, "").strip():
                sources.append((environ[name].strip(), f"${name}"))
                break
    if not sources:
        raise HarnessError(
            "no Google credentials: pass --credentials FILE or set $"
            + " or $".join(CREDENTIAL_ENVS)
            + " (a service-account JSON file or its content)"
        )
    value, where = sources[0]
    if value.lstrip().startswith("{"):
        text = value
    else:
        p = Path(value).expanduser()
        if not p.is_file():
            raise HarnessError(f"{where}: no such credentials file")
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise HarnessError(f"{where}: cannot read the credentials file ({type(err).__name__})") from None
    try:
        info = json.loads(text)
    except ValueError:
        raise HarnessError(f"{where}: not JSON (expected a service-account key file)") from None
    if not isinstance(info, dict) or info.get("type") != "service_account":
        raise HarnessError(f'{where}: not a service-account key ("type" must be "service_account")')
    missing = [k for k in ("client_email", "private_key", "token_uri") if not info.get(k)]
    if missing:
        raise HarnessError(f"{where}: service-account key lacks {', '.join(missing)}")
    return info, where


# --------------------------------------------------------------------------------------------- gspread


def _client(info: dict, where: str, retries: int, backoff_s: float, sleep: Callable[[float], None]):
    try:
        import gspread
        from gspread.http_client import HTTPClient
    except ImportError:
        raise HarnessError("gspread is not installed: pip install 'harness[sheets]'") from None
    endpoint = os.environ.get(ENDPOINT_ENV, "").rstrip("/")

    class RetryingClient(HTTPClient):
        """gspread's HTTP client with backoff on 408/429/5xx and an optional endpoint other than Google's."""

        def request(self, method: str, endpoint_url: str, *args: Any, **kwargs: Any):
            url = (
                endpoint + endpoint_url[len(SHEETS_ROOT) :]
                if endpoint and endpoint_url.startswith(SHEETS_ROOT)
                else endpoint_url
            )
            for attempt in range(retries + 1):
                try:
                    return super().request(method, url, *args, **kwargs)
                except gspread.exceptions.APIError as err:
                    code = err.response.status_code
                    if code not in RETRY_STATUS or attempt == retries:
                        raise
                    wait = retry_wait(err.response.headers.get("Retry-After"), backoff_s, attempt, cap=64.0)
                    sleep(wait * (1.0 + 0.1 * random.random()))
            raise AssertionError("unreachable")

    try:
        return gspread.service_account_from_dict(info, scopes=list(SCOPES), http_client=RetryingClient)
    except (ValueError, KeyError) as err:
        raise HarnessError(f"{where}: unusable service-account key ({type(err).__name__})") from None


def _api_error(err: Exception, key: str, who: str) -> HarnessError:
    """One line for a failed Sheets call (status and Google's message, never a credential)."""
    response = getattr(err, "response", None)
    code = getattr(response, "status_code", None)
    message = ""
    try:
        message = response.json().get("error", {}).get("message", "") if response is not None else ""
    except ValueError:
        message = ""
    hints = {
        403: f"share the spreadsheet with {who} as an editor",
        404: "no spreadsheet with this ID (check --spreadsheet)",
        429: "rate limited by Google after retries; try again later",
    }
    hint = hints.get(code, "")
    text = f"Google Sheets API {code}" if code else type(err).__name__
    return HarnessError(
        f"spreadsheet {key}: {text}" + (f": {message}" if message else "") + (f" — {hint}" if hint else "")
    )


def publish_sheets(
    cmp: Comparison,
    spreadsheet: str,
    *,
    title: str = "harness",
    credentials: str | None = None,
    retries: int = 5,
    backoff_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Replace this title's two worksheets in ``spreadsheet`` with the comparison; returns the spreadsheet URL."""
    key = spreadsheet_id(spreadsheet)
    info, where = load_credentials(credentials)
    who = info.get("client_email", "the service account")
    summary_title, cases_title = f"{title} · summary", f"{title} · cases"
    for t in (summary_title, cases_title):
        if len(t) > 100 or any(c in t for c in "[]*?/\\:"):
            raise HarnessError(f"--title {title!r}: worksheet titles must be under 100 characters without []*?/\\:")

    n_cols = len([c for c in CASE_COLUMNS if c in cmp.table.columns])
    cases, left_out = case_rows(cmp, max_rows=max(1, MAX_CELLS // max(n_cols, 1) - 1))
    n_cols = len(cases[0])  # with the parameter columns
    summary = summary_rows(cmp, title, left_out, cases_title)
    sizes = {summary_title: (len(summary), max(len(r) for r in summary)), cases_title: (len(cases), n_cols)}

    import google.auth.exceptions
    import gspread
    import requests

    gc = _client(info, where, retries, backoff_s, sleep)
    try:
        http = gc.http_client  # gspread's low-level calls: one request each, nothing fetched twice
        meta = http.fetch_sheet_metadata(key)
        existing = {ws["properties"]["title"]: ws["properties"]["sheetId"] for ws in meta.get("sheets", [])}
        reply = http.batch_update(
            key, {"requests": replace_requests(existing, (summary_title, cases_title), sizes, {cases_title: 1})}
        )
        added = {
            r["addSheet"]["properties"]["title"]: r["addSheet"]["properties"]["sheetId"]
            for r in reply.get("replies", [])
            if "addSheet" in r
        }
        for data in value_batches(summary_title, summary, cases_title, cases):
            http.values_batch_update(key, {"valueInputOption": "RAW", "data": data})
        verdict_col = cases[0].index("verdict")
        http.batch_update(
            key,
            {"requests": format_requests(added[summary_title], added[cases_title], len(cases), n_cols, verdict_col)},
        )
    except gspread.exceptions.APIError as err:
        raise _api_error(err, key, who) from None
    except google.auth.exceptions.RefreshError:
        raise HarnessError(
            f"{where}: Google refused the service-account key (revoked, deleted or wrong project?)"
        ) from None
    except (google.auth.exceptions.TransportError, requests.ConnectionError, requests.Timeout) as err:
        raise HarnessError(f"cannot reach Google Sheets ({type(err).__name__})") from None
    return f"https://docs.google.com/spreadsheets/d/{key}/edit#gid={added[cases_title]}"
