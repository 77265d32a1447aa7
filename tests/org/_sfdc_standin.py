"""A stand-in for Salesforce's login and REST endpoints, answering from any ``Org`` (offline).

simple-salesforce always speaks HTTPS to ``*.salesforce.com``; the ``responses`` library intercepts
those requests inside ``requests`` (below simple-salesforce, so its whole HTTP code path runs) and
hands them to this stand-in, which implements:

- ``POST https://{login,test}.salesforce.com/services/Soap/u/<version>``: the SOAP login, answering a
  ``loginResponse`` whose ``serverUrl`` points at the stand-in's instance, or a SOAP fault
  (HTTP 500, ``INVALID_LOGIN``) for wrong credentials;
- ``GET /services/data/v<version>/query?q=``: the first page of the backend's answer, with
  ``nextRecordsUrl`` when more pages follow (``page_size`` records per page);
- ``GET /services/data/v<version>/query/<locator>``: the following pages;
- ``GET /services/data/v<version>/search?q=``: the backend's SOSL answer;
- ``GET /services/data/v<version>/sobjects/<name>/describe``: the backend's describe (HTTP 404
  ``NOT_FOUND`` for an unknown object);
- error injection: :meth:`SalesforceStandin.inject` queues a status and body (or an exception such as a
  connection error) for the next requests of one kind; :meth:`SalesforceStandin.expire_sessions`
  makes every current session id answer HTTP 401 ``INVALID_SESSION_ID``.
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlparse

import responses

from crmarena_gym.org import Org, OrgError

INSTANCE = "standin.my.salesforce.com"

_LOGIN_OK = """<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns="urn:partner.soap.sforce.com">
<soapenv:Body><loginResponse><result>
<metadataServerUrl>https://{instance}/services/Soap/m/{version}/00DStandin</metadataServerUrl>
<passwordExpired>false</passwordExpired><sandbox>{sandbox}</sandbox>
<serverUrl>https://{instance}/services/Soap/u/{version}/00DStandin</serverUrl>
<sessionId>{session_id}</sessionId><userId>005Ws0000000001AAA</userId>
</result></loginResponse></soapenv:Body></soapenv:Envelope>"""

_LOGIN_FAULT = """<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"
 xmlns:sf="urn:fault.partner.soap.sforce.com" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<soapenv:Body><soapenv:Fault><faultcode>sf:INVALID_LOGIN</faultcode>
