"""Training: RL environments, rollouts, failure-targeted plans and executors."""
