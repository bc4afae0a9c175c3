"""The claims of the experiments chapter (``book/experiments.md``): Hardt & Ma (ICLR 2017) Section 4 and He et
al. (2016)'s degradation, each declared once beside the function that computes its evidence.

The chapter's sizes are the knobs of :data:`PROFILE`; its run settings that are not sizes (the paper's rate, the
worker processes, where the CIFAR runs keep their files, the augmentation) are a :class:`RunSettings` that the
chapter fixes with :func:`use_settings` (``verify`` uses the defaults). The digits runs that several claims use
are trained once per context through ``ctx.shared``: the training grid (:func:`training_grid`, with the two
initialisations' seeds at the paper's rate) and the depth sweep (:func:`depth_sweep`), each only when a claim that
needs it runs, each in looks (one call of worker processes per look). Each kind of configuration trains at most
as many seeds as the checks that use it need (:meth:`Plan.count`; the quick values sized from a pilot by
:mod:`.experiments_sizing`), and stops at an earlier look where those checks decide by
:data:`~resnet_theory.power.EARLY_STOP` standard errors (the sequential design, the knob ``sequential``). Training
seeds follow the chapter's scheme (seed ``s`` trains run seeds ``s*n .. s*n+n-1``, then extra seeds of a range of
their own from ``10**6``; a configuration with ``k`` seeds trains the first ``k``), so the runs do not depend on
which claims ran before; the bootstrap intervals take their seeds from ``ctx.rng``.

The CIFAR claims need the two binary archives and a device. Each trains the knob ``cifar_seeds`` seeds of its data
set and compares their mean final error, by its standard error, with Table 2's figure at its printed precision;
its control is the same runs before the first rate drop. They are always declared checked; where the run lacks
either, their functions return :class:`~resnet_theory.claims.spec.NotAvailable` with what they need. The
chapter passes its ``data_dir`` and ``cifar_on_cpu`` parameters as the context's settings; without them
(``verify``) the environment may name them (:data:`CIFAR_DATA_ENV`, :data:`CIFAR_ON_CPU_ENV`).
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path

import numpy as np
import torch

from .. import validate
from ..engine import ablation, allconv, ensemble
from ..engine import data as engine_data
from ..engine import train as engine
from ..ledger import Check
from ..power import EARLY_STOP  # noqa: F401 (chapter)
from ..tables import in_words
from ..verdicts import DECISIVE_STANDARD_ERRORS, NoUsableControl, round_sig
from . import experiments_sizing as sizing
from .context import Context, Knob, ProfileTable
from .experiments_sizing import (  # noqa: F401 (chapter)
    SIMULATED_REPEATS,
    SIZING_HEADERS,
    sequential_rows,
    short_rows,
    sized_knobs,
    sizing_glue,
    sizing_rows,
)
from .registry import ClaimSet
from .spec import Control, Correction, Evidence, NotAvailable, Source

#: The knobs of the workload that are not seeds: the pilot (:mod:`.experiments_sizing`) must have run at their
#: quick values. The chapter's section on sizing says why each quick value suffices.
WORKLOAD = dict(
    steps=Knob(250, 250, "training steps of every digits run", tiny=6),
    lr_grid=Knob((0.01, 0.05), (0.005, 0.01, 0.02, 0.05, 0.1), "learning rates fixed in advance"),
    widths=Knob((8, 16, 32), (8, 16, 32), "stage widths of the scaled-down network", tiny=(2, 2, 2)),
    blocks=Knob(3, 3, "blocks per stage in the ablation", tiny=1),
    depths=Knob((1, 3, 9), (1, 3, 9, 16), "blocks per stage, depth sweep", tiny=(1, 2)),
)
if sizing.PILOT is not None and not sizing.rewriting():
    sizing.check_workload(sizing.PILOT, {k: WORKLOAD[k].value("quick") for k in sizing.WORKLOAD_KNOBS})
#: The quick profile's seeds per kind of configuration, sized by what each claim must decide.
SIZED = sized_knobs()
PROFILE = ProfileTable(
    n_seeds=Knob(SIZED["n_seeds"], 20, "most seeds of the grid's other configurations", tiny=2, minimum=2),
    init_seeds=Knob(
        SIZED["init_seeds"], 40, "most seeds of both initialisations at the paper's rate", tiny=3, minimum=2
    ),
    head_seeds=Knob(SIZED["head_seeds"], 20, "most seeds of the trained head at the paper's rate", tiny=2, minimum=2),
    control_seeds=Knob(SIZED["control_seeds"], 20, "most seeds of the controls without shortcuts", tiny=2, minimum=2),
    depth_seeds=Knob(SIZED["depth_seeds"], 20, "most seeds of the sweep's other depths", tiny=2, minimum=2),
    deep_seeds=Knob(SIZED["deep_seeds"], 40, "most seeds of the residual network at the deepest", tiny=2, minimum=2),
    **WORKLOAD,
    sequential=Knob(True, True, "train seeds in looks, stopping a kind of configuration once its checks decide"),
    cifar_steps=Knob(
        engine.TrainConfig.steps,
        engine.TrainConfig.steps,
        f"steps of each CIFAR run ({engine.TrainConfig.steps:,}, the end of He et al.'s CIFAR schedule: the book's "
        "choice; the paper prints only its rate drops at " + in_words(engine.TrainConfig.lr_milestones) + ", which "
        "move with it, to the same fractions of the run)",
    ),
    cifar_seeds=Knob(
        5,
        5,
        "seeds trained per CIFAR data set, whose mean error the CIFAR claims compare with Table 2 (five, as He et "
        "al. report five runs of their 110-layer network in their Table 6; at least two, for a standard error)",
        minimum=2,
    ),
)

CLAIMS = ClaimSet("experiments", PROFILE)

#: The paper's learning rate (Section 4.1).
PAPER_LR = 0.05
#: The environment variables that say where the CIFAR archives are, and whether a CPU may train on them.
CIFAR_DATA_ENV, CIFAR_ON_CPU_ENV = "RESNET_THEORY_CIFAR_DATA", "RESNET_THEORY_CIFAR_ON_CPU"

IDENT, PSTD, HEAD, PLAIN = "identity (paper)", "printed standard init", "trained head", "no shortcuts"
PLAIN_SMALL, PLAIN_PSTD = "no shortcuts, small init", "no shortcuts, printed standard init"
#: The fixed-head claim's control: the paper's network with a fixed random head of rank 1 in place of its
#: full-rank one (its logits lie on one line, so at most two classes can be predicted).
RANK1_HEAD = "rank-1 fixed head"
#: The variants of the recipe and how each differs from the paper's network.
VARIANTS = {
    IDENT: {},
    PSTD: dict(init="printed-standard"),
    HEAD: dict(trainable_head=True),
    PLAIN: dict(skip=False, init="standard"),
    PLAIN_SMALL: dict(skip=False),
    PLAIN_PSTD: dict(skip=False, init="printed-standard"),
    RANK1_HEAD: dict(head_rank=1),
}
GRID_VARIANTS = (IDENT, PSTD, HEAD, PLAIN)  # at the ablation's depth
CONTROL_VARIANTS = (PLAIN_SMALL, PLAIN_PSTD)  # at the sweep's shallowest depth
HEAD_CONTROL = RANK1_HEAD  # at the ablation's depth and the paper's rate only
#: The variants trained at every rate of the grid (all but the fixed head's control).
RATE_VARIANTS = GRID_VARIANTS + CONTROL_VARIANTS

#: Each run's final score: test accuracy, and the training loss and error on the whole training set (a
#: diverged run is scored at chance).
METRICS: dict[str, Callable] = {
    "accuracy": engine.scored_accuracy,
    "training loss": ablation.final_training_loss,
    "training error": ablation.final_training_error,
}


def _convolutions(blocks: int, stages: int = 3) -> int:
    return 1 + 2 * stages * blocks


# --- Section 4.1, Table 1: the network --------------------------------------------------------------------------
#: "13.59 million trainable parameters" (Section 4.1, paragraph after Table 1): 4 significant digits.
PAPER_PARAMS, PAPER_PARAMS_DIGITS = 13.59e6, 4
ARCHITECTURE_COLUMNS = (
    "stage",
    "blocks",
    "in_channels",
    "out_channels",
    "stride",
    "output_size",
    "parameters",
    "fixed",
)


#: The headers a reader sees for the architecture table's plain keys (``ResultsTable(rows, headers=HEADERS)``).
HEADERS = {
    "in_channels": "in channels",
    "out_channels": "out channels",
    "output_size": "output size",
    "fixed": "fixed (not trained)",
}


def _shown_size(size: str) -> str:
    """``"32x32"`` as a reader writes it, ``"32 × 32"``; a count of outputs as it is."""
    return re.sub(r"^(\d+)x(\d+)$", r"\1 × \2", size)


def shown_setting(value) -> str:
    """A training setting as a reader writes it: ``(30000, 50000)`` as "30,000 and 50,000", ``True`` as "yes",
    64000 as "64,000", 0.0001 as "0.0001" (never a Python repr)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (tuple, list)):
        shown = [shown_setting(v) for v in value]
        return in_words(shown)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def trainable_count(model: torch.nn.Module) -> int:
    """Trainable parameters summed over the module's tensors, not from a formula."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def conv_count(model: torch.nn.Module) -> int:
    return sum(isinstance(m, torch.nn.Conv2d) for m in model.modules())


def table_1_formula(blocks=(9, 9, 9), widths=(64, 128, 256), stem=16, k=3, colours=3, bias=True) -> int:
    """Table 1's trainable parameters by hand: each k-by-k convolution's weights, and its biases unless
    ``bias=False`` (Section 4.1 does not say whether the convolutions have biases), stem and blocks."""
    b = int(bool(bias))
    total, channels = colours * stem * k * k + b * stem, stem
    for width, count in zip(widths, blocks):
        for _ in range(count):
            total += channels * width * k * k + b * width + width * width * k * k + b * width
            channels = width
    return total


def projection_shortcut_counts(model: allconv.AllConvResNet) -> dict[str, int]:
    """The count if every width-changing shortcut were a trained 1 x 1 convolution (with and without biases)
    in place of the paper's averaging pool and zero padding: the modules are built and their tensors counted."""
    changing = [b for stage in model.stages for b in stage if b.in_channels != b.out_channels]
    base = trainable_count(model)
    return {
        "changing": len(changing),
        "with_bias": base + sum(trainable_count(torch.nn.Conv2d(b.in_channels, b.out_channels, 1)) for b in changing),
        "without_bias": base
        + sum(trainable_count(torch.nn.Conv2d(b.in_channels, b.out_channels, 1, bias=False)) for b in changing),
    }


