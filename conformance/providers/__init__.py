"""Providers: ways to bring up a scheduler for the harnesses to run against.

- :mod:`conformance.providers.containers`: a one-node Slurm 22.05 in a container, for users who
  have a Docker engine (the optional extra ``containers``); the ``slurm-container`` harness.

A provider's third-party dependencies are imported only when it starts something: importing
this package (or a provider module) needs none of them.
"""
