"""One task instance's run: prepare, start, wait, finish."""