def _params_check(count: int, figure: float, what: str, *, printed: bool = True) -> Check:
    """``count`` at the paper's significant digits against ``figure``: the paper's printed figure, or
    (``printed=False``) a corrected figure the book computed, which the summary calls the book's, never
    printed."""
    return Check.at_printed_precision(
        count, figure, digits=PAPER_PARAMS_DIGITS, what=what, figure="printed" if printed else "computed"
    )


#: The control's blocks in the first stage, which Table 1's nine rule out.
CONTROL_FIRST_STAGE = (8, 10)
#: Table 1's count by hand, with and without the convolutions' biases (Section 4.1 names only "the
#: convolutions" as trainable and does not say whether they have biases; the engine gives them biases).
TABLE_1_COUNTS = {"with biases": table_1_formula(bias=True), "without biases": table_1_formula(bias=False)}
#: The corrected figures at the printed precision, computed from the counts (never typed).
CORRECTED_PARAMS = {k: round_sig(v, PAPER_PARAMS_DIGITS) for k, v in TABLE_1_COUNTS.items()}


def _either(checks: list[Check], what: str) -> Check:
    """At least one reading holds (the paper does not say which one it counts): holds if any part does."""
    return Check(
        any(c.holds for c in checks),
        f"{what} (either reading): " + "; ".join(c.summary for c in checks),
        {"parts": [c.numbers for c in checks]},
    )


def _shown_millions(value: float) -> str:
    return f"{value / 1e6:.2f}"


@CLAIMS.checked(
    "hardt-ma/sec4-architecture",
    paper="hardt-ma",
    ref="Section 4.1, Table 1 and the paragraph after it",
    source=Source.printed(),
    section="experiments-architecture",
    statement=r"The CIFAR-10 network of Table 1 (a $3 \times 3$ convolution from 3 to "
    r"16 channels, three stages of nine residual blocks of $3 \times 3$ "
    "convolutions with 64, 128, 256 channels, parameter-free shortcuts, a "
    "fixed random head) has 13.59 million trainable parameters.",
    correction=Correction(
        "The network of Table 1, with the parameter-free averaging-pool-and-zero-padding shortcuts the paper "
        f"describes, has {TABLE_1_COUNTS['with biases']:,} trainable parameters if its convolutions have biases "
        f"({_shown_millions(CORRECTED_PARAMS['with biases'])} million at the printed precision) and "
        f"{TABLE_1_COUNTS['without biases']:,} if they do not "
        f"({_shown_millions(CORRECTED_PARAMS['without biases'])} million); the paper does not say which."
    ),
    control=Control(
        f"The network with {' or '.join(map(str, CONTROL_FIRST_STAGE))} blocks in its first stage, which Table 1's "
        "nine blocks per stage rule out."
    ),
)
def sec4_architecture(ctx: Context) -> Evidence:
    """The Table 1 network built, with and without convolution biases (the paper does not say), and its
    trainable parameters counted from its tensors, compared with the printed 13.59M at its 4 significant digits
    (either reading would do); the corrected counts also from Table 1's layers by hand; the book's explanation
    of the printed figure (1 x 1 convolution shortcuts) counted from modules too, with and without biases. The
    scaled-down network of the digits runs is counted for the prose."""
    model = allconv.AllConvResNet(num_classes=10)
    table = allconv.architecture_table(model, (3, 32, 32))
    parts = allconv.parameter_breakdown(model)
    n_trainable, convs = trainable_count(model), conv_count(model)
    projection = projection_shortcut_counts(model)
    del model
    bare = allconv.AllConvResNet(num_classes=10, bias=False)
    n_bare, projection_bare = trainable_count(bare), projection_shortcut_counts(bare)
    del bare
    counts = {"with biases": n_trainable, "without biases": n_bare}
    controls, control_counts = [], []
    for first in CONTROL_FIRST_STAGE:
        for reading, bias in (("with biases", True), ("without biases", False)):
            n = trainable_count(allconv.AllConvResNet(num_classes=10, blocks_per_stage=(first, 9, 9), bias=bias))
            for figure, which in ((PAPER_PARAMS, "printed"), (CORRECTED_PARAMS[reading], "corrected")):
                what = f"control: {first} blocks in stage 1, {reading}, vs the {which} figure"
                controls.append(_params_check(n, figure, what, printed=which == "printed"))
            if bias:
                shown = f"{n:,} ({_shown_millions(controls[-1].numbers['rounded'])} million)"
                lead = f"{first} blocks in the first stage give" if not control_counts else f"{first} blocks"
                control_counts.append(f"{lead} {shown}")
    widths = tuple(ctx.cfg.widths)
    small = allconv.AllConvResNet(
        in_channels=1, stem_channels=widths[0], widths=widths, blocks_per_stage=ctx.cfg.blocks
    )
    readings = {
        reading: _params_check(n, PAPER_PARAMS, f"trainable parameters counted from the model's tensors, {reading}")
        for reading, n in counts.items()
    }
    statement = _either(list(readings.values()), "13.59 million")
    corrected = Check.combine(
        [
            part
            for reading, n in counts.items()
            for part in (
                Check.equal(
                    n, TABLE_1_COUNTS[reading], what=f"the module count, {reading}, against Table 1's layers by hand"
                ),
                _params_check(
                    n, CORRECTED_PARAMS[reading], f"the count, {reading}, against the corrected "
                    f"{_shown_millions(CORRECTED_PARAMS[reading])} million", printed=False,
                ),
            )
        ],
        what="parameter-free shortcuts",
    )  # fmt: skip
    explanation = _params_check(
        projection["with_bias"], PAPER_PARAMS, r"the book's explanation: $1 \times 1$ convolution shortcuts with biases"
    )
    explanation_bare = _params_check(
        projection_bare["without_bias"], PAPER_PARAMS, r"the same without any bias: $1 \times 1$ shortcuts, no biases"
    )
    glue = {
        "arch_trainable": f"{n_trainable:,}",
        "arch_trainable_nobias": f"{n_bare:,}",
        "arch_conv_weights": f"{parts['conv_weights']:,}",
        "arch_conv_biases": f"{parts['conv_biases']:,}",
        "arch_fixed": f"{parts['head_fixed']:,}",
        "arch_convs": convs,
        "arch_gap": f"{n_trainable - PAPER_PARAMS:+,.0f}",
        "arch_gap_nobias": f"{n_bare - PAPER_PARAMS:+,.0f}",
        "arch_rounded": _shown_millions(readings["with biases"].numbers["rounded"]),
        "arch_rounded_nobias": _shown_millions(readings["without biases"].numbers["rounded"]),
        "arch_gap_percent": 100 * (n_trainable - PAPER_PARAMS) / PAPER_PARAMS,
        "arch_gap_percent_nobias": 100 * (n_bare - PAPER_PARAMS) / PAPER_PARAMS,
        "arch_projection_changing": projection["changing"],
        "arch_projection_bias": f"{projection['with_bias']:,}",
        "arch_projection_nobias": f"{projection['without_bias']:,}",
        "arch_projection_bare": f"{projection_bare['without_bias']:,}",
        "arch_projection_rounded": _shown_millions(explanation.numbers["rounded"]),
        "arch_projection_bare_rounded": _shown_millions(explanation_bare.numbers["rounded"]),
        "arch_control_summary": in_words(control_counts),  # one clause: each check's summary is in its evidence
        "arch_control_blocks": in_words(CONTROL_FIRST_STAGE, "or"),
        "small_params": f"{trainable_count(small):,}",
        "small_convs": conv_count(small),
    }
    rows = [{k: _shown_size(row[k]) if k == "output_size" else row[k] for k in ARCHITECTURE_COLUMNS} for row in table]
    data = {
        "architecture": rows,
        "explanation": explanation,
        "explanation_without_biases": explanation_bare,
        "projection": projection,
        "projection_without_biases": projection_bare,
    }
    return Evidence(statement=statement, control=tuple(controls), corrected=corrected, data=data, glue=glue)


# --- Section 4.2: the ImageNet model (not checked) ---------------------------------------------------------------
_IMAGENET_WHY = "needs ImageNet (ILSVRC 2012) and a multi-GPU cluster; this build has neither"
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 4.2, paragraph 1",
    statement="The all-convolutional variant of the 34-layer ResNet has 35.7M trainable parameters.",
    why="the variant is not described beyond 'all-convolutional variant of the 34-layer "
    "network'; He et al.'s 34 layers without batch norm count far fewer parameters "
    "(see the chapter), so there is no architecture to count against the printed "
    "figure",
)
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 4.2, paragraph 1",
    statement="Data and training: ILSVRC 2012, 1,281,167 images of 1000 classes resized to "
    r"$224 \times 224$; momentum 0.9, learning rate 0.1 decayed by 0.94 every two epochs, 6 "
    "machines updating asynchronously, each with 8 K40 GPUs, batch 256 (32 per GPU).",
    why="a setting, not a result; " + _IMAGENET_WHY,
)
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 4.2, paragraphs 1-3",
    statement="The model reaches 35.29% top-1 and 14.17% top-5 error on the 50,000 test images "
    "after 700,000 steps (about a week), underfitting, worse than the original "
    "34-layer network (25.03%) but better than Krizhevsky et al.'s 40.7% and the best "
    "all-convolutional network.",
    why=_IMAGENET_WHY,
)
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 4.2, paragraph 3",
    statement="A better learning-rate schedule and hyperparameters would likely improve the result substantially.",
    why="a conjecture; " + _IMAGENET_WHY,
)


