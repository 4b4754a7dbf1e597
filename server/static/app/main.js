// The app shell: the header's tag selector and hash box, keyboard shortcuts, and the
// client-side router (history.pushState + popstate) that draws one view into <main>.

import { data } from "./api.js";
import { h, replace } from "./dom.js";
import { MICROARCHITECTURES, TAGS } from "./queries.js";
import { link, parse } from "./router.js";
import * as changes from "./views/changes.js";
import * as environment from "./views/environment.js";
import { errorNotice, heading } from "./views/common.js";
import * as pkg from "./views/package.js";
import * as search from "./views/search.js";
import { hashPrefix, mount as mountSpec } from "./views/spec.js";
import * as stack from "./views/stack.js";

// Each view's mount(ctx) draws it into ctx.main and may return an object whose update(route)
// draws a new URL of the same view in place (and then returns true).
const VIEWS = {
  search: search.mount,
  package: pkg.mount,
  spec: mountSpec,
  stacks: stack.mountList,
  stack: stack.mount,
  changes: changes.mount,
  check: environment.mount,
};

const main = document.getElementById("main");
const tagSelect = document.getElementById("tag");
const runsOnSelect = document.getElementById("runs-on");
const hashForm = document.getElementById("hash-form");
const hashInput = document.getElementById("hash");

const tags = data(TAGS).then((answer) => answer.tags);
let current = null; // { route, controller, instance }

/** The URL's route, drawn: in place when the view allows it, else mounted anew. */
async function show({ focus = false, scroll = null } = {}) {
  const route = parse(location.href);
  syncHeader(route);
  if (!route) {
    current?.controller.abort();
    current = null;
    replace(main, heading("Not found"), h("p", {}, h("a", { href: "/" }, "Search packages")));
    return;
  }
  if (current && current.route.view === route.view && current.instance?.update?.(route)) {
    current.route = route;
    return;
  }
  current?.controller.abort();
  const controller = new AbortController();
  current = { route, controller, instance: null };
  main.setAttribute("aria-busy", "true");
  try {
    const instance = await VIEWS[route.view]({ main, route, signal: controller.signal, tags, go });
    if (current?.controller === controller) current.instance = instance;
  } catch (error) {
    if (controller.signal.aborted) return;
    replace(main, heading("Something went wrong"), errorNotice(error));
  }
  if (controller.signal.aborted) return;
  main.removeAttribute("aria-busy");
  if (scroll != null) scrollTo(0, scroll);
  if (focus) (main.querySelector("h1") ?? main).focus({ preventScroll: true });
}

/**
 * Go to `url`, a new history entry (or the current one, `replace`). After a navigation
 * the new view's heading takes the focus (`focus: false` keeps it where it is).
 */
function go(url, { replace: inPlace = false, focus = !inPlace } = {}) {
  if (inPlace) {
    history.replaceState(history.state, "", url);
    return show({ focus });
  }
  history.replaceState({ ...history.state, scrollY }, "");
  history.pushState({}, "", url);
  return show({ focus, scroll: focus ? 0 : null });
}

function syncHeader(route) {
  const tag = route?.params.get("tag") ?? "";
  if (tagSelect.options.length) tagSelect.value = tag || defaultTag;
  tagSelect.disabled = route?.view === "changes"; // it has its own two
  const runsOn = route?.params.get("runsOn") ?? "";
  if (runsOn && ![...runsOnSelect.options].some((o) => o.value === runsOn)) {
    runsOnSelect.append(h("option", { value: runsOn }, runsOn)); // before the list arrives
  }
  runsOnSelect.value = runsOn;
  // The header's links keep the tag and the "Runs on" choice too.
  for (const anchor of document.querySelectorAll(".top a[href]")) {
    const target = parse(anchor.href);
    if (target) anchor.href = link(target.view, target.arg, { tag, runsOn });
  }
}

let defaultTag = "";
tags.then(
  (list) => {
    defaultTag = list.find((t) => t.isDefault)?.name ?? "";
    replace(tagSelect, list.map((t) => h("option", { value: t.name }, `${t.name} (${t.numSpecs.toLocaleString("en")} specs)`)));
    syncHeader(parse(location.href));
  },
  () => {
    tagSelect.disabled = true;
  },
);

// "Runs on": archspec's microarchitectures by family; a choice narrows every view to the
// binaries that run there (SpecFilter.runsOn), and stays in the URL.
data(MICROARCHITECTURES).then(
  ({ microarchitectures }) => {
    const families = new Map();
    for (const m of microarchitectures) {
      if (!families.has(m.family)) families.set(m.family, []);
      families.get(m.family).push(m);
    }
    replace(
      runsOnSelect,
      h("option", { value: "" }, "any target"),
      [...families].map(([family, list]) =>
        h("optgroup", { label: family }, list.map((m) => h("option", { value: m.name }, m.name))),
      ),
    );
    syncHeader(parse(location.href));
  },
  () => {
    runsOnSelect.disabled = true;
  },
);

runsOnSelect.addEventListener("change", () => {
  const route = parse(location.href);
  if (!route) return;
  const params = Object.fromEntries([...route.params].filter(([key]) => key !== "after" && key !== "runsOn"));
  go(link(route.view, route.arg, { ...params, runsOn: runsOnSelect.value || null }), { focus: false });
});

tagSelect.addEventListener("change", () => {
  const route = parse(location.href);
  if (!route) return;
  const params = Object.fromEntries([...route.params].filter(([key]) => key !== "after" && key !== "tag"));
  const tag = tagSelect.value === defaultTag ? null : tagSelect.value;
  go(link(route.view, route.arg, { tag, ...params }), { focus: false });
});

hashForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const prefix = hashPrefix(hashInput.value);
  if (!prefix) {
    hashInput.focus();
    return;
  }
  go(link("spec", prefix, { tag: parse(location.href)?.params.get("tag") }));
});

// Links to the app's own pages are followed without reloading it; a click with a modifier
// (new tab, new window) is left to the browser.
document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const anchor = event.target.closest?.("a[href]");
  if (!anchor || anchor.target || anchor.hasAttribute("download")) return;
  const route = parse(anchor.href);
  if (!route) return;
  event.preventDefault();
  if (route.url !== location.pathname + location.search) go(route.url);
});

window.addEventListener("popstate", () => show({ focus: true, scroll: history.state?.scrollY ?? 0 }));

// "/" searches and "#" asks for a hash, from anywhere but a field.
document.addEventListener("keydown", async (event) => {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target.closest?.("input, textarea, select, [contenteditable]")) return;
  if (event.key === "/") {
    event.preventDefault();
    if (current?.route.view !== "search") await go(link("search", null, { tag: parse(location.href)?.params.get("tag") }));
    document.getElementById("q")?.focus();
  } else if (event.key === "#") {
    event.preventDefault();
    hashInput.focus();
    hashInput.select();
  }
});

history.scrollRestoration = "manual";
show().then(() => {
  if (current?.route.view === "search") document.getElementById("q")?.focus();
});
