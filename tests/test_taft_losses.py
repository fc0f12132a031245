"""privtrans.taft.losses: the rescaled square loss equals the authors' code's mse_loss and the paper's
formula."""

import pytest
import torch
import torch.nn.functional as F

from privtrans.taft import losses


def test_rsl_equals_the_authors_mse_loss_and_the_papers_formula():
    torch.manual_seed(0)
    out, y = torch.randn(7, 5, dtype=torch.float64), torch.randint(0, 5, (7,))
    code = F.mse_loss(out, 15 * F.one_hot(y, 5).to(out.dtype))  # utils.mse_loss_label
    assert torch.allclose(losses.rsl(out, y, 15.0), code)
    alpha = 3.0  # the paper's eq. 2 written out for one general alpha
    want = torch.stack([(alpha * (o[t] - 15) ** 2 + sum(o[i] ** 2 for i in range(5) if i != t)) / 5
                        for o, t in zip(out, y)]).mean()
    assert torch.allclose(losses.rsl(out, y, 15.0, alpha), want)
    assert torch.allclose(losses.per_sample_rsl(out, y, 15.0, alpha).mean(), want)
    assert torch.allclose(losses.loss_fn(out, y, "mse", 5), F.mse_loss(out, F.one_hot(y, 5).to(out.dtype)))
    p = [torch.tensor([3.0, 4.0])]
    assert float(losses.l2_norm_penalty(p, eps=0.0)) == pytest.approx(5.0)  # the norm, not its square
    with pytest.raises(ValueError, match="loss must be one of"):
        losses.loss_fn(out, y, "hinge", 5)
