"""A trace's profile in a few kilobytes: what two profiles are compared by (``warpwizard diff``), and what a job's
ranks are judged from without reading a trace again."""
