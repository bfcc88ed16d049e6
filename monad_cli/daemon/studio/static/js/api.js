// The control API, from the page: the same /v1/ routes and JSON as the unix socket. The
// session cookie goes along by itself (same origin); the browser adds our Origin to every
// change, which the listener requires.

/** An error answer, decoded from the API's one envelope {"error": {code, message, field?, errors?}}.
 *  `errors`: every field problem of a definition, [{field, message}], the first being `field`/`message`. */
export class ApiError extends Error {
  constructor(status, code, message, field = null, errors = []) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
    this.errors = errors;
  }
}

export async function api(method, path, body) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, "unreachable", "the supervisor is not answering (stopped? see monad daemon status)");
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(response.status, err.code || "http_error", err.message || `HTTP ${response.status}`,
                       err.field || null, Array.isArray(err.errors) ? err.errors : []);
  }
  return data;
}