# --- Section 4.1: the training recipe (settings; its results need CIFAR) -------------------------------------
_CIFAR_WHY = "needs the CIFAR-10 binary archives and a GPU; the full profile trains on them"
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 4.1, paragraph 3",
    statement="The model reaches its peak performance at around 50k steps, about 24 hours on one NVIDIA Tesla K40 GPU.",
    why=_CIFAR_WHY + " (its test-error curve is drawn there); the K40 time needs that GPU",
)
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 4.1, paragraphs 2-3 (the training recipe)",
    statement="Training: TensorFlow, momentum 0.9, batch 128, weight decay 0.0001 on all convolutions, learning rate "
    "0.05 divided by 10 at steps 30,000 and 50,000.",
    why="settings, not results: the engine holds them as its defaults (the chapter shows them in a table) and "
    "the CIFAR claims train with them; " + _CIFAR_WHY,
)
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 4.1, paragraph 3 (the code's origin)",
    statement="The code derives from the TensorFlow ResNet implementation, without batch normalisation and with "
    "other blocks and architecture.",
    why="a remark about the authors' code; the book's engine follows that code where the paper is silent",
)
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 4.1, paragraph 3 (initialisation and representation)",
    statement="The smaller initialisation does not affect representation.",
    why="true by definition: an initialisation does not change the set of weights, hence not what the network "
    "can represent; nothing to compute",
)
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 4.1, Table 2 (the ImageNet column)",
    statement="Table 2's ImageNet column.",
    why="lost in the text conversion the book reads (only DenseNet's N/A survives); the paper's own ImageNet "
    "figure is repeated in Section 4.2, under its skip line",
)
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 1.1, paragraph 6 (the Section 4 network)",
    statement="The Section 4 network: convolutional residual layers with one ReLU each, no batch normalisation, "
    "dropout or max pooling, a fixed random last layer, near-zero Gaussian initialisation, weight decay only; "
    "no need for dropout.",
    why="a summary of Section 4: sec4-architecture counts the network and sec4-identity-trains-without-bn trains "
    "it on the digits; 'no need for dropout' rests on the CIFAR results, which "
    + _CIFAR_WHY[0].lower()
    + _CIFAR_WHY[1:],
)
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 4.2, paragraph 2 (a larger model)",
    statement="A larger model would likely perform better on ImageNet.",
    why="a conjecture; " + _IMAGENET_WHY,
)
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 5, paragraph 1 (residual convolutions alone)",
    statement="Much of the progress in image recognition could be achieved with residual convolutional layers "
    "and ReLU activations alone, in simple deep architectures matching the state of the art.",
    why="a belief about a research programme, not a statement a computation here can decide; the digits "
    "analogue shows the plain residual recipe training, not matching the state of the art",
)


# --- the run settings and the plan of the digits runs ---------------------------------------------------------
@dataclass(frozen=True)
class RunSettings:
    """The chapter's settings that are not sizes: the paper's rate ``lr`` (one of the knob ``lr_grid``), the
    ``workers`` (processes of one thread) that train the digits runs, where the CIFAR runs keep checkpoints and
    metrics (``runs_dir``, or nowhere) and their augmentation (``"crop4"`` or ``"tensorflow"``)."""

    lr: float = PAPER_LR
    workers: int = 2
    runs_dir: str | None = None
    augmentation: str = "crop4"

    def __post_init__(self):
        validate.positive_float("lr", self.lr)
        validate.positive_int("workers", self.workers)
        if self.runs_dir is not None:
            validate.path("runs_dir", self.runs_dir)
        validate.choice("augmentation", self.augmentation, ("crop4", "tensorflow"))


_SETTINGS = "experiments/run-settings"


def use_settings(ctx: Context, **settings) -> RunSettings:
    """Fix the run settings of the claims run in ``ctx`` (before the first claim; the same again is fine)."""
    wanted = RunSettings(**settings)
    got = ctx.shared(_SETTINGS, lambda: wanted)
    if got != wanted:
        raise ValueError(f"this context already runs with {got}; make a new Chapter for {wanted}")
    return got


def _settings(ctx: Context) -> RunSettings:
    return ctx.shared(_SETTINGS, RunSettings)


def scaled_milestones(steps: int) -> tuple[int, ...]:
    """The paper's rate drops (``engine.TrainConfig.lr_milestones``) moved to the same fractions of a run of
    ``steps`` as they take of the book's CIFAR schedule (``engine.TrainConfig.steps``)."""
    schedule = engine.TrainConfig.steps
    return tuple(round(steps * m / schedule) for m in engine.TrainConfig.lr_milestones)


#: The knobs that say how many seeds a kind of configuration trains (see :meth:`Plan.count`).
SEED_KNOBS = ("n_seeds", "init_seeds", "head_seeds", "control_seeds", "depth_seeds", "deep_seeds")


@dataclass(frozen=True)
class Plan:
    """The digits runs: the rates, sizes, seeds and the recipe every run shares (batch 128, the paper's two
    rate drops at the fractions of the run where its steps 30,000 and 50,000 fall in the book's CIFAR schedule,
    ``engine.TrainConfig``'s steps (the paper does not print the run's length; 64,000 ends He et al.'s): see
    :func:`scaled_milestones`; weight decay on convolution weights).
    ``sizes`` holds the seed knobs; a configuration with ``k`` seeds trains :meth:`seeds` ``(k)``."""

    lr: float
    lr_grid: tuple[float, ...]
    widths: tuple[int, ...]
    blocks: int
    depths: tuple[int, ...]
    steps: int
    run_seeds: tuple[int, ...]
    extra_seeds: tuple[int, ...]
    sizes: dict
    workers: int
    base: engine.TrainConfig
    #: Train in looks (:mod:`.experiments_sizing`: the sequential design) or every knob's seeds at once.
    sequential: bool = False

    @property
    def shallowest(self) -> int:
        return self.depths[0]

    @property
    def deep(self) -> int:
        return self.depths[-1]

    def convolutions(self, depth: int) -> int:
        return _convolutions(depth, len(self.widths))

    def config(self, name: str, rate: float, depth: int | None = None) -> engine.TrainConfig:
        depth = self.blocks if depth is None else depth
        return replace(self.base, lr=rate, blocks_per_stage=depth, **VARIANTS[name])

    def count(self, name: str, rate: float, depth: int | None = None, sizes: dict | None = None) -> int:
        """How many seeds the configuration trains: each kind as many as the claims that use it need (with
        ``sizes``, the seed knobs of a look, else the plan's). The residual network at the paper's rate serves
        both the initialisation comparison and the fixed head's: it trains what the larger asks."""
        depth = self.blocks if depth is None else depth
        sizes = self.sizes if sizes is None else {**self.sizes, **sizes}
        if name in CONTROL_VARIANTS or name == HEAD_CONTROL:
            return sizes["control_seeds"]
        if depth == self.blocks:
            if rate == self.lr and name == IDENT:
                return max(sizes["init_seeds"], sizes["head_seeds"])
            if rate == self.lr and name in (PSTD, HEAD):
                return sizes["head_seeds" if name == HEAD else "init_seeds"]
            return sizes["n_seeds"]  # the network without shortcuts at its best rate: topped up in the sweep
        return sizes["deep_seeds" if (name, depth) == (IDENT, self.deep) else "depth_seeds"]

    def seeds(self, count: int) -> tuple[int, ...]:
        """The first ``count`` seeds: the run seeds, then the extra seeds."""
        return (self.run_seeds + self.extra_seeds)[:count]


def plan(ctx: Context) -> Plan:
    """The plan of the digits runs for ``ctx``'s knobs, seed and run settings."""
    return ctx.shared("experiments/plan", lambda: _make_plan(ctx))


def _make_plan(ctx: Context) -> Plan:
    cfg, settings = ctx.cfg, _settings(ctx)
    lr_grid = tuple(sorted(float(r) for r in cfg.lr_grid))
    if float(settings.lr) not in lr_grid:
        raise ValueError(f"the paper's rate lr={settings.lr} must be one of lr_grid={lr_grid}")
    # a standard error needs two runs
    sizes = {k: validate.integer(k, getattr(cfg, k), minimum=2) for k in SEED_KNOBS}
    n = sizes["n_seeds"]
    more = max(max(sizes.values()) - n, 0)
    widths, blocks, steps = tuple(cfg.widths), int(cfg.blocks), int(cfg.steps)
    base = engine.TrainConfig(
        dataset="digits",
        stem_channels=widths[0],
        widths=widths,
        blocks_per_stage=blocks,
        steps=steps,
        lr=settings.lr,
        lr_milestones=scaled_milestones(steps),
        eval_every=0,
        log_every=10,
        checkpoint_every=0,
        progress=False,
        on_divergence="stop",
    )
    return Plan(
        lr=float(settings.lr),
        lr_grid=lr_grid,
        widths=widths,
        blocks=blocks,
        depths=tuple(sorted(set(cfg.depths) | {blocks})),
        steps=steps,
        run_seeds=tuple(ctx.seed * n + i for i in range(n)),  # seeds share no run
        extra_seeds=tuple(10**6 + ctx.seed * more + i for i in range(more)),
        sizes=sizes,
        workers=settings.workers,
        base=base,
        sequential=bool(cfg.sequential),
    )


