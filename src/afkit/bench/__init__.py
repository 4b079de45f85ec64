"""afkit bench."""
