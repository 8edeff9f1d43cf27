"""Reference drivers, their broken variants and driver profiles (Go module beside this file)."""
