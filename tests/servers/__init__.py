"""Real servers and stand-ins that tests start on 127.0.0.1 (see each module)."""
