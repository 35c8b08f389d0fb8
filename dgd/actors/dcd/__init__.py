"""The DynamoComponentDeployment controller: one actor per DCD turns it into its workload and Services."""
