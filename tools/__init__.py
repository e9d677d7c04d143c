"""Tools of the repository that are not part of the product (not in the wheel): see
:mod:`tools.fidelity`."""
