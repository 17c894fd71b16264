"""dpaudit.accounting (under construction)."""
