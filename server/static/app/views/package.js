// A package: its specs in a table, narrowed by a Spack spec string typed in a field, and
// its spec counts per stack.

import { ApiError, data } from "../api.js";
import { announce, bytes, debounce, h, notice, plural, replace } from "../dom.js";
import { PACKAGE, PACKAGE_SPECS } from "../queries.js";
import { link } from "../router.js";
import { arch, bars, crumbs, errorNotice, heading, pager, table, tagOf, tagLink, withRunsOn } from "./common.js";

const DEBOUNCE_MS = 250;

export async function mount(ctx) {
  const view = new PackageView(ctx);
  await view.load();
  return view;
}

class PackageView {
  constructor(ctx) {
    this.ctx = ctx;
    this.route = ctx.route;
    this.pending = null;
    this.editing = false;
    this.own = null;
    this.schedule = debounce(() => this.narrow(), DEBOUNCE_MS);
    ctx.signal.addEventListener("abort", () => {
      this.schedule.cancel();
      this.pending?.abort();
    });
  }

  async load() {
    const { ctx, route } = this;
    const name = route.arg;
    const [summary] = await Promise.all([
      data(PACKAGE, { name, tag: tagOf(route) }, { signal: ctx.signal }),
      this.specs(route), // its own errors are shown in its place
    ]);
    const pkg = summary.package;
    if (!pkg) {
      replace(
        ctx.main,
        crumbs(route, [name, null]),
        heading(name),
        notice(`No package named \u201c${name}\u201d in this tag.`, "error"),
        h("p", {}, h("a", { href: tagLink(route, "search", null, { q: name }) }, `Search for \u201c${name}\u201d`)),
      );
      return;
    }
    this.input = h("input", {
      id: "spec-query",
      name: "q",
      autocomplete: "off",
      spellcheck: "false",
      autocapitalize: "off",
      placeholder: "@1.14: +mpi %gcc@13",
      "aria-describedby": "spec-query-help spec-query-error",
    });
    this.input.value = route.params.get("q") ?? "";
    this.input.addEventListener("input", () => this.schedule());
    this.input.addEventListener("blur", () => {
      this.editing = false;
    });
    this.error = h("div", { id: "spec-query-error", class: "field-error", "aria-live": "polite" });
    const form = h(
      "form",
      {
        class: "narrow",
        onsubmit: (event) => {
          event.preventDefault();
          this.schedule.cancel();
          this.narrow(true);
        },
      },
      h("label", { for: "spec-query" }, "Narrow by spec"),
      this.input,
      h(
        "p",
        { id: "spec-query-help", class: "hint" },
        "Spack spec syntax: ",
        h("code", {}, "@1.2:1.4"),
        " versions, ",
        h("code", {}, "+mpi ~shared cuda_arch=80"),
        " variants, ",
        h("code", {}, "%gcc@13"),
        ", ",
        h("code", {}, "os= target= arch="),
        ", ",
        h("code", {}, "/hash"),
        ".",
      ),
      this.error,
    );
    this.table = h("div", { class: "spec-table" });
    replace(
      ctx.main,
      crumbs(route, [pkg.name, null]),
      heading(pkg.name),
      h(
        "p",
        { class: "lead" },
        `${plural(pkg.numSpecs, "spec")} in tag ${pkg.tag} \u00b7 versions ${pkg.versions.join(", ")} \u00b7 compilers ${pkg.compilers.join(", ")}`,
      ),
      h("section", { "aria-labelledby": "specs-title" }, h("h2", { id: "specs-title" }, "Specs"), form, this.table),
      bars("Specs by stack", pkg.numSpecsByStack.map((s) => ({ value: s.stack, count: s.count })), (stack) =>
        tagLink(route, "stack", stack),
      ),
    );
    this.show(await this.first);
  }

  /** Start fetching the specs of `route` (they are shown once the page is drawn). */
  specs(route) {
    this.pending?.abort();
    const controller = new AbortController();
    this.pending = controller;
    const variables = {
      name: route.arg,
      tag: tagOf(route),
      query: route.params.get("q") || null,
      filter: withRunsOn(route),
      after: route.params.get("after"),
    };
    this.first = data(PACKAGE_SPECS, variables, { signal: controller.signal }).then(
      (answer) => ({ route, answer, controller }),
      (error) => ({ route, error, controller }),
    );
    return this.first;
  }

  /**
   * The spec field changed: show its specs, and keep them in the URL. The first change of an
   * edit is a new history entry, the next ones replace it; Enter (`commit`) or leaving the
   * field ends the edit, so that back returns to each query that was looked at.
   */
  narrow(commit = false) {
    const params = Object.fromEntries([...this.route.params].filter(([k]) => k !== "after" && k !== "q"));
    const url = link("package", this.route.arg, { ...params, q: this.input.value.trim() });
    if (url !== location.pathname + location.search) {
      this.own = url;
      this.ctx.go(url, { replace: this.editing, focus: false });
    }
    this.editing = !commit;
  }

  /** The URL changed: the same package's other specs are drawn in place. */
  update(route) {
    if (!this.input || route.arg !== this.route.arg || tagOf(route) !== tagOf(this.route)) return false;
    if (route.url !== this.own) this.editing = false; // back, forward or a link: a new edit
    this.route = route;
    const q = route.params.get("q") ?? "";
    if (this.input.value.trim() !== q) this.input.value = q;
    this.table.setAttribute("aria-busy", "true");
    this.specs(route).then((result) => this.show(result));
    return true;
  }

  show({ route, answer, error, controller }) {
    if (controller !== this.pending || !this.table) return;
    this.table.removeAttribute("aria-busy");
    if (error) {
      if (controller.signal.aborted) return;
      const bad = error instanceof ApiError && error.code === "BAD_USER_INPUT";
      if (bad) {
        // A spec query's error says its column: drawn as a caret under the query sent.
        this.input.setAttribute("aria-invalid", "true");
        const column = error.extensions.column;
        const sent = route.params.get("q") ?? "";
        const caret = Number.isInteger(column) ? `\n  ${sent}\n  ${" ".repeat(column - 1)}^` : "";
        replace(this.error, h("pre", {}, error.message + caret));
        replace(this.table);
      } else {
        replace(this.table, errorNotice(error));
      }
      return;
    }
    this.input.removeAttribute("aria-invalid");
    replace(this.error);
    const specs = answer.package?.specs;
    if (!specs) {
      replace(this.table, notice("This package is not in this tag.", "error"));
      return;
    }
    const tag = tagOf(route);
    const shown = route.params.get("q") ? `${plural(specs.totalCount, "spec")} match` : plural(specs.totalCount, "spec");
    announce(shown);
    const rows = specs.nodes.map((spec) => [
      h("a", { class: "hash", href: link("spec", spec.hash, { tag }) }, spec.shortHash),
      spec.version,
      spec.compiler.raw,
      arch(spec),
      spec.variants.map((v) => v.raw).join(" "),
      spec.stacks.length > 3 ? `${spec.stacks.slice(0, 3).join(", ")} +${spec.stacks.length - 3}` : spec.stacks.join(", "),
      bytes(spec.sizeBytes),
    ]);
    replace(
      this.table,
      h("p", { class: "summary", id: "spec-count" }, shown),
      specs.nodes.length
        ? table("Specs", ["Hash", "Version", "Compiler", "Arch", "Variants", "Stacks", "Size"], rows)
        : null,
      pager(route, specs.pageInfo),
    );
    this.table.dataset.for = route.url;
    this.table.querySelector("table")?.setAttribute("aria-describedby", "spec-count");
  }
}
