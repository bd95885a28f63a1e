"""krepro fixcheck: does a fix hold on a tree (the bug there, the fix applied, the row with it)."""
