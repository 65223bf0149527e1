"""Upsert one sticky pull-request comment with the comparison (GitHub REST, standard library only).

The comment is found by the hidden marker line of :mod:`harness.render.markdown`, so every push updates the same comment
instead of adding one. The token comes from an environment variable and is never printed or logged.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError
from harness.publish.http import retry_wait
from harness.render.markdown import MARKER

RETRY_STATUS = {429, 500, 502, 503, 504}
#: GitHub's rules: an owner is 1-39 letters, digits and inner single hyphens; a name letters, digits, ., -, _
OWNER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")
NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")


def check_repo(repo: str) -> str:
    """``OWNER/NAME`` as GitHub allows them, else one line: the repo becomes part of every request's path."""
    owner, _, name = repo.partition("/")
    if not (OWNER.fullmatch(owner) and NAME.fullmatch(name) and name not in (".", "..")):
        raise HarnessError(f"--repo {repo!r}: expected OWNER/NAME, e.g. ROCm/aiter")
    return repo


def check_api_url(url: str) -> str:
    """An http(s) URL with a host (GHES: https://HOST/api/v3), else one line, before any request is made."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here, not in the first request
    except ValueError as err:
        raise HarnessError(f"--api-url {url!r}: not a URL ({err})") from None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise HarnessError(f"--api-url {url!r}: expected an http(s) URL with a host, e.g. https://api.github.com")
    if parts.query or parts.fragment:
        raise HarnessError(f"--api-url {url!r}: expected the API root, without ?query or #fragment")
    return url


@dataclass
class GitHub:
    repo: str
    token: str
    api_url: str = "https://api.github.com"
    retries: int = 5
    backoff_s: float = 1.0

    def __post_init__(self) -> None:
        check_repo(self.repo)
        check_api_url(self.api_url)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        url = self.api_url.rstrip("/") + path
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(
                url,
                data=data,
                method=method,
                headers={
                    "Authorization": f"Bearer {self.token}",
                    "Accept": "application/vnd.github+json",
                    "X-GitHub-Api-Version": "2022-11-28",
                    "User-Agent": "harness-perf-bot",
                    **({"Content-Type": "application/json"} if data else {}),
                },
            )
            try:
                with urllib.request.urlopen(req, timeout=30) as resp:
                    text = resp.read().decode() or "null"
                    return json.loads(text)
            except urllib.error.HTTPError as err:
                if err.code in RETRY_STATUS and attempt < self.retries:
                    time.sleep(retry_wait(err.headers.get("Retry-After"), self.backoff_s, attempt, cap=60.0))
                    continue
                detail = ""
                with contextlib.suppress(ValueError, AttributeError):
                    detail = json.loads(err.read().decode()).get("message", "")
                hint = {
                    401: "bad or expired token",
                    403: "the token may not comment on this repository "
                    "(fork PRs get a read-only token: see docs/publishing.md)",
                    404: "no such repository or PR, or the token cannot see it",
                }.get(err.code, "")
                raise HarnessError(f"GitHub {method} {path}: HTTP {err.code} {detail} {hint}".strip()) from None
            except urllib.error.URLError as err:
                if attempt < self.retries:
                    time.sleep(self.backoff_s * 2**attempt)
                    continue
                raise HarnessError(f"GitHub {method} {path}: {err.reason}") from None
        raise HarnessError(f"GitHub {method} {path}: gave up after {self.retries} retries")

    def find_comment(self, pr: int) -> int | None:
        page = 1
        while True:
            batch = self.request("GET", f"/repos/{self.repo}/issues/{pr}/comments?per_page=100&page={page}")
            for c in batch or []:
                if MARKER in (c.get("body") or ""):
                    return int(c["id"])
            if not batch or len(batch) < 100:
                return None
            page += 1

    def upsert_comment(self, pr: int, body: str) -> tuple[str, int]:
        """('updated' | 'created', comment id)."""
        if MARKER not in body:
            body = MARKER + "\n" + body
        cid = self.find_comment(pr)
        if cid is not None:
            self.request("PATCH", f"/repos/{self.repo}/issues/comments/{cid}", {"body": body})
            return "updated", cid
        made = self.request("POST", f"/repos/{self.repo}/issues/{pr}/comments", {"body": body})
        return "created", int(made["id"])
