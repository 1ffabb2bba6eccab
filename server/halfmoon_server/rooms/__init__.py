"""The room shell and the lobby: rooms held on this instance, their timers, log and members; the daily."""
