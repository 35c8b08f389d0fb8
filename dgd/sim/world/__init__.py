"""World models: the controllers a cluster runs besides the operator, simulated as actors.

``pods`` (scheduler and kubelets), ``grove`` (PodCliqueSet -> PodCliques, scaling groups, pods),
``dcd`` (DCD -> pods), ``checkpoint`` (DynamoCheckpoint phases), ``deployment`` and ``replicaset``
(kube-controller-manager's Deployment -> ReplicaSets -> pods; off unless asked for), all on the
level-triggered base of ``controller``; ``bootstrap`` creates what a cluster starts with;
``settings`` holds the knobs.
"""
