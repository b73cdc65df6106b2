import matplotlib
import pytest

matplotlib.use("Agg")  # in this process only; notebook kernels keep the inline backend


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")
