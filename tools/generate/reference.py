"""Reference data the synthetic company is built from.

Skill levels and salary bands, team templates with their required certifications, fleet size
classes and the certification catalogue (validity, exam fee) are read from the dbt seeds
(`dbt_project/seeds/*.csv`), the same files the warehouse reads, so a company that overrides a
seed gets a synthetic company built from its own reference data (`use_seeds`). The rest
(names, sites, courses, incident titles) exists only for synthetic data.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

SEEDS_DIR = Path(__file__).resolve().parents[2] / "dbt_project" / "seeds"

COMPANY_DOMAIN = "northwind-compute.example"
VENDOR_DOMAINS = ("gpu-field-services.example", "dc-partners.example")

INFRA_DIVISION = "AI Infrastructure"


@dataclass(frozen=True)
class Certification:
    code: str
    issuer: str
    exam_fee_usd: float
    validity_months: int | None  # None = does not expire


# read from the dbt seeds by use_seeds() at import (see the end of this module)
# role families of the infrastructure division, in the order of team_template_requirements.csv
# (the order fixes role indices and so the random draws that use them)
ROLE_FAMILIES: tuple[str, ...] = ()
SALARY_BANDS: dict[int, tuple[int, int]] = {}  # level -> (low, high) USD/yr
LEVEL_NAMES: dict[int, str] = {}
TEAM_TEMPLATES: dict[str, tuple[tuple[str, int, int, int], ...]] = {}  # (role, n, lo, hi)
REQUIRED_CERTS: dict[str, dict[str, tuple[str, ...]]] = {}  # class -> role -> codes
FLEET_SIZE_CLASSES: tuple[tuple[str, int, int | None], ...] = ()  # (class, min, max GPUs)
CERTIFICATIONS: dict[str, Certification] = {}


def fleet_size_class(gpus: int) -> str:
    """The class of ``fleet_size_classes.csv`` whose [gpu_min, gpu_max] holds ``gpus``."""
    for name, low, high in FLEET_SIZE_CLASSES:
        if gpus >= low and (high is None or gpus <= high):
            return name
    return FLEET_SIZE_CLASSES[-1][0]


# exam fees for codes whose fee the catalogue seed leaves blank (no public list price)
FALLBACK_EXAM_FEES = {"RHCE": 500, "VCP-DCV": 250, "AWS-SAP": 300, "CISSP": 749, "CCSP": 599}
FALLBACK_FEE = 300


@dataclass(frozen=True)
class Course:
    course_id: str
    title: str
    provider: str
    programme_type: str
    hours: float
    cost_usd: float
    certification_code: str | None


# NVIDIA learning path hours from seed-facts; bootcamp 15-25k; vendor partnership list price
# (charged with a 50-70 % discount per enrolment); apprenticeship costs senior time, not fees.
COURSES: tuple[Course, ...] = (
    Course("NV-DLF", "Fundamentals of Deep Learning", "NVIDIA", "online", 8, 90, "NCA-AIIO"),
    Course(
        "NV-AIINF", "Introduction to AI Infrastructure", "NVIDIA", "online", 16, 500, "NCA-AIIO"
    ),
    Course("NV-GPUARCH", "GPU Architecture Fundamentals", "NVIDIA", "online", 24, 750, "NCA-AIIO"),
    Course("NV-MGPU", "Multi-GPU Programming", "NVIDIA", "online", 40, 1500, "NCP-AII"),
    Course("NV-IB", "InfiniBand Networking for AI", "NVIDIA", "online", 32, 1200, "NCP-AIN"),
    Course("NV-STOR", "Storage Systems for AI", "NVIDIA", "online", 24, 900, "NCP-AII"),
    Course("NV-CLUS", "Cluster Management", "NVIDIA", "online", 40, 1500, "NCP-AII"),
    Course(
        "NV-AIOPS",
        "AI Operations: Monitoring and Troubleshooting",
        "NVIDIA",
        "online",
        24,
        900,
        "NCP-AIO",
    ),
    Course(
        "LF-CKA", "Kubernetes Administration (LFS458)", "Linux Foundation", "online", 35, 595, "CKA"
    ),
    Course(
        "RH-294",
        "Red Hat Enterprise Linux Automation with Ansible (RH294)",
        "Red Hat",
        "online",
        32,
        3800,
        "RHCE",
    ),
    Course(
        "VM-ICM", "vSphere: Install, Configure, Manage", "VMware", "online", 40, 4500, "VCP-DCV"
    ),
    Course("AWS-ARCH", "Advanced Architecting on AWS", "AWS", "online", 24, 2025, "AWS-SAP"),
    Course("ISC2-CISSP", "CISSP Official Training", "ISC2", "online", 40, 2800, "CISSP"),
    Course("ASQ-GB", "Six Sigma Green Belt", "ASQ", "online", 40, 2000, "SIX-SIGMA"),
    Course("CT-LINUX", "CompTIA Linux+ Preparation", "CompTIA", "online", 30, 600, "LINUX-PLUS"),
    Course(
        "BC-DGX",
        "DGX Infrastructure Bootcamp (3 weeks)",
        "NVIDIA",
        "bootcamp",
        120,
        22000,
        "NCP-AII",
    ),
    Course(
        "BC-OPS",
        "GPU Operations Bootcamp (2 weeks)",
        "GPU Academy",
        "bootcamp",
        80,
        15500,
        "NCA-AIIO",
    ),
    Course(
        "AP-SHADOW",
        "Infrastructure Apprenticeship (shadowing, 3-6 months)",
        "internal",
        "apprenticeship",
        400,
        0,
        "NCA-AIIO",
    ),
    Course(
        "AP-CLUSTER",
        "Cluster Apprenticeship (shadowing a cluster lead, 3-6 months)",
        "internal",
        "apprenticeship",
        400,
        0,
        "NCP-AII",
    ),
    Course(
        "AP-ONBOARD",
        "On-call Shadowing for New Hires (4 weeks)",
        "internal",
        "apprenticeship",
        40,
        0,
        None,
    ),
    Course(
        "VP-NVFOUND",
        "NVIDIA AI Infrastructure Foundations (partner programme)",
        "NVIDIA",
        "vendor_partnership",
        24,
        3500,
        "NCA-AIIO",
    ),
    Course(
        "VP-NVONSITE",
        "NVIDIA On-site AI Infrastructure Training (partner programme)",
        "NVIDIA",
        "vendor_partnership",
        40,
        6000,
        "NCP-AII",
    ),
    Course(
        "VP-AMDROCM",
        "AMD ROCm Developer Training (partner programme)",
        "AMD",
        "vendor_partnership",
        24,
        3000,
        None,
    ),
    Course("INT-RUNBOOK", "GPU Cluster Runbooks and On-call", "internal", "internal", 12, 0, None),
    Course(
        "INT-SAFETY", "Data Centre Power and Cooling Safety", "internal", "internal", 6, 0, None
    ),
    Course(
        "INT-AIIO",
        "AI Infrastructure Operations Path (in-house, vendor content)",
        "internal",
        "internal",
        30,
        0,
        "NCA-AIIO",
    ),
)

# online courses per certification track (an episode enrols in some of them)
COURSES_BY_CERT: dict[str, tuple[str, ...]] = {}
# the programme courses of a track: (track, programme type) -> course (one per pair at most)
PROGRAMME_COURSE: dict[tuple[str, str], str] = {}
for _c in COURSES:
    if _c.certification_code and _c.programme_type == "online":
        COURSES_BY_CERT.setdefault(_c.certification_code, ())
        COURSES_BY_CERT[_c.certification_code] += (_c.course_id,)
    elif _c.certification_code:
        PROGRAMME_COURSE[(_c.certification_code, _c.programme_type)] = _c.course_id
COURSE_BY_ID = {c.course_id: c for c in COURSES}
PROGRAMME_TYPES = ("online", "bootcamp", "vendor_partnership", "apprenticeship", "internal")

SITES = (
    ("fra", "Frankfurt"),
    ("ams", "Amsterdam"),
    ("dub", "Dublin"),
    ("par", "Paris"),
    ("sto", "Stockholm"),
    ("iad", "Ashburn"),
    ("pdx", "Hillsboro"),
    ("sin", "Singapore"),
)
GPU_MODELS = ("A100", "H100", "H200", "B200")

# other divisions: name -> (share of non-infra headcount, teams, role_family)
OTHER_DIVISIONS = (
    ("Engineering", 0.38, ("platform", "backend", "frontend", "data"), "software_engineer"),
    ("Sales", 0.18, ("emea-sales", "americas-sales", "apac-sales"), "account_executive"),
    ("Finance", 0.08, ("accounting", "fp-and-a"), "financial_analyst"),
    ("People", 0.06, ("recruiting", "people-ops"), "people_partner"),
    ("Operations", 0.18, ("facilities", "it-support", "procurement"), "operations_specialist"),
    ("Marketing", 0.12, ("brand", "growth"), "marketing_manager"),
)

SERVICES = ("compute", "network-fabric", "storage", "scheduler", "power-cooling", "monitoring")
INCIDENT_TITLES = {
    "compute": (
        "GPU fell off the bus (XID 79) on {node}",
        "ECC errors above threshold on {node}",
        "Driver mismatch after upgrade on {node}",
    ),
    "network-fabric": (
        "InfiniBand link flapping on {node}",
        "RDMA throughput degraded in {cluster}",
        "Subnet manager failover in {cluster}",
    ),
    "storage": (
        "Parallel file system latency high in {cluster}",
        "GPUDirect Storage errors on {node}",
    ),
    "scheduler": ("Jobs stuck pending in {cluster}", "Slurm controller unresponsive in {cluster}"),
    "power-cooling": ("Rack inlet temperature high in {cluster}", "PDU failure affecting {node}"),
    "monitoring": ("Telemetry gap for {cluster}", "DCGM exporter down on {node}"),
}

FIRST_NAMES = (
    "Anna",
    "Ben",
    "Clara",
    "David",
    "Elena",
    "Felix",
    "Greta",
    "Hannah",
    "Ivan",
    "Julia",
    "Karim",
    "Lena",
    "Marco",
    "Nina",
    "Oskar",
    "Paula",
    "Quentin",
    "Rosa",
    "Samir",
    "Tara",
    "Ugo",
    "Vera",
    "Wei",
    "Ximena",
    "Yusuf",
    "Zoe",
    "Amir",
    "Beatriz",
    "Chen",
    "Dana",
    "Emil",
    "Fatima",
    "Gabriel",
    "Hiro",
    "Ines",
    "Jonas",
    "Kaja",
    "Luis",
    "Mira",
    "Noah",
    "Olga",
    "Priya",
    "Rafael",
    "Sofia",
    "Tom",
    "Uma",
    "Viktor",
    "Wanda",
    "Yara",
    "Zeynep",
    "Aiko",
    "Bruno",
    "Carmen",
    "Dmitri",
    "Eva",
    "Finn",
    "Gita",
    "Hugo",
    "Ilse",
    "Jamal",
    "Kofi",
    "Lucia",
    "Mateo",
    "Nadia",
    "Omar",
    "Pia",
    "Ravi",
    "Sara",
    "Timo",
    "Ulla",
)
LAST_NAMES = (
    "Schmidt",
    "Meyer",
    "Novak",
    "Rossi",
    "Garcia",
    "Jansen",
    "Dubois",
    "Kowalski",
    "Larsen",
    "Silva",
    "Nguyen",
    "Tanaka",
    "Okafor",
    "Haddad",
    "Petrov",
    "Fischer",
    "Weber",
    "Moreau",
    "Bianchi",
    "Lopez",
    "Visser",
    "Lindqvist",
    "Murphy",
    "Kaya",
    "Ahmed",
    "Sato",
    "Kim",
    "Patel",
    "Singh",
    "Costa",
    "Horvat",
    "Nowak",
    "Berg",
    "Hansen",
    "Eriksen",
    "Wagner",
    "Becker",
    "Hoffmann",
    "Richter",
    "Klein",
    "Wolf",
    "Neumann",
    "Schwarz",
    "Zimmermann",
    "Braun",
    "Hartmann",
    "Lange",
    "Werner",
    "Krause",
    "Lehmann",
    "Walsh",
    "Byrne",
    "OBrien",
    "Dalton",
    "Ferreira",
    "Santos",
    "Mendes",
    "Alves",
    "Kovacs",
    "Toth",
    "Svoboda",
    "Dvorak",
    "Popescu",
    "Ionescu",
    "Yilmaz",
    "Demir",
    "Sahin",
    "Chowdhury",
    "Rahman",
    "Ito",
    "Yamamoto",
    "Park",
)
VENDORS = ("GPU Field Services GmbH", "DC Partners Europe B.V.", "Rackwise Ops Ltd")


# ------------------------------------------------------------------------ from the dbt seeds
def _rows(seeds_dir: Path, name: str) -> list[dict[str, str]]:
    path = Path(seeds_dir) / name
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            return list(csv.DictReader(fh))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: the generator reads its reference data from the dbt seeds; restore the "
            "file or point --seeds-dir at a folder that has it"
        ) from None


def _int(value: str) -> int | None:
    return int(float(value)) if value and value.strip() else None


def load_seeds(seeds_dir: Path = SEEDS_DIR) -> dict:
    """Salary bands, level names, role families, team templates, required certifications,
    fleet size classes and certifications from the seed CSV files in ``seeds_dir``."""
    levels = _rows(seeds_dir, "skill_levels.csv")
    templates: dict[str, list] = {}
    required: dict[str, dict[str, tuple[str, ...]]] = {}
    template_rows = _rows(seeds_dir, "team_template_requirements.csv")
    for r in template_rows:
        cls, role = r["fleet_size_class"], r["role_family"]
        codes = tuple(c.strip() for c in r["required_certification_codes"].split(";") if c.strip())
        required.setdefault(cls, {})[role] = codes
        if _int(r["headcount"]):
            templates.setdefault(cls, []).append(
                (role, _int(r["headcount"]), _int(r["level_min"]), _int(r["level_max"]))
            )
    classes = [
        (r["fleet_size_class"], _int(r["gpu_min"]) or 0, _int(r["gpu_max"]))
        for r in _rows(seeds_dir, "fleet_size_classes.csv")
    ]
    certs = {
        r["code"]: Certification(
            r["code"],
            r["issuer"],
            float(_int(r["exam_fee_usd"]) or FALLBACK_EXAM_FEES.get(r["code"], FALLBACK_FEE)),
            _int(r["validity_months"]),
        )
        for r in _rows(seeds_dir, "certification_catalogue.csv")
    }
    return {
        "SALARY_BANDS": {
            int(r["skill_level"]): (int(r["salary_min_usd"]), int(r["salary_max_usd"]))
            for r in levels
        },
        "LEVEL_NAMES": {int(r["skill_level"]): r["name"] for r in levels},
        "TEAM_TEMPLATES": {k: tuple(v) for k, v in templates.items()},
        "ROLE_FAMILIES": tuple(dict.fromkeys(r["role_family"] for r in template_rows)),
        "REQUIRED_CERTS": required,
        "FLEET_SIZE_CLASSES": tuple(sorted(classes, key=lambda c: c[1])),
        "CERTIFICATIONS": certs,
    }


def use_seeds(seeds_dir: Path = SEEDS_DIR) -> None:
    """Build the synthetic company from the seeds in ``seeds_dir`` (a company's override)."""
    globals().update(load_seeds(seeds_dir))


use_seeds()
