package matrix

import (
	"fmt"
	"math"

	"github.com/lockbench/lockbench/catalog"
)

// Classes a cell's measured runs decide (`matrix --until-decided`,
// `matrix derive`). They are defined against how CI runs a cell: R runs,
// passing when any of them is invalid.
const (
	// ClassInvalid: the detection rate's Wilson 95 % lower bound p_lo is
	// high enough that R runs, R ≤ MaxCIRuns, all miss the anomaly with
	// probability (1 − p_lo)^R ≤ Flake.
	ClassInvalid = "invalid"
	// ClassValid: no invalid run in at least MinRuns. It is "no
	// counterexample in n", not a proof; the rate's upper bound says how
	// much that n rules out.
	ClassValid = "valid"
	// ClassFinding: an invalid run in a cell whose rule expects valid.
	// It is never filed as either: it is a finding to look at.
	ClassFinding = "finding"
	// ClassEither: undecided at MaxRuns.
	ClassEither = "either"
	// ClassOpen: not decided yet; the cell runs on.
	ClassOpen = "open"
)

// StopRule is what decides a cell: the flags --min-runs, --max-runs,
// --max-ci-runs and --flake.
type StopRule struct {
	MinRuns, MaxRuns, MaxCIRuns int
	Flake                       float64
}

// DefaultStopRule is the flags' defaults.
var DefaultStopRule = StopRule{MinRuns: 10, MaxRuns: 30, MaxCIRuns: 3, Flake: 0.01}

// Check refuses a rule that cannot decide anything.
func (s StopRule) Check() error {
	switch {
	case s.MinRuns < 1:
		return fmt.Errorf("--min-runs must be at least 1, got %d", s.MinRuns)
	case s.MaxRuns < s.MinRuns:
		return fmt.Errorf("--max-runs (%d) must be at least --min-runs (%d)", s.MaxRuns, s.MinRuns)
	case s.MaxCIRuns < 1:
		return fmt.Errorf("--max-ci-runs must be at least 1, got %d", s.MaxCIRuns)
	case !(s.Flake > 0 && s.Flake < 1):
		return fmt.Errorf("--flake must be between 0 and 1 (exclusive), got %g", s.Flake)
	}
	return nil
}

// Tally is what a cell's runs have shown so far: Invalid of Judged runs
// were invalid (the others valid); Errors gave no verdict (an interrupted
// or broken run, a run stopped at an anomaly it then did not show), and
// count against MaxRuns but in no rate.
type Tally struct {
	Invalid int `json:"invalid" yaml:"invalid"`
	Judged  int `json:"judged" yaml:"judged"`
	Errors  int `json:"errors,omitempty" yaml:"errors,omitempty"`
	// Weak are the valid runs whose faults never reached a holder
	// (checkers.WeakEvidence), as this invocation saw them.
	Weak int `json:"weak,omitempty" yaml:"-"`
}

// Add is the tally of both: runs pooled across invocations add up.
func (t Tally) Add(o Tally) Tally {
	return Tally{Invalid: t.Invalid + o.Invalid, Judged: t.Judged + o.Judged, Errors: t.Errors + o.Errors, Weak: t.Weak + o.Weak}
}

// Runs is every run the tally counts, errors included.
func (t Tally) Runs() int { return t.Judged + t.Errors }

// Decision is a cell's class from its tally, with the numbers that
// decided it.
type Decision struct {
	Class string `json:"class"`
	Tally Tally  `json:"tally"`
	// Lo and Hi are the detection rate's Wilson 95 % interval.
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// CIRuns is R, the runs CI gives an invalid cell.
	CIRuns int `json:"ci_runs,omitempty"`
	// Miss is (1 − Lo)^CIRuns: the chance that CI's R runs all miss.
	Miss float64 `json:"miss,omitempty"`
}

// Decide classes a cell whose rule expects expect from its tally.
func (s StopRule) Decide(t Tally, expect string) Decision {
	d := Decision{Class: ClassOpen, Tally: t}
	if t.Judged > 0 {
		d.Lo, d.Hi = catalog.Wilson(t.Invalid, t.Judged)
	}
	switch {
	case t.Invalid > 0 && expect == ExpectValid:
		d.Class = ClassFinding
	case t.Invalid > 0 && ciRuns(d.Lo, s) > 0:
		d.Class, d.CIRuns = ClassInvalid, ciRuns(d.Lo, s)
		d.Miss = math.Pow(1-d.Lo, float64(d.CIRuns))
	case t.Invalid == 0 && t.Judged >= s.MinRuns:
		d.Class = ClassValid
	case t.Runs() >= s.MaxRuns:
		d.Class = ClassEither
	}
	return d
}

// ciRuns is the fewest runs R ≤ MaxCIRuns with (1 − lo)^R ≤ Flake, or 0
// when there is none.
func ciRuns(lo float64, s StopRule) int {
	for r := 1; r <= s.MaxCIRuns; r++ {
		if math.Pow(1-lo, float64(r)) <= s.Flake {
			return r
		}
	}
	return 0
}

// Decided says whether the cell stops running.
func (d Decision) Decided() bool { return d.Class != ClassOpen }

// String is the rule with its numbers, printed beside the cell's k/n.
func (d Decision) String() string {
	t := d.Tally
	kn := fmt.Sprintf("%d/%d invalid", t.Invalid, t.Judged)
	if t.Errors > 0 {
		kn += fmt.Sprintf(" (+%d without a verdict)", t.Errors)
	}
	switch d.Class {
	case ClassInvalid:
		return fmt.Sprintf("invalid: %s, p_lo %.3f, (1−p_lo)^%d = %.4f: CI runs it %d times", kn, d.Lo, d.CIRuns, d.Miss, d.CIRuns)
	case ClassValid:
		return fmt.Sprintf("valid: %s, no counterexample in %d; rate ≤ %.3f (95 %%)", kn, t.Judged, d.Hi)
	case ClassFinding:
		return fmt.Sprintf("finding: %s in a cell its rule expects valid; rate [%.3f, %.3f]", kn, d.Lo, d.Hi)
	case ClassEither:
		return fmt.Sprintf("either: %s, rate [%.3f, %.3f], undecided at the run limit", kn, d.Lo, d.Hi)
	}
	if t.Judged == 0 {
		return "open: " + kn
	}
	return fmt.Sprintf("open: %s, rate [%.3f, %.3f]", kn, d.Lo, d.Hi)
}
