"""DPoP (RFC 9449, SEP-1932): tokens bound to a key of this client, proved on each use.

`DPoPBinding` is one remote server's side of it. It signs a proof (a ``dpop+jwt`` JWS
with the public key in its ``jwk`` header, the method ``htm``, the URL ``htu`` without
query or fragment, ``iat``, a fresh ``jti``, and on a resource request ``ath``, the
hash of the access token) with an ES256 key, and:

- puts one on every token request (authorization code, refresh, client credentials,
  jwt-bearer) to an authorization server whose metadata lists ES256 in
  ``dpop_signing_alg_values_supported``, or for an MCP server that challenged with the
  ``DPoP`` scheme (or whose metadata says ``dpop_bound_access_tokens_required``); an
  answer with ``token_type`` ``DPoP`` binds the token to the key;
- sends a bound token as ``Authorization: DPoP <token>`` with a proof on every request
  to the MCP server (a bearer token stays ``Bearer``, with no proof);
- answers a ``use_dpop_nonce`` refusal (a 400 from the token endpoint, a 401 from the
  MCP server) by resending once with the nonce the server gave in ``DPoP-Nonce``, and
  remembers each origin's latest nonce for the next proof.

The key lives as long as the tokens bound to it: it is kept with them in the grant's
row (`GrantStore.dpop_key`, a private JWK, in the row's ``extra`` as `DPOP_KEY`, written
in the same compare-and-set as the tokens and dropped with them), so a pool started
later, or another replica, proves with the key its kept token is bound to. The
SDK's token model knows only ``Bearer``: a ``DPoP`` answer reaches it as ``Bearer``,
the binding being kept here. PyJWT (with ``cryptography``) signs; nothing of JOSE is
written here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs

import httpx2
from mcp.client.auth import OAuthFlowError
from mcp.client.auth.utils import extract_field_from_www_auth

from ._token_store import GrantStore

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey

__all__ = ["ALGORITHM", "DPoPBinding", "DPoPKey", "access_token_hash"]

ALGORITHM: Final = "ES256"
"""The one proof algorithm this client signs with (P-256, the one every DPoP server
must take in practice; RFC 9449 names no mandatory one)."""
NONCE_LIMIT: Final = 1024
"""The most characters of a server's ``DPoP-Nonce`` taken (RFC 9449 §8.1: an opaque
NQCHAR string; a longer one is refused, not carried in every proof)."""
_NONCE_CHARS: Final = frozenset(chr(c) for c in range(0x21, 0x7F) if chr(c) not in '"\\')


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def access_token_hash(token: str) -> str:
    """The ``ath`` claim of a proof that goes with ``token`` (RFC 9449 §4.2)."""
    return _b64url(hashlib.sha256(token.encode("ascii")).digest())


def _origin(url: httpx2.URL) -> str:
    return f"{url.scheme}://{url.netloc.decode('ascii')}"


class DPoPKey:
    """One ES256 key pair, and the proofs it signs."""

    def __init__(self, key: EllipticCurvePrivateKey) -> None:
        from jwt.algorithms import ECAlgorithm

        self._key = key
        self.public_jwk: dict[str, Any] = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
        """The public key, as the proofs' ``jwk`` header carries it."""

    @classmethod
    def generate(cls) -> DPoPKey:
        """A new P-256 key."""
        from cryptography.hazmat.primitives.asymmetric import ec

        return cls(ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def from_jwk(cls, jwk: dict[str, Any]) -> DPoPKey:
        """The key a grant kept (`private_jwk`).

        Raises:
            ValueError: ``jwk`` is not a P-256 private key.
        """
        from cryptography.hazmat.primitives.asymmetric import ec
        from jwt.algorithms import ECAlgorithm
        from jwt.exceptions import InvalidKeyError

        try:
            key = ECAlgorithm.from_jwk(jwk)
        except (InvalidKeyError, ValueError, TypeError) as exc:
            raise ValueError(f"the kept DPoP key is not a P-256 private JWK ({exc})") from None
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("the kept DPoP key has no private part")
        return cls(key)

    def private_jwk(self) -> dict[str, Any]:
        """The whole key as a JWK (with ``d``), to keep with the tokens bound to it."""
        from jwt.algorithms import ECAlgorithm

        return dict(ECAlgorithm.to_jwk(self._key, as_dict=True))

    def proof(
        self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None
    ) -> str:
        """A fresh proof for one request (RFC 9449 §4.2): ``url``'s query and fragment
        are left out of ``htu``; ``ath`` is set when the request carries a token."""
        import jwt

        target = httpx2.URL(url).copy_with(query=None, fragment=None)
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": str(target),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": "dpop+jwt", "jwk": self.public_jwk}
        return jwt.encode(claims, self._key, algorithm=ALGORITHM, headers=headers)


