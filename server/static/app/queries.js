// Every GraphQL document the app sends, in one place. Each is sent by its sha256 (api.js),
// so the texts are fixed: what changes goes in variables. Page sizes stay modest, since
// queries are priced by what they can return.

export const PAGE = 25;

export const TAGS = `query Tags {
  tags { name numSpecs numPackages isDefault }
}`;

// One request per pause in typing: the ranked packages (with how many of their specs the
// chips keep) and facets over every matching spec. The count per package is by filter only:
// by search too, it would run the search once more per package (25 times as slow at 1M specs).
export const SEARCH = `query Search($tag: String, $search: String, $filter: SpecFilter, $packageFilter: PackageFilter, $after: String) {
  packages(tag: $tag, search: $search, filter: $packageFilter, first: ${PAGE}, after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes {
      name
      numSpecs
      versions
      specs(filter: $filter, first: 0) { totalCount }
    }
  }
  specs(tag: $tag, search: $search, filter: $filter, first: 0) {
    totalCount
    facets {
      compilers(first: 8) { value count }
      oss(first: 8) { value count }
      targets(first: 8) { value count }
      stacks(first: 8) { value count }
      versions(first: 8) { value count }
    }
  }
}`;

// The summary does not change while the spec field is edited: its answer stays cached.
export const PACKAGE = `query Package($name: String!, $tag: String) {
  package(name: $name, tag: $tag) {
    name tag numSpecs versions compilers
    numSpecsByStack { stack count }
  }
}`;

export const PACKAGE_SPECS = `query PackageSpecs($name: String!, $tag: String, $query: String, $filter: SpecFilter, $after: String) {
  package(name: $name, tag: $tag) {
    specs(query: $query, filter: $filter, first: ${PAGE}, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      nodes {
        hash shortHash version compiler { raw } platform os target
        variants { raw } stacks sizeBytes
      }
    }
  }
}`;

export const SPEC = `query Spec($hash: String!, $tag: String) {
  spec(hash: $hash, tag: $tag) {
    hash shortHash name tag version namespace format
    compiler { raw }
    platform os target
    variants { raw }
    stacks sizeBytes tarball specFileUrl tarballUrl
    dependencies { name hash version deptypes virtuals spec { hash } }
    dependents(first: 50) { totalCount nodes { hash shortHash name version } }
  }
}`;

export const CANDIDATES = `query Candidates($prefix: String!, $tag: String, $after: String) {
  specs(tag: $tag, filter: { hashPrefix: $prefix }, first: ${PAGE}, after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes { hash shortHash name version compiler { raw } platform os target }
  }
}`;

export const STACKS = `query Stacks($tag: String) {
  stacks(tag: $tag) { name numSpecs numPackages }
}`;

export const STACK = `query Stack($name: String!, $tag: String) {
  stack(name: $name, tag: $tag) {
    name tag numSpecs numPackages
    compilers { value count }
    oss { value count }
    platforms { value count }
    targets { value count }
    packages(first: 60) { totalCount nodes { name } }
  }
}`;

// Query.tagDiff: per-package counts of the specs added, removed and kept between two tags.
export const CHANGES = `query Changes($from: String!, $to: String!, $filter: SpecFilter, $after: String) {
  tagDiff(from: $from, to: $to, filter: $filter, first: 50, after: $after) {
    from to totalCount added removed unchanged
    pageInfo { hasNextPage endCursor }
    nodes { name added removed unchanged }
  }
}`;

export const CHANGED_SPECS = `query ChangedSpecs($from: String!, $to: String!, $filter: SpecFilter) {
  tagDiff(from: $from, to: $to, filter: $filter, first: 1) {
    nodes {
      name
      addedSpecs(first: 20) { totalCount nodes { hash shortHash tag format } }
      removedSpecs(first: 20) { totalCount nodes { hash shortHash tag format } }
    }
  }
}`;

// Sent by POST (api.js post): the lockfile does not fit a URL.
export const CHECK_ENVIRONMENT = `query CheckEnvironment($lockfile: String!, $tag: String) {
  checkEnvironment(lockfile: $lockfile, tag: $tag, nearest: 1) {
    tag lockfileVersion total cached externals problems
    roots { spec hash total cached }
    specs {
      hash name format cached external
      nearest { spec { hash format } differences usable }
    }
  }
}`;

// The "Runs on" selector's choices: archspec's microarchitectures (SpecFilter.runsOn).
export const MICROARCHITECTURES = `query Microarchitectures {
  microarchitectures { name family vendor }
}`;
