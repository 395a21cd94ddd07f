"""De-identification: Presidio analysis, keyed pseudonyms, fail-closed quarantine.

Entry point: `turnwatch.collector.deid.stage.build_deidentifying_sink` wraps the next stage. The
package imports nothing eagerly, so `turnwatch.app.settings` can import its `config` alone.
"""
