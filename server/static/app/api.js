// The GraphQL client: GETs with automatic persisted queries (Apollo APQ v1); a POST only
// for what cannot fit a URL (a whole spack.lock, `post`).
// A request names its query by sha256 alone; a server that does not know it yet answers
// PERSISTED_QUERY_NOT_FOUND, and the same GET is sent once more with the text. GETs of
// hashes are short, and HTTP caches (the browser's, the server's response cache, a CDN)
// can keep their answers.

import { sha256Hex } from "./sha256.js";

export const ENDPOINT = "/graphql";
const NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND";

/** A failed request, or the first error of an answer: `code` is `extensions.code`. */
export class ApiError extends Error {
  constructor(message, code = "", extensions = {}) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.extensions = extensions;
  }
}

const hashes = new Map(); // query text -> Promise of its sha256

function hashOf(query) {
  let hash = hashes.get(query);
  if (!hash) {
    hash = sha256Hex(query);
    hashes.set(query, hash);
  }
  return hash;
}

function operationName(query) {
  return /^\s*query\s+(\w+)/.exec(query)?.[1] ?? null;
}

/** The URL of a GET request for `query` (with its text when `withText`). */
export async function requestUrl(query, variables, withText) {
  const params = new URLSearchParams();
  const name = operationName(query);
  if (name) params.set("operationName", name);
  // Variables left null are the schema's defaults: not sending them keeps URLs short.
  const given = Object.fromEntries(Object.entries(variables ?? {}).filter(([, v]) => v != null));
  if (Object.keys(given).length) params.set("variables", JSON.stringify(given));
  const persisted = { persistedQuery: { version: 1, sha256Hash: await hashOf(query) } };
  params.set("extensions", JSON.stringify(persisted));
  if (withText) params.set("query", query);
  return `${ENDPOINT}?${params}`;
}

async function get(url, signal) {
  const response = await fetch(url, {
    headers: { Accept: "application/json" },
    credentials: "same-origin",
    signal,
  });
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: reported below
  }
  if (body && (body.data !== undefined || Array.isArray(body.errors))) return body;
  throw new ApiError(`the server answered HTTP ${response.status}`, `HTTP_${response.status}`);
}

/** The whole answer, `{ data, errors }`, to `query` with `variables`. */
export async function request(query, variables = {}, { signal } = {}) {
  let body = await get(await requestUrl(query, variables, false), signal);
  if (body.errors?.some((e) => e.extensions?.code === NOT_FOUND)) {
    body = await get(await requestUrl(query, variables, true), signal);
  }
  return body;
}

/** The answer's data; its first error, if any, is thrown as an ApiError. */
export async function data(query, variables = {}, options = {}) {
  const body = await request(query, variables, options);
  const error = body.errors?.[0];
  if (error) throw new ApiError(error.message, error.extensions?.code ?? "", error.extensions);
  return body.data;
}

/** The data of a POST of `query` (for variables too large for a URL: a whole lockfile);
 * its first error, or a refusal such as HTTP 413, is thrown as an ApiError. */
export async function post(query, variables = {}, { signal } = {}) {
  const response = await fetch(ENDPOINT, {
    method: "POST",
    headers: { Accept: "application/json", "Content-Type": "application/json" },
    credentials: "same-origin",
    body: JSON.stringify({ query, variables }),
    signal,
  });
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: reported below
  }
  const error = body?.errors?.[0];
  if (!response.ok) {
    throw new ApiError(error?.message ?? `the server answered HTTP ${response.status}`, `HTTP_${response.status}`);
  }
  if (error) throw new ApiError(error.message, error.extensions?.code ?? "", error.extensions);
  if (body?.data === undefined) throw new ApiError(`the server answered HTTP ${response.status}`, `HTTP_${response.status}`);
  return body.data;
}
