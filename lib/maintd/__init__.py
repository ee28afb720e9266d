"""ganeti-maintd's logic: incidents from the nodes' self-diagnose reports
and the rounds of Ganeti jobs that repair them (design-maintd).

``state`` keeps the incidents (and writes them to disk), ``engine``
observes the nodes and runs the rounds, ``autorepair`` has harep's rules
(shared with the harep command); ganeti.server.maintd is the daemon
around them.
"""
