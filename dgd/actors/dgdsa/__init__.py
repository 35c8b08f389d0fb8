"""The scaling-adapter controller: one actor per DynamoGraphDeploymentScalingAdapter."""
