"""A local Google Sheets v4 server (plus the OAuth token endpoint) for testing the publisher over real HTTP.

It implements what gspread calls when the publisher runs, with the real API's rules that matter here:
service-account JWTs are verified (RS256 against the registered key) before a token is issued; spreadsheets
answer 404 when unknown and 403 when not shared with the caller; ``batchUpdate`` is all-or-nothing, refuses
duplicate titles and deleting the last worksheet; ``values:batchUpdate`` refuses ranges beyond the grid. Faults
(429 with Retry-After, 5xx) can be queued per path.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa


def _b64d(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


class ApiError(Exception):
    def __init__(self, code: int, message: str, status: str = "INVALID_ARGUMENT") -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


@dataclass
class Sheet:
    properties: dict[str, Any]
    cells: dict[tuple[int, int], Any] = field(default_factory=dict)
    basic_filter: dict | None = None
    conditional_formats: list[dict] = field(default_factory=list)
    formats: list[dict] = field(default_factory=list)

    def grid(self) -> list[list[Any]]:
        if not self.cells:
            return []
        rows = max(r for r, _ in self.cells) + 1
        cols = max(c for _, c in self.cells) + 1
        return [[self.cells.get((r, c), "") for c in range(cols)] for r in range(rows)]


@dataclass
class Book:
    title: str
    editors: set[str]
    sheets: list[Sheet]

    def by_title(self, title: str) -> Sheet:
        for s in self.sheets:
            if s.properties["title"] == title:
                return s
        raise ApiError(400, f"Unable to parse range: {title}")


def _range(a1: str) -> tuple[str, int, int]:
    m = re.fullmatch(r"'((?:[^']|'')+)'!([A-Z]+)(\d+)", a1) or re.fullmatch(r"([^!']+)!([A-Z]+)(\d+)", a1)
    if not m:
        raise ApiError(400, f"Unable to parse range: {a1}")
    title = m.group(1).replace("''", "'")
    col = 0
    for ch in m.group(2):
        col = col * 26 + ord(ch) - 64
    return title, int(m.group(3)) - 1, col - 1


class FakeSheets:
    def __init__(self) -> None:
        self.books: dict[str, Book] = {}
        self.keys: dict[str, Any] = {}  # client_email -> public key
        self.tokens: dict[str, str] = {}  # access token -> client_email
        self.log: list[tuple[str, str, Any]] = []  # (method, path, json body or form)
        self.faults: list[tuple[str, int, dict[str, str]]] = []  # (path substring, status, headers)
        self._ids = itertools.count(1000)
        self._lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------------ fixtures' API
    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def service_account(self, email: str = "perf-bot@proj.iam.gserviceaccount.com", register: bool = True) -> dict:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if register:
            self.keys[email] = key.public_key()
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        return {
            "type": "service_account",
            "project_id": "proj",
            "private_key_id": "k1",
            "private_key": pem,
            "client_email": email,
            "client_id": "1",
            "token_uri": self.url + "/token",
        }

    def create(self, key: str, editors: set[str], sheets: tuple[str, ...] = ("Sheet1",)) -> Book:
        book = Book(title=f"book {key}", editors=set(editors), sheets=[])
        for t in sheets:
            book.sheets.append(Sheet({"sheetId": next(self._ids), "title": t, "index": len(book.sheets)}))
        self.books[key] = book
        return book

    def fail(self, path_part: str, status: int, times: int = 1, retry_after: str | None = None) -> None:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        self.faults += [(path_part, status, headers)] * times

    def sheets_calls(self) -> list[tuple[str, str, Any]]:
        return [c for c in self.log if c[1].startswith("/v4/")]

    # ------------------------------------------------------------------ the API
    def token(self, form: dict[str, str]) -> dict:
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            raise ApiError(400, "unsupported_grant_type")
        try:
            head_b, claims_b, sig_b = form["assertion"].split(".")
            claims = json.loads(_b64d(claims_b))
            pub = self.keys[claims["iss"]]
            pub.verify(_b64d(sig_b), f"{head_b}.{claims_b}".encode(), padding.PKCS1v15(), hashes.SHA256())
        except Exception:  # any defect in the assertion is Google's invalid_grant
            raise ApiError(400, "invalid_grant: Invalid JWT Signature.") from None
        if claims.get("aud") != "https://oauth2.googleapis.com/token" or claims.get("exp", 0) < time.time():
            raise ApiError(400, "invalid_grant: bad audience or expired")
        tok = f"tok-{next(self._ids)}"
        self.tokens[tok] = claims["iss"]
        return {"access_token": tok, "expires_in": 3600, "token_type": "Bearer"}

    def book(self, key: str, who: str) -> Book:
        if key not in self.books:
            raise ApiError(404, "Requested entity was not found.", "NOT_FOUND")
        book = self.books[key]
        if who not in book.editors:
            raise ApiError(403, "The caller does not have permission", "PERMISSION_DENIED")
        return book

    def metadata(self, book: Book, key: str) -> dict:
        return {
            "spreadsheetId": key,
            "properties": {"title": book.title},
            "sheets": [{"properties": copy.deepcopy(s.properties)} for s in book.sheets],
        }

    def batch_update(self, book: Book, key: str, body: dict) -> dict:
        work = copy.deepcopy(book.sheets)
        replies: list[dict] = []

        def find(sid: int) -> Sheet:
            for s in work:
                if s.properties["sheetId"] == sid:
                    return s
            raise ApiError(400, f"No grid with id: {sid}")

        for req in body.get("requests", []):
            (kind, arg), *_ = req.items()
            if kind == "addSheet":
                props = copy.deepcopy(arg.get("properties", {}))
                title = props.get("title") or f"Sheet{len(work) + 1}"
                if any(s.properties["title"] == title for s in work):
                    raise ApiError(400, f'A sheet with the name "{title}" already exists. Please enter another name.')
                props.setdefault("sheetId", next(self._ids))
                props["title"], props["index"] = title, len(work)
                props.setdefault("gridProperties", {"rowCount": 1000, "columnCount": 26})
                work.append(Sheet(props))
                replies.append({"addSheet": {"properties": copy.deepcopy(props)}})
                continue
            if kind == "deleteSheet":
                s = find(arg["sheetId"])
                if len(work) == 1:
                    raise ApiError(400, "You can't remove all the sheets in a document.")
                work.remove(s)
            elif kind == "setBasicFilter":
                find(arg["filter"]["range"]["sheetId"]).basic_filter = arg["filter"]
            elif kind == "addConditionalFormatRule":
                for r in arg["rule"]["ranges"]:
                    find(r["sheetId"]).conditional_formats.append(arg["rule"])
            elif kind == "repeatCell":
                find(arg["range"]["sheetId"]).formats.append(arg)
            elif kind == "autoResizeDimensions":
                find(arg["dimensions"]["sheetId"])
            elif kind == "updateSheetProperties":
                find(arg["properties"]["sheetId"]).properties.update(arg["properties"])
            else:
                raise ApiError(400, f"Invalid requests[{len(replies)}]: unknown request {kind}")
            replies.append({})
        book.sheets = work
        return {"spreadsheetId": key, "replies": replies}

    def values_batch_update(self, book: Book, key: str, body: dict) -> dict:
        if body.get("valueInputOption") not in ("RAW", "USER_ENTERED"):
            raise ApiError(400, "Invalid valueInputOption")
        staged: list[tuple[Sheet, dict]] = []
        for item in body.get("data", []):
            title, r0, c0 = _range(item["range"])
            sheet = book.by_title(title)
            grid = sheet.properties.get("gridProperties", {"rowCount": 1000, "columnCount": 26})
            values = item["values"]
            rows = r0 + len(values)
            cols = c0 + max((len(v) for v in values), default=0)
            if rows > grid["rowCount"] or cols > grid["columnCount"]:
                raise ApiError(
                    400,
                    f"Range ({item['range']}) exceeds grid limits. Max rows: {grid['rowCount']}, "
                    f"max columns: {grid['columnCount']}",
                )
            for v in (x for row in values for x in row):
                if not isinstance(v, (str, int, float, bool)):
                    raise ApiError(400, f"Invalid value {v!r}")
            staged.append((sheet, item))
        updated = 0
        for sheet, item in staged:
            _, r0, c0 = _range(item["range"])
            for i, row in enumerate(item["values"]):
                for j, v in enumerate(row):
                    sheet.cells[(r0 + i, c0 + j)] = v
                    updated += 1
        return {"spreadsheetId": key, "totalUpdatedCells": updated}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeSheets

    def log_message(self, *args: Any) -> None:  # keep pytest output clean
        pass

    def _send(self, code: int, body: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        fake = self.fake
        url = urlparse(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        ctype = self.headers.get("Content-Type", "")
        if "json" in ctype:
            body: Any = json.loads(raw or b"{}")
        else:
            body = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        with fake._lock:
            fake.log.append((method, url.path, body))
            for i, (part, status, headers) in enumerate(fake.faults):
                if part in url.path:
                    del fake.faults[i]
                    return self._send(status, {"error": {"code": status, "message": "injected"}}, headers)
            try:
                if url.path == "/token" and method == "POST":
                    return self._send(200, fake.token(body))
                auth = self.headers.get("Authorization", "")
                who = fake.tokens.get(auth.removeprefix("Bearer "))
                if who is None:
                    raise ApiError(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED")
                m = re.fullmatch(r"/v4/spreadsheets/([^/:]+)(:batchUpdate|/values:batchUpdate)?", url.path)
                if not m:
                    raise ApiError(404, f"no route {method} {url.path}", "NOT_FOUND")
                key, action = m.group(1), m.group(2)
                book = fake.book(key, who)
                if method == "GET" and action is None:
                    return self._send(200, fake.metadata(book, key))
                if method == "POST" and action == ":batchUpdate":
                    return self._send(200, fake.batch_update(book, key, body))
                if method == "POST" and action == "/values:batchUpdate":
                    return self._send(200, fake.values_batch_update(book, key, body))
                raise ApiError(404, f"no route {method} {url.path}", "NOT_FOUND")
            except ApiError as err:
                if url.path == "/token":
                    error, _, desc = err.message.partition(": ")
                    return self._send(err.code, {"error": error, "error_description": desc})
                return self._send(err.code, {"error": {"code": err.code, "message": err.message, "status": err.status}})

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")


def serve() -> FakeSheets:
    fake = FakeSheets()
    handler = type("Handler", (_Handler,), {"fake": fake})
    fake.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=fake.server.serve_forever, daemon=True).start()
    return fake
