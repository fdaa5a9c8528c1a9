package matrix

import (
	"math"
	"testing"
)

// TestDecide holds the classes to the rule on synthetic outcomes, with
// z = 1.96 and the default flake rate of 1 %.
func TestDecide(t *testing.T) {
	s := DefaultStopRule
	for _, c := range []struct {
		name           string
		invalid, n     int
		expect         string
		class          string
		ciRuns         int
		lo             float64 // checked when non-zero
		maxRunsReached bool
	}{
		{"0/10 is valid", 0, 10, ExpectEither, ClassValid, 0, 0, false},
		{"0/9 runs on", 0, 9, ExpectEither, ClassOpen, 0, 0, false},
		{"14/14 is invalid in 3", 14, 14, ExpectInvalid, ClassInvalid, 3, 0.785, false},
		{"22/23 is invalid in 3", 22, 23, ExpectInvalid, ClassInvalid, 3, 0, false},
		{"28/30 is invalid in 3", 28, 30, ExpectEither, ClassInvalid, 3, 0, false},
		{"13/13 runs on", 13, 13, ExpectInvalid, ClassOpen, 0, 0, false},
		{"10/10 would need 4 CI runs, so it runs on", 10, 10, ExpectInvalid, ClassOpen, 0, 0.7225, false},
		{"3/10 at max-runs is either", 3, 10, ExpectInvalid, ClassEither, 0, 0, true},
		{"3/10 before max-runs runs on", 3, 10, ExpectInvalid, ClassOpen, 0, 0, false},
		{"1/20 in an expected-valid cell is a finding", 1, 20, ExpectValid, ClassFinding, 0, 0, false},
		{"14/14 in an expected-valid cell is a finding too", 14, 14, ExpectValid, ClassFinding, 0, 0, false},
		{"0/10 in an expected-invalid cell is valid (derive lists the contradiction)", 0, 10, ExpectInvalid, ClassValid, 0, 0, false},
	} {
		rule := s
		if c.maxRunsReached {
			rule.MaxRuns = c.n
		}
		d := rule.Decide(Tally{Invalid: c.invalid, Judged: c.n}, c.expect)
		if d.Class != c.class || d.CIRuns != c.ciRuns {
			t.Errorf("%s: %s (R %d), want %s (R %d): %s", c.name, d.Class, d.CIRuns, c.class, c.ciRuns, d)
		}
		if c.lo != 0 && math.Abs(d.Lo-c.lo) > 0.0005 {
			t.Errorf("%s: p_lo %.4f, want %.4f", c.name, d.Lo, c.lo)
		}
		if d.Class == ClassInvalid && d.Miss > s.Flake {
			t.Errorf("%s: CI misses with %.4f > flake %.2f", c.name, d.Miss, s.Flake)
		}
	}
	// 10/10 is invalid once CI may run a cell 4 times.
	four := s
	four.MaxCIRuns = 4
	if d := four.Decide(Tally{Invalid: 10, Judged: 10}, ExpectInvalid); d.Class != ClassInvalid || d.CIRuns != 4 {
		t.Errorf("10/10 with --max-ci-runs 4: %s", d)
	}
}

// TestDecideErrorsCountAgainstMaxRuns: runs without a verdict are in no
// rate, but a cell that only errs still stops at the run limit.
func TestDecideErrorsCountAgainstMaxRuns(t *testing.T) {
	s := StopRule{MinRuns: 2, MaxRuns: 3, MaxCIRuns: 3, Flake: 0.01}
	if d := s.Decide(Tally{Errors: 2}, ExpectValid); d.Decided() {
		t.Errorf("2 errors of 3: %s", d)
	}
	if d := s.Decide(Tally{Errors: 3}, ExpectValid); d.Class != ClassEither {
		t.Errorf("3 errors of 3: %s, want either", d)
	}
	if d := s.Decide(Tally{Judged: 1, Errors: 1}, ExpectValid); d.Decided() {
		t.Errorf("1 valid and 1 error, min-runs 2: %s, want open", d)
	}
}

// TestDecideSums: two invocations, each adding its runs to what the
// other measured, decide what one invocation of all the runs decides, at
// every split.
func TestDecideSums(t *testing.T) {
	s := DefaultStopRule
	outcomes := make([]bool, 23)
	for i := range outcomes {
		outcomes[i] = i != 2
	}
	tally := func(os []bool) Tally {
		var t Tally
		for _, inv := range os {
			t.Judged++
			if inv {
				t.Invalid++
			}
		}
		return t
	}
	whole := s.Decide(tally(outcomes), ExpectInvalid)
	for split := range outcomes {
		d := s.Decide(tally(outcomes[:split]).Add(tally(outcomes[split:])), ExpectInvalid)
		if d != whole {
			t.Errorf("split at %d: %s, one invocation: %s", split, d, whole)
		}
	}
	if whole.Class != ClassInvalid {
		t.Errorf("22/23: %s", whole)
	}
}

func TestStopRuleCheck(t *testing.T) {
	for _, bad := range []StopRule{
		{MinRuns: 0, MaxRuns: 30, MaxCIRuns: 3, Flake: 0.01},
		{MinRuns: 10, MaxRuns: 5, MaxCIRuns: 3, Flake: 0.01},
		{MinRuns: 10, MaxRuns: 30, MaxCIRuns: 0, Flake: 0.01},
		{MinRuns: 10, MaxRuns: 30, MaxCIRuns: 3, Flake: 0},
		{MinRuns: 10, MaxRuns: 30, MaxCIRuns: 3, Flake: 1},
	} {
		if bad.Check() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := DefaultStopRule.Check(); err != nil {
		t.Error(err)
	}
}
