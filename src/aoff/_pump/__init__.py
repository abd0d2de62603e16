"""The pump: the one task that turns recorded events into output (fold, backends,
display, viewers), what it is built from (``Options``), and how it runs in a thread."""
