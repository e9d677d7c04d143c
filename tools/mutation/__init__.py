"""Mutation testing of the adapters by the conformance suite (issue 12): ``make mutation``.

- :mod:`tools.mutation.cli`: runs mutmut (``[tool.mutmut]`` of pyproject.toml) incrementally and
  prints the figures;
- :mod:`tools.mutation.report`: mutmut's results as figures per module and per goal area, less
  the equivalent mutants of ``equivalent.toml``;
- :mod:`tools.mutation.plugin`: the pytest plugin that lets mutmut name conformance items.
"""
