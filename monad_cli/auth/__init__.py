"""Remote-server authorization: the OAuth 2.1 pieces the MCP SDK leaves to its users.

The SDK's `OAuthClientProvider` (mcp.client.auth) does discovery, registration, PKCE and
refresh. This package adds what it lacks (docs/auth.md):

- `storage`: durable token storage inside the server's definition file, with the absolute
  expiry and the authorization server metadata, so a restart refreshes instead of asking;
- `provider`: the SDK provider with that state restored, monad's scope rules, the S256
  requirement and bounded step-up;
- `loopback`: the one-shot redirect listener on 127.0.0.1 (RFC 8252 §7.3) and browser opening;
- `urls`: validation of every URL before a browser sees it;
- `device`: the RFC 8628 device authorization grant;
- `target`: whether `monad mcp authorize` applies to a server (stdlib-light);
- `authorize`: what `monad mcp authorize` runs; `session`: the supervisor's providers, one
  per oauth server (`SupervisorAuth.http_auth`).

Only `urls`, `target` and `storage`'s key names are stdlib-light; everything else imports the SDK
and is imported inside command bodies. Their one error, `AuthError`, is in `monad_cli.core.errors`.
"""
