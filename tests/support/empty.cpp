// Catch2 v3 supplies main through Catch2WithMain; this file keeps the object library non-empty.
