"""Reaching the cluster: spark-submit's client settings, the permissions the requests need."""
