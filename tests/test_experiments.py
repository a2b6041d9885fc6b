"""pe_lib.experiments: training leaves the caller's torch settings as they were, whatever they were."""

import pytest
import torch

from pe_lib import experiments

TINY = experiments.Config(steps=3, batch_size=4, d_model=16, num_heads=2, num_layers=1, dim_feedforward=16)


@pytest.mark.parametrize("context", [torch.no_grad, torch.inference_mode])
def test_train_works_inside_no_grad_and_inference_mode(context):
    with context():
        trained = experiments.train("sinusoidal", TINY)
    reference = experiments.train("sinusoidal", TINY)
    assert trained.losses.tolist() == reference.losses.tolist()  # the same training, gradients and all
    assert torch.is_grad_enabled()


@pytest.mark.parametrize("deterministic, warn_only", [(False, False), (True, True), (True, False)])
def test_train_restores_the_deterministic_mode_and_its_warn_only_flag(deterministic, warn_only):
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    threads = torch.get_num_threads()
    try:
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        experiments.train("learned", TINY)
        assert torch.are_deterministic_algorithms_enabled() == deterministic
        assert torch.is_deterministic_algorithms_warn_only_enabled() == warn_only
        assert torch.get_num_threads() == threads
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def test_train_leaves_the_callers_random_numbers_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    experiments.train("none", TINY)
    assert torch.equal(torch.rand(3), expected)


def test_shift_targets_point_back_by_the_shift_and_ignore_the_first_positions():
    tokens = torch.arange(10).reshape(2, 5)
    targets = experiments.task_targets(tokens, shift=4)
    assert targets[:, :4].eq(experiments.IGNORE).all()
    assert targets[:, 4].tolist() == [0, 5]
