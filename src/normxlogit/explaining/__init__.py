"""Explaining: texts (``normxlogit.explain``), and what a decoder writes step by step
(steps: the generation and its prefixes; generation: the methods run over them)."""
