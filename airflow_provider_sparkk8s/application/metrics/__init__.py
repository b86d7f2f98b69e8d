"""The provider's metrics: names and tags, what a look reports, one flush interval's batch."""
