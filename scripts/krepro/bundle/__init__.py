"""krepro bundle: one row as a directory and tarball that reproduce it."""
