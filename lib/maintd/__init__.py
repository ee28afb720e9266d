"""ganeti-maintd's logic: incidents from the nodes' self-diagnose reports
and the rounds of Ganeti jobs that repair them (design-maintd).

``state`` keeps the incidents (and writes them to disk), ``engine``
observes the nodes and runs the rounds; ganeti.server.maintd is the
daemon around them.
"""
