"""A run's results directory read back: run.json, summary.md, results.ktap, junit.xml, the gate and the matrix."""
