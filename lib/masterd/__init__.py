"""Master-side machinery used by the master daemon and its LUs."""
