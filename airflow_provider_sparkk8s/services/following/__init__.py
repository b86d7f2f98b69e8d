"""Following: the follow loop's runners, the trigger's shared store, the driver log."""
