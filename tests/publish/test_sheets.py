"""`harness publish sheets` over real HTTP: gspread's own client against a local Sheets v4 + OAuth server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.compare.compare import compare_files
from harness.compare.store import write_compare
from harness.errors import HarnessError
from harness.publish.sheets import ENDPOINT_ENV, load_credentials, publish_sheets, spreadsheet_id
from tests.conftest import DATA, ROOT
from tests.publish.sheets_server import serve

EMAIL = "perf-bot@proj.iam.gserviceaccount.com"


@pytest.fixture
def fake(monkeypatch):
    f = serve()
    monkeypatch.setenv(ENDPOINT_ENV, f.url)
    yield f
    f.server.shutdown()


@pytest.fixture
def creds(fake, tmp_path, monkeypatch):
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(fake.service_account(EMAIL)))
    monkeypatch.setenv("HARNESS_SHEETS_CREDENTIALS", str(path))
    for k in ("GOOGLE_APPLICATION_CREDENTIALS",):
        monkeypatch.delenv(k, raising=False)
    return path


@pytest.fixture
def cmp():
    return compare_files(DATA / "golden.csv", DATA / "tot.csv")


def _publish(cmp, key, **kw):
    return publish_sheets(cmp, key, backoff_s=0.001, sleep=lambda s: None, **kw)


def test_publishes_summary_and_cases_in_a_few_calls(fake, creds, cmp):
    fake.create("KEY1", {EMAIL}, sheets=("Notes",))
    fake.books["KEY1"].sheets[0].cells[(0, 0)] = "keep me"
    url = _publish(cmp, "https://docs.google.com/spreadsheets/d/KEY1/edit#gid=0")
    assert url.startswith("https://docs.google.com/spreadsheets/d/KEY1/edit#gid=")

    calls = [(m, p) for m, p, _ in fake.sheets_calls()]
    assert calls == [
        ("GET", "/v4/spreadsheets/KEY1"),
        ("POST", "/v4/spreadsheets/KEY1:batchUpdate"),
        ("POST", "/v4/spreadsheets/KEY1/values:batchUpdate"),
        ("POST", "/v4/spreadsheets/KEY1:batchUpdate"),
    ]
    book = fake.books["KEY1"]
    assert [s.properties["title"] for s in book.sheets] == ["Notes", "harness · summary", "harness · cases"]
    assert book.by_title("Notes").cells[(0, 0)] == "keep me"

    cases = book.by_title("harness · cases")
    grid = cases.grid()
    header, rows = grid[0], grid[1:]
    assert len(rows) == len(cmp.table)
    v = header.index("verdict")
    assert rows[0][v] == "regression" and rows[1][v] == "failed_in_tot"  # worst first
    row = dict(zip(header, rows[0]))
    src = cmp.table.set_index(["kernel", "case_id"]).loc[(row["kernel"], row["case_id"])]
    assert row["golden_us"] == pytest.approx(src["golden_us"], abs=1e-4)
    assert row["tot_us"] == pytest.approx(src["tot_us"], abs=1e-4)
    assert isinstance(row["delta_pct"], float) and isinstance(row["M"], int)
    assert cases.properties["gridProperties"]["frozenRowCount"] == 1
    assert cases.basic_filter["range"]["endColumnIndex"] == len(header)
    rules = {r["booleanRule"]["condition"]["values"][0]["userEnteredValue"]: r for r in cases.conditional_formats}
    col = chr(65 + v)
    assert f'=${col}2="regression"' in rules and f'=${col}2="improvement"' in rules

    summary = {r[0]: r[1:] for r in book.by_title("harness · summary").grid() if r and r[0]}
    assert summary["status"][0] == "1 regression, 1 TOT failure"
    assert summary["regression"][0] == 1 and summary["rule.rel"][0] == 1.005
    assert summary["results file"][:2] == [str(DATA / "golden.csv"), str(DATA / "tot.csv")]


def test_republish_replaces_only_its_own_worksheets(fake, creds, cmp):
    fake.create("K", {EMAIL}, sheets=("harness · summary", "harness · cases"))  # only ours: never zero sheets
    _publish(cmp, "K")
    _publish(cmp, "K", title="nightly")
    _publish(cmp, "K")
    titles = [s.properties["title"] for s in fake.books["K"].sheets]
    assert sorted(titles) == sorted(["harness · summary", "harness · cases", "nightly · summary", "nightly · cases"])
    assert len(fake.books["K"].by_title("harness · cases").grid()) == len(cmp.table) + 1


def test_retries_429_and_503_with_backoff(fake, creds, cmp):
    fake.create("K", {EMAIL})
    fake.fail("values:batchUpdate", 429, times=2, retry_after="0")
    fake.fail(":batchUpdate", 503)
    waits: list[float] = []
    publish_sheets(cmp, "K", backoff_s=0.5, sleep=waits.append)
    assert len(waits) == 3 and waits[0] == pytest.approx(0.5, rel=0.11)  # 503: backoff; 429: Retry-After 0
    assert len(fake.books["K"].by_title("harness · cases").grid()) == len(cmp.table) + 1


def test_429_forever_gives_up_with_one_line(fake, creds, cmp):
    fake.create("K", {EMAIL})
    fake.fail("/v4/", 429, times=10, retry_after="0")
    with pytest.raises(HarnessError) as ei:
        _publish(cmp, "K", retries=3)
    assert "429" in str(ei.value) and "rate limited" in str(ei.value)
    assert len(fake.sheets_calls()) == 4


def test_unshared_spreadsheet_names_the_account(fake, creds, cmp):
    fake.create("K", {"someone@else.com"})
    with pytest.raises(HarnessError) as ei:
        _publish(cmp, "K")
    msg = str(ei.value)
    assert "403" in msg and f"share the spreadsheet with {EMAIL}" in msg and "\n" not in msg


def test_missing_spreadsheet(fake, creds, cmp):
    with pytest.raises(HarnessError, match=r"spreadsheet NOPE: Google Sheets API 404.*no spreadsheet with this ID"):
        _publish(cmp, "NOPE")


def test_bad_key_is_refused_by_the_token_endpoint(fake, tmp_path, monkeypatch, cmp):
    info = fake.service_account("rogue@proj.iam.gserviceaccount.com", register=False)
    monkeypatch.setenv("HARNESS_SHEETS_CREDENTIALS", json.dumps(info))  # the JSON itself, as CI secrets hold it
    fake.create("K", {"rogue@proj.iam.gserviceaccount.com"})
    with pytest.raises(HarnessError) as ei:
        _publish(cmp, "K")
    msg = str(ei.value)
    assert msg.startswith("$HARNESS_SHEETS_CREDENTIALS: Google refused the service-account key")
    assert "PRIVATE KEY" not in msg
    assert fake.sheets_calls() == []


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "no such credentials file"),
        ("not json", "not JSON"),
        ('{"type": "authorized_user"}', "not a service-account key"),
        ('{"type": "service_account", "client_email": "a@b"}', "lacks private_key, token_uri"),
    ],
)
def test_bad_credentials_are_one_line(tmp_path, content, needle):
    p = tmp_path / "sa.json"
    if content is not None:
        p.write_text(content)
    with pytest.raises(HarnessError, match=needle) as ei:
        load_credentials(str(p))
    assert "\n" not in str(ei.value)


def test_no_credentials_names_the_variables():
    with pytest.raises(HarnessError, match=r"--credentials FILE or set \$HARNESS_SHEETS_CREDENTIALS"):
        load_credentials(None, environ={})


def test_spreadsheet_ids():
    assert spreadsheet_id("abc") == "abc"
    assert spreadsheet_id("https://docs.google.com/spreadsheets/d/1AbC_d-9/edit?usp=sharing#gid=3") == "1AbC_d-9"
    with pytest.raises(HarnessError, match="not a spreadsheet URL"):
        spreadsheet_id("https://example.com/x")


def test_cli_end_to_end_never_prints_the_key(fake, creds, tmp_path):
    fake.create("K", {EMAIL})
    out = write_compare(compare_files(DATA / "golden.csv", DATA / "tot.csv"), tmp_path / "c.csv")
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        ENDPOINT_ENV: fake.url,
        "HARNESS_SHEETS_CREDENTIALS": str(creds),
    }
    r = subprocess.run(
        [sys.executable, "-m", "harness", "publish", "sheets", str(out), "--spreadsheet", "K", "--title", "pr 7"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert "pr 7 · cases" in r.stdout and "PRIVATE KEY" not in r.stdout + r.stderr
    assert "pr 7 · cases" in [s.properties["title"] for s in fake.books["K"].sheets]
    fake.books["K"].editors.clear()
    r = subprocess.run(
        [sys.executable, "-m", "harness", "publish", "sheets", str(out), "--spreadsheet", "K"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "403" in r.stderr and "Traceback" not in r.stderr


def test_value_batches_cover_every_row_once_within_the_size():
    from harness.publish.sheets import value_batches

    cases = [["h1", "h2"]] + [[f"case-{i}", i * 0.5] for i in range(5000)]
    bodies = list(value_batches("s", [["x"]], "c", cases, limit=10_000))
    assert len(bodies) > 5 and all(len(json.dumps(b)) < 12_000 for b in bodies)
    assert bodies[0][0] == {"range": "'s'!A1", "values": [["x"]]}
    rows, expect_row = [], 1
    for body in bodies:
        for item in body[1 if body is bodies[0] else 0 :]:
            assert item["range"] == f"'c'!A{expect_row}"
            rows += item["values"]
            expect_row += len(item["values"])
    assert rows == cases


def test_skips_have_their_own_summary_rows_and_colors(write):
    from harness.publish.sheets import VERDICT_COLORS, format_requests, summary_rows
    from tests.conftest import HEADER

    g = write(
        "g.csv", HEADER + "k,a,1,1,1,1,fp16,10.0,ok,,\nk,b,1,1,1,1,fp16,,skipped,,needs 3.9\nk,c,1,1,1,1,fp16,9,ok,,\n"
    )
    t = write("t.csv", HEADER + "k,a,1,1,1,1,fp16,,skipped,,no\nk,b,1,1,1,1,fp16,10.0,ok,,\nk,c,1,1,1,1,fp16,9,ok,,\n")
    rows = summary_rows(compare_files(g, t), "T", 0, "T · cases")
    assert ["status", "no regressions"] in rows
    assert ["skipped under TOT", "1 (unsupported under TOT; not blocking)"] in rows
    assert ["skipped under golden", "1 (unsupported there; not failures)"] in rows
    assert ["skipped_in_tot", 1] in rows and ["skipped_in_golden", 1] in rows
    assert VERDICT_COLORS["skipped_in_tot"] != VERDICT_COLORS["failed_in_tot"]
    rules = [
        r["addConditionalFormatRule"]["rule"]
        for r in format_requests(1, 2, 4, 18, 12)
        if "addConditionalFormatRule" in r
    ]
    assert any('="skipped_in_tot"' in r["booleanRule"]["condition"]["values"][0]["userEnteredValue"] for r in rules)
