"""A warm local server for many small calls (`msagpu serve`): ``protocol``
(the socket's place and the messages, standard library only, so that a
client costs little more than starting Python) and ``server`` (the loop that
runs each request through the same front door an in-process run takes)."""