def train_missing(p: Plan, have: dict, want: dict, pool=None) -> int:
    """Train, in one call (in ``pool``, an :func:`~resnet_theory.engine.ablation.worker_pool`, or one of its
    own), the seeds that each ``(variant, rate, depth)`` of ``want`` (key -> seeds) lacks in ``have`` (key ->
    runs, extended in place): a configuration's first ``k`` seeds are the same runs whichever looks trained
    them. Returns how many runs it trained."""
    wanted = [(key, s) for key, count in want.items() for s in p.seeds(count)[len(have.setdefault(key, [])) :]]
    if wanted:
        configs = [replace(p.config(*key), seed=s) for key, s in wanted]
        results = ablation.train_runs(configs, workers=p.workers, pool=pool)
        for (key, _), r in zip(wanted, results):
            have[key].append(r)
    return len(wanted)


def _scores(runs, metric: str) -> np.ndarray:
    return np.array([METRICS[metric](r) for r in runs])


def _bootstrap_seed(ctx: Context, key: str) -> int:
    return int(ctx.rng(key).integers(2**31))


def _cpu_seconds() -> float:  # this process and its finished worker processes
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass
class _Timer:
    """What training one part of the runs took, over all its looks: the runs it trained, and the time and CPU
    time from its start (:meth:`begin`) to its end (:meth:`end`, after its pool's processes were joined, so
    that their CPU time counts), the looks' checks included."""

    part: str
    steps: int
    runs: int = 0
    blocks: int = 0
    seconds: float = 0.0
    cpu: float = 0.0
    pool: object = None

    def begin(self) -> None:
        self.seconds, self.cpu = -time.perf_counter(), -_cpu_seconds()

    def end(self) -> None:
        self.seconds += time.perf_counter()
        self.cpu += _cpu_seconds()

    def train(self, p: Plan, have: dict, want: dict) -> None:
        before = {key: len(have.get(key, [])) for key in want}
        self.runs += train_missing(p, have, want, self.pool)
        self.blocks += sum((len(have[key]) - before[key]) * key[2] for key in want)

    def row(self) -> dict:
        return {
            "runs": self.part,
            "seeds × configurations": self.runs,
            "blocks per stage (mean)": f"{self.blocks / max(self.runs, 1):.3g}",
            "seconds": self.seconds,
            "CPU seconds": self.cpu,
            "member-steps per second": self.runs * self.steps / max(self.seconds, 1e-9),
        }


def _sequential(ctx: Context, knobs: tuple, timer: _Timer, train: Callable[[dict], object], margins: Callable):
    """The sequential design (:mod:`.experiments_sizing`) over ``knobs``, in one pool of worker processes for
    every look (``timer.pool``): ``train(sizes)`` trains what a look's seed knobs ask and returns the look's
    result, ``margins(result)`` its comparisons' margins; looks go on while a knob grows. Without the plan's
    ``sequential``, one look at every knob's full size. The last look's result gets the ``timing`` of all the
    looks (``timer``) and the ``looks``."""
    p = plan(ctx)
    timer.begin()
    with ablation.worker_pool(p.workers) as timer.pool:
        result, looks = _looks(p, knobs, train, margins)
    timer.end()
    result.timing, result.looks = timer.row(), looks
    return result


def _looks(p: Plan, knobs: tuple, train: Callable[[dict], object], margins: Callable) -> tuple:
    if not p.sequential:
        return train({k: p.sizes[k] for k in knobs}), ()
    sizes, looks = sizing.first_sizes(p.sizes, knobs), []
    while True:
        result = train(sizes)
        looks.append(sizing.next_look(sizes, p.sizes, margins(result)))
        if not looks[-1].grows:
            return result, tuple(looks)
        sizes = sizing.grown(looks[-1], p.sizes)


def _at_look(ctx: Context, **shared) -> Context:
    """``ctx`` with a look's training grid or depth sweep in place of the finished one (its own shared dict)."""
    return replace(ctx, _shared={**ctx._shared, **{f"experiments/{k.replace('_', '-')}": v for k, v in shared.items()}})


# --- the training grid: every variant at every rate of the grid ----------------------------------------------
@dataclass
class TrainingGrid:
    """Every variant at every rate of the grid (the controls at the sweep's shallowest depth), at the run
    seeds; ``runs[(variant, rate)]`` is the list of runs, ``timing`` what training them took."""

    plan: Plan
    runs: dict
    timing: dict
    bootstrap_seed: int
    #: The looks of the sequential design that trained it (none without it).
    looks: tuple = ()
    _stats: dict = field(default_factory=dict, repr=False)

    def mean(self, key, metric: str) -> float:
        return float(np.mean(_scores(self.runs[key], metric)))

    def stats(self, key, metric: str) -> dict:
        """Median over the seeds with its bootstrap standard error and 95% interval."""
        if (key, metric) not in self._stats:
            values = _scores(self.runs[key], metric)
            self._stats[key, metric] = ensemble.bootstrap_median(values, seed=self.bootstrap_seed)
        return self._stats[key, metric]

    @property
    def best_rate(self) -> dict:
        """Per criterion and variant trained at every rate (not the fixed head's control, trained at the
        paper's rate only), the grid's rate with the lowest mean training loss ("loss") or the highest mean test
        accuracy ("accuracy"), chosen after the runs by this fixed rule."""
        grid = self.plan.lr_grid
        return {
            "loss": {n: min(grid, key=lambda r: (self.mean((n, r), "training loss"), -r)) for n in RATE_VARIANTS},
            "accuracy": {n: max(grid, key=lambda r: (self.mean((n, r), "accuracy"), r)) for n in RATE_VARIANTS},
        }

    def rows(self) -> list[dict]:
        """One row per variant and rate: medians, interval, divergences, and which rate it is."""
        best, p, out = self.best_rate, self.plan, []
        for (name, rate), runs in self.runs.items():
            acc = self.stats((name, rate), "accuracy")
            which = [
                ("paper's", rate == p.lr),
                ("best loss", rate == best["loss"].get(name)),
                ("best accuracy", rate == best["accuracy"].get(name)),
            ]
            depth = p.shallowest if name in CONTROL_VARIANTS else p.blocks
            out.append(
                {
                    "variant": name,
                    "convolutions": p.convolutions(depth),
                    "learning rate": rate,
                    "median test accuracy": acc["median"],
                    "95% interval": f"{acc['low']:.3f} to {acc['high']:.3f}",
                    "median training loss": self.stats((name, rate), "training loss")["median"],
                    "median training error": self.stats((name, rate), "training error")["median"],
                    "diverged": f"{sum(r.diverged for r in runs)} of {acc['n']}",
                    "rate": ", ".join(w for w, k in which if k),
                }
            )
        return out


def training_grid(ctx: Context) -> TrainingGrid:
    """The training grid, trained once per context."""
    return ctx.shared("experiments/grid", lambda: _train_grid(ctx))


def _train_grid(ctx: Context) -> TrainingGrid:
    p = plan(ctx)
    grid_keys = [(name, rate, p.blocks) for name in GRID_VARIANTS for rate in p.lr_grid]
    control_keys = [(name, rate, p.shallowest) for name in CONTROL_VARIANTS for rate in p.lr_grid]
    control_keys.append((HEAD_CONTROL, p.lr, p.blocks))
    have: dict = {}
    timer, seed = _Timer("grid", p.steps), _bootstrap_seed(ctx, "experiments/grid")

    def train(sizes: dict) -> TrainingGrid:
        timer.train(p, have, {k: p.count(*k, sizes=sizes) for k in grid_keys + control_keys})
        runs = {(name, rate): list(have[(name, rate, d)]) for name, rate, d in grid_keys + control_keys}
        return TrainingGrid(p, runs, {}, seed)  # the timing of all the looks is set at the end

    return _sequential(ctx, sizing.GRID_KNOBS, timer, train, lambda g: _grid_margins(ctx, g))


def _grid_margins(ctx: Context, grid: TrainingGrid) -> dict:
    """The margins of the comparisons a look at the training grid decides: the three ablation claims', and the
    grid's part of the claim that the residual network trains (its other part needs the sweep)."""
    at = _at_look(ctx, grid=grid)
    checks = {d.id: _statement_and_control(d.evidence(at)) for d in (sec4_small_init, sec4_small_init_best_rate,
                                                                      sec4_fixed_head)}  # fmt: skip
    ablation_depth, control = _trains_on_grid(at)
    checks[sec4_identity_trains_without_bn.id] = (ablation_depth, control)
    return sizing.look_margins(checks)


def _statement_and_control(evidence: Evidence) -> tuple:
    return evidence.statement, evidence.controls[0]


def _many(ctx: Context) -> dict:
    """The two initialisations at the paper's rate (``init_seeds`` each, trained with the grid: the residual
    network may have more, for the fixed head's comparison)."""
    grid, lr = training_grid(ctx), plan(ctx).lr
    n = len(grid.runs[(PSTD, lr)])
    return {name: grid.runs[(name, lr)][:n] for name in (IDENT, PSTD)}


def overfitting_rows(ctx: Context) -> list[dict]:
    """Median training error, test error and their gap for four variants (an illustration, not a claim)."""
    grid, lr = training_grid(ctx), plan(ctx).lr
    best = grid.best_rate["loss"]
    rows = []
    for name, rate in [(IDENT, lr), (HEAD, lr), (PSTD, best[PSTD]), (PLAIN, best[PLAIN])]:
        train_err = _scores(grid.runs[(name, rate)], "training error")
        test_err = 1 - _scores(grid.runs[(name, rate)], "accuracy")
        rows.append(
            {
                "variant": name,
                "learning rate": rate,
                "median training error": float(np.median(train_err)),
                "median test error": float(np.median(test_err)),
                "median gap (test - training)": float(np.median(test_err - train_err)),
            }
        )
    return rows


