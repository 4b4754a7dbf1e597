// What changed between two tags: per package, how many specs were added, removed and kept
// (Query.tagDiff), and on demand which ones.

import { data } from "../api.js";
import { announce, count, h, notice, plural, replace } from "../dom.js";
import { CHANGED_SPECS, CHANGES } from "../queries.js";
import { link } from "../router.js";
import { crumbs, errorNotice, heading, pager, withRunsOn } from "./common.js";

/** Whether `error` says that the server's schema has no Query.tagDiff. */
function missingField(error) {
  return error.code === "BAD_USER_INPUT" && /Cannot query field .tagDiff/.test(error.message);
}

export async function mount(ctx) {
  const { route, main, signal } = ctx;
  const tags = await ctx.tags;
  const names = tags.map((t) => t.name);
  const to = route.params.get("to") || tags.find((t) => t.isDefault)?.name || names[0];
  const from = route.params.get("from") || names.find((n) => n !== to) || to;

  const select = (id, label, value) =>
    h(
      "span",
      { class: "field" },
      h("label", { for: id }, label),
      h("select", { id, name: id }, names.map((n) => h("option", { value: n, selected: n === value }, n))),
    );
  const form = h(
    "form",
    {
      class: "compare",
      onsubmit: (event) => {
        event.preventDefault();
        const fields = event.currentTarget.elements;
        ctx.go(link("changes", null, { from: fields.from.value, to: fields.to.value }));
      },
    },
    select("from", "From", from),
    select("to", "To", to),
    h("button", { type: "submit" }, "Compare"),
  );
  const body = h("div", { class: "changes" });
  replace(main, crumbs(route, ["Changes", null]), heading("Changes between tags"), form, body);

  let diff;
  try {
    const filter = withRunsOn(route);
    diff = (await data(CHANGES, { from, to, filter, after: route.params.get("after") }, { signal })).tagDiff;
  } catch (error) {
    if (signal.aborted) throw error;
    replace(body, missingField(error) ? notice("This server cannot compare tags: its API has no Query.tagDiff.", "error") : errorNotice(error));
    return null;
  }
  const summary = `${diff.from} \u2192 ${diff.to}: ${count(diff.added)} specs added, ${count(diff.removed)} removed, ${count(diff.unchanged)} unchanged, in ${plural(diff.totalCount, "package")}`;
  announce(summary);
  const rows = diff.nodes.flatMap((node) => packageRows(node, diff, signal, route));
  replace(
    body,
    h("p", { class: "summary", id: "changes-summary" }, summary),
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "diff", "aria-describedby": "changes-summary" },
        h("caption", { class: "visually-hidden" }, "Changes per package"),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "col" }, "Package"),
            ["Added", "Removed", "Unchanged"].map((c) => h("th", { scope: "col", class: "num" }, c)),
            h("th", { scope: "col" }, "Specs"),
          ),
        ),
        h("tbody", {}, rows),
      ),
    ),
    pager(route, diff.pageInfo),
  );
  return null;
}

function packageRows(node, diff, signal, route) {
  const gone = node.added === 0 && node.unchanged === 0;
  const detail = h("td", { colspan: "5", dataset: { label: "Specs" } });
  const detailRow = h("tr", { class: "detail", hidden: true }, detail);
  const button = h("button", { type: "button", "aria-expanded": "false", "aria-label": `Specs of ${node.name}` }, "Show");
  let loaded = false;
  button.addEventListener("click", async () => {
    const open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? "Hide" : "Show";
    detailRow.hidden = !open;
    if (!open || loaded) return;
    loaded = true;
    replace(detail, h("p", { class: "muted" }, "Loading\u2026"));
    try {
      const variables = { from: diff.from, to: diff.to, filter: withRunsOn(route, { package: { eq: node.name } }) };
      const answer = await data(CHANGED_SPECS, variables, { signal });
      const found = answer.tagDiff.nodes[0];
      replace(
        detail,
        specList(`Added in ${diff.to}`, found?.addedSpecs),
        specList(`Removed since ${diff.from}`, found?.removedSpecs),
      );
    } catch (error) {
      loaded = false;
      replace(detail, errorNotice(error));
    }
  });
  const cell = (label, value, kind) => h("td", { class: `num ${value ? kind : ""}`, dataset: { label } }, value ? count(value) : "0");
  return [
    h(
      "tr",
      {},
      h("td", { dataset: { label: "Package" } }, h("a", { href: link("package", node.name, { tag: gone ? diff.from : diff.to }) }, node.name)),
      cell("Added", node.added, "added"),
      cell("Removed", node.removed, "removed"),
      cell("Unchanged", node.unchanged, ""),
      h("td", { dataset: { label: "Specs" } }, node.added || node.removed ? button : null),
    ),
    detailRow,
  ];
}

function specList(title, connection) {
  if (!connection?.totalCount) return null;
  return h(
    "div",
    { class: "spec-list" },
    h("h3", {}, `${title} (${count(connection.totalCount)})`),
    h(
      "ul",
      { class: "links" },
      connection.nodes.map((spec) =>
        h("li", {}, h("a", { class: "hash", href: link("spec", spec.hash, { tag: spec.tag }) }, `/${spec.shortHash}`), " ", h("code", {}, spec.format)),
      ),
    ),
    connection.totalCount > connection.nodes.length ? h("p", { class: "muted" }, `and ${count(connection.totalCount - connection.nodes.length)} more`) : null,
  );
}
