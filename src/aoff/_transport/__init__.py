"""The transport: framed pickles on a Unix socket (``_wire``) and the shipper that drains
an event buffer onto it (``_shipper``). Shared by the agent link and remote producers."""
