"""zklock: lock recipes on zkwire."""
