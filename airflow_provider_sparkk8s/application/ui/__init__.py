"""The Spark UI through Airflow: live through the pod proxy, after the driver through the History
Server; the event log."""
