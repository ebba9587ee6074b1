#!/usr/bin/env bash
# The Debian packages make test builds (make deb and deb-arm64, from
# debian/). This machine's: lintian finds no error or warning in it, it
# holds what make install installs, its Depends were computed from the
# binary's libraries, its version is the one tbctl --version says, from
# debian/changelog, and dpkg-buildpackage in another directory makes the
# same bytes. Installing it, policing with it and purging it is
# tests/vm/e2e/package.sh's, in Debian's own kernel. arm64's, cross-built:
# lintian-clean too, for arm64, with an arm64 binary and computed Depends.
. "$(dirname "$0")/lib.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# tests/run.sh builds it in another lane: done first.
flock "$B/deb.lock" true
version=$(awk -F '[()]' 'NR == 1 { print $2 }' "$ROOT/debian/changelog")
deb=$B/deb/tbctl_${version}_amd64.deb
check "make deb built $deb" [ -s "$deb" ]
tags=$(lintian --no-tag-display-limit "$B/deb/tbctl_${version}_amd64.changes" 2>&1 | grep -E '^[EW]: ')
check "lintian: no error and no warning${tags:+ ($tags)}" [ -z "$tags" ]
contents=$(dpkg-deb -c "$deb" | awk '{ print $6 }')
for f in ./usr/sbin/tbctl ./usr/share/man/man8/tbctl.8.gz ./usr/share/bash-completion/completions/tbctl \
	./lib/systemd/system/tbctl@.service ./lib/systemd/system/tbctl-exporter.service \
	./lib/systemd/system/tbctl-fleet@.service ./lib/systemd/system/tbctl-events@.service \
	./usr/share/doc/tbctl/example.conf ./usr/share/doc/tbctl/copyright ./usr/share/doc/tbctl/README.md.gz \
	./usr/share/doc/tbctl/NEWS.gz ./usr/share/doc/tbctl/docs/design.md.gz ./usr/share/doc/tbctl/docs/operations.md.gz \
	./usr/share/doc/tbctl/docs/performance.md.gz ./usr/share/doc/tbctl/docs/performance/tcp.png; do
	check "the package holds $f" grep -qx -- "$f" <<<"$contents"
done
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libbpf1 libc6 libhiredis0.14 libjson-c5 libmicrohttpd12 libmnl0 libncursesw6; do
	check "Depends names $lib, computed ($depends)" grep -q "\\b$lib (>=" <<<"$depends"
done
check "the package's version is debian/changelog's: $(dpkg-deb -f "$deb" Version)" \
	[ "$(dpkg-deb -f "$deb" Version)" = "$version" ]
mkdir -p "$tmp/elsewhere/tbctl"
(cd "$ROOT" && git ls-files -co --exclude-standard -z | xargs -0 cp -a --parents -t "$tmp/elsewhere/tbctl")
(cd "$tmp/elsewhere/tbctl" && env -u MAKEFLAGS -u MAKELEVEL dpkg-buildpackage -us -uc -b >../log 2>&1)
check "dpkg-buildpackage in another directory makes the same bytes" \
	[ "$(sha256sum <"$tmp/elsewhere/tbctl_${version}_amd64.deb")" = "$(sha256sum <"$deb")" ]
check "tbctl --version says it too: $("$TBCTL" --version)" bash -c "'$TBCTL' --version | grep -q '^tbctl $version '"

# The arm64 package, cross-built (make deb-arm64): as clean, for arm64,
# its tbctl an arm64 binary whose programs order memory with fences.
deb=$B/deb-arm64/tbctl_${version}_arm64.deb
check "make deb-arm64 built $deb" [ -s "$deb" ]
tags=$(lintian --no-tag-display-limit "$B/deb-arm64/tbctl_${version}_arm64.changes" 2>&1 | grep -E '^[EW]: ')
check "arm64: lintian: no error and no warning${tags:+ ($tags)}" [ -z "$tags" ]
check "arm64: the package's architecture is arm64" [ "$(dpkg-deb -f "$deb" Architecture)" = arm64 ]
dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/sbin/tbctl >"$tmp/tbctl-arm64"
check "arm64: its tbctl is an aarch64 binary: $(file -b "$tmp/tbctl-arm64" | cut -d, -f1-2)" \
	bash -c "file -b '$tmp/tbctl-arm64' | grep -q 'ARM aarch64'"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libbpf1 libc6 libxdp1 libhiredis0.14; do
	check "arm64: Depends names $lib, computed ($depends)" grep -q "\\b$lib (>=" <<<"$depends"
done
summary
