// Check an environment: paste or drop a spack.lock; the coverage of its specs by the tag
// (a bar, per root), and a table of every spec, cached or not, with the nearest binary of
// each one missing and how it differs. The lockfile is POSTed (it does not fit a URL); the
// tag stays in the URL, the lockfile in the page.

import { ApiError, post } from "../api.js";
import { announce, count, h, notice, plural, replace } from "../dom.js";
import { CHECK_ENVIRONMENT } from "../queries.js";
import { crumbs, errorNotice, heading, table, tagLink, tagOf } from "./common.js";

let remembered = ""; // the last lockfile checked, kept while the app stays open

export function mount(ctx) {
  const { route, main } = ctx;
  const text = h("textarea", {
    id: "lockfile",
    name: "lockfile",
    rows: "8",
    spellcheck: "false",
    autocomplete: "off",
    placeholder: '{"_meta": {"lockfile-version": 6}, "roots": [...], "concrete_specs": {...}}',
  });
  text.value = remembered;
  const file = h("input", { id: "lockfile-file", type: "file", accept: ".lock,.json,application/json" });
  const result = h("div", { id: "check-result", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "check-form", id: "check-form" },
    h("label", { for: "lockfile" }, "spack.lock"),
    h("div", { class: "drop", id: "drop" }, text),
    h(
      "p",
      { class: "row" },
      h("label", { for: "lockfile-file" }, "or open a file "),
      file,
      h("button", { type: "submit" }, "Check"),
    ),
  );
  const run = async () => {
    remembered = text.value;
    if (!text.value.trim()) {
      replace(result, notice("Paste a spack.lock, drop it here, or open it.", "error"));
      text.focus();
      return;
    }
    replace(result, h("p", { class: "muted" }, "Checking..."));
    try {
      const answer = await post(CHECK_ENVIRONMENT, { lockfile: text.value, tag: tagOf(route) }, { signal: ctx.signal });
      replace(result, ...report(route, answer.checkEnvironment));
      announce(`${answer.checkEnvironment.cached} of ${answer.checkEnvironment.total} specs cached`);
    } catch (error) {
      if (ctx.signal.aborted) return;
      replace(result, error instanceof ApiError && error.code === "HTTP_413" ? tooLarge(error) : errorNotice(error));
    }
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run();
  });
  const load = async (chosen) => {
    if (!chosen) return;
    text.value = await chosen.text();
    run();
  };
  file.addEventListener("change", () => load(file.files?.[0]));
  for (const kind of ["dragenter", "dragover"]) {
    form.addEventListener(kind, (event) => {
      event.preventDefault();
      form.classList.add("dropping");
    });
  }
  form.addEventListener("dragleave", () => form.classList.remove("dropping"));
  form.addEventListener("drop", (event) => {
    event.preventDefault();
    form.classList.remove("dropping");
    load(event.dataTransfer?.files?.[0]);
  });
  replace(
    main,
    crumbs(route, ["Check an environment", null]),
    heading("Check an environment"),
    h(
      "p",
      { class: "lead" },
      "Which specs of a Spack environment this cache holds (by full hash), and for each one it lacks, its nearest binary and how it differs. ",
      "The lockfile is sent to this server only.",
    ),
    form,
    result,
  );
  if (remembered) run();
  return null;
}

function tooLarge(error) {
  return notice(`This lockfile is too large to send: ${error.message}. Check it from a terminal instead: cachegql check spack.lock`, "error");
}

function percent(cached, total) {
  return total ? Math.floor((100 * cached) / total) : 100;
}

function bar(label, cached, total) {
  const value = percent(cached, total);
  return h(
    "div",
    { class: "coverage" },
    h("span", { class: "coverage-label" }, label),
    h("meter", { min: "0", max: String(total || 1), value: String(cached), "aria-label": `${label}: ${value}% cached` }),
    h("span", { class: "count" }, `${count(cached)}/${count(total)} (${value}%)`),
  );
}

function report(route, check) {
  const problems = check.problems.length
    ? notice(`${plural(check.problems.length, "node")} of the lockfile could not be read: ${check.problems.join("; ")}`, "error")
    : null;
  const rows = check.specs.map((spec) => {
    const status = spec.external ? "external" : spec.cached ? "cached" : "missing";
    const near = spec.nearest[0];
    return [
      h("span", { class: `status ${status}` }, status),
      spec.cached
        ? h("a", { href: tagLink(route, "spec", spec.hash.slice(0, 7)) }, h("code", {}, spec.format))
        : h("code", {}, spec.format),
      near
        ? h(
            "div",
            {},
            h("a", { href: tagLink(route, "spec", near.spec.hash.slice(0, 7)) }, h("code", {}, near.spec.format)),
            h("ul", { class: "differences" }, (near.differences.length ? near.differences : ["the same spec under another hash"]).map((d) => h("li", {}, d))),
          )
        : spec.cached || spec.external
          ? ""
          : h("span", { class: "muted" }, `no binary of ${spec.name} in ${check.tag}`),
    ];
  });
  return [
    problems,
    h(
      "section",
      { "aria-labelledby": "coverage-title" },
      h("h2", { id: "coverage-title" }, "Coverage"),
      h("p", {}, `Tag ${check.tag}, lockfile version ${check.lockfileVersion}${check.externals ? `; ${plural(check.externals, "external")} left out` : ""}.`),
      bar("Overall", check.cached, check.total),
      check.roots.map((root) => bar(root.spec, root.cached, root.total)),
    ),
    h(
      "section",
      { "aria-labelledby": "specs-title" },
      h("h2", { id: "specs-title" }, "Specs", h("span", { class: "count" }, ` ${count(check.specs.length)}`)),
      table("Specs of the environment", ["Status", "Spec", "Nearest binary"], rows),
    ),
  ];
}
