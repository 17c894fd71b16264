"""dpaudit.scores (under construction)."""