def _form(request: httpx2.Request) -> dict[str, list[str]]:
    """A request's form fields (empty: no form, or a body not read)."""
    if request.method != "POST":
        return {}
    try:
        return parse_qs(request.content.decode("latin-1"))
    except httpx2.RequestNotRead:
        return {}


def _error_code(response: httpx2.Response) -> str | None:
    """The OAuth ``error`` of a JSON error answer (None: none)."""
    try:
        body = json.loads(response.content)
    except (ValueError, httpx2.ResponseNotRead):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, str) else None


def _challenge(response: httpx2.Response) -> str:
    return response.headers.get("www-authenticate", "")


class DPoPBinding:
    """One server's DPoP state: the key, the nonces per origin, whether to prove.

    It reads every answer of an authorization server the flow asks (`send`): the SDK's
    metadata model drops ``dpop_signing_alg_values_supported``, so the token endpoints
    whose metadata lists ES256 are noted here as the metadata comes by.

    Args:
        store: the server's grant store, which keeps the key with the tokens bound to it.
    """

    def __init__(self, store: GrantStore) -> None:
        self.store = store
        self._key: DPoPKey | None = None
        self._key_source: dict[str, Any] | None = None  # the JWK `_key` was made from
        self._nonces: dict[str, str] = {}
        self._proving: set[str] = set()  # token endpoints whose issuer takes ES256 proofs
        self.challenged = False
        """Whether the MCP server asked for DPoP (its challenge's scheme, or its
        metadata's ``dpop_bound_access_tokens_required``)."""

    # -- the key -------------------------------------------------------------------------

    def key(self) -> DPoPKey:
        """The key the kept tokens are bound to, else this binding's own (made once)."""
        kept = self.store.dpop_key
        if kept is not None and kept != self._key_source:
            self._key, self._key_source = DPoPKey.from_jwk(kept), kept
        if self._key is None:
            self._key = DPoPKey.generate()
            self._key_source = self._key.private_jwk()
        return self._key

    def wanted(self, token_endpoint: httpx2.URL) -> bool:
        """Whether a token request to ``token_endpoint`` carries a proof: its issuer's
        metadata lists ES256 proofs, the MCP server asked for DPoP, or the kept tokens
        are bound already (a refresh must be proved with their key)."""
        return (
            str(token_endpoint.copy_with(query=None)) in self._proving
            or self.challenged
            or self.store.dpop_key is not None
        )

    def _read_metadata(self, response: httpx2.Response) -> None:
        """Note what an RFC 8414 or RFC 9728 document says of DPoP."""
        request = response.request
        if request.method != "GET" or response.status_code != 200:
            return
        if "/.well-known/" not in request.url.path:
            return
        try:
            body = json.loads(response.content)
        except ValueError:
            return
        if not isinstance(body, dict):
            return
        if body.get("dpop_bound_access_tokens_required") is True:
            self.challenged = True
        algorithms = body.get("dpop_signing_alg_values_supported")
        endpoint = body.get("token_endpoint")
        if isinstance(algorithms, list) and ALGORITHM in algorithms and isinstance(endpoint, str):
            self._proving.add(endpoint)

    def _nonce(self, url: httpx2.URL) -> str | None:
        return self._nonces.get(_origin(url))

    def _note_nonce(self, response: httpx2.Response) -> str | None:
        """Remember the ``DPoP-Nonce`` a response gave, for its origin (None: none).

        Raises:
            OAuthFlowError: the nonce is too long or not NQCHAR.
        """
        nonce = response.headers.get("dpop-nonce")
        if nonce is None:
            return None
        if not nonce or len(nonce) > NONCE_LIMIT or not set(nonce) <= _NONCE_CHARS:
            raise OAuthFlowError(
                f"{_origin(response.request.url)} sent a DPoP-Nonce that is not a nonce "
                f"(empty, over {NONCE_LIMIT} characters, or not printable ASCII)"
            )
        self._nonces[_origin(response.request.url)] = nonce
        return nonce

    # -- token requests ------------------------------------------------------------------

    async def send(
        self,
        request: httpx2.Request,
        send: Callable[[httpx2.Request], Awaitable[httpx2.Response]],
    ) -> httpx2.Response:
        """Send an authorization-server request with ``send``: a token request with a
        proof (resent once with the nonce a ``use_dpop_nonce`` refusal gave); any other
        as it is, its answer read for what it says of DPoP.

        Raises:
            OAuthFlowError: the server asked for a nonce it did not give,
                or again after getting one.
        """
        if "grant_type" not in _form(request) or not self.wanted(request.url):
            response = await send(request)
            self._read_metadata(response)
            return response
        key = self.key()
        url = request.url
        request.headers["DPoP"] = key.proof("POST", str(url), nonce=self._nonce(url))
        response = await send(request)
        if response.status_code == 400 and _error_code(response) == "use_dpop_nonce":
            nonce = self._note_nonce(response)
            if nonce is None:
                raise OAuthFlowError(
                    f"the token endpoint {url.copy_with(query=None)} asked for a DPoP nonce "
                    "(use_dpop_nonce) without giving one in DPoP-Nonce"
                )
            request.headers["DPoP"] = key.proof("POST", str(url), nonce=nonce)
            response = await send(request)
            if response.status_code == 400 and _error_code(response) == "use_dpop_nonce":
                raise OAuthFlowError(
                    f"the token endpoint {url.copy_with(query=None)} refused the DPoP nonce "
                    "it had just given (use_dpop_nonce twice)"
                )
        self._note_nonce(response)
        return self._bind(response, key)

    def _bind(self, response: httpx2.Response, key: DPoPKey) -> httpx2.Response:
        """Note whether a token answer bound its token to ``key``; hand the SDK a
        ``DPoP`` answer as ``Bearer`` (its token model knows no other type)."""
        if response.status_code != 200:
            return response
        try:
            body = json.loads(response.content)
        except ValueError:
            return response  # the SDK says what is wrong with it
        if not isinstance(body, dict) or not isinstance(body.get("token_type"), str):
            return response
        if body["token_type"].lower() != "dpop":
            self.store.dpop_key = None  # a bearer token: sent as one, with no proof
            return response
        self.store.dpop_key = key.private_jwk()
        body["token_type"] = "Bearer"
        headers = [
            (name, value)
            for name, value in response.headers.multi_items()
            if name.lower() not in ("content-length", "content-encoding", "transfer-encoding")
        ]
        answer = httpx2.Response(
            200, headers=headers, content=json.dumps(body).encode(), request=response.request
        )
        answer.next_request = response.next_request
        return answer

    # -- requests to the MCP server ------------------------------------------------------

    def prove(self, request: httpx2.Request) -> None:
        """Present the request's token as DPoP with a fresh proof, when the kept token
        is bound (nothing otherwise: no token, or a bearer one)."""
        if self.store.dpop_key is None:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() not in ("bearer", "dpop") or not token:
            return
        url = request.url
        nonce = self._nonce(url)
        request.headers["DPoP"] = self.key().proof(
            request.method, str(url), access_token=token, nonce=nonce
        )
        request.headers["Authorization"] = f"DPoP {token}"

    def resend(self, response: httpx2.Response) -> bool:
        """Read a response of the MCP server: its nonce, its challenge; True when it is
        a ``use_dpop_nonce`` refusal to answer with the nonce it gave (once per request:
        the caller resends after `prove`)."""
        self._note_nonce(response)
        challenge = _challenge(response)
        if response.status_code != 401:
            return False
        if challenge[:5].lower() == "dpop " or challenge.lower() == "dpop":
            self.challenged = True
        return (
            extract_field_from_www_auth(response, "error") == "use_dpop_nonce"
            and "dpop-nonce" in response.headers
            and self.store.dpop_key is not None
        )
