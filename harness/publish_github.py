"""Upsert one sticky pull-request comment with the comparison (GitHub REST, standard library only).

The comment is found by the hidden marker line of :mod:`harness.markdown`, so every push updates the same comment
instead of adding one. The token comes from an environment variable and is never printed or logged.
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError
from harness.markdown import MARKER

RETRY_STATUS = {429, 500, 502, 503, 504}


def retry_wait(retry_after: str | None, backoff_s: float, attempt: int, cap: float) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): the server's ``Retry-After`` when it gives seconds,
    else exponential backoff; never more than ``cap``. (An HTTP-date Retry-After falls back to the backoff.)"""
    after = (retry_after or "").strip()
    wait = float(after) if after.replace(".", "", 1).isdigit() else backoff_s * 2**attempt
    return min(wait, cap)


@dataclass
class GitHub:
    repo: str
    token: str
    api_url: str = "https://api.github.com"
    retries: int = 5
    backoff_s: float = 1.0

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
