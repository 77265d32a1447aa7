"""CRMArena's OpenEnv server entry point (see :mod:`server.app`)."""
