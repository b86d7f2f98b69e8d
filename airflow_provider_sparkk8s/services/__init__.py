"""The I/O below the faces, with no Airflow, in topic folders: `submit` (a submission), `pods` (each
pod operation, sent sync or async), `following` (the follow loop's runners, the trigger's store),
`ui`, `connect`, `task` (one task instance's run) and `cluster_access`.
"""
