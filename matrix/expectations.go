// Package matrix runs a grid of tests (backends × nemeses × fences ×
// workloads), holds each cell's outcome against what the literature expects
// of it, and writes the comparison for people (matrix.md) and for CI
// (matrix.json, JUnit XML).
package matrix

import (
	_ "embed"
	"fmt"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/config"
)

// defaultExpectations are what the literature says of each cell, built into
// the binary so that `matrix` works from any directory. They live here and
// nowhere else: go:embed cannot reach a parent directory.
//
//go:embed expectations.yaml
var defaultExpectations []byte

// Expected verdicts of a cell.
const (
	ExpectValid   = "valid"
	ExpectInvalid = "invalid"
	ExpectEither  = "either"
)

// Expectations say what each cell should give. Rules are read in order and
// the last one that matches a cell decides, so general rules come first and
// exceptions after them.
type Expectations struct {
	Rules []Rule `yaml:"rules"`
	// Mutants are the cells of `matrix --preset mutants`.
	Mutants []Mutant `yaml:"mutants"`
	// Measured are the classes the cells' runs decided, by cell name
	// (`matrix derive` writes them): a cell's expectation is its measured
	// class where there is one for the grid's flags, else its rule's.
	Measured map[string]MeasuredCell `yaml:"measured,omitempty"`
	// Aimed are the overrides that aim a fault at the moment a cell left
	// to chance is about (Grid's aimed twins).
	Aimed []Aimed `yaml:"aimed"`

	// grid is the configuration the cells run under (Under): a measured
	// class is used only for a cell measured under the same flags.
	grid *config.Config
}

// MeasuredCell is what the measured runs of a cell decided.
type MeasuredCell struct {
	Class   string `yaml:"class"`
	Invalid int    `yaml:"invalid"`
	Judged  int    `yaml:"judged"`
	Errors  int    `yaml:"errors,omitempty"`
	// CIRuns is R: how many runs CI gives an invalid cell.
	CIRuns int `yaml:"ci_runs,omitempty"`
	// Revision is the newest lockbench that judged the runs, Flags the
	// digest of the flags they ran under (FlagsOf).
	Revision string `yaml:"revision"`
	Flags    string `yaml:"flags"`
}

// Under says which configuration the cells run under, so that their
// measured classes apply; without it only the rules do.
func (e *Expectations) Under(base config.Config) { e.grid = &base }

// measured is the cell's measured class under the grid's flags.
func (e *Expectations) measured(c Cell) (MeasuredCell, bool) {
	m, ok := e.Measured[c.Name()]
	if !ok || e.grid == nil || m.Flags != FlagsOf(c, *e.grid) {
		return MeasuredCell{}, false
	}
	return m, true
}

// CIRuns is how many runs a cell measured invalid needs in CI (its R); 0
// for any other cell.
func (e *Expectations) CIRuns(c Cell) int {
	if m, ok := e.measured(c); ok && m.Class == ClassInvalid {
		return m.CIRuns
	}
	return 0
}

// Rule matches cells on the fields it sets; an empty field matches anything.
type Rule struct {
	Backend  string `yaml:"backend,omitempty"`
	Workload string `yaml:"workload,omitempty"`
	Nemesis  string `yaml:"nemesis,omitempty"`
	Fence    string `yaml:"fence,omitempty"`
	Store    string `yaml:"store,omitempty"`
	// The sweep axes (matchesAxes): a rule can hold at one TTL and not
	// at another.
	TTL         string `yaml:"ttl,omitempty"`
	Concurrency int    `yaml:"concurrency,omitempty"`
	RTT         string `yaml:"rtt,omitempty"`
	Variant     string `yaml:"variant,omitempty"`
	OnLockError string `yaml:"on_lock_error,omitempty"`
	CheckLease  *bool  `yaml:"check_lease,omitempty"`
	Work        string `yaml:"work,omitempty"`
	Expect      string `yaml:"expect"`
	Reason      string `yaml:"reason"`
}

func (r Rule) matches(c Cell) bool {
	ok := func(want, got string) bool { return want == "" || want == got }
	return ok(r.Backend, c.Backend) && ok(r.Workload, c.Workload) && ok(r.Nemesis, c.Nemesis) &&
		ok(r.Fence, c.Fence) && ok(r.Store, c.Store) && r.matchesAxes(c)
}

// checkExpect refuses an expectation other than valid, invalid or either,
// and one without a reason.
func checkExpect(expect, reason string) error {
	switch expect {
	case ExpectValid, ExpectInvalid, ExpectEither:
	default:
		return fmt.Errorf("expect %q (want valid, invalid or either)", expect)
	}
	if reason == "" {
		return fmt.Errorf("no reason")
	}
	return nil
}

// knownVariant refuses a client variant no backend offers.
func knownVariant(v string) error {
	if !slices.Contains(backends.VariantNames(), v) {
		return fmt.Errorf("unknown variant %q (want one of %s)", v, strings.Join(backends.VariantNames(), ", "))
	}
	return nil
}

