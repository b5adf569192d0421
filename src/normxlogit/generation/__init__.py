"""Explaining what a decoder generates, step by step (see :func:`normxlogit.explain` with
``generate=True`` or ``continuation=...``)."""

from ..evaluation.generations import GENERATION_METRICS, evaluate_generations, evaluated_steps
from ..explaining.contrast_sequences import contrast_prob_diff
from ..explaining.generation import explain_generation, explain_generations
from ..explaining.steps import Generation, build_generation, build_generations
from ..explanations.generation import STEP_AGGREGATIONS, GenerationExplanation

__all__ = [
    "GENERATION_METRICS",
    "STEP_AGGREGATIONS",
    "Generation",
    "GenerationExplanation",
    "build_generation",
    "build_generations",
    "contrast_prob_diff",
    "evaluate_generations",
    "evaluated_steps",
    "explain_generation",
    "explain_generations",
]
