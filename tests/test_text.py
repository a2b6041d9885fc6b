"""pe_lib.text: measured numbers print the same on every machine."""

import pytest

from pe_lib.text import measured


@pytest.mark.parametrize("noise_value", [0.0, 3.3e-16, -2.4e-07, 9.99e-7])
def test_rounding_noise_prints_as_a_bound(noise_value):
    assert measured(noise_value) == "< 1e-06"


def test_a_real_size_prints_with_its_digits():
    assert measured(0.5039) == "0.5"
    assert measured(0.5039, digits=3) == "0.504"
    assert measured(2.0e-6) == "2e-06"
    assert measured(3.3e-16, noise=1e-12) == "< 1e-12"
    assert measured(float("nan")) == "nan"
