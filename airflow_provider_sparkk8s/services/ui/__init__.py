"""The Spark UI: the pod proxy, the History Server's UI and REST API."""
