"""A warm local server for many small calls (`msagpu serve`): ``protocol``
(the socket's place and the messages, standard library only, so that a
client costs little more than starting Python), ``server`` (the socket, the
workers, the loop) and ``requests`` (each request's command line turned
into a `Job` by its front door and run by the one runner for the client's
streams, folder, environment and umask, with no process state swapped)."""
