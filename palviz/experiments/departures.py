"""Every departure from the reference code, declared once: :data:`DEPARTURES`. The table of
docs/departures.md, written by hand, has one row per departure; a test checks that it names
each one declared here, and no other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Departure:
    """One way palviz differs from the reference code it follows: ``topic``, what the
    ``reference`` (repository and file) does, what palviz does instead, and the section of
    docs/reference.md that explains it."""

    topic: str
    reference: str
    palviz: str
    section: str


#: Every departure from the reference code, in the order of docs/reference.md; docs/departures.md
#: has one row per departure, named by its ``topic``.
DEPARTURES: tuple[Departure, ...] = (
    Departure(
        "Long-tailed subsets",
        "LDAM-DRW `imbalance_cifar.py` seeds NumPy's global generator once and draws the "
        "classes in turn, so a class's images depend on the classes before it",
        "each class is drawn by its own generator, seeded from (seed, class): the same "
        "counts, other images, and the subsets of one seed are nested",
        "1",
    ),
    Departure(
        "Held-out split",
        "LDAM-DRW `imbalance_cifar.py` cuts the long tail from all 5,000 (500) training images "
        "of each class; Kang et al. and Menon et al. choose tau on a validation split",
        "every long-tailed run first sets aside the profile's `held_out` images of every class "
        "(20 in `paper`, so the head class keeps 4,980 of CIFAR-10's 5,000 and 480 of "
        "CIFAR-100's 500), then cuts the tail from the rest: a balanced split, head class "
        "included, never trained on, where lesson 06 chooses the post-hoc tau",
        "1",
    ),
    Departure(
        "LDAM",
        "LDAM-DRW `losses.py` builds CUDA-only tensors",
        "the margins follow the logits' device (no effect on results)",
        "2",
    ),
    Departure(
        "ELM",
        "ELMloss `loss.py` reads `self.lambda` (a syntax error) and builds CUDA-only tensors; "
        "the paper's Eq. 7 leaves the non-target logits unscaled, the code scales them",
        "the evident intent: lambda as meant, the logits' device, s scaling every logit as "
        "the code does; its margin is smaller than LDAM's for lambda > 0 (section 7), so "
        "palviz does not repeat the paper's 'enlarged'",
        "2",
    ),
    Departure(
        "LMSCE",
        "tk1980/LargeMarginInSoftmax excludes the target by subtracting 1e6 from its logit "
        "and offers a `deg_logit` switch",
        "masks the target with -inf; no `deg_logit` (no effect on results)",
        "2",
    ),
    Departure(
        "LA-CE",
        "google-research `logit_adjustment/utils.py` adds log(pi^tau + 1e-12) and has no "
        "class weights",
        "adds tau log(pi) exactly (every count is > 0) and takes optional class weights, so "
        "that DRW applies",
        "2.1",
    ),
    Departure(
        "IB-Focal",
        "pseulki/IB-Loss starts the IB stage at epoch 100 of 200 and cuts the learning rate "
        "on its own steps (x0.01 at 100, x1e-4 at 160, x1e-6 at 180)",
        "the IB stage starts at 80 % of the epochs, under the profile's schedule (LDAM-DRW's "
        "shape), so that one method trains runs of any length",
        "2.2",
    ),
    Departure(
        "EQLv2",
        "tztztztztz/eqlv2 `eqlv2.py` is a detection loss over C + 1 sigmoid columns, the last "
        "the background (weight 1, not accumulated), and adds its sums in `forward`",
        "palviz's classification form: no background column, all C classes re-weighted and "
        "accumulated; the sums grow when the loss is back-propagated (the same in training)",
        "2.3",
    ),
    Departure(
        "MM-LDAM",
        "ihaeyong/Maximum-Margin-LDAM `losses.py` `HMMLoss` reads every sample's target logit from "
        "the column of the first sample's label (`labels[0]`), measures the wrong classes as "
        "max(0, max_j z_j) (the target's entry set to 0) and builds CUDA-only tensors",
        "each sample's own target logit against its largest wrong logit, on the logits' device; "
        "`MaxMarginLoss(reference=True)` reproduces the code's reading",
        "2.6",
    ),
    Departure(
        "ETF+DR head",
        "NeuralCollapseApplications/ImbalancedLearning `ETF_Classifier` batch-normalises the "
        "feature (`BatchNorm1d`) before dividing it by its norm, and widens ResNet-32's last "
        "stage to 128 channels for CIFAR-100",
        "`AnchoredHead(normalize=True, scale=1)` divides the backbone's ReLU features by their "
        "norm directly; on CIFAR-100 (d = 64 < K - 1) no ETF exists and the head uses the "
        "optimised spread prototypes",
        "2.4",
    ),
    Departure(
        "ETF+DR loss",
        "its `dot_loss` divides by the detached feature norm and regresses E_{W,y} w_y^T h onto "
        "E_{W,y} with per-batch lengths (`produce_Ew`, default `GivenEw=True`)",
        "the same value from the cosine logits, 1/2 E_{W,y}^2 (cos_y - 1)^2 (the feature norm "
        "is 1 after the head), the per-batch lengths included (no effect on results)",
        "2.4",
    ),
    Departure(
        "ETF+DR schedule",
        "ImbalancedLearning `train.py` `adjust_learning_rate` cuts lr 0.1 to x0.1 after epoch "
        "160 and x0.01 after 180 (5-epoch warm-up)",
        "the profile's LDAM-DRW schedule, x0.01 and x0.0001 at the same epochs, as every "
        "long-tailed method: one schedule for the whole table",
        "2.4",
    ),
    Departure(
        "mixup",
        "ImbalancedLearning `methods.py` `mixup_data` (as facebookresearch/mixup-cifar10) draws "
        "lam from NumPy's global generator and the pairing by `torch.randperm`",
        "the same Beta(alpha, alpha) and uniform pairing, drawn from a generator of (seed, "
        "epoch), so a resumed run mixes as an uninterrupted one (no effect on results beyond "
        "the draws)",
        "2.4",
    ),
    Departure(
        "NRCE",
        "Active-Passive-Losses `loss.py` normalises RCE with an operator-precedence slip "
        "(`1 / 4 * (C - 1)`)",
        "palviz has no NRCE",
        "3",
    ),
    Departure(
        "Label noise",
        "Active-Passive-Losses `dataset.py` flips floor(floor(eta N) / C) labels in every "
        "class (symmetric); re-draws CIFAR-10's dog flips from labels already flipped; flips "
        "MNIST and CIFAR-100 samples independently (asymmetric), so counts are random",
        "exactly round(eta n_c) flips per (source) class, chosen from the clean labels, so the "
        "realised rate is the nominal one; every noisy run reports its transition matrix",
        "4",
    ),
    Departure(
        "Label-noise count",
        "Active-Passive-Losses `dataset.py` truncates the count, `int(eta * N)`, in floating "
        "point, so 0.7 * 90 = 62.999... flips 62 labels",
        "the nearest integer to eta n_c, with eta read as the decimal it is written as "
        "(`palviz.data.flip_count`: 63 of 90 at 0.7, halves rounded up)",
        "4",
    ),
    Departure(
        "PAL prototypes",
        "PAL generates the prototypes by minimising L_0 (its Table 7)",
        "the closed-form simplex whenever it exists (d >= k - 1; the same pairwise cosines), "
        "the optimisation otherwise",
        "5",
    ),
    Departure(
        "Layer-peeled model",
        "Fang et al. (PNAS 2021) state the program over every feature",
        "one feature per class (an optimum has this form), solved by L-BFGS in float64 over "
        "variables rescaled into the norm constraints",
        "5",
    ),
    Departure(
        "Input pipeline",
        "both codes apply torchvision's `RandomCrop(32, padding=4)`, `RandomHorizontalFlip` "
        "(and APL's CIFAR-100 `RandomRotation(20)`) to PIL images in `DataLoader` workers",
        "the same transforms, batched on the device on the uint8 tensors with palviz's own "
        "seeded draws; the rotation equals torchvision's tensor `rotate`, which rounds a tie "
        "here and there differently from PIL's (no effect on results beyond the draws)",
        "6",
    ),
    Departure(
        "Model selection",
        "LDAM-DRW `cifar_train.py` reports the epoch with the best test accuracy",
        "the last epoch, and the best test epoch beside it, labelled as such",
        "6.1",
    ),
    Departure(
        "CIFAR-100 network (noise tables)",
        "Active-Passive-Losses' CIFAR-100 configs name a ResNet-50",
        "the ResNet-34 of the APL paper's text",
        "6.2",
    ),
)
