"""The model floor: a transformers model made explainable, and what it reads.

``ExplainableModel`` (adapter) with its batches (inputs), tasks and targets, the
attention functions it runs with (routing), its precision, and the architecture
families that say where each model keeps its parts. It builds on ``common`` alone.
"""
