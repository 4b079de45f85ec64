"""afkit campaign."""
