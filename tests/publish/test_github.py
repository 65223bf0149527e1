"""The sticky PR comment against a local HTTP server that implements the GitHub endpoints it calls."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.compare.compare import compare_files
from harness.compare.store import write_compare
from harness.errors import HarnessError
from harness.publish.github import GitHub
from harness.render.markdown import MARKER
from tests.conftest import DATA


class FakeGitHub:
    def __init__(self):
        self.comments: list[dict] = [{"id": 1, "body": "LGTM"}]
        self.requests: list[tuple[str, str, str | None]] = []
        self.fail: list[int] = []  # statuses to answer next, once each
        self.next_id = 100

    def handler(self):
        gh = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, obj=None, headers=None):
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                data = json.dumps(obj).encode() if obj is not None else b""
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n).decode() if n else None
                gh.requests.append((method, self.path, self.headers.get("Authorization")))
                if gh.fail:
                    code = gh.fail.pop(0)
                    return self._send(code, {"message": "nope"}, {"Retry-After": "0"} if code == 429 else None)
                if method == "GET" and re.match(r"/repos/o/r/issues/7/comments", self.path):
                    return self._send(200, gh.comments)
                if method == "POST" and self.path == "/repos/o/r/issues/7/comments":
                    gh.next_id += 1
                    gh.comments.append({"id": gh.next_id, "body": json.loads(body)["body"]})
                    return self._send(201, gh.comments[-1])
                m = re.match(r"/repos/o/r/issues/comments/(\d+)", self.path)
                if method == "PATCH" and m:
                    c = next(c for c in gh.comments if c["id"] == int(m.group(1)))
                    c["body"] = json.loads(body)["body"]
                    return self._send(200, c)
                return self._send(404, {"message": "Not Found"})

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PATCH(self):
                self._handle("PATCH")

        return H


@pytest.fixture
def server():
    gh = FakeGitHub()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), gh.handler())
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield gh, f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_create_then_update_one_comment(server, tmp_path):
    gh, url = server
    api = GitHub(repo="o/r", token="s3cret", api_url=url, backoff_s=0.01)
    assert api.upsert_comment(7, MARKER + "\nfirst")[0] == "created"
    action, cid = api.upsert_comment(7, MARKER + "\nsecond")
    assert action == "updated"
    ours = [c for c in gh.comments if MARKER in c["body"]]
    assert len(ours) == 1 and ours[0]["body"].endswith("second") and ours[0]["id"] == cid
    assert all(auth == "Bearer s3cret" for _, _, auth in gh.requests)


def test_retries_429_and_5xx(server):
    gh, url = server
    gh.fail = [429, 502]
    api = GitHub(repo="o/r", token="t", api_url=url, backoff_s=0.01)
    assert api.upsert_comment(7, "x")[0] == "created"
    assert [m for m, _, _ in gh.requests][:3] == ["GET", "GET", "GET"]


def test_403_is_one_line_without_the_token(server):
    gh, url = server
    gh.fail = [403]
    with pytest.raises(HarnessError) as ei:
        GitHub(repo="o/r", token="s3cret", api_url=url).upsert_comment(7, "x")
    msg = str(ei.value)
    assert "HTTP 403" in msg and "fork PRs" in msg and "s3cret" not in msg and "\n" not in msg


def test_cli_publishes_rendered_markdown(server, tmp_path, monkeypatch):
    import subprocess
    import sys

    gh, url = server
    out = write_compare(compare_files(DATA / "golden.csv", DATA / "tot.csv"), tmp_path / "c.csv")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "publish",
            "github",
            str(out),
            "--repo",
            "o/r",
            "--pr",
            "7",
            "--api-url",
            url,
        ],
        capture_output=True,
        text=True,
        env={"GITHUB_TOKEN": "tok", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(DATA.parents[1])},
    )
    assert r.returncode == 0, r.stderr
    assert "created comment" in r.stdout and "tok" not in r.stdout + r.stderr
    body = gh.comments[-1]["body"]
    assert body.startswith(MARKER) and "1 regression, 1 TOT failure" in body


def test_comment_links_the_explanations():
    from harness.render.markdown import render_markdown

    cmp = compare_files(DATA / "golden.csv", DATA / "tot.csv")
    body = render_markdown(cmp, explain_url="https://ci.example/run/1#explain")
    assert "compiled-kernel diffs): https://ci.example/run/1#explain" in body
    assert "compiled-kernel diffs" not in render_markdown(cmp)


def test_retry_wait_reads_seconds_and_falls_back_to_backoff():
    from harness.publish.github import retry_wait

    assert retry_wait("3", 1.0, 0, cap=60) == 3.0 and retry_wait("0.5", 1.0, 4, cap=60) == 0.5
    assert retry_wait(None, 1.0, 3, cap=60) == 8.0 and retry_wait("", 0.5, 0, cap=60) == 0.5
    assert retry_wait("Wed, 21 Oct 2026 07:28:00 GMT", 1.0, 2, cap=60) == 4.0  # HTTP-date: backoff
    assert retry_wait("600", 1.0, 0, cap=60) == 60 and retry_wait(None, 1.0, 10, cap=64) == 64


def _publish_cli(capsys, monkeypatch, compare_csv, *args) -> str:
    from harness.cli import main

    monkeypatch.setenv("GITHUB_TOKEN", "s3cret")
    with pytest.raises(SystemExit) as ex:
        main(["publish", "github", str(compare_csv), *args])
    err = capsys.readouterr().err
    assert ex.value.code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "s3cret" not in err
    return err.strip()


@pytest.fixture
def compare_csv(tmp_path):
    return write_compare(compare_files(DATA / "golden.csv", DATA / "tot.csv"), tmp_path / "c.csv")


@pytest.mark.parametrize("repo", ["a b/c", "abc", "o/r/x", "-o/r", "o/..", "o/", "/r", "o--/r", "ow ner/r"])
def test_bad_repo_is_one_line_before_any_request(server, capsys, monkeypatch, compare_csv, repo):
    gh, url = server
    err = _publish_cli(capsys, monkeypatch, compare_csv, "--repo", repo, "--pr", "7", "--api-url", url)
    assert err == f"harness: error: --repo {repo!r}: expected OWNER/NAME, e.g. ROCm/aiter"
    assert gh.requests == []


@pytest.mark.parametrize(
    "api_url, expect",
    [
        ("notaurl", "expected an http(s) URL with a host"),
        ("ftp://api.github.com", "expected an http(s) URL with a host"),
        ("https://", "expected an http(s) URL with a host"),
        ("http://host:port/api", "not a URL"),
        ("https://api.github.com/?page=2", "without ?query or #fragment"),
    ],
)
def test_bad_api_url_is_one_line(capsys, monkeypatch, compare_csv, api_url, expect):
    err = _publish_cli(capsys, monkeypatch, compare_csv, "--repo", "o/r", "--pr", "7", "--api-url", api_url)
    assert err.startswith(f"harness: error: --api-url {api_url!r}: ") and expect in err


def test_bad_pr_number_is_one_line(server, capsys, monkeypatch, compare_csv):
    gh, url = server
    err = _publish_cli(capsys, monkeypatch, compare_csv, "--repo", "o/r", "--pr", "0", "--api-url", url)
    assert err.startswith("harness: error: ") and "--pr" in err and gh.requests == []


def test_valid_repos_and_urls_pass():
    from harness.publish.github import check_api_url, check_repo

    for repo in ("ROCm/aiter", "triton-lang/triton", "o/r.github.io", "a1/_x-y.z"):
        assert check_repo(repo) == repo
    for url in ("https://api.github.com", "https://ghe.example.com/api/v3", "http://127.0.0.1:8080"):
        assert check_api_url(url) == url
