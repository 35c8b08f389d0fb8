#!/usr/bin/env bash
# Makes the real control plane available to `make test`, or says in one line why the tier will skip.
#
# - KUBEBUILDER_ASSETS set: use that folder (envtest's convention); it must hold kube-apiserver and etcd.
# - else Go on PATH: build (or reuse) the pinned binaries with hack/kube/build.sh; a failed build fails.
# - else: one line saying the real-server tier is skipped and how to enable it; under CI=true, exit 1,
#   so CI can never pass without the real tier.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
	for binary in kube-apiserver etcd; do
		[[ -x "$KUBEBUILDER_ASSETS/$binary" ]] || {
			echo "hack/kube/ensure.sh: KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS holds no executable $binary" >&2
			exit 1
		}
	done
	echo "real-server tier: binaries from KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
	exit 0
fi
if command -v go >/dev/null 2>&1; then
	exec "$here/build.sh"
fi
message="real-server tier skipped: no Go on PATH and KUBEBUILDER_ASSETS unset; install Go (1.26) to build kube-apiserver, etcd and kube-controller-manager with make kube, or set KUBEBUILDER_ASSETS to a folder holding them"
if [[ "${CI:-}" == "true" ]]; then
	echo "$message (CI=true: the tier is required)" >&2
	exit 1
fi
echo "$message"
