"""The scenarios: ordered steps that replay the tutorials on the real clusters (`runner` runs
and stores them, `registry` names them, one module each for their steps)."""
