// Home: search packages as you type, refined by facet chips. One request per pause in typing
// (debounced); an answer that arrives after a newer request was sent is dropped.

import { data } from "../api.js";
import { afterPaint, announce, count, debounce, h, plural, replace } from "../dom.js";
import { SEARCH } from "../queries.js";
import { link } from "../router.js";
import { errorNotice, heading, tagOf } from "./common.js";

export const DEBOUNCE_MS = 100;

// [URL key, SpecFacets field, SpecFilter field, label, Spack spec syntax for the package page]
const FACETS = [
  ["compiler", "compilers", "compiler", "Compiler", (v) => `%${v}`],
  ["os", "oss", "os", "OS", (v) => `os=${v}`],
  ["target", "targets", "target", "Target", (v) => `target=${v}`],
  ["stack", "stacks", "stack", "Stack", null],
  ["version", "versions", "version", "Version", (v) => `@=${v}`],
];

function stateOf(route) {
  const chosen = {};
  for (const [key] of FACETS) {
    const value = route.params.get(key);
    if (value) chosen[key] = value;
  }
  return { tag: tagOf(route), runsOn: route.params.get("runsOn"), q: route.params.get("q") ?? "", chosen, after: route.params.get("after") };
}

function urlOf(state) {
  return link("search", null, { tag: state.tag, runsOn: state.runsOn, q: state.q, ...state.chosen, after: state.after });
}

function filterOf(chosen, runsOn = null) {
  const parts = FACETS.filter(([key]) => chosen[key]).map(([key, , field]) => [field, { eq: chosen[key] }]);
  if (runsOn) parts.push(["runsOn", runsOn]);
  return parts.length ? Object.fromEntries(parts) : null;
}

/** The chips as a Spack spec, so that a package opened from the results shows those specs. */
function specOf(chosen) {
  return FACETS.filter(([key, , , , spec]) => chosen[key] && spec)
    .map(([key, , , , spec]) => spec(chosen[key]))
    .join(" ");
}

export function mount(ctx) {
  const view = new SearchView(ctx);
  view.update(ctx.route);
  return view;
}

class SearchView {
  constructor(ctx) {
    this.ctx = ctx;
    this.pending = null;
    this.typedAt = null;
    this.refocus = null;
    this.editing = false;
    this.schedule = debounce(() => {
      this.remember();
      this.run();
    }, DEBOUNCE_MS);
    ctx.signal.addEventListener("abort", () => {
      this.schedule.cancel();
      this.pending?.abort();
    });

    this.input = h("input", {
      id: "q",
      type: "search",
      name: "q",
      autocomplete: "off",
      spellcheck: "false",
      autocapitalize: "off",
      placeholder: "torch scater, hdf5, +cuda",
      "aria-describedby": "q-help",
      "aria-controls": "results",
    });
    this.input.addEventListener("input", (event) => this.typed(event));
    this.input.addEventListener("keydown", (event) => this.inputKey(event));
    this.input.addEventListener("blur", () => {
      this.editing = false;
    });
    const form = h(
      "form",
      { class: "search", role: "search", "aria-label": "Packages", onsubmit: (event) => this.submit(event) },
      h("label", { for: "q" }, "Search packages"),
      this.input,
      h(
        "p",
        { id: "q-help", class: "hint" },
        "Package names, variants (+mpi, cuda_arch=80), hash prefixes; one typo forgiven in words of five letters or more.",
        h("span", { class: "keys" }, " ", h("kbd", {}, "Enter"), " opens the first result, ", h("kbd", {}, "\u2193"), " moves to the results."),
      ),
    );
    this.summary = h("p", { class: "summary", id: "summary", "aria-live": "off" });
    this.facets = h("div", { class: "facets" });
    this.results = h("ol", { class: "results", id: "results", "aria-labelledby": "summary" });
    this.results.addEventListener("keydown", (event) => this.resultsKey(event));
    this.pagerBox = h("div");
    replace(ctx.main, heading("Find Spack binaries"), form, this.summary, this.facets, this.results, this.pagerBox);
  }

  /**
   * Keep the typed search in the URL: the first change of an edit is a new history entry,
   * the next ones replace it (back returns to the search before the edit, not to each
   * keystroke). Enter or leaving the box ends the edit.
   */
  remember() {
    const url = urlOf(this.state);
    if (url === location.pathname + location.search) return;
    if (this.editing) history.replaceState(history.state, "", url);
    else history.pushState({}, "", url);
    this.editing = true;
  }

  /** The URL changed (back/forward, a chip, a link to the home page): show its state. */
  update(route) {
    this.editing = false;
    this.state = stateOf(route);
    if (this.input.value !== this.state.q) this.input.value = this.state.q;
    this.typedAt = null;
    this.schedule.cancel();
    this.run();
    return true;
  }

  typed(event) {
    this.typedAt = event.timeStamp; // the same clock as performance.now()
    this.state = { ...this.state, q: this.input.value, after: null };
    this.schedule();
  }

