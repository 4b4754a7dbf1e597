// The stacks of a tag, and one stack: its spec counts by compiler, os, platform and target
// as bar charts, and its packages.

import { data } from "../api.js";
import { count, h, notice, plural, replace } from "../dom.js";
import { STACK, STACKS } from "../queries.js";
import { bars, crumbs, heading, tagLink, tagOf } from "./common.js";

export async function mountList(ctx) {
  const { route, main, signal } = ctx;
  const { stacks } = await data(STACKS, { tag: tagOf(route) }, { signal });
  replace(
    main,
    crumbs(route, ["Stacks", null]),
    heading("Stacks"),
    h("p", { class: "lead" }, `${plural(stacks.length, "stack")}: the CI pipelines that built the binaries of this tag, by spec count.`),
    bars(
      "Specs by stack",
      stacks.map((stack) => ({ value: stack.name, count: stack.numSpecs })),
      (name) => tagLink(route, "stack", name),
    ),
  );
  return null;
}

export async function mount(ctx) {
  const { route, main, signal } = ctx;
  const { stack } = await data(STACK, { name: route.arg, tag: tagOf(route) }, { signal });
  if (!stack) {
    replace(
      main,
      crumbs(route, ["Stacks", tagLink(route, "stacks")], [route.arg, null]),
      heading(route.arg),
      notice(`No stack named \u201c${route.arg}\u201d in this tag.`, "error"),
    );
    return null;
  }
  const searchIn = (facet) => (value) => tagLink(route, "search", null, { stack: stack.name, [facet]: value });
  const packages = stack.packages;
  replace(
    main,
    crumbs(route, ["Stacks", tagLink(route, "stacks")], [stack.name, null]),
    heading(stack.name),
    h("p", { class: "lead" }, `${plural(stack.numSpecs, "spec")} of ${plural(stack.numPackages, "package")} in tag ${stack.tag}.`),
    h(
      "div",
      { class: "charts" },
      bars("Compilers", stack.compilers, searchIn("compiler")),
      bars("Operating systems", stack.oss, searchIn("os")),
      bars("Platforms", stack.platforms),
      bars("Targets", stack.targets, searchIn("target")),
    ),
    h(
      "section",
      { "aria-labelledby": "packages-title" },
      h("h2", { id: "packages-title" }, "Packages", h("span", { class: "count" }, ` ${count(packages.totalCount)}`)),
      h(
        "ul",
        { class: "links columns" },
        packages.nodes.map((p) => h("li", {}, h("a", { href: tagLink(route, "package", p.name) }, p.name))),
      ),
      packages.totalCount > packages.nodes.length
        ? h("p", {}, h("a", { href: tagLink(route, "search", null, { stack: stack.name }) }, `All ${count(packages.totalCount)} packages of this stack in search`))
        : null,
    ),
  );
  return null;
}
