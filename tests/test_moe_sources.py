"""The output layer on the last pipeline stage (issue 18, helper moe), pinned by hand.

Megatron-Core builds the L layers evenly over the pp stages and the output layer (logits, D x V)
on the last one only (bib key megatroncore2025pipelinesplit), so the pipeline runs at the pace of
the last stage when its layers plus the head outweigh a full stage.
"""
import pytest

import scalebook
from scalebook import step


def test_gpt_oss_on_four_stages_waits_for_the_head_on_the_last():
    # 36 layers over 4 stages: 9 each; the head (2 D V = 2 x 2,880 x 201,088 = 1.158 GFLOP per
    # token) outweighs 4 layers of about 0.286 GFLOP each: 9 + 4 = 13 layer-units on the last.
    assert step.slowest_stage_seconds(layer_seconds=1.0, head_seconds=4.0, layers=36, pp=4) == 13.0


def test_one_stage_runs_every_layer_and_the_head():
    assert step.slowest_stage_seconds(layer_seconds=1.0, head_seconds=4.0, layers=36, pp=1) == 40.0


def test_a_light_head_on_a_short_last_stage_changes_nothing():
    # Llama 3 405B: 126 layers on 16 stages, 8 on the fullest, the two short stages at the ends
    # (7 layers on the last); a head of 0.66 layer leaves the full stage the slowest: 8.
    assert step.slowest_stage_seconds(layer_seconds=1.0, head_seconds=0.66, layers=126, pp=16) == 8.0


def test_a_negative_time_or_a_zero_stage_count_is_refused():
    with pytest.raises(scalebook.Error, match="head_seconds"):
        step.slowest_stage_seconds(layer_seconds=1.0, head_seconds=-1.0, layers=36, pp=4)
    with pytest.raises(scalebook.Error, match="pp"):
        step.slowest_stage_seconds(layer_seconds=1.0, head_seconds=1.0, layers=36, pp=0)
