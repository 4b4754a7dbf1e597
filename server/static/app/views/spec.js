// A spec by full hash or prefix (what the hash box opens): its fields, its format line and
// `spack install` line with copy buttons, its dependencies and dependents. A prefix that
// several specs share lists them instead.

import { data } from "../api.js";
import { bytes, count, h, notice, plural, replace } from "../dom.js";
import { CANDIDATES, SPEC } from "../queries.js";
import { link } from "../router.js";
import { arch, copyLine, crumbs, errorNotice, heading, pager, table, tagLink, tagOf } from "./common.js";

/** What people type for a hash: `/22xi27u`, with spaces or capitals. */
export function hashPrefix(text) {
  return text.trim().replace(/^\//, "").toLowerCase();
}

export async function mount(ctx) {
  const { route, main, signal } = ctx;
  const prefix = hashPrefix(route.arg);
  const tag = tagOf(route);
  let spec;
  try {
    spec = (await data(SPEC, { hash: prefix, tag }, { signal })).spec;
  } catch (error) {
    if (error.code === "AMBIGUOUS_HASH_PREFIX") return candidates(ctx, prefix, error.extensions.count);
    replace(main, crumbs(route, [`/${prefix}`, null]), heading(`/${prefix}`), errorNotice(error));
    return null;
  }
  if (!spec) {
    replace(
      main,
      crumbs(route, [`/${prefix}`, null]),
      heading(`/${prefix}`),
      notice(`No spec in ${tag ? `tag ${tag}` : "this tag"} has a hash starting with \u201c${prefix}\u201d.`, "error"),
    );
    return null;
  }
  if (spec.hash !== prefix) {
    // A prefix found one spec: the URL names it in full, so that a shared link stays exact.
    history.replaceState(history.state, "", link("spec", spec.hash, { tag }));
  }
  const stackLinks = spec.stacks.map((stack, i) => [i ? ", " : null, h("a", { href: tagLink(route, "stack", stack) }, stack)]);
  const fields = [
    ["Hash", h("code", { class: "hash" }, spec.hash)],
    ["Package", h("a", { href: tagLink(route, "package", spec.name) }, spec.name)],
    ["Version", spec.version],
    ["Tag", spec.tag],
    ["Compiler", spec.compiler.raw],
    ["Arch", arch(spec)],
    ["Variants", spec.variants.length ? spec.variants.map((v) => v.raw).join(" ") : "\u2014"],
    ["Stacks", stackLinks.length ? stackLinks : "\u2014"],
    ["Namespace", spec.namespace ?? "\u2014"],
    ["Size", bytes(spec.sizeBytes)],
    ["Tarball", spec.tarball ? h("code", {}, spec.tarball) : "\u2014"],
  ];
  // Where Spack fetches this binary (caches indexed from the network): a link a browser can
  // follow for http(s), the URL to hand to Spack, oras or the AWS CLI for oci:// and s3://.
  const binaries = [
    ["View raw spec", spec.specFileUrl],
    ["Download tarball", spec.tarballUrl],
  ].filter(([, url]) => url);
  for (const [label, url] of binaries) {
    const web = /^https?:\/\//.test(url);
    fields.push([label, web ? h("a", { href: url, rel: "noopener" }, url) : h("code", {}, url)]);
  }
  replace(
    main,
    crumbs(route, [spec.name, tagLink(route, "package", spec.name)], [`/${spec.shortHash}`, null]),
    heading(`${spec.name}@${spec.version}`, " ", h("span", { class: "hash" }, `/${spec.shortHash}`)),
    copyLine(spec.format, "spec"),
    copyLine(`spack install /${spec.hash}`, "install command"),
    h("dl", { class: "fields" }, fields.map(([name, value]) => [h("dt", {}, name), h("dd", {}, value)])),
    dependencies(spec, tag),
    dependents(spec, tag),
  );
  return null;
}

const FROM_PAGES = "Not recorded: this tag was read from cache pages, which list no dependencies.";

function dependencies(spec, tag) {
  const deps = spec.dependencies;
  let body;
  if (deps === null) body = h("p", { class: "muted" }, FROM_PAGES);
  else if (!deps.length) body = h("p", { class: "muted" }, "None.");
  else {
    const rows = deps.map((dep) => [
      dep.spec
        ? h("a", { href: link("spec", dep.hash, { tag }) }, dep.version ? `${dep.name}@${dep.version}` : dep.name)
        : dep.version
          ? `${dep.name}@${dep.version}`
          : dep.name,
      dep.spec ? h("code", { class: "hash" }, `/${dep.hash.slice(0, 7)}`) : h("span", { class: "muted" }, `/${dep.hash.slice(0, 7)} (no binary in this tag)`),
      dep.deptypes.join(", "),
      dep.virtuals.join(", ") || "\u2014",
    ]);
    body = table("Dependencies", ["Dependency", "Hash", "Types", "Provides"], rows);
  }
  return h(
    "section",
    { "aria-labelledby": "deps-title", class: "deps" },
    h("h2", { id: "deps-title" }, "Dependencies", deps?.length ? h("span", { class: "count" }, ` ${count(deps.length)}`) : null),
    body,
  );
}

function dependents(spec, tag) {
  const { totalCount, nodes } = spec.dependents;
  let body;
  if (spec.dependencies === null) body = h("p", { class: "muted" }, FROM_PAGES);
  else if (!totalCount) body = h("p", { class: "muted" }, "No binary of this tag depends on it directly.");
  else {
    body = [
      h(
        "ul",
        { class: "links" },
        nodes.map((node) =>
          h("li", {}, h("a", { href: link("spec", node.hash, { tag }) }, `${node.name}@${node.version}`), " ", h("code", { class: "hash" }, `/${node.shortHash}`)),
        ),
      ),
      totalCount > nodes.length ? h("p", { class: "muted" }, `and ${count(totalCount - nodes.length)} more`) : null,
    ];
  }
  return h(
    "section",
    { "aria-labelledby": "dependents-title", class: "deps" },
    h("h2", { id: "dependents-title" }, "Dependents", totalCount ? h("span", { class: "count" }, ` ${count(totalCount)}`) : null),
    body,
  );
}

async function candidates(ctx, prefix, total) {
  const { route, main, signal } = ctx;
  const tag = tagOf(route);
  const answer = await data(CANDIDATES, { prefix, tag, after: route.params.get("after") }, { signal });
  const specs = answer.specs;
  const rows = specs.nodes.map((spec) => [
    h("a", { class: "hash", href: link("spec", spec.hash, { tag }) }, spec.shortHash),
    `${spec.name}@${spec.version}`,
    spec.compiler.raw,
    arch(spec),
  ]);
  replace(
    main,
    crumbs(route, [`/${prefix}`, null]),
    heading(`/${prefix}`),
    notice(`${plural(specs.totalCount ?? total, "spec")} have a hash starting with \u201c${prefix}\u201d: pick one, or type more characters.`),
    table("Candidates", ["Hash", "Spec", "Compiler", "Arch"], rows),
    pager(route, specs.pageInfo),
  );
  return null;
}
