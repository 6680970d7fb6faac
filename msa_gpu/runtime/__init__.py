"""A run's host side, beside the alignment itself: what it says on stderr
before and while it works (`progress`, the memory plan `memory_plan`, the
first-compile notice `kernel_cache`) and the child processes that end with
it (`children`). Importing this package imports none of them."""
