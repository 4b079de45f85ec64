"""afkit storage."""
