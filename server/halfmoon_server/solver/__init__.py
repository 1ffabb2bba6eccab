"""The solver: chooses the daily deals (the operators' ``halfmoon solve`` too); never tells a player anything."""
