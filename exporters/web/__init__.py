"""The web view on the ops port: server-rendered pages over sessions and regression cases."""
