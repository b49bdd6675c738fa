"""A job of many ranks judged from small per-rank summaries (issue 51): each rank's trace read once, wherever it
lives, into a ``RankSummary`` (``summary.py``), by one per-rank step (``step.py``) run in this process, in local
worker processes or on a Dask cluster (``engines.py``); the job's checks then run over the summaries alone
(``reduce.py``). Nothing here is imported by ``--help`` or by an inspection that does not ask for it."""
