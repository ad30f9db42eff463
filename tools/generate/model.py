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
    exam_pass_base: float = 0.62  # first attempt, online programme, level 2 (see below)
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
    # ---- programmes (issue 27): chosen when an engineer starts preparing a certification
    # probability of each programme type; only types with a catalogue course for the track are
    # possible, the rest are renormalised (tracks without such courses are online only)
    programme_probabilities: dict[str, float] = field(
        default_factory=lambda: {
            "online": 0.50,
            "bootcamp": 0.15,
            "vendor_partnership": 0.15,
            "apprenticeship": 0.15,
            "internal": 0.05,
        }
    )
    # 0 = choice independent of level; > 0 multiplies the bootcamp and apprenticeship weights by
    # exp(-s*(level-3)) and the vendor_partnership weight by exp(+s*(level-3)) (juniors to
    # bootcamps and apprenticeships, seniors to vendor courses), then renormalises
    programme_level_selection: float = 0.0
    # vendor partnership enrolments are charged list price x (1 - Uniform(low, high))
    vendor_discount_low: float = 0.5
    vendor_discount_high: float = 0.7
    # time from the first enrolment to the passing exam, in months:
    # T ~ Weibull(certify_time_shape, scale), scale = certify_time_scale_months[track] (else
    # certify_time_scale_default) * exp(certify_time_level_slope*(level-2)) *
    # programme_time_ratio[programme]: a Weibull AFT with level and track is the true model
    certify_time_shape: float = 1.5
    certify_time_scale_months: dict[str, float] = field(
        default_factory=lambda: {"NCA-AIIO": 3.5, "NCP-AII": 6.0, "NCP-AIN": 6.0, "NCP-AIO": 6.0}
    )
    certify_time_scale_default: float = 4.0
    certify_time_level_slope: float = -0.1
    programme_time_ratio: dict[str, float] = field(
        default_factory=lambda: {
            "online": 1.0,
            "bootcamp": 0.5,
            "vendor_partnership": 0.7,
            "apprenticeship": 1.3,
            "internal": 1.0,
        }
    )
    # first attempt: logit P(pass) = logit(exam_pass_base) + exam_pass_level_slope*(level-2)
    # + log(programme_pass_odds_ratio[programme]); a failed first attempt is sat at
    # T x Uniform(0.45, 0.8), the pass at T
    exam_pass_level_slope: float = 0.3
    programme_pass_odds_ratio: dict[str, float] = field(
        default_factory=lambda: {
            "online": 1.0,
            "bootcamp": 1.8,
            "vendor_partnership": 1.5,
            "apprenticeship": 1.2,
            "internal": 1.0,
        }
    )
    # monthly voluntary exit probability x this ratio of the programme of the latest episode,
    # from the month after its start (on top of attrition_hazard_ratio while certified). All
    # 1.0 by default: multipliers below 1 fall mostly on certified time (episodes lead to
    # certifying), so attrition_hazard_ratio would no longer be the whole certified contrast
    # (they biased its estimate by about -0.12 in log); the validity harness's programme
    # worlds plant their own
    programme_exit_hazard_ratio: dict[str, float] = field(
        default_factory=lambda: {
            "online": 1.0,
            "bootcamp": 1.0,
            "vendor_partnership": 1.0,
            "apprenticeship": 1.0,
            "internal": 1.0,
        }
    )
    # ---- careers: monthly promotion probability by level (no minimum time in level), x
    # promotion_certified_hazard_ratio for infrastructure employees certified at the month start
    # (the defaults keep the infrastructure level mix near the earlier 1.6 %/month after 12
    # months in level: in the last year about 12/33/40/13 % at levels 2/3/4/5)
    promotion_hazard: dict[int, float] = field(
        default_factory=lambda: {1: 0.03, 2: 0.02, 3: 0.01, 4: 0.004, 5: 0.0}
    )
    promotion_certified_hazard_ratio: float = 1.5
    promotion_skip_probability: float = 0.02  # a promotion goes up two levels (at most to 5)
    demotion_hazard: float = 0.0005  # per month, levels 2-5, one level down
    # share of infrastructure-division hires paid 3-15 % below the low end of their level's band
    below_band_share: float = 0.08

    def as_dict(self) -> dict:
        return asdict(self)
