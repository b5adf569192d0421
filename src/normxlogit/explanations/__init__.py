"""Explanations as data: ``Explanation`` (one text) and ``GenerationExplanation`` (a
generation, step by step), with their JSON, frames and files. They need no model to load,
show or save; rendering is delegated to ``render``."""
