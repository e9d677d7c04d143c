"""The simulated API server's HTTP face: routing, verbs, discovery, tables, OpenAPI and watch.

``simulators.kubernetes.server.Server`` puts these behind ``http.server``; nothing here opens a
socket, so each piece is testable on its own.
"""
