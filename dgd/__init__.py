"""dgd-operator: a Kubernetes operator for NVIDIA Dynamo's DynamoGraphDeployment."""

__version__ = "0.1.0"
