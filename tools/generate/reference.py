"""Reference data the synthetic company is built from.

The figures restate `seed-facts.md` (skill levels, salary bands, team templates, learning path,
exam fees, programme prices). They are defaults for a *synthetic* company only; the warehouse
reads its own copies from the dbt seeds, so a change here never changes how data is analysed.
"""

from __future__ import annotations

from dataclasses import dataclass

COMPANY_DOMAIN = "northwind-compute.example"
VENDOR_DOMAINS = ("gpu-field-services.example", "dc-partners.example")

# level -> (low, high) salary band in USD/yr (seed-facts "Skill levels")
SALARY_BANDS = {
    1: (75_000, 95_000),
    2: (95_000, 125_000),
    3: (125_000, 175_000),
    4: (175_000, 250_000),
    5: (250_000, 400_000),
}
LEVEL_NAMES = {1: "Foundation", 2: "Operational", 3: "Professional", 4: "Expert", 5: "Architect"}

INFRA_DIVISION = "AI Infrastructure"

ROLE_FAMILIES = (
    "infrastructure_lead",
    "infrastructure_architect",
    "senior_engineer",
    "operations_engineer",
    "network_specialist",
    "storage_specialist",
    "performance_engineer",
    "security_specialist",
)

# fleet size class -> ((role_family, headcount, level_min, level_max), ...) from seed-facts
TEAM_TEMPLATES: dict[str, tuple[tuple[str, int, int, int], ...]] = {
    "small": (
        ("infrastructure_lead", 1, 4, 4),
        ("operations_engineer", 2, 2, 3),
        ("network_specialist", 1, 3, 3),
    ),
    "medium": (
        ("infrastructure_architect", 1, 5, 5),
        ("senior_engineer", 2, 4, 4),
        ("operations_engineer", 4, 2, 3),
        ("network_specialist", 2, 3, 4),
        ("storage_specialist", 1, 3, 3),
    ),
    "large": (
        ("infrastructure_architect", 2, 5, 5),
        ("senior_engineer", 4, 4, 4),
        ("operations_engineer", 8, 2, 3),
        ("network_specialist", 3, 3, 4),
        ("storage_specialist", 2, 3, 4),
        ("performance_engineer", 2, 4, 4),
        ("security_specialist", 1, 4, 4),
    ),
}

# role requirements (docs/architecture.md table): class -> role -> codes
REQUIRED_CERTS: dict[str, dict[str, tuple[str, ...]]] = {
    "small": {
        "infrastructure_lead": ("NCP-AII",),
        "infrastructure_architect": ("NCP-AII",),
        "senior_engineer": ("NCP-AII",),
        "operations_engineer": ("NCA-AIIO",),
        "network_specialist": ("NCP-AIN",),
        "storage_specialist": ("NCP-AII",),
        "performance_engineer": ("NCP-AIO",),
        "security_specialist": ("CISSP",),
    },
    "medium": {
        "infrastructure_lead": ("NCP-AII",),
        "infrastructure_architect": ("NCP-AII", "VCP-DCV"),
        "senior_engineer": ("NCP-AII", "CKA"),
        "operations_engineer": ("NCA-AIIO", "RHCE"),
        "network_specialist": ("NCP-AIN",),
        "storage_specialist": ("NCP-AII",),
        "performance_engineer": ("NCP-AIO",),
        "security_specialist": ("CISSP",),
    },
    "large": {
        "infrastructure_lead": ("NCP-AII",),
        "infrastructure_architect": ("NCP-AII", "VCP-DCV", "AWS-SAP"),
        "senior_engineer": ("NCP-AII", "CKA"),
        "operations_engineer": ("NCA-AIIO", "RHCE"),
        "network_specialist": ("NCP-AIN",),
        "storage_specialist": ("NCP-AII",),
        "performance_engineer": ("NCP-AIO", "SIX-SIGMA"),
        "security_specialist": ("CISSP",),
    },
}


def fleet_size_class(gpus: int) -> str:
    """small below 100 GPUs, medium below 1,000, large from 1,000 (seed-facts)."""
    if gpus < 100:
        return "small"
    if gpus < 1000:
        return "medium"
    return "large"


@dataclass(frozen=True)
class Certification:
    code: str
    issuer: str
    exam_fee_usd: float
    validity_months: int | None  # None = does not expire


CERTIFICATIONS: dict[str, Certification] = {
    c.code: c
    for c in (
        Certification("NCA-AIIO", "NVIDIA", 125, 24),
        Certification("NCP-AII", "NVIDIA", 400, 24),
        Certification("NCP-AIO", "NVIDIA", 500, 24),
        Certification("NCP-AIN", "NVIDIA", 400, 24),
        Certification("CKA", "Linux Foundation", 445, 24),
        Certification("RHCE", "Red Hat", 500, 36),
        Certification("VCP-DCV", "VMware", 250, 24),
        Certification("AWS-SAP", "AWS", 300, 24),
        Certification("CISSP", "ISC2", 749, 36),
        # Six Sigma belts do not expire: exercises the "no expiry" branch downstream.
        Certification("SIX-SIGMA", "ASQ", 538, None),
        Certification("LINUX-PLUS", "CompTIA", 369, 24),
    )
}


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
        None,
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
)

COURSES_BY_CERT: dict[str, tuple[str, ...]] = {}
for _c in COURSES:
    if _c.certification_code and _c.programme_type == "online":
        COURSES_BY_CERT.setdefault(_c.certification_code, ())
        COURSES_BY_CERT[_c.certification_code] += (_c.course_id,)
COURSE_BY_ID = {c.course_id: c for c in COURSES}

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
