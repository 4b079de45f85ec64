"""afkit image."""
