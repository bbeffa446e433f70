"""Domain packs: the built-ins are valid and rich; malformed packs are rejected with the fault named."""
import copy
import doctest

import pytest
import yaml

import domains
from domains import examples, expressions, loader, packs
from domains.loader import PackError, list_builtin, load_builtin, load_pack_yaml

BUILT_IN = ("deepfake", "dermatology", "facial_expression", "generic")
EXPERT_DOMAINS = ("deepfake", "dermatology", "facial_expression")


def test_list_builtin():
    assert list_builtin() == BUILT_IN


def test_medical_is_the_dermatology_packs_former_name():
    assert load_builtin("medical") is load_builtin("dermatology")
    assert load_builtin("medical").name == "dermatology" and "Dermatology" in load_builtin("medical").title
    assert domains.is_builtin("medical") and domains.builtin_name("medical") == "dermatology"
    assert domains.aliases_of("dermatology") == ("medical",) and domains.aliases_of("generic") == ()
    assert "medical" not in list_builtin()
    with pytest.raises(PackError, match="unknown domain"):
        load_builtin("radiology")
    bench, prod = examples.make_example("medical", n_benchmark=50, n_production=50, random_state=1)
    same = examples.make_example("dermatology", n_benchmark=50, n_production=50, random_state=1)
    assert bench.equals(same[0]) and prod.equals(same[1]) and bench.attrs["domain"] == "dermatology"
    assert examples.PLANTED["medical"] is examples.PLANTED["dermatology"]


@pytest.mark.parametrize("name", EXPERT_DOMAINS)
def test_builtin_expert_packs_are_rich(name):
    pack = load_builtin(name)
    assert pack.name == name
    assert len(pack.slices) >= 8
    intersections = [s for s in pack.slices if len(expressions.columns_used(s.ast)) >= 2]
    assert len(intersections) >= 2, "expert slices include intersections of contexts"
    for s in pack.slices:
        assert len(s.rationale) > 40 and any(ch.isdigit() for ch in s.reference), s.name  # a year in each reference
        assert set(expressions.columns_used(s.ast)) <= set(pack.context_types)
    assert pack.primary_metric == pack.metrics[0]
    assert len(pack.context) >= 8
    if pack.task == "binary":
        assert pack.positive_class in pack.classes and len(pack.classes) == 2


def test_spec_contexts_present():
    fer, fake, med = (load_builtin(n) for n in ("facial_expression", "deepfake", "medical"))
    assert set(fer.classes) == {"anger", "disgust", "fear", "happiness", "sadness", "surprise", "neutral"}
    assert fer.primary_metric == "macro_f1" and "per_class_recall" in fer.metrics
    assert {"head_pose_yaw", "illumination", "occlusion", "age_group", "skin_tone"} <= set(fer.context_types)
    assert fake.positive_class == "fake"
    assert {"generator", "compression", "resolution", "platform"} <= set(fake.context_types)
    assert {"auc", "false_positive_rate", "recall_per_manipulation"} <= set(fake.metrics)
    assert med.column("fitzpatrick").min == 1 and med.column("fitzpatrick").max == 6
    assert med.column("modality").values == ("dermoscopic", "clinical", "smartphone")
    assert {"sensitivity", "specificity", "auc", "balanced_accuracy"} <= set(med.metrics)
    assert any(s.expression == 'fitzpatrick in [5, 6] and modality == "smartphone"' for s in med.slices)


def test_references_cite_the_literature():
    text = " ".join(s.reference for n in EXPERT_DOMAINS for s in load_builtin(n).slices)
    for needle in ("Groh", "Buolamwini", "Daneshjou", "Winkler", "Dolhansky", "Rössler", "Li S., Deng W.", "Kollias"):
        assert needle in text


def test_generic_pack_has_no_contexts():
    pack = load_builtin("generic")
    assert pack.context == () and pack.slices == () and pack.classes == ()


def test_packs_are_immutable_and_cached():
    pack = load_builtin("medical")
    assert load_builtin("medical") is pack
    with pytest.raises(Exception):
        pack.name = "other"
    with pytest.raises(Exception):
        pack.slices[0].expression = "age < 1"
    assert isinstance(pack.slices, tuple) and isinstance(pack.context[1].values, tuple)


def test_expectations_cover_columns_values_ranges_and_nulls():
    pack = load_builtin("medical")
    kinds = {(e.type, e.column) for e in pack.all_expectations()}
    assert ("expect_column_to_exist", "modality") in kinds
    assert ("expect_column_values_to_be_in_set", "body_site") in kinds
    assert ("expect_column_values_to_be_between", "fitzpatrick") in kinds
    assert ("expect_column_values_to_not_be_null", "fitzpatrick") in kinds
    assert ("expect_column_values_to_be_in_set", "skin_markings") in kinds
    between = next(e for e in pack.all_expectations() if e.column == "fitzpatrick" and e.type.endswith("between"))
    assert (between.min_value, between.max_value) == (1, 6)


@pytest.mark.parametrize("name", BUILT_IN)
def test_round_trip_through_yaml(name):
    pack = load_builtin(name)
    assert load_pack_yaml(yaml.safe_dump(pack.to_dict(), allow_unicode=True)) == pack


def test_slice_masks_on_example_data():
    pack = load_builtin("deepfake")
    bench, _ = examples.make_example("deepfake", n_benchmark=300, n_production=300, random_state=3)
    masks = pack.slice_masks(bench)
    assert set(masks) == {s.name for s in pack.slices}
    assert all(m.shape == (300,) and m.dtype == bool for m in masks.values())
    assert pack.slice_masks(bench[["compression"]]).keys() == {"heavy_compression"}


