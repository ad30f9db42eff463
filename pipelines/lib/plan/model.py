"""The team rolled forward quarter by quarter: one set of transitions, run two ways.

State per role family: people idle at (level, stage) and people preparing at (level, stage,
programme, quarters since start). The stage is how many certifications of the role's track they
hold; the track lists a role's required certifications with their prerequisites first (NCP-AII
after NCA-AIIO), so a start is always for the next certification of the track. Each quarter, in
this order: starts leave the idle, exits take people at their level's rate (certified or not),
preparations certify at the programme's Weibull hazard (give up after `MAX_AGE` quarters),
promotions move survivors up a level, hires join uncertified at the end of the quarter.

`project` with `sample=None` gives expected counts, and is affine in the decisions: the
optimiser reads its constraint matrix from it. With a `numpy` Generator it draws binomial
counts per Monte Carlo draw (each draw with its own rates) for the probability of meeting the
templates. The decision vector's layout is `Layout`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipelines.lib.plan.rates import LEVELS, PREREQUISITES, PROGRAMMES, Rates, weibull_cdf

MAX_AGE = 4  # quarters a preparation lasts at most before the engineer gives up
APPRENTICESHIP = PROGRAMMES.index("apprenticeship")
VENDOR = PROGRAMMES.index("vendor_partnership")


def track(codes: tuple[str, ...]) -> tuple[str, ...]:
    """The role's certifications in the order they can be taken (prerequisites first)."""
    out: list[str] = []
    for code in codes:
        for pre in PREREQUISITES.get(code, ()):
            if pre not in out:
                out.append(pre)
        if code not in out:
            out.append(code)
    return tuple(out)


def held_in_track(held, codes: tuple[str, ...]) -> int:
    """How many of the track's certifications a person holds, a prerequisite counting as held
    when a certification that requires it is (an NCP-AII holder whose NCA-AIIO expired needs
    neither again)."""
    have = set(held)
    have |= {pre for code in held for pre in PREREQUISITES.get(code, ())}
    return sum(code in have for code in codes)


@dataclass(frozen=True)
class Role:
    name: str
    band: tuple[int, int]  # level_min, level_max of the template
    track: tuple[str, ...]

    @property
    def levels(self) -> tuple[int, ...]:
        return tuple(range(self.band[0], self.band[1] + 1))


