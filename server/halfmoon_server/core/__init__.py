"""The core: the race and everything decided without I/O — commands in, events out."""
