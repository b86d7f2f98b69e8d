"""The Spark application as the provider follows it, with no Airflow and no I/O.

What a task submits (`spark_submit_args`, `submission_plan`, `task_identity`), what it
follows (`tracked`), when it gives up (`timeouts`), whether it adopts a driver it already has
(`reattach`), what it reports (`events`, `outcome`) and what a dry run may show
(`redaction`). The Airflow faces (operators, sensors, triggers) are thin shells over this.
"""