@dataclass(frozen=True)
class Layout:
    """Decision variables: hires (role, level in band, quarter), starts (role, level in band,
    stage, programme, quarter), vendor groups of ten (quarter), shortfall (role, quarter)."""

    roles: tuple[Role, ...]
    quarters: int

    @property
    def stages(self) -> int:
        return max((len(r.track) for r in self.roles), default=0)

    def hire_index(self) -> list[tuple[int, int, int]]:
        return [
            (r, lvl, t)
            for r, role in enumerate(self.roles)
            for lvl in role.levels
            for t in range(self.quarters)
        ]

    def start_index(self) -> list[tuple[int, int, int, int, int]]:
        return [
            (r, lvl, g, p, t)
            for r, role in enumerate(self.roles)
            for lvl in role.levels
            for g in range(len(role.track))
            for p in range(len(PROGRAMMES))
            for t in range(self.quarters)
        ]

    @property
    def n_hires(self) -> int:
        return len(self.hire_index())

    @property
    def n_starts(self) -> int:
        return len(self.start_index())

    @property
    def n_decisions(self) -> int:
        return self.n_hires + self.n_starts

    @property
    def n_vars(self) -> int:
        return self.n_decisions + self.quarters + len(self.roles) * self.quarters

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hires [B, R, L, T], starts [B, R, L, G, P, T]) from decision vectors [B, n]."""
        b = x.shape[0]
        hires = np.zeros((b, len(self.roles), len(LEVELS), self.quarters))
        starts = np.zeros(
            (b, len(self.roles), len(LEVELS), self.stages, len(PROGRAMMES), self.quarters)
        )
        hi = self.hire_index()
        if hi:
            r, lvl, t = np.array(hi).T
            hires[:, r, lvl - 1, t] = x[:, : len(hi)]
        si = self.start_index()
        if si:
            r, lvl, g, p, t = np.array(si).T
            starts[:, r, lvl - 1, g, p, t] = x[:, len(hi) : len(hi) + len(si)]
        return hires, starts


@dataclass
class RateArrays:
    """Rates as arrays with a leading draw axis (1 for point values)."""

    exit: np.ndarray  # [D, L, 2]
    promote: np.ndarray  # [D, L]
    hazard: np.ndarray  # [D, R, G, P, A]: certify in quarter a+1 given not yet
    available: np.ndarray  # [R, G, P] bool: programme offered for the code
    cost_per_start: np.ndarray  # [D, R, G, P]
    salary: np.ndarray  # [D, L]
    hiring_cost_share: np.ndarray  # [D]


def rate_arrays(rates: Rates, layout: Layout, draws: int = 0, rng=None) -> RateArrays:
    """Point values (draws=0) or `draws` Monte Carlo draws of every rate from its interval."""
    d = max(draws, 1)

    def val(rate) -> np.ndarray:
        return rate.draw(rng, draws) if draws else np.full(1, rate.value)

    exit_ = np.stack(
        [np.stack([val(rates.exit[(lvl, c)]) for c in (False, True)], -1) for lvl in LEVELS], 1
    )
    promote = np.stack([val(rates.promote[lvl]) for lvl in LEVELS], 1)
    salary = np.stack([val(rates.salary[lvl]) for lvl in LEVELS], 1)
    shape = (len(layout.roles), layout.stages, len(PROGRAMMES))
    hazard = np.zeros((d, *shape, MAX_AGE))
    cost = np.zeros((d, *shape))
    available = np.zeros(shape, bool)
    edges = 3.0 * np.arange(MAX_AGE + 1)
    for r, role in enumerate(layout.roles):
        for g, code in enumerate(role.track):
            for p, prog in enumerate(PROGRAMMES):
                if (prog, code) not in rates.median_months or (
                    prog,
                    code,
                ) not in rates.cost_per_start:
                    continue
                available[r, g, p] = True
                median = np.maximum(val(rates.median_months[(prog, code)]), 0.1)
                cdf = weibull_cdf(edges[None, :], median[:, None])
                hazard[:, r, g, p] = (cdf[:, 1:] - cdf[:, :-1]) / np.maximum(1 - cdf[:, :-1], 1e-12)
                cost[:, r, g, p] = val(rates.cost_per_start[(prog, code)])
    return RateArrays(exit_, promote, hazard, available, cost, salary, val(rates.hiring_cost_share))


@dataclass
class Projection:
    """Counts at the end of each quarter (expected, or drawn), with a batch axis first."""

    head: np.ndarray  # [B, R, L, T]
    compliant: np.ndarray  # [B, R, L, T] holding the whole track
    exits: np.ndarray  # [B, R, L, T]
    certified: np.ndarray  # [B, R, L, T] certifications completed in the quarter
    idle_before: np.ndarray  # [B, R, L, G, T] idle at the quarter's start (who can start)
    trainees: np.ndarray  # [B, T] preparing after the quarter's starts
    apprentices: np.ndarray  # [B, T]
    seniors: np.ndarray  # [B, T] at the senior levels at the quarter's start
    team: np.ndarray  # [B, T] everyone at the quarter's start
    payroll: np.ndarray  # [B, R, L, T] USD in the quarter (end-of-quarter head x pay / 4)
    training_cost: np.ndarray  # [B, R, L, T]
    hiring_cost: np.ndarray  # [B, R, L, T]
    hires: np.ndarray  # [B, R, L, T]
    starts: np.ndarray  # [B, R, L, G, P, T]
    holding: np.ndarray | None = None  # [B, R, L, T] holding one of the track or more

    def in_band(self, layout: Layout, what: np.ndarray) -> np.ndarray:
        """[B, R, T]: `what` summed over each role's level band."""
        mask = np.zeros((len(layout.roles), len(LEVELS)))
        for r, role in enumerate(layout.roles):
            mask[r, role.band[0] - 1 : role.band[1]] = 1
        return np.einsum("brlt,rl->brt", what, mask)


def _move(count: np.ndarray, prob: np.ndarray, sample) -> np.ndarray:
    """People leaving `count` with probability `prob`: expected, or binomial draws."""
    if sample is None:
        return count * prob
    return sample.binomial(np.rint(count).astype(np.int64), np.clip(prob, 0.0, 1.0)).astype(float)


def _can_start(wanted: np.ndarray, idle: np.ndarray) -> np.ndarray:
    """In a draw, no more start than are idle: programmes take their people in order."""
    left = np.floor(idle + 1e-9)
    out = np.zeros_like(wanted)
    for p in range(wanted.shape[-1]):
        out[..., p] = np.minimum(wanted[..., p], left)
        left -= out[..., p]
    return out


@dataclass
class _Team:
    """The state `project` rolls forward: idle [B, R, L, G+1], preparing [B, R, L, G, P, A]."""

    idle: np.ndarray
    prep: np.ndarray
    out: dict[str, np.ndarray]  # [B, R, L, T] per quarter
    agg: dict[str, np.ndarray]  # [B, T] per quarter
    idle_before: np.ndarray  # [B, R, L, G, T]

    @property
    def head(self) -> np.ndarray:
        return self.idle.sum(3) + self.prep.sum((3, 4, 5))


