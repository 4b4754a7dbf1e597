#!/usr/bin/env bash
# Re-creates the GraphiQL assets beside this script from the npm registry: each pinned
# package is fetched with `npm pack`, its tarball checked against the pinned integrity
# (the registry's dist.integrity), and the listed files copied as they are into
# <package>-<version>/. No build step: these are the packages' own published files.
#
# To move to other versions: change the version below and the integrity in its row of
# PACKAGES (`npm view NAME@VERSION dist.integrity`), the same version in
# server/playground.py, run this script, remove the old version's folder, reinstall
# (`make -C ../../.. .venv/.installed-dev`) and run tests/test_playground.py.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The versions, also in server/playground.py (the page's URLs).
REACT=18.3.1
GRAPHIQL=3.9.0
EXPLORER=3.2.6

# name version integrity folder files (a file as SOURCE or SOURCE:TARGET; paths in the tarball)
PACKAGES=(
  "react $REACT sha512-wS+hAgJShR0KhEvPJArfuPVN1+Hz1t0Y6n5jLrGQbkb4urgPE/0Rve+1kMB1v/oWgHgm4WIcV+i7F2pTVj+2iQ== react-$REACT umd/react.production.min.js:react.production.min.js LICENSE"
  "react-dom $REACT sha512-5m4nQKp+rZRb09LNH59GM4BxTh9251/ylbKIbpe7TpGxfJ+9kv6BLkLBXIjjspbgbnIBNqlI23tRnTWT0snUIw== react-dom-$REACT umd/react-dom.production.min.js:react-dom.production.min.js LICENSE"
  "graphiql $GRAPHIQL sha512-rJYFlHdBbug9+YbFSwRVvgfPjCayC7wHecZkx/qB4XLuQPFQZw/yB9pmHFtOJV6RiNBBHro3u1GdocKa3YcGRA== graphiql-$GRAPHIQL graphiql.min.js graphiql.min.css LICENSE"
  "@graphiql/plugin-explorer $EXPLORER sha512-MXzG/zVNzZfes4Em253bHyAbD/lwwAZkPKvxCAQkjz0i3dtcv4uF3D8iqJ7214iu3SCphbORYZZUC93fik1yew== plugin-explorer-$EXPLORER dist/index.umd.js:index.umd.js dist/style.css:style.css"
  # Bundled inside plugin-explorer's index.umd.js: only its licence is copied.
  "graphiql-explorer 0.9.0 sha512-fZC/wsuatqiQDO2otchxriFO0LaWIo/ovF/CQJ1yOudmY0P7pzDiP+l9CEHUiWbizk3e99x6DQG4XG1VxA+d6A== plugin-explorer-$EXPLORER LICENSE:LICENSE.graphiql-explorer"
)

for row in "${PACKAGES[@]}"; do
  read -r name version integrity folder files <<<"$row"
  mkdir -p "$work/pack" "$work/$folder.$name"
  tarball="$(cd "$work/pack" && npm pack --silent --loglevel=error "$name@$version" | tail -n 1)"
  actual="sha512-$(openssl dgst -sha512 -binary "$work/pack/$tarball" | base64 -w0)"
  if [[ "$actual" != "$integrity" ]]; then
    echo "update.sh: $name@$version: integrity $actual, expected $integrity" >&2
    exit 1
  fi
  tar -xzf "$work/pack/$tarball" -C "$work/$folder.$name"
  mkdir -p "$here/$folder"
  for file in $files; do
    source="${file%%:*}"
    target="${file#*:}"
    cp "$work/$folder.$name/package/$source" "$here/$folder/$target"
    echo "$name@$version $source -> $folder/$target"
  done
done

# @graphiql/plugin-explorer's tarball has no LICENSE file (its package.json says MIT); it
# comes from the graphql/graphiql repository, as graphiql does: say so, with graphiql's text.
{
  echo "@graphiql/plugin-explorer $EXPLORER is published under the MIT license (\"license\": \"MIT\""
  echo "in its package.json); its npm tarball carries no LICENSE file. It is developed in the"
  echo "graphql/graphiql repository, as the graphiql package is, whose LICENSE file reads:"
  echo
  cat "$here/graphiql-$GRAPHIQL/LICENSE"
} >"$here/plugin-explorer-$EXPLORER/LICENSE"
echo "wrote plugin-explorer-$EXPLORER/LICENSE"
