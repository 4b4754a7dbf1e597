// The app's URLs: every view's state is in its path and query string, so links can be
// shared and back/forward work. server/frontend.py serves the page at the same paths.

const ROUTES = [
  ["search", /^\/$/],
  ["package", /^\/package\/([^/]+)$/],
  ["spec", /^\/spec\/([^/]+)$/],
  ["stacks", /^\/stacks$/],
  ["stack", /^\/stack\/([^/]+)$/],
  ["changes", /^\/changes$/],
  ["check", /^\/check$/],
];

/** `{ view, arg, params, url }` for a same-origin URL the app draws, else null. */
export function parse(href) {
  const url = new URL(href, location.href);
  if (url.origin !== location.origin) return null;
  for (const [view, pattern] of ROUTES) {
    const match = pattern.exec(url.pathname);
    if (match) {
      const arg = match[1] === undefined ? null : decodeURIComponent(match[1]);
      return { view, arg, params: url.searchParams, url: url.pathname + url.search };
    }
  }
  return null;
}

/** The URL of a view: `link("package", "zlib", { tag: "develop", q: "" })`; empty values are
 * left out, arrays repeat their key. */
export function link(view, arg = null, params = {}) {
  const path = view === "search" ? "/" : `/${view}${arg == null ? "" : `/${encodeURIComponent(arg)}`}`;
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item != null && item !== "") query.append(key, item);
    }
  }
  const search = query.toString();
  return search ? `${path}?${search}` : path;
}
