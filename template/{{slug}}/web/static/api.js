// The JSON API as the pages use it: one fetch wrapper, two kinds of failure.
//
// ApiError: the server answered with the error envelope (a definitive "no").
// NetworkError: no answer at all (offline, server down, response lost) — the
// request may or may not have been carried out, so callers must not assume
// either and must keep whatever they need to repeat it safely.
"use strict";

export class ApiError extends Error {
  constructor(status, error, requestId) {
    super(error.message || "The request failed.");
    this.status = status;
    this.code = error.code || "INTERNAL";
    this.domain = error.domain || "request";
    this.retryAfterSeconds = error.retryAfterSeconds;
    this.requestId = error.requestId || requestId;
  }
}

export class NetworkError extends Error {
  constructor() {
    super("The server did not answer.");
  }
}

// True from the moment the page asks the server to end its own session (sign out, sign out everywhere,
// delete the account) until that request fails: a 401 meanwhile (the list's poll, the header's /api/me)
// is that same ending, and must not send the user to sign in and come back to this page.
let ending = false;

// `checksPassword`: the route answers a wrong password with 401 UNAUTHENTICATED too, so that answer
// is left to the caller (which asks /api/me whether the session itself ended) instead of signing out.
export async function request(method, path, { json, body, headers, checksPassword = false } = {}) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json", ...headers } };
  if (json !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(json);
  } else if (body !== undefined) {
    init.body = body;
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new NetworkError();
  }
  if (response.status === 204) {
    return null;
  }
  const payload = await response.json().catch(() => null);
  if (!response.ok) {
    const error = payload && payload.error ? payload.error : { code: "INTERNAL" };
    if (response.status === 401 && error.code === "UNAUTHENTICATED" && !checksPassword && !ending) {
      // The session ended (signed out elsewhere, expired, password changed): sign in again, then come back.
      window.location.assign(`/login?next=${encodeURIComponent(window.location.pathname)}`);
    }
    throw new ApiError(response.status, error, response.headers.get("X-Request-Id"));
  }
  if (payload === null) {
    throw new ApiError(response.status, { code: "INTERNAL" }, response.headers.get("X-Request-Id"));
  }
  return payload;
}

// Ends this browser's session by `method path` (a `request`), then goes to the login page; a session
// that had already ended (401 where no password is checked) goes there too. On any other failure nothing
// has changed and the error is the caller's.
export async function endSession(method, path, options = {}) {
  ending = true;
  try {
    await request(method, path, options);
  } catch (error) {
    const gone = error instanceof ApiError && error.status === 401 && error.code === "UNAUTHENTICATED" &&
      !options.checksPassword;
    if (!gone) {
      ending = false;
      throw error;
    }
  }
  window.location.assign("/login");
}

export const api = {
  get: (path) => request("GET", path),
  // One page of a keyset-paged list: the first without a cursor, then the cursor the last page gave.
  page: (path, cursor) => request("GET", cursor ? `${path}?cursor=${encodeURIComponent(cursor)}` : path),
  post: (path, json) => request("POST", path, { json }),
  delete: (path) => request("DELETE", path),
};
