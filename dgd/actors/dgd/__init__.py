"""The DGD controller: one actor per DynamoGraphDeployment, its workload programs and its children."""
