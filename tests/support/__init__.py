"""Helpers the tests share: snapshot builders, real components and libraries, simulator runs."""
