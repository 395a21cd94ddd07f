"""The application: the settings that compose every stage's block, the role builders, `serve`,
the CLI and the demo.

`roles.py` composes what `turnwatch serve --role` runs from `collector_role.py` (receivers,
pipeline, handoff, de-identification in front of the bus) and the bus consumers (scorer,
exporter); `serve.py` runs a composition until asked to stop, then drains it.
"""
