"""The monitoring agent: the data collectors of ganeti-mond and their
reports (design-monitoring-agent, monitoring-query-format)."""
