"""The session store: every scored, de-identified session with its score records and reviews."""
