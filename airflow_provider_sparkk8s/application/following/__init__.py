"""Following an application: the follower and its loop, what crosses a deferral, the timeouts, the
cost, the final event."""