<faultstring>INVALID_LOGIN: Invalid username, password, security token; or user locked out.</faultstring>
<detail><sf:LoginFault xsi:type="sf:LoginFault"><sf:exceptionCode>INVALID_LOGIN</sf:exceptionCode>
<sf:exceptionMessage>Invalid username, password, security token; or user locked out.</sf:exceptionMessage>
</sf:LoginFault></detail></soapenv:Fault></soapenv:Body></soapenv:Envelope>"""

_JSON = {"Content-Type": "application/json;charset=UTF-8"}


@dataclass
class Fault:
    """One injected answer: an HTTP status and JSON body, or an exception raised inside ``requests``."""

    status: int = 500
    body: Any = None
    error: BaseException | None = None


class SalesforceStandin:
    """Salesforce's login, query and search endpoints, answered from ``backend``.

    Attributes:
        logins: ``(domain, username)`` of every accepted login.
        calls: ``(kind, status)`` of every request, kinds ``login``, ``query``, ``query_more``, ``search``.
        sessions: The session ids currently valid.
    """

    def __init__(
        self,
        backend: Org,
        *,
        username: str = "agent@standin.example",
        password: str = "s3cret-Pa55",
        security_token: str = "T0KENabc",
        version: str = "60.0",
        page_size: int = 2,
        instance: str = INSTANCE,
    ) -> None:
        self.backend = backend
        self.username = username
        self.password = password
        self.security_token = security_token
        self.version = version
        self.page_size = page_size
        self.instance = instance
        self.logins: list[tuple[str, str]] = []
        self.calls: list[tuple[str, int | str]] = []
        self.sessions: set[str] = set()
        self._faults: dict[str, deque[Fault]] = defaultdict(deque)
        self._cursors: dict[str, tuple[list[dict[str, Any]], int]] = {}
        self._counter = 0

    # -- test controls -----------------------------------------------------------------------------

    def inject(
        self, kind: str, *, status: int = 500, body: Any = None, error: BaseException | None = None, times: int = 1
    ) -> None:
        """Answer the next ``times`` requests of ``kind`` with ``status``/``body`` (or raise ``error``)."""
        assert kind in ("login", "query", "query_more", "search"), kind
        for _ in range(times):
            self._faults[kind].append(Fault(status, body, error))

    def expire_sessions(self) -> None:
        """Invalidate every session id handed out so far (and any given from outside)."""
        self.sessions.clear()

    def new_session(self) -> str:
        """A valid session id, as if obtained elsewhere (for session-id logins)."""
        self._counter += 1
        session_id = f"00DStandin!AQ{self._counter:04d}"
        self.sessions.add(session_id)
        return session_id

    def install(self, mock: responses.RequestsMock) -> None:
        """Route the matching requests of ``mock`` to this stand-in."""
        host = re.escape(self.instance)
        mock.add_callback(
            "POST", re.compile(r"https://(login|test)\.salesforce\.com/services/Soap/u/[0-9.]+$"), self._login
        )
        mock.add_callback("GET", re.compile(rf"https://{host}/services/data/v[0-9.]+/query/?(\?.*)?$"), self._query)
        mock.add_callback(
            "GET", re.compile(rf"https://{host}/services/data/v[0-9.]+/query/01g[^/?]+$"), self._query_more
        )
        mock.add_callback("GET", re.compile(rf"https://{host}/services/data/v[0-9.]+/search/?(\?.*)?$"), self._search)
        mock.add_callback(
            "GET", re.compile(rf"https://{host}/services/data/v[0-9.]+/sobjects/[^/]+/describe/?$"), self._describe
        )

    def count(self, kind: str) -> int:
        """How many requests of ``kind`` arrived."""
        return sum(1 for k, _ in self.calls if k == kind)

    # -- endpoints ---------------------------------------------------------------------------------

    def _fault(self, kind: str) -> Any:
        if not self._faults[kind]:
            return None
        fault = self._faults[kind].popleft()
        if fault.error is not None:
            self.calls.append((kind, type(fault.error).__name__))
            return fault.error
        self.calls.append((kind, fault.status))
        body = fault.body if isinstance(fault.body, str) else json.dumps(fault.body)
        return fault.status, _JSON, body

    def _login(self, request: Any) -> Any:
        injected = self._fault("login")
        if injected is not None:
            return injected
        body = request.body.decode() if isinstance(request.body, bytes) else request.body
        username = html.unescape(re.search(r"<n1:username>(.*?)</n1:username>", body, re.S).group(1))
        password = html.unescape(re.search(r"<n1:password>(.*?)</n1:password>", body, re.S).group(1))
        if username != self.username or password != self.password + self.security_token:
            self.calls.append(("login", 500))
            return 500, {"Content-Type": "text/xml"}, _LOGIN_FAULT
        domain = urlparse(request.url).hostname.split(".")[0]
        self.logins.append((domain, username))
        self.calls.append(("login", 200))
        session_id = self.new_session()
        xml = _LOGIN_OK.format(
            instance=self.instance, version=self.version, session_id=session_id, sandbox=str(domain == "test").lower()
        )
        return 200, {"Content-Type": "text/xml"}, xml

    def _guard(self, kind: str, request: Any) -> Any:
        """An error answer for a bad version or session, else None."""
        version = re.search(r"/services/data/v([0-9.]+)/", request.url).group(1)
        if version != self.version:
            self.calls.append((kind, 404))
            body = [{"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}]
            return 404, _JSON, json.dumps(body)
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or auth[len("Bearer ") :] not in self.sessions:
            self.calls.append((kind, 401))
            return (
                401,
                _JSON,
                json.dumps([{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]),
            )
        return None

    def _answer(self, kind: str, request: Any, run: Any) -> Any:
        injected = self._fault(kind)
        if injected is not None:
            return injected
        refused = self._guard(kind, request)
        if refused is not None:
            return refused
        text = parse_qs(urlparse(request.url).query).get("q", [""])[0]
        try:
            result = run(text)
        except OrgError as exc:
            status = 404 if exc.code == "NOT_FOUND" else 400
            self.calls.append((kind, status))
            return status, _JSON, json.dumps([{"message": exc.message, "errorCode": exc.code}])
        self.calls.append((kind, 200))
        return 200, _JSON, json.dumps(result)

    def _query(self, request: Any) -> Any:
        return self._answer("query", request, self._first_page)

    def _first_page(self, soql: str) -> dict[str, Any]:
        result = self.backend.query(soql)
        records = list(result["records"])
        self._counter += 1
        locator = f"01gStandin{self._counter:04d}"
        self._cursors[locator] = (records, result["totalSize"])
        return self._page(locator, 0)

    def _page(self, locator: str, start: int) -> dict[str, Any]:
        records, total = self._cursors[locator]
        end = start + self.page_size
        page: dict[str, Any] = {"totalSize": total, "done": end >= len(records), "records": records[start:end]}
        if not page["done"]:
            page["nextRecordsUrl"] = f"/services/data/v{self.version}/query/{locator}-{end}"
        return page

    def _query_more(self, request: Any) -> Any:
        def run(_: str) -> dict[str, Any]:
            locator, start = request.url.rsplit("/", 1)[1].rsplit("-", 1)
            return self._page(locator, int(start))

        return self._answer("query_more", request, run)

    def _search(self, request: Any) -> Any:
        return self._answer("search", request, self.backend.search)

    def _describe(self, request: Any) -> Any:
        name = urlparse(request.url).path.rstrip("/").split("/")[-2]
        return self._answer("describe", request, lambda _: self.backend.describe(name))