def _start_and_exit(team: _Team, t: int, s: np.ndarray, rates: RateArrays, sample) -> None:
    """Starts leave the idle and begin preparing; then exits at the level's rate (certified or
    not: a person at stage >= 1 holds a certification)."""
    b, _, _, ng, npg = s.shape
    nr = team.idle.shape[1]
    team.idle[..., :ng] -= s.sum(-1)
    team.prep[..., 0] += s
    team.agg["trainees"][:, t] = team.prep.sum((1, 2, 3, 4, 5))
    team.agg["apprentices"][:, t] = team.prep[:, :, :, :, APPRENTICESHIP].sum((1, 2, 3, 4))
    cost = np.broadcast_to(rates.cost_per_start, (b, nr, ng, npg))
    team.out["training"][..., t] = np.einsum("brlgp,brgp->brl", s, cost)
    holds = (np.arange(ng + 1) >= 1).astype(int)
    ex = np.broadcast_to(rates.exit, (b, *rates.exit.shape[1:]))[:, None]
    gone_idle = _move(team.idle, ex[..., holds], sample)
    gone_prep = _move(team.prep, ex[..., holds[:ng], None, None], sample)
    team.idle -= gone_idle
    team.prep -= gone_prep
    team.out["exits"][..., t] = gone_idle.sum(3) + gone_prep.sum((3, 4, 5))


def _certify_and_promote(team: _Team, t: int, rates: RateArrays, sample) -> None:
    """Preparations certify at the programme's hazard (or give up after MAX_AGE quarters);
    then promotions move people up a level, keeping their stage and preparation."""
    b = team.idle.shape[0]
    ng = team.prep.shape[3]
    hz = np.broadcast_to(rates.hazard, (b, *rates.hazard.shape[1:]))
    done = _move(team.prep, hz[:, :, None], sample)
    team.prep -= done
    team.idle[..., 1:] += done.sum((4, 5))
    team.out["certified"][..., t] = done.sum((3, 4, 5))
    team.idle[..., :ng] += team.prep[..., -1].sum(-1)
    team.prep = np.concatenate([np.zeros_like(team.prep[..., :1]), team.prep[..., :-1]], -1)
    pr = np.broadcast_to(rates.promote, (b, rates.promote.shape[1]))
    up_idle = _move(team.idle, pr[:, None, :, None], sample)
    up_prep = _move(team.prep, pr[:, None, :, None, None, None], sample)
    up_idle[:, :, -1] = 0
    up_prep[:, :, -1] = 0
    team.idle += np.roll(up_idle, 1, axis=2) - up_idle
    team.prep += np.roll(up_prep, 1, axis=2) - up_prep


def _hire_and_count(team: _Team, t: int, hires: np.ndarray, full: np.ndarray, rates) -> None:
    """Hires join uncertified at the quarter's end; the quarter's counts and pay."""
    b = team.idle.shape[0]
    team.idle[..., 0] += hires
    head = team.head
    team.out["head"][..., t] = head
    team.out["compliant"][..., t] = np.einsum("brlg,rg->brl", team.idle, full)
    team.out["holding"][..., t] = team.idle[..., 1:].sum(3) + team.prep[:, :, :, 1:].sum((3, 4, 5))
    pay = np.broadcast_to(rates.salary, (b, rates.salary.shape[1]))[:, None, :]
    team.out["payroll"][..., t] = head * pay / 4
    share = np.broadcast_to(rates.hiring_cost_share, (b,))[:, None, None]
    team.out["hiring"][..., t] = hires * pay * share


def project(
    x: np.ndarray,
    layout: Layout,
    rates: RateArrays,
    idle0: np.ndarray,
    senior_levels: tuple[int, ...] = (4, 5),
    sample=None,
) -> Projection:
    """Roll the team forward from `idle0` [R, L, G+1] under decisions `x` [B, n_decisions]."""
    hires, starts = layout.split(x)
    b, nr, nl, ng, npg, nt = starts.shape
    full = np.zeros((nr, ng + 1))  # holds the role's whole track
    for r, role in enumerate(layout.roles):
        full[r, len(role.track)] = 1
    keys = ("head", "compliant", "holding", "exits", "certified", "payroll", "training", "hiring")
    team = _Team(
        idle=np.broadcast_to(idle0, (b, nr, nl, ng + 1)).astype(float).copy(),
        prep=np.zeros((b, nr, nl, ng, npg, MAX_AGE)),
        out={k: np.zeros((b, nr, nl, nt)) for k in keys},
        agg={k: np.zeros((b, nt)) for k in ("trainees", "apprentices", "seniors", "team")},
        idle_before=np.zeros((b, nr, nl, ng, nt)),
    )
    senior = np.isin(np.array(LEVELS), senior_levels)
    for t in range(nt):
        head_now = team.head
        team.agg["seniors"][:, t] = head_now[:, :, senior].sum((1, 2))
        team.agg["team"][:, t] = head_now.sum((1, 2))
        team.idle_before[..., t] = team.idle[..., :ng]
        s = starts[..., t] if sample is None else _can_start(starts[..., t], team.idle[..., :ng])
        _start_and_exit(team, t, s, rates, sample)
        _certify_and_promote(team, t, rates, sample)
        _hire_and_count(team, t, hires[..., t], full, rates)
    o, a = team.out, team.agg
    return Projection(
        o["head"],
        o["compliant"],
        o["exits"],
        o["certified"],
        team.idle_before,
        a["trainees"],
        a["apprentices"],
        a["seniors"],
        a["team"],
        o["payroll"],
        o["training"],
        o["hiring"],
        hires,
        starts,
        o["holding"],
    )
