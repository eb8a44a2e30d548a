#!/usr/bin/env bash
# dist.sh DIR OS/ARCH... builds one release archive per platform into DIR,
# drama-$VERSION-OS-ARCH.tar.gz, and DIR/SHA256SUMS over the archives built.
# make dist runs it with VERSION, LDFLAGS (the version stamped into drama)
# and GO set, for linux/amd64, linux/arm64 and darwin/arm64.
#
# Each archive holds one directory, drama-$VERSION-OS-ARCH/, with drama, its
# engine plugins (drama-engine-<name>, each with the .sha256 file drama
# checks before starting it), README.md, LICENSE where the tree has one, and
# docs/. The binaries are built without cgo (static; the same on every
# build host), and the archive is reproducible: names sorted, owner root,
# every time the commit's time.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
	echo "usage: scripts/dist.sh DIR OS/ARCH..." >&2
	exit 2
fi
dist=$1
shift
: "${GO:=go}" "${LDFLAGS:=-s -w}"
: "${VERSION:=$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
case $VERSION in
*/* | '' | .*)
	echo "dist: VERSION=$VERSION cannot name a file: set VERSION=1.2.3" >&2
	exit 2
	;;
esac
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
plugins=()
for d in plugins/*/; do plugins+=("$(basename "$d")"); done

if [ ! -f LICENSE ]; then
	echo "dist: warning: the tree has no LICENSE file; the archives carry none" >&2
fi

mkdir -p "$dist"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
archives=()
for platform in "$@"; do
	goos=${platform%/*} goarch=${platform#*/}
	if [ "$goos" = "$platform" ] || [ -z "$goos" ] || [ -z "$goarch" ]; then
		echo "dist: platform $platform: want OS/ARCH, for example linux/arm64" >&2
		exit 2
	fi
	name=drama-$VERSION-$goos-$goarch
	dir=$work/$name
	mkdir -p "$dir"
	echo "dist: $name"
	export GOOS=$goos GOARCH=$goarch CGO_ENABLED=0
	$GO build -trimpath -ldflags "$LDFLAGS" -o "$dir/drama" ./cmd/drama
	for p in "${plugins[@]}"; do
		$GO build -trimpath -ldflags "$LDFLAGS -X main.version=$VERSION" -o "$dir/drama-engine-$p" "./plugins/$p"
		(cd "$dir" && sha256sum "drama-engine-$p" >"drama-engine-$p.sha256")
	done
	unset GOOS GOARCH CGO_ENABLED
	cp README.md "$dir/"
	[ ! -f LICENSE ] || cp LICENSE "$dir/"
	cp -R docs "$dir/docs"
	chmod -R u+rwX,go+rX,go-w "$dir"
	tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
		--format=gnu -cf - "$name" | gzip -9n >"$dist/$name.tar.gz"
	archives+=("$name.tar.gz")
done
(cd "$dist" && sha256sum "${archives[@]}" >SHA256SUMS)
echo "dist: $dist/SHA256SUMS"
