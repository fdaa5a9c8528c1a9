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
	// Aimed are the overrides that aim a fault at the moment a cell left
	// to chance is about (Grid's aimed twins).
	Aimed []Aimed `yaml:"aimed"`
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
	return &e, nil
}

// For returns what c should give and why; a cell no rule matches may give
// either verdict. A cell that combines faults (pause+partition) expects
// what its faults' cells expect together (combine), unless a rule names
// the combination itself.
func (e *Expectations) For(c Cell) (string, string) {
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
			x, why := e.For(one)
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