# --- the statistics of a comparison ----------------------------------------------------------------------------
def _better(metric: str, a: tuple, b: tuple, label: str, runs_a, runs_b) -> Check:
    """Variant-and-rate ``a`` beats ``b`` on ``metric``: difference of means, Welch's standard error."""
    va, vb = _scores(runs_a, metric), _scores(runs_b, metric)
    first, second = (va, vb) if metric == "accuracy" else (vb, va)  # lower loss is better
    d = ablation.mean_difference(first, second)
    sign = "a - b" if metric == "accuracy" else "b - a"
    test = f"difference of means of final {metric} ({sign}), Welch standard error"
    what = f"{label}: a = {a[0]} at {a[1]:g}, b = {b[0]} at {b[1]:g}"
    return Check.statistical(d["difference"], d["se"], 0.0, n=d["n"], test=test, what=what)


#: The digits analogue's bar for "trains": a median test accuracy above this, fixed before the runs.
TRAINS_ACCURACY = 0.8


def _trains(runs, name: str, rate: float, label: str, bootstrap_seed: int, threshold: float = TRAINS_ACCURACY) -> Check:
    st = ensemble.bootstrap_median(_scores(runs, "accuracy"), seed=bootstrap_seed)
    test = f"median test accuracy of {st['n']} seeds, bootstrap standard error"
    return Check.statistical(
        st["median"], st["se"], threshold, what=f"{label} ({name}, lr {rate})", test=test, n=st["n"]
    )


def _comparison_glue(key: str, check: Check) -> dict:
    n = check.numbers
    return {
        f"cmp_{key}": n["estimate"],
        f"cmp_{key}_se": n["standard_error"],
        f"cmp_{key}_margin": n["margin_standard_errors"],
    }


# --- Section 4.1: the recipe taken apart on the digits -------------------------------------------------------
#: A printed statement of Section 4.1 whose evidence is the book's analogue, not the paper's CIFAR runs: the
#: ledger's "checked against" line and the verdict's label ("as printed, on the book's analogue") say so.
ON_DIGITS = Source.printed("the scaled-down network on 8 × 8 digits, not the paper's CIFAR runs", on_analogue=True)

_INIT_CLAIM = dict(
    paper="hardt-ma",
    ref="Section 4.1, paragraph 3 (initialisation)",
    source=ON_DIGITS,
    section="experiments-ablation",
    control=Control(
        "The same layers without shortcuts, where a small initialisation "
        "gives no near-identity block, so the claim's reason for it does not "
        "apply."
    ),
)


@CLAIMS.checked(
    "hardt-ma/sec4-small-init",
    **_INIT_CLAIM,
    statement=r"Initialising each residual $k \times k$ convolution with $c$ output channels at "
    r"standard deviation $1/(k^2 c)$, rather than the standard $1/(k\sqrt{c})$, "
    "helped training. Digits analogue (the book's): at the paper's rate "
    f"{PAPER_LR}, lower mean final training loss than the printed standard "
    "initialisation.",
)
def sec4_small_init(ctx: Context) -> Evidence:
    """Mean final training loss, small against printed standard initialisation at the paper's rate, over
    ``init_seeds`` seeds each; the control is the same comparison without shortcuts."""
    grid, many, lr = training_grid(ctx), _many(ctx), plan(ctx).lr
    at_paper = _better("training loss", (IDENT, lr), (PSTD, lr), "small init trains better", many[IDENT], many[PSTD])
    plain = _better(
        "training loss",
        (PLAIN_SMALL, lr),
        (PLAIN_PSTD, lr),
        "control, no shortcuts: small init trains better",
        grid.runs[(PLAIN_SMALL, lr)],
        grid.runs[(PLAIN_PSTD, lr)],
    )
    glue = {
        **_comparison_glue("init_paper", at_paper),
        "abl_init_seeds": len(many[IDENT]),
        "abl_ident_loss_paper": float(np.mean(_scores(many[IDENT], "training loss"))),
        "abl_pstd_loss_paper": float(np.mean(_scores(many[PSTD], "training loss"))),
        "abl_pstd_diverged_many": sum(r.diverged for r in many[PSTD]),
    }
    return Evidence(statement=at_paper, control=NoUsableControl.unless_decisive(plain), glue=glue)


@CLAIMS.checked(
    "hardt-ma/sec4-small-init-best-rate",
    **{
        **_INIT_CLAIM,
        "source": Source.question(
            "the book's question on the digits analogue: the paper reports one rate, 0.05, and does not say at "
            "which rates the standard initialisation was tried"
        ),
    },
    statement="The same sentence read for two initialisations each at its own best "
    "learning rate (the book's reading; the paper reports one rate for its network and none for the standard "
    "initialisation): on "
    "the digits, the small initialisation at its best rate of the grid has a "
    "lower mean final training loss than the printed standard one at its "
    "best rate.",
)
def sec4_small_init_best_rate(ctx: Context) -> Evidence:
    """The same comparison with each initialisation at its best rate of the grid (lowest mean training loss)."""
    grid, p = training_grid(ctx), plan(ctx)
    best = grid.best_rate["loss"]

    def compare(a, b, label):
        ka, kb = (a, best[a]), (b, best[b])
        return _better("training loss", ka, kb, label, grid.runs[ka], grid.runs[kb])

    at_best = compare(IDENT, PSTD, "small init trains better, each at its best rate")
    plain = compare(PLAIN_SMALL, PLAIN_PSTD, "control, no shortcuts: small init trains better, best rates")
    edge = [n for n in (IDENT, PSTD) if best[n] in (p.lr_grid[0], p.lr_grid[-1])]
    glue = {
        **_comparison_glue("init_best", at_best),
        "abl_ident_best": best[IDENT],
        "abl_pstd_best": best[PSTD],
        "abl_ident_loss_best": grid.mean((IDENT, best[IDENT]), "training loss"),
        "abl_pstd_loss_best": grid.mean((PSTD, best[PSTD]), "training loss"),
        "abl_edge": in_words(edge) if edge else "none",
    }
    return Evidence(statement=at_best, control=NoUsableControl.unless_decisive(plain), glue=glue)


@CLAIMS.checked(
    "hardt-ma/sec4-fixed-head",
    paper="hardt-ma",
    ref="Section 4.1, paragraph 3 (last layer)",
    source=ON_DIGITS,
    section="experiments-ablation",
    statement="Keeping the last layer a fixed random projection, never trained, "
    "slightly improved the test error. Digits analogue (the book's): a higher mean test accuracy than the same "
    f"network with the last layer trained, at the paper's rate {PAPER_LR} and, where they differ from it, with "
    "each head at its own best rate of the grid (both readings must hold).",
    control=Control(
        "The paper's network, same layers, shortcuts, initialisation, rate and seeds, with a fixed random head of "
        "rank 1 in place of the full-rank one: every image's logits then lie on one line, so at most two of the "
        "classes can ever be predicted and its test accuracy is at most their share of the test set, which the "
        "claim rules out; the same comparison with the trained-head network must fail. The two networks differ "
        "only in their head."
    ),
)
def sec4_fixed_head(ctx: Context) -> Evidence:
    """Mean test accuracy, fixed against trained head, at the paper's rate and, where the grid's best rates
    (highest mean test accuracy) are not both the paper's, at each head's best rate too: one comparison when the
    two readings coincide. The control runs the comparison at the paper's rate with a fixed head of rank 1 on
    the same network (:data:`RANK1_HEAD`), on the seeds both have."""
    grid, p = training_grid(ctx), plan(ctx)
    best = grid.best_rate["accuracy"]
    readings = [(p.lr, p.lr, "at the paper's rate")]
    if (best[IDENT], best[HEAD]) != (p.lr, p.lr):
        readings.append((best[IDENT], best[HEAD], "each at its best rate"))
    parts = []
    for ra, rb, how in readings:
        a, b = (IDENT, ra), (HEAD, rb)
        # the same seeds for both heads (the fixed head's runs at the paper's rate are the initialisation
        # comparison's, more than the trained head's): the two networks differ only in their head
        n = min(len(grid.runs[a]), len(grid.runs[b]))
        label = f"fixed head tests better, {how}"
        parts.append(_better("accuracy", a, b, label, grid.runs[a][:n], grid.runs[b][:n]))
    statement = parts[0] if len(parts) == 1 else Check.combine(parts, what="both readings")
    a, b = (HEAD_CONTROL, p.lr), (HEAD, p.lr)
    n = min(len(grid.runs[a]), len(grid.runs[b]))
    control = _better("accuracy", a, b, "control: a fixed head of rank 1", grid.runs[a][:n], grid.runs[b][:n])
    glue = {
        **_comparison_glue("head_paper", parts[0]),
        **_comparison_glue("head_best", parts[-1]),
        **_comparison_glue("head_control", control),
        "abl_seeds": len(grid.runs[(HEAD, p.lr)]),
        "abl_rank1_acc": float(np.mean(_scores(grid.runs[a][:n], "accuracy"))),  # the control's seeds
        "abl_rank1_seeds": n,
        "abl_rank1_ceiling": two_class_share(),
        "abl_head_best": best[HEAD],
        "abl_ident_acc_best": best[IDENT],
        "abl_head_readings": "one comparison" if len(parts) == 1 else "two comparisons",
        "abl_head_direction": head_direction(parts[0].numbers["margin_standard_errors"], _pilot_head_margin()),
    }
    return Evidence(statement=statement, control=NoUsableControl.unless_decisive(control), glue=glue)


def two_class_share() -> float:
    """The share of the digits' test set held by its two most common classes: the most a head that can predict
    only two classes (the fixed head of rank 1, the fixed-head claim's control) can score."""
    labels = engine_data.load_digits_images()["test"][1]
    counts = np.sort(np.bincount(labels))
    return float(counts[-2:].sum() / counts.sum())


