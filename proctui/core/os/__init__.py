"""The one door to the OS about processes that exist: pidfds, signals, /proc, the tree
walk, lineage, resource use."""
