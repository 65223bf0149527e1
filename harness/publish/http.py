"""What both publishers share about talking to an HTTP API: when to retry, how long to wait."""

from __future__ import annotations

#: statuses worth retrying: timeouts, rate limits, a server's passing trouble
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def retry_wait(retry_after: str | None, backoff_s: float, attempt: int, cap: float) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): the server's ``Retry-After`` when it gives seconds,
    else exponential backoff; never more than ``cap``. (An HTTP-date Retry-After falls back to the backoff.)"""
    after = (retry_after or "").strip()
    wait = float(after) if after.replace(".", "", 1).isdigit() else backoff_s * 2**attempt
    return min(wait, cap)