def _pilot_head_margin() -> float | None:
    """The pilot's margin for the fixed head's comparison, or None where no pilot is loaded (the pilot command,
    rewriting a shipped pilot it cannot read, runs the claims without one)."""
    return None if sizing.PILOT is None else sizing_glue()["size_head_margin"]


def head_direction(measured: float, pilot: float | None) -> str:
    """Which way the fixed head's measured margin and the pilot's point (standard errors, positive: the fixed head
    better, as the claim says; exactly 0: neither way), as the chapter's sentence ends; ``pilot`` None: no pilot
    is loaded, so there is nothing to set the measured margin beside."""
    if pilot is None:
        return "cannot be set beside each other: no pilot is loaded (the pilot command is writing one)"

    def way(margin: float) -> str:
        return "the claim's way" if margin > 0 else ("against the claim" if margin < 0 else "neither way (exactly 0)")

    if measured == 0 or pilot == 0:
        if measured == pilot:
            return "are both exactly 0: neither points either way"
        return f"point {way(measured)} here and {way(pilot)} in the pilot"
    if measured < 0 and pilot < 0:
        return "both point against the claim: the trained head did better, here and in the pilot"
    if measured > 0 and pilot > 0:
        return "both point the claim's way, short of a decision"
    return "point opposite ways"


def head_verdict_sentence(verdict: str) -> str:
    """The chapter's words for the fixed-head claim's derived verdict, before the sentence of
    :func:`head_direction` (a verdict is derived at run time, so the words that read it are computed too)."""
    if verdict == "undecided":
        return "Here the claim is undecided, and undecided is not support:"
    if verdict == "refuted":
        return "Here the difference is decisive, and against the claim:"
    return f"Here the difference is decisive, and the claim is {verdict}:"


_INIT_READINGS = {
    "confirmed": "the small initialisation reaches the lower mean final training loss",
    "refuted": "the printed standard initialisation reaches the lower mean final training loss",
    "undecided": "the comparison is undecided",
}


def init_verdict_sentence(at_paper: str, at_best: str) -> str:
    """The chapter's sentence for what the digits say about the two initialisations, read from the derived
    verdicts of ``hardt-ma/sec4-small-init`` (``at_paper``) and ``hardt-ma/sec4-small-init-best-rate``
    (``at_best``), never typed: a verdict is derived at run time."""
    for name, verdict in (("at_paper", at_paper), ("at_best", at_best)):
        if verdict not in _INIT_READINGS:
            known = ", ".join(_INIT_READINGS)
            raise ValueError(f"{name}: an initialisation claim's verdict is one of {known}, got {verdict!r}")
    return (
        f"On the digits, at the paper's rate {_INIT_READINGS[at_paper]}; with each initialisation at its own "
        f"best rate of the grid, {_INIT_READINGS[at_best]}."
    )


# --- the depth sweep --------------------------------------------------------------------------------------------
@dataclass
class DepthSweep:
    """The residual network at the paper's rate and the network without shortcuts at its best rate of the
    grid, at every depth of the sweep; ``runs[(variant, depth)]``. At the ablation's depth the runs are the
    grid's, topped up in proportion to the deepest network's seeds (at its last look, to what the fixed design
    trains); the deepest residual network trains ``deep_seeds``, the other depths ``depth_seeds``."""

    plan: Plan
    rates: dict
    runs: dict
    timing: dict
    bootstrap_seed: int
    #: The looks of the sequential design that trained it (none without it).
    looks: tuple = ()
    _stats: dict = field(default_factory=dict, repr=False)

    def stats(self, name: str, depth: int, metric: str) -> dict:
        if (name, depth, metric) not in self._stats:
            values = _scores(self.runs[(name, depth)], metric)
            self._stats[name, depth, metric] = ensemble.bootstrap_median(values, seed=self.bootstrap_seed)
        return self._stats[name, depth, metric]

    def mean(self, name: str, depth: int, metric: str) -> float:
        return float(np.mean(_scores(self.runs[(name, depth)], metric)))

    def rows(self) -> list[dict]:
        out = []
        for (name, depth), runs in self.runs.items():
            acc = self.stats(name, depth, "accuracy")
            out.append(
                {
                    "variant": name,
                    "convolutions": self.plan.convolutions(depth),
                    "learning rate": self.rates[name],
                    "median training error": self.stats(name, depth, "training error")["median"],
                    "median training loss": self.stats(name, depth, "training loss")["median"],
                    "median test accuracy": acc["median"],
                    "diverged": f"{sum(r.diverged for r in runs)} of {acc['n']}",
                }
            )
        return out


def depth_sweep(ctx: Context) -> DepthSweep:
    """The depth sweep, trained once per context (it uses the grid)."""
    return ctx.shared("experiments/depth-sweep", lambda: _train_sweep(ctx))


