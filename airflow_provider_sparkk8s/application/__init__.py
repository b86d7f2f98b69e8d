"""The Spark application as the provider follows it, with no Airflow and no I/O, in topic folders:
`following` (the follower and its loop), `task` (one task instance: identity, adoption, ownership,
kill, resume, its submission's conf), `policy`, `ui` (the Spark UI and the History Server),
`connect` (Spark Connect servers) and `metrics`. The Airflow faces (operators, sensors, triggers)
are thin shells over this.
"""
