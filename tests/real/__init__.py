"""The real-server test tier: upstream etcd, kube-apiserver and kube-controller-manager on loopback.

``tests.real.controlplane`` starts them (binaries from ``make kube`` or ``$KUBEBUILDER_ASSETS``) and
depends on nothing from the ``dgd`` package.
"""
