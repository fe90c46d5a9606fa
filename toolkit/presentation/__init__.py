"""How the toolkit shows what the metrics compute: how a value reads, tables for terminal, HTML and notebook, the
files written for people and other tools, the figures, the report and both dashboards.

Nothing below this package imports it: the metrics compute values, this package shows them. Its modules are
imported one by one (``from toolkit.presentation import report``), so importing one loads no plotting or widget
code it does not need.
"""
