#!/bin/sh
# Prints the version of the .deb (make package):
#   a commit tagged v1.2.3         1.2.3
#   a later commit                 1.2.3+git<commit time, UTC>.<commit>
#   any commit before a first tag  0.0.0+git<commit time, UTC>.<commit>
# Builds sort by commit time, so a newer build is an upgrade over an older
# one, and each sorts above the release it follows and below the next. The
# "git" also sorts above the old 0.0.0+<commit> versions, whose order was
# the commit hash's (a newer build could look like a downgrade), so they
# upgrade too.
set -eu
when=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S 2>/dev/null || true)
commit=$(git rev-parse --short=7 HEAD 2>/dev/null || true)
if [ -z "$when" ] || [ -z "$commit" ]; then
  echo "0.0.0+dev" # not a git checkout
  exit 0
fi
tag=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null || true)
if [ -n "$tag" ]; then
  echo "${tag#v}"
  exit 0
fi
last=$(git describe --tags --abbrev=0 --match 'v[0-9]*' 2>/dev/null || echo v0.0.0)
echo "${last#v}+git$when.$commit"
