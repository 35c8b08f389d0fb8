#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, etcd and kubectl for one Kubernetes release into a
# cache folder outside the repository, once:
#
#   hack/kube/build.sh [VERSION]     # VERSION like v1.34.12 or 1.34.12; default v1.36.5
#   -> ${XDG_CACHE_HOME:-$HOME/.cache}/dgd-operator/kube-<VERSION>/
#
# The default version builds from the committed hack/kube/go.mod and go.sum. Any other version builds
# from a module generated once by hack/kube/gen-gomod.sh into kube-<VERSION>/module/ (go.mod, go.sum
# and a copy of hack/kube/cmd/), never committed; it is regenerated when hack/kube/cmd/ changes.
#
# Guarantees:
# - A later run builds nothing when all four binaries exist and the stamp matches the hash of go.mod,
#   go.sum and the mains; it then prints the folder and exits 0.
# - A binary appears under its final name only when complete (built to a temporary name, then renamed),
#   and the stamp is written last, so an interrupted build is redone on the next run.
# - Exits non-zero with a sentence on stderr when go is missing, when VERSION is not v1.<minor>.<patch>,
#   when the committed go.mod does not pin the default version, when the Go proxy does not serve
#   VERSION, or when less than 6 GB is free for a build.
# - Concurrent runs serialise on a lock file (when flock(1) is available).
set -euo pipefail

DEFAULT_KUBE_VERSION="v1.36.5" # must match hack/kube/go.mod; bump with: hack/kube/gen-gomod.sh <version>
MIN_FREE_GB=6
BINARIES=(kube-apiserver kube-controller-manager etcd kubectl)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KUBE_VERSION="${1:-$DEFAULT_KUBE_VERSION}"
KUBE_VERSION="v${KUBE_VERSION#v}"
out="${XDG_CACHE_HOME:-$HOME/.cache}/dgd-operator/kube-${KUBE_VERSION}"
stamp="$out/.stamp"

die() {
	echo "hack/kube/build.sh: $*" >&2
	exit 1
}

[[ "$KUBE_VERSION" =~ ^v1\.[0-9]+\.[0-9]+$ ]] ||
	die "version '${1:-}' is not a Kubernetes release; expected v1.<minor>.<patch> (e.g. v1.34.12), default ${DEFAULT_KUBE_VERSION}."
command -v go >/dev/null 2>&1 ||
	die "'go' is not on PATH; install Go (see hack/kube/go.mod for the version) to build the Kubernetes control plane."
pins() { grep -q "^[[:space:]]*k8s.io/kubernetes ${KUBE_VERSION}\$" "$1/go.mod" 2>/dev/null; }
if [[ "$KUBE_VERSION" == "$DEFAULT_KUBE_VERSION" ]]; then
	module="$here"
	pins "$module" ||
		die "hack/kube/go.mod does not pin k8s.io/kubernetes ${KUBE_VERSION}; run hack/kube/gen-gomod.sh ${KUBE_VERSION}."
else
	module="$out/module"
fi

export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0


up_to_date() {
	local b
	for b in "${BINARIES[@]}"; do
		[[ -x "$out/$b" ]] || return 1
	done
	[[ -f "$stamp" && "$(cat "$stamp")" == "$inputs_hash" ]]
}

mkdir -p "$out"
if command -v flock >/dev/null 2>&1; then
	exec 9>"$out/.lock"
	flock 9
fi

# Another version: its module is generated (network) on first use, and again when the mains changed.
if [[ "$module" != "$here" ]] && ! { pins "$module" && diff -rq "$here/cmd" "$module/cmd" >/dev/null 2>&1; }; then
	echo "kube ${KUBE_VERSION}: generating its Go module in $module"
	"$here/gen-gomod.sh" "$KUBE_VERSION" "$module" >&2 ||
		die "could not generate a Go module for k8s.io/kubernetes ${KUBE_VERSION} (is it a release the Go proxy serves? try: go mod download -json k8s.io/kubernetes@${KUBE_VERSION})."
fi
inputs_hash="$(cd "$module" && cat go.mod go.sum cmd/*/main.go | sha256sum | cut -d' ' -f1)"

if up_to_date; then
	echo "kube ${KUBE_VERSION}: up to date in $out"
	exit 0
fi

# Free space where the Go build cache and the binaries go (the first existing ancestor of each).
for dir in "$(go env GOCACHE)" "$(go env GOMODCACHE)" "$out"; do
	while [[ ! -d "$dir" ]]; do dir="$(dirname "$dir")"; done
	free_kb="$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')"
	if ((free_kb < MIN_FREE_GB * 1024 * 1024)); then
		die "only $((free_kb / 1024 / 1024)) GB free under $dir; building Kubernetes needs at least ${MIN_FREE_GB} GB (the Go build cache alone takes ~4 GB). Free some space and retry."
	fi
done

minor="${KUBE_VERSION#v1.}"
minor="${minor%%.*}"
build_date="$(cd "$module" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
	ldflags+=" -X ${pkg}.buildDate=${build_date}"
done

echo "kube ${KUBE_VERSION}: building into $out (a cold build takes ~15-20 min on 2 cores and ~4 GB of Go build cache)"
rm -f "$stamp"
total_start=$SECONDS
for b in "${BINARIES[@]}"; do
	start=$SECONDS
	tmp="$out/.$b.tmp.$$"
	trap 'rm -f "$tmp"' EXIT
	(cd "$module" && go build -trimpath -ldflags "$ldflags" -o "$tmp" "./cmd/$b")
	mv -f "$tmp" "$out/$b"
	echo "kube ${KUBE_VERSION}: built $b in $((SECONDS - start))s"
done
trap - EXIT
echo "$inputs_hash" >"$stamp.tmp.$$"
mv -f "$stamp.tmp.$$" "$stamp"
echo "kube ${KUBE_VERSION}: done in $((SECONDS - total_start))s; binaries in $out"
