r"""
# The maths of the theory notebooks

Four topics, each computed (not only stated) so a notebook can check every claim with an
`assert`, one module each and every name importable from here:

1. **Lipschitz constants** of the summed loss (PAL Sec. 4, Remark after Prop. 4.5)
   $$L_W(z) = \sum_{i=1}^{k} L(W z, i), \qquad \|z\|_2 = B,$$
   where $W$ is `[num_classes, dim]` with the prototypes $w_i$ as *rows* (the same layout as
   the heads' `prototypes`; the paper writes $W^\top z$ with prototypes as columns). For CE
   and anchored simplex prototypes (FNPAL), the constant is
   $$\lambda_{\text{PAL}} = \frac{k\,(1 - e^{-kB/(k-1)})}{1 + (k-1)\, e^{-kB/(k-1)}},$$
   attained at $z = B w_i$. Learnable prototypes do worse: unnormalised $w$ is not Lipschitz
   at all, normalised $w$ with free $z$ gives $\geq k$, normalised $w$ and $\|z\| = B$ gives
   $\geq 2(e^{2B} - 1) / (e^{2B}/(k-1) + 1)$. `numeric_lipschitz` and
   `numeric_lipschitz_unanchored` estimate the suprema by gradient ascent.
   :mod:`palviz.theory.lipschitz`.
2. **The layer-peeled model** and minority collapse (Fang, He, Long, Su, PNAS 2021):
   `solve_layer_peeled`, `minority_collapse_sweep`. :mod:`palviz.theory.layer_peeled`.
3. **What a ReLU feature can reach**: `reachable_cosine` (the best cosine a feature $z \geq 0$
   can have with each prototype) and `orientation_report` (that, and how many units carry
   each prototype's positive part). :mod:`palviz.theory.reachable`.
4. **Margins of LDAM and ELM** (ELM paper Eq. 1-7): `ldam_margins`, `elm_effective_margins`,
   `ce_softplus_forms`, `margin_softplus_form` (Eq. 5-6 as a hinge) and `logits_along_gap`
   (logits for drawing a loss against $z_y - z_{c^*}$, a float64 tensor).
   :mod:`palviz.theory.margins`.

Everything is computed in float64 and returned as Python floats or NumPy arrays.
"""

from palviz.theory.layer_peeled import (
    FEATURE_CONSTRAINTS,
    minority_collapse_sweep,
    solve_layer_peeled,
)
from palviz.theory.lipschitz import (
    SUMMED_LOSSES,
    fnpal_max_confidence,
    lipschitz_normalized_unanchored_lower_bound,
    lipschitz_pal,
    lipschitz_unnormalized_z_lower_bound,
    noise_aware_scale,
    numeric_lipschitz,
    numeric_lipschitz_unanchored,
    sum_loss_over_labels,
    unnormalized_w_gradient_norm,
)
from palviz.theory.margins import (
    ce_softplus_forms,
    elm_effective_margins,
    ldam_margins,
    logits_along_gap,
    margin_softplus_form,
)
from palviz.theory.reachable import orientation_report, reachable_cosine

__all__ = [
    "FEATURE_CONSTRAINTS",
    "SUMMED_LOSSES",
    "ce_softplus_forms",
    "elm_effective_margins",
    "fnpal_max_confidence",
    "ldam_margins",
    "lipschitz_normalized_unanchored_lower_bound",
    "lipschitz_pal",
    "lipschitz_unnormalized_z_lower_bound",
    "logits_along_gap",
    "margin_softplus_form",
    "minority_collapse_sweep",
    "noise_aware_scale",
    "numeric_lipschitz",
    "numeric_lipschitz_unanchored",
    "orientation_report",
    "reachable_cosine",
    "solve_layer_peeled",
    "sum_loss_over_labels",
    "unnormalized_w_gradient_norm",
]