def _train_sweep(ctx: Context) -> DepthSweep:
    p, grid = plan(ctx), training_grid(ctx)
    rates = {IDENT: p.lr, PLAIN: grid.best_rate["loss"][PLAIN]}
    keys = [(name, rate, d) for name, rate in rates.items() for d in p.depths if d != p.blocks]
    # both networks at the ablation's depth: the grid's runs, topped up (as the sweep's runs) so that at each
    # look they keep the proportion to the deepest that the fixed design gives them; at the deepest's last look
    # a comparison of depths sees every seed the fixed design would (the grid may have stopped them sooner)
    shallow = {
        (name, rate, p.blocks): ("deep_seeds" if name == IDENT else "depth_seeds") for name, rate in rates.items()
    }
    have: dict = {key: list(grid.runs[key[:2]]) for key in shallow}
    timer, seed = _Timer("depth", p.steps), _bootstrap_seed(ctx, "experiments/depth-sweep")

    def train(sizes: dict) -> DepthSweep:
        want = {k: p.count(*k, sizes=sizes) for k in keys}
        for key, knob in shallow.items():
            fixed = max(p.count(*key), p.sizes[knob])  # what the fixed design trains of it
            want[key] = max(len(grid.runs[key[:2]]), -(-fixed * sizes[knob] // p.sizes[knob]))
        timer.train(p, have, want)
        new = {(name, d): list(runs) for (name, _, d), runs in have.items()}
        runs = {(name, d): new[(name, d)] for name in rates for d in p.depths}
        return DepthSweep(p, rates, runs, {}, seed)  # the timing of all the looks is set at the end

    return _sequential(ctx, sizing.SWEEP_KNOBS, timer, train, lambda s: _sweep_margins(ctx, s))


def _sweep_margins(ctx: Context, sweep: DepthSweep) -> dict:
    """The margins of the comparisons a look at the depth sweep decides (the degradation and its control, and
    the deepest part of the claim that the residual network trains), with the finished grid."""
    at = _at_look(ctx, depth_sweep=sweep)
    claims = (plain_degradation, sec4_identity_trains_without_bn)
    return sizing.look_margins({d.id: _statement_and_control(d.evidence(at)) for d in claims})


def depth_difference(deeper, shallower, *, seed: int, what: str, test: str) -> Check:
    """``deeper trains worse``: the median final training error of the ``deeper`` runs minus that of the
    ``shallower`` runs above zero, with the bootstrap standard error of the difference of medians.

    The median, not the mean: a diverged run is scored at chance, and each such run among twenty moves a mean by
    a twentieth of the whole range and widens its standard error past deciding anything (two of twenty did, at
    quick seeds 0 and 1), whereas it moves a median by one rank. Claim and control take this same statistic on
    their own runs."""
    d = ensemble.bootstrap_median_difference(deeper, shallower, seed=seed)
    test = f"difference of medians of final training error ({test}), bootstrap standard error"
    return Check.statistical(d["median"], d["se"], 0.0, what=what, test=test, n=d["n"])


def _degradation(sweep: DepthSweep, name: str, label: str) -> Check:
    """Median final training error of the deepest network minus the ablation depth's (:func:`depth_difference`)."""
    p = sweep.plan
    return depth_difference(
        _scores(sweep.runs[(name, p.deep)], "training error"),
        _scores(sweep.runs[(name, p.blocks)], "training error"),
        seed=sweep.bootstrap_seed,
        what=label,
        test=f"{p.convolutions(p.deep)} minus {p.convolutions(p.blocks)} convolutions",
    )


def _mean_margin(sweep: DepthSweep, name: str) -> float:
    """The margin the difference of means would give :func:`_degradation` (the chapter shows why it is not used)."""
    p = sweep.plan
    d = ablation.mean_difference(
        _scores(sweep.runs[(name, p.deep)], "training error"), _scores(sweep.runs[(name, p.blocks)], "training error")
    )
    return Check.statistical(d["difference"], d["se"], 0.0, what=name, test="means", n=d["n"]).numbers[
        "margin_standard_errors"
    ]


def margin_rows(runs) -> list[dict]:
    """The sized checks' margins before (the pilot) and in ``runs`` (the ablation's and the sweep's claim runs)."""
    return sizing.margin_rows({r.decl.id: (r.evidence.statement, r.evidence.controls[0]) for r in runs})


def look_rows(ctx: Context) -> list[dict]:
    """The looks of the sequential design in this context: the grid's, then the sweep's (none without it)."""
    return sizing.look_rows([("training grid", training_grid(ctx).looks), ("depth sweep", depth_sweep(ctx).looks)])


def performance_rows(ctx: Context) -> list[dict]:
    """What training the digits runs took in this context (the parts that were trained)."""
    return [training_grid(ctx).timing, depth_sweep(ctx).timing]


# --- He et al.'s degradation, and training without batch norm (the depth sweep) ------------------------------
def _sweep_convolutions(profile: str) -> tuple[int, int]:
    """(the ablation's depth, the deepest of the sweep) in convolutions, at a profile's knobs."""
    blocks, depths = PROFILE.knobs["blocks"].value(profile), PROFILE.knobs["depths"].value(profile)
    return _convolutions(blocks), _convolutions(max(set(depths) | {blocks}))


_QUICK, _FULL = _sweep_convolutions("quick"), _sweep_convolutions("full")


def _in_full(text: str) -> str:
    return "" if _FULL == _QUICK else f" ({text} in the full profile)"


@CLAIMS.checked(
    "he-et-al/plain-degradation",
    paper="he-et-al",
    ref="Section 1 (Figure 1); Section 4.1 (Plain Networks, Figure 4); Section 4.2 (Figure 6)",
    source=Source.reconstruction(),
    section="experiments-depth",
    statement="A deeper plain network (no shortcuts) ends training with a higher "
    "training error than a shallower one (34 vs 18 layers on ImageNet, 56 "
    f"vs 20 on CIFAR-10). Digits analogue (the book's): {_QUICK[1]} vs {_QUICK[0]} "
    f"convolutions{_in_full(f'{_FULL[1]} vs {_FULL[0]}')}, without batch normalisation (He et al.'s plain "
    "networks had it), median final training error on the whole training set, at the plain network's best "
    "rate of the grid at the shallower depth, the same rate at both depths.",
    control=Control(
        "The same depths with identity shortcuts, the residual networks for "
        "which He et al. report that deeper trains better, not worse."
    ),
)
def plain_degradation(ctx: Context) -> Evidence:
    """Median final training error of the deepest network without shortcuts minus that at the ablation's
    depth; the control is the same difference for the residual network."""
    sweep, p = depth_sweep(ctx), plan(ctx)
    plain_rate = sweep.rates[PLAIN]
    plain = _degradation(sweep, PLAIN, f"no shortcuts, lr {plain_rate}: deeper trains worse")
    residual = _degradation(sweep, IDENT, f"control: the residual network, lr {p.lr}, as 'deeper trains worse'")
    deep_runs = sweep.runs[(IDENT, p.deep)]
    glue = {
        "depth_conv_list": in_words([p.convolutions(d) for d in p.depths]),
        "depth_shallow": p.convolutions(p.blocks),
        "depth_deep": p.convolutions(p.deep),
        "depth_plain_rate": plain_rate,
        "depth_plain_shallow_err": sweep.stats(PLAIN, p.blocks, "training error")["median"],
        "depth_plain_deep_err": sweep.stats(PLAIN, p.deep, "training error")["median"],
        "depth_chance_err": 1 - 1 / engine.DATASETS[p.base.dataset],  # a guess at random
        "depth_plain_diff": plain.numbers["estimate"],
        "depth_plain_margin": plain.numbers["margin_standard_errors"],
        "depth_res_diff": residual.numbers["estimate"],
        "depth_res_margin": residual.numbers["margin_standard_errors"],
        "depth_res_mean_margin": _mean_margin(sweep, IDENT),
        "depth_res_deep_seeds": len(deep_runs),
        "depth_res_deep_diverged": sum(r.diverged for r in deep_runs),
        "depth_res_deep_acc": sweep.stats(IDENT, p.deep, "accuracy")["median"],
    }
    return Evidence(statement=plain, control=NoUsableControl.unless_decisive(residual), glue=glue)


@CLAIMS.checked(
    "hardt-ma/sec4-identity-trains-without-bn",
    paper="hardt-ma",
    ref="Section 4.1, paragraphs 2-3 (training without batch norm)",
    source=ON_DIGITS,
    section="experiments-depth",
    statement="The all-convolutional residual network, without batch normalisation, "
    "with the small initialisation and the fixed head, trains with momentum "
    "SGD at learning rate 0.05. Digits analogue (the book's): median test "
    f"accuracy above {TRAINS_ACCURACY} at {PAPER_LR}, at {_QUICK[0]} and "
    f"{_QUICK[1]} convolutions{_in_full(f'{_FULL[0]} and {_FULL[1]}')}.",
    control=Control(
        "The same layers without shortcuts (at the sweep's shallowest depth) "
        "and with the same small initialisation: no identity path carries "
        "the signal past near-zero weights."
    ),
)
def sec4_identity_trains_without_bn(ctx: Context) -> Evidence:
    """Median test accuracy of the residual network at the paper's rate above :data:`TRAINS_ACCURACY` at the
    ablation's depth and at the deepest of the sweep; the control is the same check without shortcuts."""
    grid, sweep, p = training_grid(ctx), depth_sweep(ctx), plan(ctx)
    seed = _bootstrap_seed(ctx, "hardt-ma/sec4-identity-trains-without-bn")
    ablation_depth, control = _trains_on_grid(ctx)
    checks = [
        ablation_depth,
        _trains(sweep.runs[(IDENT, p.deep)], IDENT, p.lr, f"trains, {p.convolutions(p.deep)} convolutions", seed),
    ]
    glue = {
        "abl_ident_at_paper": grid.stats((IDENT, p.lr), "accuracy")["median"],
        "abl_ident_seeds": len(grid.runs[(IDENT, p.lr)]),
        "abl_pstd_at_paper": grid.stats((PSTD, p.lr), "accuracy")["median"],
        "abl_pstd_diverged": sum(r.diverged for r in grid.runs[(PSTD, p.lr)]),
        "abl_plain_small_acc": grid.stats((PLAIN_SMALL, p.lr), "accuracy")["median"],
        "abl_trains_accuracy": TRAINS_ACCURACY,
    }
    statement = Check.combine(checks, what=f"digits, {p.steps} steps")
    return Evidence(statement=statement, control=NoUsableControl.unless_decisive(control), glue=glue)


def _trains_on_grid(ctx: Context) -> tuple[Check, Check]:
    """The parts of :func:`sec4_identity_trains_without_bn` that the training grid decides: the residual
    network at the ablation's depth, and the control (the same layers without shortcuts)."""
    grid, p = training_grid(ctx), plan(ctx)
    seed = _bootstrap_seed(ctx, "hardt-ma/sec4-identity-trains-without-bn")
    label = f"trains, {p.convolutions(p.blocks)} convolutions"
    return (
        _trains(grid.runs[(IDENT, p.lr)], IDENT, p.lr, label, seed),
        _trains(grid.runs[(PLAIN_SMALL, p.lr)], PLAIN_SMALL, p.lr, "control: trains", seed),
    )


# --- Section 4.1, Table 2: CIFAR-10 and CIFAR-100 --------------------------------------------------------------
#: Top-1 test error (%) of Table 2, (CIFAR-10, CIFAR-100), as printed: a figure's decimals are its printed
#: precision. The CIFAR-100 decimals are the book's notes' (the text conversion keeps only their integer parts).
PRINTED_ERRORS = {
    "All-CNN": ("7.25", "32.39"),
    "Hardt & Ma": ("6.38", "24.64"),
    "ResNet": ("6.43", "25.16"),
    "DenseNet": ("3.74", "19.25"),
}
#: The same figures as numbers.
PAPER_ERRORS = {method: tuple(float(f) for f in figures) for method, figures in PRINTED_ERRORS.items()}
CIFAR_SETS = {"cifar10": (0, "CIFAR-10"), "cifar100": (1, "CIFAR-100")}


def printed_unit(figure: str) -> Decimal:
    """One unit of the last decimal a figure is printed to: ``"6.38"`` gives 0.01."""
    if not isinstance(figure, str) or not re.fullmatch(r"\d+(\.\d+)?", figure):
        raise ValueError(f"a printed figure is a decimal numeral as printed, like '6.38', got {figure!r}")
    return Decimal(1).scaleb(Decimal(figure).as_tuple().exponent)


def reproduced_threshold(figure: str) -> float:
    """The printed figure plus half its printed unit (``"6.38"`` gives 6.385): an error below it is at most the
    figure at the printed precision."""
    return float(Decimal(figure) + printed_unit(figure) / 2)


def cifar_settings(ctx: Context) -> tuple[str, bool]:
    """``(data_dir, cifar_on_cpu)`` from the chapter's settings (``Context.settings``), or else from the
    environment (:data:`CIFAR_DATA_ENV`, :data:`CIFAR_ON_CPU_ENV`), which is how ``verify`` is told."""
    data_dir = ctx.settings.get("data_dir") or os.environ.get(CIFAR_DATA_ENV, "")
    on_cpu = ctx.settings.get("cifar_on_cpu")
    if on_cpu is None:
        on_cpu = os.environ.get(CIFAR_ON_CPU_ENV, "") == "1"
    return str(data_dir or "").strip(), bool(on_cpu)


def cifar_unavailable(ctx: Context) -> str | None:
    """Why this run cannot train on CIFAR (no archives named, no GPU), or None when it can."""
    data_dir, on_cpu = cifar_settings(ctx)
    if not data_dir:
        return "no data_dir was given"
    if not torch.cuda.is_available() and not on_cpu:
        return "no CUDA GPU is available"
    return None


def cifar_seeds(ctx: Context) -> tuple[int, ...]:
    """The training seeds of each CIFAR data set: the chapter's seed ``s`` trains ``s*n .. s*n+n-1``, ``n`` the
    knob ``cifar_seeds`` (at least 2: a standard error needs two runs)."""
    n = validate.integer("cifar_seeds", ctx.cfg.cifar_seeds, minimum=2)
    return tuple(ctx.seed * n + i for i in range(n))


def cifar_milestones(ctx: Context) -> tuple[int, ...]:
    """The CIFAR runs' rate drops: the paper's, at the same fractions of the knob ``cifar_steps`` as they take of
    the book's schedule (:func:`scaled_milestones`)."""
    return scaled_milestones(int(ctx.cfg.cifar_steps))


def cifar_run(ctx: Context, name: str, seed: int) -> engine.TrainResult:
    """The paper's network trained on ``name`` ("cifar10", "cifar100") with training seed ``seed`` for the knob
    ``cifar_steps``, its checkpoints and metrics under ``runs_dir/<name>/seed-<seed>``, resumed from a checkpoint
    kept there."""
    seed = validate.integer("seed", seed, minimum=0)
    settings = _settings(ctx)
    out = f"{settings.runs_dir}/{name}/seed-{seed}" if settings.runs_dir else None
    resume = bool(out) and (Path(out) / engine.CHECKPOINT_NAME).is_file()
    recipe = engine.TENSORFLOW_RECIPE if settings.augmentation == "tensorflow" else {}
    config = engine.TrainConfig(
        dataset=name,
        data_dir=cifar_settings(ctx)[0],
        steps=ctx.cfg.cifar_steps,
        lr_milestones=cifar_milestones(ctx),
        seed=seed,
        out_dir=out,
        resume=resume,
        progress=False,
        eval_every=2000,
        on_divergence="stop",  # scored at chance (_final_error), with the other seeds still trained
        **recipe,
    )
    return engine.train(config)


def _final_error(result: engine.TrainResult) -> float:
    """Final test error (%), a diverged run at chance (:func:`engine.scored_accuracy`): it learned nothing usable,
    and leaving it out would keep only the seeds that trained."""
    return 100 * (1 - engine.scored_accuracy(result))


def _error_before(result: engine.TrainResult, step: int, what: str) -> float:
    """Test error (%) at the last evaluation at or before ``step``; at chance for a run that had diverged by
    then (as :func:`_final_error` scores it)."""
    diverged_at = [r["step"] for r in result.records("diverged")]
    if result.diverged and (not diverged_at or diverged_at[0] <= step):
        return 100 * (1 - 1 / result.config.num_classes)
    evaluations = [r for r in result.records("eval") if r["step"] <= step]
    if not evaluations:
        raise ValueError(f"{what}: the run has no evaluation at or before step {step:,}")
    return 100 * (1 - evaluations[-1]["test_accuracy"])


def _mean_error_below(errors: np.ndarray, threshold: float, *, what: str, test: str) -> Check:
    """The mean of the seeds' errors below ``threshold``, by its standard error (sample SD over sqrt(n))."""
    n = len(errors)
    standard_error = float(np.std(errors, ddof=1)) / math.sqrt(n)
    return Check.statistical(float(np.mean(errors)), standard_error, threshold, what=what, test=test, n=n, above=False)


def _cifar_evidence(ctx: Context, name: str) -> Evidence | NotAvailable:
    index, label = CIFAR_SETS[name]
    seeds = cifar_seeds(ctx)
    why_not = cifar_unavailable(ctx)
    if why_not is not None:
        return NotAvailable(
            needs=f"the {label} binary archives and a GPU", reason=f"{why_not}; run the full profile with the archives"
        )
    figure = PRINTED_ERRORS["Hardt & Ma"][index]
    threshold, drop = reproduced_threshold(figure), cifar_milestones(ctx)[0]
    results = [cifar_run(ctx, name, seed) for seed in seeds]
    errors = np.array([_final_error(r) for r in results])
    before = np.array([_error_before(r, drop, f"{label}, seed {s}") for r, s in zip(results, seeds)])
    n = len(seeds)
    statement = _mean_error_below(
        errors,
        threshold,
        what=f"{label} test error (%) vs Table 2's {figure} at its printed precision",
        test=f"mean of {n} seeds' final test errors, standard error of the mean",
    )
    control = _mean_error_below(
        before,
        threshold,
        what=f"control: {label} test error (%) before the first rate drop (step {drop:,})",
        test=f"mean of the same {n} seeds' test errors at their last evaluation before the drop, standard error "
        "of the mean",
    )
    curves = []
    for seed, result in zip(seeds, results):
        loss_steps, loss = result.curve("train", "loss")
        eval_steps, acc = result.curve("eval", "test_accuracy")
        curves.append(
            {
                "seed": seed,
                "train_loss": (loss_steps.tolist(), loss.tolist()),
                "test_error": (eval_steps.tolist(), (100 * (1 - acc)).tolist()),
            }
        )
    data = {
        "steps": int(ctx.cfg.cifar_steps),
        "seeds": list(seeds),
        "errors": errors.tolist(),
        "diverged": [s for s, r in zip(seeds, results) if r.diverged],
        "error": statement.numbers["estimate"],
        "standard_error": statement.numbers["standard_error"],
        "threshold": threshold,
        "first_drop": drop,
        "errors_before_drop": before.tolist(),
        "curves": curves,
    }
    return Evidence(statement=statement, control=NoUsableControl.unless_decisive(control), data=data)


def sec4_cifar10_error(ctx: Context) -> Evidence | NotAvailable:
    """The paper's network trained on CIFAR-10 with the paper's rate drops over the book's 64,000 steps, one run
    per seed of the knob ``cifar_seeds``: their mean test error against Table 2."""
    return _cifar_evidence(ctx, "cifar10")


def sec4_cifar100_error(ctx: Context) -> Evidence | NotAvailable:
    """The paper's network trained on CIFAR-100 with the paper's rate drops over the book's 64,000 steps, one run
    per seed of the knob ``cifar_seeds``: their mean test error against Table 2."""
    return _cifar_evidence(ctx, "cifar100")


def _seeds_in_words() -> str:
    knob = PROFILE.knobs["cifar_seeds"]
    return f"{knob.quick} in both profiles" if knob.quick == knob.full else f"{knob.quick} quick, {knob.full} full"


def _declare_cifar(name: str, evidence: Callable[[Context], Evidence]) -> None:
    index, label = CIFAR_SETS[name]
    figure = PRINTED_ERRORS["Hardt & Ma"][index]
    decimals = "" if name == "cifar10" else ": integer part printed, decimals from the notes"
    common = dict(
        paper="hardt-ma",
        ref=f"Section 4.1, Table 2 (row 'Ours', {label} column{decimals})",
        source=Source.printed(
            "Table 2 of the text conversion"
            + (", which keeps only the integer part of this figure; its decimals are the notes'" if decimals else "")
        ),
        section="experiments-cifar",
        statement=f"The all-convolutional residual network reaches {figure}% top-1 test error on {label} (checked "
        f"here on the mean final test error of the seeds the knob cifar_seeds trains, {_seeds_in_words()}: "
        f"reproduced if that mean is below the printed figure at its printed precision, that is below "
        f"{reproduced_threshold(figure)}%, the figure plus half its last printed digit, by at least "
        f"{DECISIVE_STANDARD_ERRORS:g} standard errors of the mean).",
    )
    control = Control(
        "The same runs evaluated before the schedule's first rate drop (each seed's last evaluation at or before "
        "it), through the same check: Table 2's figure is the network the whole schedule trains, and before the "
        "first drop the paper's schedule is still at its initial rate, the part of training the figure does not "
        "report, so the claim, as this book reads it (the paper prints no error before the first drop), rules out "
        "that this early network already reaches it."
    )
    CLAIMS.checked(f"hardt-ma/sec4-{name}-error", **common, control=control)(evidence)


_declare_cifar("cifar10", sec4_cifar10_error)
_declare_cifar("cifar100", sec4_cifar100_error)


def table_2_rows(*runs) -> list[dict]:
    """Table 2's rows as printed, and a last row with this book's mean errors over its seeds where the CIFAR
    claims ran (None where one did not)."""
    rows = [
        {"method": f"{method} (paper)", "CIFAR-10 error %": c10, "CIFAR-100 error %": c100}
        for method, (c10, c100) in PAPER_ERRORS.items()
    ]
    ours = {r.decl.id: r.data for r in runs}
    ran = [ours.get(f"hardt-ma/sec4-{name}-error") or {} for name in CIFAR_SETS]
    errors = [d.get("error") for d in ran]
    done = [d for d in ran if "steps" in d]
    if done:
        counts = " or ".join(sorted({str(len(d["seeds"])) for d in done}, key=int))
        label = f"this book (mean of {counts} seeds), {done[0]['steps']:,} steps"
    else:
        label = "this book (not run)"
    rows.append({"method": label, "CIFAR-10 error %": errors[0], "CIFAR-100 error %": errors[1]})
    return rows


for _method, _remark in [
    ("All-CNN", "all-convolutional, with dropout and extra data processing (Springenberg et al.)"),
    (
        "ResNet",
        "a row without a citation (the text before Table 2 names 'the first residual results He et al. (2015)', "
        "which report 6.43% on CIFAR-10 and 19.38% top-1 on ImageNet but no CIFAR-100 result; the paper does not "
        "say where its CIFAR-100 figure comes from)",
    ),
    ("DenseNet", "Huang et al. (2016)"),
]:
    CLAIMS.skip(
        paper="hardt-ma",
        ref=f"Section 4.1, Table 2 (row '{_method}')",
        statement=f"{_method}, {_remark}: {PAPER_ERRORS[_method][0]}% top-1 error on CIFAR-10, "
        f"{PAPER_ERRORS[_method][1]}% on CIFAR-100.",
        why="another paper's result, quoted for comparison; checking it needs that paper's network, CIFAR and a GPU",
    )
CLAIMS.skip(
    paper="hardt-ma",
    ref="Section 4.1, paragraph 4 (after Table 1)",
    statement="Despite its 13.59M trainable parameters and only 50,000 "
    "training images, the network does not seem to overfit too "
    "quickly; a batch-normalised model of this size was hard to "
    "train without significant overfitting on CIFAR-10.",
    why="a qualitative observation about CIFAR-10 (no quantity is printed) "
    "whose contrast "
    "is a batch-normalised network this book does not build; " + _CIFAR_WHY + ". The digits runs show their "
    "train-test gaps as an illustration (experiments-overfitting)",
)
