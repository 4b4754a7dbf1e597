// Pieces the views share: links that keep the tag, bar charts, pagers, copy buttons, errors.

import { ApiError } from "../api.js";
import { announce, count, h, notice } from "../dom.js";
import { link } from "../router.js";

/** The tag a view shows: the URL's, else null (the server's default tag). */
export function tagOf(route) {
  return route.params.get("tag") || null;
}

/** The microarchitecture the binaries shown must run on (the header's "Runs on"), or null. */
export function runsOnOf(route) {
  return route.params.get("runsOn") || null;
}

/** The SpecFilter of the "Runs on" choice, merged into `filter` (null: no constraint). */
export function withRunsOn(route, filter = null) {
  const runsOn = runsOnOf(route);
  return runsOn ? { ...(filter ?? {}), runsOn } : filter;
}

/** A link to `view` that keeps the current tag and "Runs on" choice. */
export function tagLink(route, view, arg = null, params = {}) {
  return link(view, arg, { tag: tagOf(route), runsOn: runsOnOf(route), ...params });
}

/** The view's title, in the tab and as its heading (focused after navigation). */
export function heading(text, ...extra) {
  document.title = `${text} \u00b7 cachegql`;
  return h("h1", { tabindex: "-1" }, text, ...extra);
}

/** Back to search, then each step: `crumbs(route, ["zlib", href], "/abc1234")`. */
export function crumbs(route, ...steps) {
  const items = [["Search", tagLink(route, "search")], ...steps];
  return h(
    "nav",
    { class: "crumbs", "aria-label": "Breadcrumb" },
    h(
      "ol",
      {},
      items.map(([text, href], i) =>
        h("li", {}, href && i < items.length - 1 ? h("a", { href }, text) : h("span", { "aria-current": "page" }, text)),
      ),
    ),
  );
}

/** Horizontal bars, one per bucket, labelled with value and count; `href(value)` links them. */
export function bars(title, buckets, href = null) {
  const max = Math.max(1, ...buckets.map((b) => b.count));
  const rows = buckets.map((bucket) => {
    const fill = h("span", { class: "fill" });
    fill.style.width = `${(100 * bucket.count) / max}%`; // CSSOM: allowed by the page's CSP
    const label = href ? h("a", { href: href(bucket.value) }, bucket.value) : bucket.value;
    return h(
      "li",
      {},
      h("span", { class: "label" }, label),
      h("span", { class: "bar", "aria-hidden": "true" }, fill),
      h("span", { class: "count" }, count(bucket.count)),
    );
  });
  const id = `bars-${title.toLowerCase().replace(/\W+/g, "-")}`;
  return h(
    "section",
    { class: "chart", "aria-labelledby": id },
    h("h2", { id }, title),
    rows.length ? h("ol", { class: "bars" }, rows) : h("p", { class: "muted" }, "None."),
  );
}

/** "Next page" (and "First page" once past it) for a connection shown at `route`. */
export function pager(route, pageInfo) {
  const after = route.params.get("after");
  if (!after && !pageInfo?.hasNextPage) return null;
  const params = Object.fromEntries([...route.params].filter(([key]) => key !== "after"));
  const here = (extra) => link(route.view, route.arg, { ...params, ...extra });
  return h(
    "nav",
    { class: "pager", "aria-label": "Pages" },
    after ? h("a", { href: here({}) }, "\u2190 First page") : null,
    pageInfo?.hasNextPage ? h("a", { href: here({ after: pageInfo.endCursor }), rel: "next" }, "Next page \u2192") : null,
  );
}

/** A line of text to paste into a terminal, with a button that copies it. */
export function copyLine(text, label) {
  const code = h("code", {}, text);
  const button = h("button", { type: "button", "aria-label": `Copy ${label}` }, "Copy");
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "Copied";
      announce(`Copied ${label}`);
    } catch {
      // No clipboard (plain http, or refused): select the text for Ctrl+C instead.
      getSelection().selectAllChildren(code);
      button.textContent = "Press Ctrl+C";
    }
    setTimeout(() => {
      button.textContent = "Copy";
    }, 2000);
  });
  return h("div", { class: "copy-line" }, code, button);
}

/** An error for people: the API's message, and what to do for the common codes. */
export function errorNotice(error) {
  if (error instanceof ApiError) {
    const hints = {
      SERVICE_OVERLOADED: " The server is busy: try again in a moment.",
      QUERY_TOO_COMPLEX: " Narrow the query.",
    };
    return notice(`${error.message}${hints[error.code] ?? ""}`, "error");
  }
  return notice(`Could not reach the server: ${error.message}`, "error");
}

/** A spec's arch as Spack writes it. */
export function arch(spec) {
  return `${spec.platform}-${spec.os}-${spec.target}`;
}

/** A table that scrolls sideways inside its box on narrow screens (the page never does);
 * each cell carries its column's name, which narrow screens show beside it. */
export function table(caption, columns, rows) {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      {},
      h("caption", { class: "visually-hidden" }, caption),
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
      h(
        "tbody",
        {},
        rows.map((cells) =>
          h(
            "tr",
            {},
            cells.map((cell, i) => h("td", { dataset: { label: columns[i] } }, cell)),
          ),
        ),
      ),
    ),
  );
}
