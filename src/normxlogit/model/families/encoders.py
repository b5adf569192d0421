"""Encoder families: the head reads the first token ([CLS] or <s>)."""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from .heads import chain, first_token, token_wise
from .registry import Family, HeadFn, Reading, padding_idx_offset, register_family
from .relevance import RelevanceLayout


def _distilbert_classifier(model: PreTrainedModel) -> HeadFn | None:
    if not hasattr(model, "pre_classifier"):
        return None
    return lambda states: model.classifier(torch.relu(model.pre_classifier(states)))


def _albert_classifier(model: PreTrainedModel) -> HeadFn | None:
    albert = getattr(model, "albert", None)
    if albert is None or albert.pooler is None or not hasattr(model, "classifier"):
        return None
    return lambda states: model.classifier(albert.pooler_activation(albert.pooler(states)))


BERT = register_family(
    Family(
        name="bert",
        model_types=("bert",),
        reading=Reading.FIRST,
        classification_head=chain(first_token("bert.pooler"), token_wise("classifier")),
        lm_head=token_wise("cls"),
        value_projection="attention.self.value",
        bert_layout=True,
        head_mlp=("bert.pooler.dense", "tanh", "classifier"),
        relevance=RelevanceLayout(
            query="attention.self.query",
            key="attention.self.key",
            value="attention.self.value",
        ),
    )
)

ROBERTA = register_family(
    Family(
        name="roberta",
        model_types=("roberta", "xlm-roberta", "camembert", "xlm-roberta-xl"),
        reading=Reading.FIRST,
        classification_head=first_token("classifier"),
        lm_head=token_wise("lm_head"),
        position_offset=padding_idx_offset,
        value_projection="attention.self.value",
        bert_layout=True,
        head_mlp=("classifier.dense", "tanh", "classifier.out_proj"),
    )
)

DEBERTA_V2 = register_family(
    Family(
        name="deberta-v2",
        model_types=("deberta-v2", "deberta"),
        reading=Reading.FIRST,
        classification_head=chain(first_token("pooler"), token_wise("classifier")),
        lm_head=token_wise("cls"),
        value_projection="attention.self.value_proj",
    )
)

ELECTRA = register_family(
    Family(
        name="electra",
        model_types=("electra",),
        reading=Reading.FIRST,
        classification_head=first_token("classifier"),
        lm_head=chain(token_wise("generator_predictions"), token_wise("generator_lm_head")),
        value_projection="attention.self.value",
        bert_layout=True,
        head_mlp=("classifier.dense", "classifier.activation", "classifier.out_proj"),
    )
)

DISTILBERT = register_family(
    Family(
        name="distilbert",
        model_types=("distilbert",),
        reading=Reading.FIRST,
        classification_head=_distilbert_classifier,
        lm_head=chain(
            token_wise("vocab_transform"),
            token_wise("activation"),
            token_wise("vocab_layer_norm"),
            token_wise("vocab_projector"),
        ),
        value_projection="attention.v_lin",
    )
)

ALBERT = register_family(
    Family(
        name="albert",
        model_types=("albert",),
        reading=Reading.FIRST,
        classification_head=_albert_classifier,
        lm_head=token_wise("predictions"),
    )
)

MPNET = register_family(
    Family(
        name="mpnet",
        model_types=("mpnet",),
        reading=Reading.FIRST,
        classification_head=first_token("classifier"),
        lm_head=token_wise("lm_head"),
        position_offset=padding_idx_offset,
        value_projection="attention.attn.v",
    )
)
