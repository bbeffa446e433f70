"""Where each real table gets its planted changes (SYNTHETIC): the slice whose labels change, the
context value withheld from the benchmark, and the numeric column tilted when contexts move together.

The choices follow each table's story, not the audit's behaviour: the slice is an expert slice of the
table's pack, the withheld value a population whose rows differ in a numeric column (older patients
of an emergency department, students' lower incomes), and the tilted column one that a context is cut
from or travels with (age and the age group, carat and the colour grades of larger stones).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PlantedSetup", "PLANTED_TABLES", "QUICK_PLANTED"]


@dataclass(frozen=True)
class PlantedSetup:
    """Where a table gets its planted changes.

    ``slice_expression`` — the expert slice whose labels change; ``context`` / ``new_value`` — the
    population the benchmark lacks; ``tilt`` — the numeric column tilted so that a context's mix moves
    with it (None: the table's used feature); ``also_right`` — (scenario, kind, why) when another kind of
    top claim is right too (a tilted column that is itself a context is a context-mix change).
    """

    table: str
    slice_expression: str
    context: str
    new_value: str
    tilt: str | None = None
    also_right: tuple[tuple[str, str, str], ...] = ()


_CONTEXT_TILT = ("tilt_context", "context_mix_shift", "the tilted column is a context of the pack")


def _cut_from(column: str) -> tuple[tuple[str, str, str], ...]:
    why = f"a context is cut from {column}"
    return (("used_feature", "context_mix_shift", why), ("tilt_context", "context_mix_shift", why))


PLANTED_TABLES = (
    PlantedSetup("arrests", 'colour == "Black"', "sex", "Female", tilt="checks"),
    PlantedSetup("crash", 'seatbelt == "none"', "age_group", "65+", tilt="age", also_right=_cut_from("age")),
    PlantedSetup("diamonds", 'color in ["I", "J"]', "clarity", "I1", tilt="carat", also_right=(_CONTEXT_TILT,)),
    PlantedSetup("covid_testing", 'demo_group in ["misc adult", "other adult"]', "clinic_name", "emergency dept",
                 tilt="age", also_right=_cut_from("age")),
    PlantedSetup("nwtco", 'stage == "IV"', "local_histology", "unfavourable", tilt="age_months",
                 also_right=(_CONTEXT_TILT,)),
    PlantedSetup("flchain", 'flc_group == "g10"', "flc_group", "g01", tilt="kappa", also_right=_cut_from("kappa")),
    PlantedSetup("colon", 'differentiation == "poor"', "extent", "contiguous", tilt="nodes"),
    PlantedSetup("melanoma", 'ulcer == "yes"', "sex", "m", tilt="thickness"),
    PlantedSetup("hmda", 'afam == "yes"', "selfemp", "yes", tilt="lvrat"),
    PlantedSetup("breast_cancer", 'size_band == "small"', "size_band", "large", tilt="radius",
                 also_right=_cut_from("radius")),
    PlantedSetup("default", 'student == "yes"', "student", "yes", tilt="balance"),
    PlantedSetup("chile", 'region == "SA"', "region", "N", tilt="age", also_right=(_CONTEXT_TILT,)),
    PlantedSetup("health_insurance", 'ethnicity == "afam"', "ethnicity", "other", tilt="age",
                 also_right=(_CONTEXT_TILT,)),
    PlantedSetup("wage", 'education in ["below_hs_grad", "hs_grad"]', "race", "asian", tilt="wage"),
    PlantedSetup("cps1988", 'parttime == "yes"', "region", "west", tilt="experience"),
)

QUICK_PLANTED = PLANTED_TABLES[:1]