  async run() {
    this.pending?.abort();
    const controller = new AbortController();
    this.pending = controller;
    const state = this.state;
    const typedAt = this.typedAt;
    this.results.setAttribute("aria-busy", "true");
    const filter = filterOf(state.chosen, state.runsOn);
    const variables = {
      tag: state.tag,
      search: state.q.trim() || null,
      filter,
      packageFilter: filter && { hasSpec: filter },
      after: state.after,
    };
    try {
      const answer = await data(SEARCH, variables, { signal: controller.signal });
      if (controller !== this.pending) return;
      this.render(state, answer);
      this.results.removeAttribute("aria-busy");
      const painted = await afterPaint();
      if (typedAt != null) {
        performance.measure("cachegql:search", { start: typedAt, end: painted, detail: state.q });
      }
    } catch (error) {
      if (controller.signal.aborted) return;
      this.results.removeAttribute("aria-busy");
      replace(this.summary, errorNotice(error));
      replace(this.results);
      replace(this.facets);
      replace(this.pagerBox);
    }
  }

  render(state, { packages, specs }) {
    const q = state.q.trim();
    const text = `${plural(specs.totalCount, "spec")} in ${plural(packages.totalCount, "package")}${q ? ` for \u201c${q}\u201d` : ""}`;
    replace(this.summary, text);
    announce(text);
    const spec = specOf(state.chosen);
    replace(
      this.results,
      packages.nodes.map((node) => {
        const matching = node.specs.totalCount;
        const specs = matching === node.numSpecs ? plural(matching, "spec") : `${count(matching)} of ${plural(node.numSpecs, "spec")}`;
        const versions = node.versions.slice(0, 4).join(", ") + (node.versions.length > 4 ? ", \u2026" : "");
        return h(
          "li",
          {},
          h("a", { href: link("package", node.name, { tag: state.tag, q: spec }) }, node.name),
          h("span", { class: "meta" }, `${specs} \u00b7 ${versions}`),
        );
      }),
      packages.totalCount ? null : h("li", { class: "empty" }, q ? `No package matches \u201c${q}\u201d.` : "No package matches these filters."),
    );
    this.results.dataset.for = urlOf(state);
    this.renderFacets(state, specs.facets);
    const pageInfo = packages.pageInfo;
    replace(
      this.pagerBox,
      state.after || pageInfo.hasNextPage
        ? h(
            "nav",
            { class: "pager", "aria-label": "Pages" },
            state.after ? h("a", { href: urlOf({ ...state, after: null }) }, "\u2190 First page") : null,
            pageInfo.hasNextPage ? h("a", { href: urlOf({ ...state, after: pageInfo.endCursor }), rel: "next" }, "Next page \u2192") : null,
          )
        : null,
    );
  }

  renderFacets(state, facets) {
    const groups = [];
    for (const [key, field, , label] of FACETS) {
      const buckets = facets[field].slice();
      const chosen = state.chosen[key];
      if (chosen && !buckets.some((b) => b.value === chosen)) buckets.unshift({ value: chosen, count: 0 });
      if (!buckets.length) continue;
      const id = `facet-${key}`;
      groups.push(
        h(
          "div",
          { class: "facet", role: "group", "aria-labelledby": id },
          h("span", { class: "legend", id }, label),
          h("div", { class: "chips" }, buckets.map((bucket) => {
            const on = bucket.value === chosen;
            return h(
              "button",
              {
                type: "button",
                class: "chip",
                "aria-pressed": on ? "true" : "false",
                dataset: { facet: key, value: bucket.value },
                onclick: () => this.toggle(key, on ? null : bucket.value),
              },
              bucket.value,
              h("span", { class: "count" }, count(bucket.count)),
            );
          })),
        ),
      );
    }
    replace(this.facets, groups);
    if (this.refocus) {
      const [key, value] = this.refocus;
      this.refocus = null;
      const chips = [...this.facets.querySelectorAll(`.chip[data-facet="${key}"]`)];
      (chips.find((chip) => chip.dataset.value === value) ?? chips[0] ?? this.input).focus();
    }
  }

  toggle(key, value) {
    const chosen = { ...this.state.chosen };
    if (value) chosen[key] = value;
    else delete chosen[key];
    this.refocus = [key, value ?? ""];
    this.ctx.go(urlOf({ ...this.state, chosen, after: null }), { focus: false });
  }

  async submit(event) {
    event.preventDefault();
    if (this.results.dataset.for !== urlOf(this.state)) {
      this.schedule.cancel();
      this.remember();
      await this.run();
    }
    this.editing = false;
    const first = this.results.querySelector("a");
    if (first) this.ctx.go(first.getAttribute("href"));
  }

  inputKey(event) {
    if (event.key === "ArrowDown") {
      const first = this.results.querySelector("a");
      if (first) {
        event.preventDefault();
        first.focus();
      }
    } else if (event.key === "Escape" && this.input.value) {
      event.preventDefault();
      this.input.value = "";
      this.input.dispatchEvent(new Event("input"));
    }
  }

  resultsKey(event) {
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    const links = [...this.results.querySelectorAll("a")];
    const at = links.indexOf(document.activeElement);
    if (at < 0) return;
    event.preventDefault();
    const next = at + (event.key === "ArrowDown" ? 1 : -1);
    if (next < 0) this.input.focus();
    else links[Math.min(next, links.length - 1)].focus();
  }
}