// knownLockError refuses what --on-lock-error does not take.
func knownLockError(v string) error {
	if !slices.Contains(config.LockErrors, v) {
		return fmt.Errorf("unknown on_lock_error %q (want one of %s)", v, strings.Join(config.LockErrors, ", "))
	}
	return nil
}

// LoadExpectations reads and validates an expectations file; path "" is
// the built-in default.
func LoadExpectations(path string) (*Expectations, error) {
	data := defaultExpectations
	if path == "" {
		path = "built-in expectations"
	} else {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("expectations: %w", err)
		}
	}
	var e Expectations
	if err := yaml.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("expectations %s: %w", path, err)
	}
	if len(e.Rules) == 0 {
		return nil, fmt.Errorf("expectations %s: no rules", path)
	}
	for i, r := range e.Rules {
		if err := checkExpect(r.Expect, r.Reason); err != nil {
			return nil, fmt.Errorf("expectations %s: rule %d: %w", path, i+1, err)
		}
		if err := r.checkAxes(); err != nil {
			return nil, fmt.Errorf("expectations %s: rule %d: %w", path, i+1, err)
		}
	}
	for i := range e.Aimed {
		if err := e.Aimed[i].check(i, e.Aimed[:i]); err != nil {
			return nil, fmt.Errorf("expectations %s: %w", path, err)
		}
	}
	for i := range e.Mutants {
		if err := e.Mutants[i].check(i); err != nil {
			return nil, fmt.Errorf("expectations %s: %w", path, err)
		}
	}
	for name, m := range e.Measured {
		if err := m.check(); err != nil {
			return nil, fmt.Errorf("expectations %s: measured %s: %w", path, name, err)
		}
	}
	return &e, nil
}

func (m MeasuredCell) check() error {
	switch {
	case m.Class != ClassInvalid && m.Class != ClassValid && m.Class != ClassEither && m.Class != ClassFinding:
		return fmt.Errorf("class %q (want %s, %s, %s or %s)", m.Class, ClassInvalid, ClassValid, ClassEither, ClassFinding)
	case m.Invalid < 0 || m.Judged < m.Invalid || m.Errors < 0:
		return fmt.Errorf("%d invalid of %d judged", m.Invalid, m.Judged)
	case m.Class == ClassInvalid && m.CIRuns < 1:
		return fmt.Errorf("an invalid cell needs its ci_runs")
	case m.Flags == "" || m.Revision == "":
		return fmt.Errorf("flags and revision are needed")
	}
	return nil
}

// For returns what c should give and why: its measured class under the
// grid's flags (Under) where there is one, else its rule's (RuleFor). A
// finding keeps its rule's expectation: the anomaly found is for people to
// look at, and CI goes on failing when it finds it again.
func (e *Expectations) For(c Cell) (string, string) {
	expect, reason := e.RuleFor(c)
	m, ok := e.measured(c)
	if !ok || m.Class == ClassFinding {
		return expect, reason
	}
	why := fmt.Sprintf("measured %s, %d/%d invalid", m.Class, m.Invalid, m.Judged)
	if m.Class == ClassInvalid {
		why += fmt.Sprintf(", %d CI run(s)", m.CIRuns)
	}
	return m.Class, why + "; the rule: " + expect + ", " + reason
}

// RuleFor returns what the rules say c should give and why; a cell no
// rule matches may give either verdict. A cell that combines faults
// (pause+partition) expects what its faults' cells expect together
// (combine), unless a rule names the combination itself.
func (e *Expectations) RuleFor(c Cell) (string, string) {
	if c.Mutant != nil {
		return mutantExpectation(c)
	}
	if c.Aimed != nil {
		return c.Aimed.Expect, c.Aimed.Reason
	}
	expect, reason := ExpectEither, "no rule matches this cell"
	if faults := strings.Split(c.Nemesis, config.Combine); len(faults) > 1 {
		var expects, reasons []string
		for _, f := range faults {
			one := c
			one.Nemesis = f
			x, why := e.RuleFor(one)
			expects, reasons = append(expects, x), append(reasons, f+": "+why)
		}
		expect, reason = combine(expects), strings.Join(reasons, "; ")
	}
	for _, r := range e.Rules {
		if r.matches(c) && (r.Nemesis != "" || !strings.Contains(c.Nemesis, config.Combine)) {
			expect, reason = r.Expect, r.Reason
		}
	}
	return expect, reason
}

// combine is the expectation of a cell whose faults, each alone, would
// expect expects. The schedule draws one of them at a time: a fault whose
// cell expects an anomaly still strikes as often as it takes to find one
// in a run long enough for it, and the others cannot repair data it broke
// (invalid); the cell is valid only when every fault's is; otherwise it is
// chance (either).
func combine(expects []string) string {
	if slices.Contains(expects, ExpectInvalid) {
		return ExpectInvalid
	}
	for _, x := range expects {
		if x != ExpectValid {
			return ExpectEither
		}
	}
	return ExpectValid
}

// Digest identifies the rules: shards judged by different expectations
// cannot be merged into one matrix.
func (e *Expectations) Digest() string { return digest(e) }
