"""Parameters of the planted model: the ground truth the statistics must recover.

Every effect the generator plants is a field here, so `ground_truth.json` is simply this
dataclass written out, and a test can change one knob without touching the simulation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class PlantedModel:
    # incidents as primary responder, per engineer-month of exposure
    incident_rate_ratio: float = 0.70  # IRR for "certified" (holds >= 1 active certification)
    # heterogeneous effects (0 = none): log IRR changes by incident_effect_level_slope per level
    # above 2, and grows linearly to its full size over the first incident_effect_ramp_months
    # months after the first certification
    incident_effect_level_slope: float = 0.0
    incident_effect_ramp_months: int = 0
    incident_base_rate: float = 0.4  # lambda0 at level 2, fleet index 1, frailty 1
    incident_level_slope: float = -0.15  # log-rate per level above 2
    frailty_variance: float = 0.2  # Gamma(mean 1) per engineer
    vendor_primary_rate: float = (
        0.3  # per cluster-month, led by vendor staff (hardware RMA, 2-21 days)
    )
    # resolve minutes ~ LogNormal(log m0 + severity + level + year trend + log(MTTR)*certified, sigma)
    mttr_ratio: float = 0.80
    mttr_base_minutes: float = 60.0
    mttr_severity_effect: dict[str, float] = field(
        default_factory=lambda: {"sev1": 0.9, "sev2": 0.5, "sev3": 0.0, "sev4": -0.4}
    )
    severity_probabilities: dict[str, float] = field(
        default_factory=lambda: {"sev1": 0.05, "sev2": 0.15, "sev3": 0.45, "sev4": 0.35}
    )
    mttr_level_slope: float = -0.05
    mttr_year_slope: float = -0.15  # per year since the start of the data (tooling improves)
    mttr_sigma: float = 0.7
    # attrition (monthly probabilities; certified status at the start of the month)
    attrition_hazard_ratio: float = 0.60
    voluntary_hazard: float = 0.018
    involuntary_hazard: float = 0.003
    other_hazard: float = 0.0005
    # certification uptake: monthly probability of starting to prepare while uncertified,
    # c0 * exp(level_slope*(level-2)) * min(1 + tenure_slope*tenure_years, tenure_cap)
    cert_start_base: float = 0.018
    cert_start_level_slope: float = 0.35
    cert_start_tenure_slope: float = 0.6
    cert_start_tenure_cap: float = 3.0
    exam_pass_base: float = 0.62  # at level 2, +0.06 per level
    renewal_probability: float = 0.65  # share of awards renewed before they expire
    # selection into certification the HR data does not record (0 = none):
    # the start hazard is multiplied by frailty ** -proneness_selection, so with a positive
    # value the engineers with fewer incidents anyway are the ones who certify
    proneness_selection: float = 0.0
    # bad spells: per engineer-month probability that one starts (uncertified engineers only);
    # for shock_months the incident rate is multiplied by shock_incident_multiplier and the
    # start hazard by shock_certify_multiplier (people certify after a bad spell)
    shock_probability: float = 0.0
    shock_months: int = 3
    shock_incident_multiplier: float = 2.0
    shock_certify_multiplier: float = 6.0
    # fleet growth: monthly GPU growth of a cluster ~ Uniform(low, high)
    fleet_growth_low: float = 0.02
    fleet_growth_high: float = 0.045
    # contractor hours per team-month = 20 h x template headcount x (1 - certified share)^1.5
    contractor_hours_per_template_head: float = 20.0
    contractor_share_exponent: float = 1.5
    contractor_rate_mean_usd: float = 300.0

    def as_dict(self) -> dict:
        return asdict(self)