def _medical() -> dict:
    return copy.deepcopy(load_builtin("medical").to_dict())


def _error(data: dict) -> str:
    with pytest.raises(PackError) as info:
        load_pack_yaml(yaml.safe_dump(data))
    assert isinstance(info.value, ValueError)
    return str(info.value)


def test_unknown_column_in_slice_names_slice_and_position():
    data = _medical()
    data["slices"][2]["expression"] = 'fitzpatrik in [5, 6] and modality == "smartphone"'
    message = _error(data)
    assert "slices[2] (fitzpatrick_v_vi_smartphone).expression" in message
    assert "unknown column 'fitzpatrik'" in message and "did you mean 'fitzpatrick'" in message
    assert "at position 0" in message and "^" in message


def test_syntax_error_in_slice_names_slice_and_position():
    data = _medical()
    data["slices"][0]["expression"] = "fitzpatrick in [5, 6"
    message = _error(data)
    assert "slices[0] (fitzpatrick_v_vi).expression" in message and "position 20" in message


def test_type_error_and_unknown_value_in_slice():
    data = _medical()
    data["slices"][1]["expression"] = 'modality < "smartphone"'
    assert "cannot order categorical column 'modality'" in _error(data)
    data["slices"][1]["expression"] = 'modality == "smartphon"'
    assert "['smartphon'] not among the allowed values of 'modality'" in _error(data)
    data["slices"][1]["expression"] = "fitzpatrick in [6, 7]"
    assert "[7] outside the declared range of 'fitzpatrick' [1.0, 6.0]" in _error(data)


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d.update(extra_field=1), "extra_field: Extra inputs are not permitted"),
    (lambda d: d.pop("title"), "title: Field required"),
    (lambda d: d.update(task="regression"), "task: Input should be 'multiclass' or 'binary'"),
    (lambda d: d.update(positive_class="cancer"), "positive_class: 'cancer' is not one of"),
    (lambda d: d.update(classes=["a", "b", "c"]), "a binary task needs exactly 2 classes"),
    (lambda d: d.update(metrics=["sensitivity", "f2"]), "metrics: unknown ['f2']"),
    (lambda d: d.update(metrics=["per_class_recall"]), "primary (first) metric"),
    (lambda d: d.update(min_slice_size=0), "min_slice_size: Input should be greater than or equal to 1"),
    (lambda d: d["context"][0].update(type="number"), "context[0] (fitzpatrick).type"),
    (lambda d: d["context"][1].update(values=[]), "categorical column 'body_site': 'values' is empty"),
    (lambda d: d["context"][0].update(min=7), "min 7.0 > max 6.0"),
    (lambda d: d["slices"].append(dict(d["slices"][0])), "slices: duplicate names ['fitzpatrick_v_vi']"),
    (lambda d: d["slices"][0].update(name="Bad Name"), "slices[0] (Bad Name).name"),
    (lambda d: d["slices"][0].pop("reference"), "slices[0] (fitzpatrick_v_vi).reference: Field required"),
    (lambda d: d["expectations"][0].update(type="expect_magic"), "expectations[0]"),
    (lambda d: d["expectations"][0].update(mostly=2), "expectations[0].mostly"),
])
def test_malformed_pack_fields_are_named(mutate, fragment):
    data = _medical()
    mutate(data)
    assert fragment in _error(data)


def test_a_categorical_context_may_leave_its_values_to_the_benchmark():
    data = _medical()
    data["context"][1].pop("values")
    pack = loader.load_pack_dict(data)
    assert pack.column("body_site").values is None
    assert not [e for e in pack.all_expectations() if e.type.endswith("in_set") and e.column == "body_site"]


def test_multiclass_pack_rejects_binary_metrics():
    data = copy.deepcopy(load_builtin("facial_expression").to_dict())
    data["metrics"] = ["macro_f1", "auc"]
    assert "['auc'] need a binary task" in _error(data)


@pytest.mark.parametrize("text, fragment", [
    ("name: [unclosed\n", "invalid YAML at line 2"),
    ("- just\n- a list\n", "must be a YAML mapping"),
    ("", "must be a YAML mapping"),
])
def test_bad_yaml(text, fragment):
    with pytest.raises(PackError) as info:
        load_pack_yaml(text)
    assert fragment in str(info.value)


def test_unknown_builtin():
    with pytest.raises(PackError, match="unknown domain 'astronomy'"):
        load_builtin("astronomy")


def test_yaml_booleans_in_classes_get_a_hint():
    text = ("name: x\ntitle: X\ndescription: d\ntask: binary\nclasses: [no, yes]\npositive_class: 'yes'\n"
            "metrics: [auc]\n")
    with pytest.raises(PackError) as info:
        load_pack_yaml(text)
    assert "classes[0]: Input should be a valid string (YAML reads unquoted yes/no" in str(info.value)


def test_custom_minimal_pack():
    pack = load_pack_yaml("""
name: retail
title: Retail demand
description: Store-level classification.
task: binary
classes: ["no", "yes"]
positive_class: "yes"
metrics: [balanced_accuracy]
context:
  - {name: region, type: categorical, values: [north, south], description: Sales region.}
  - {name: promo, type: boolean, description: Promotion running.}
slices:
  - name: south_promo
    expression: region == "south" and promo
    rationale: Promotions in the south behave differently.
    reference: Internal analysis (2024), report 17.
""")
    assert pack.slice("south_promo").ast is not None and pack.min_slice_size == 30


@pytest.mark.parametrize("module", [expressions, packs, loader, examples])
def test_doctests(module):
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0


def test_public_exports():
    for name in domains.__all__:
        assert hasattr(domains, name)
