package matrix

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/workloads"
)

// Aimed is one entry of expectations.yaml's aimed: the grid cells it
// matches, the overrides that make their fault land where the cell's
// expectation is decided (a pause of the holder between its read and its
// write, rather than at a random moment), and what the cell gives then.
// A grid cell whose rules say "either" because the fault lands by luck
// gets a twin run with these overrides (Grid).
type Aimed struct {
	// Match keys: Nemesis is required, an empty other matches anything.
	Backend  string `yaml:"backend,omitempty" json:"backend,omitempty"`
	Workload string `yaml:"workload,omitempty" json:"workload,omitempty"`
	Nemesis  string `yaml:"nemesis" json:"nemesis"`
	Fence    string `yaml:"fence,omitempty" json:"fence,omitempty"`
	Store    string `yaml:"store,omitempty" json:"store,omitempty"`
	// Overrides, each left empty keeping the cell's value: --target,
	// --failpoint, --work and --ttl.
	Target    string `yaml:"target,omitempty" json:"target,omitempty"`
	Failpoint string `yaml:"failpoint,omitempty" json:"failpoint,omitempty"`
	Work      string `yaml:"work,omitempty" json:"work,omitempty"`
	TTL       string `yaml:"ttl,omitempty" json:"ttl,omitempty"`
	// Label ends the twin's name: <cell's name>/aimed-<label>.
	Label  string `yaml:"label" json:"label"`
	Expect string `yaml:"expect" json:"expect"`
	Reason string `yaml:"reason" json:"reason"`
}

func (a *Aimed) matches(c Cell) bool {
	ok := func(want, got string) bool { return want == "" || want == got }
	return a.Nemesis == c.Nemesis && ok(a.Backend, c.Backend) && ok(a.Workload, c.Workload) &&
		ok(a.Fence, c.Fence) && ok(a.Store, c.Store)
}

// apply sets the entry's overrides on a run's configuration.
func (a *Aimed) apply(cfg *config.Config) {
	if a.Target != "" {
		cfg.PauseTarget = a.Target
	}
	if a.Failpoint != "" {
		cfg.Failpoint = a.Failpoint
	}
	if a.Work != "" {
		cfg.Work = a.Work
	}
	if a.TTL != "" {
		d, _ := time.ParseDuration(a.TTL)
		cfg.TTL = config.Duration(d)
	}
}

// check refuses an entry that could not be run, judged or named apart
// from the entries before it.
func (a *Aimed) check(i int, before []Aimed) error {
	if a.Nemesis == "" || a.Label == "" {
		return fmt.Errorf("aimed %d: nemesis and label are required", i+1)
	}
	// The label is one part of a cell's name, which splits on slashes.
	if strings.ContainsAny(a.Label, "/ ") {
		return fmt.Errorf("aimed %d: label %q has a slash or a space", i+1, a.Label)
	}
	// Entries of different faults never match one cell: only those of the
	// same fault need labels of their own.
	if slices.ContainsFunc(before, func(b Aimed) bool { return b.Label == a.Label && b.Nemesis == a.Nemesis }) {
		return fmt.Errorf("aimed %d: label %q is taken by another %s entry: twins of one cell must have names of their own", i+1, a.Label, a.Nemesis)
	}
	if err := checkExpect(a.Expect, a.Reason); err != nil {
		return fmt.Errorf("aimed %d: %w", i+1, err)
	}
	if a.Target != "" && !slices.Contains(config.Targets, a.Target) {
		return fmt.Errorf("aimed %d: unknown target %q (want one of %s)", i+1, a.Target, strings.Join(config.Targets, ", "))
	}
	if a.Failpoint != "" && !slices.Contains(backends.FailpointNames(), a.Failpoint) {
		return fmt.Errorf("aimed %d: unknown failpoint %q (want one of %s)", i+1, a.Failpoint, strings.Join(backends.FailpointNames(), ", "))
	}
	if _, err := workloads.ParseWork(a.Work); a.Work != "" && err != nil {
		return fmt.Errorf("aimed %d: %w", i+1, err)
	}
	if _, err := time.ParseDuration(a.TTL); a.TTL != "" && err != nil {
		return fmt.Errorf("aimed %d: ttl: %w", i+1, err)
	}
	return nil
}

// twins are the aimed twins of grid cell c: one per entry that matches
// it, and none unless the rules leave c to chance, since a twin is there
// to decide a cell whose fault lands by luck.
func (e *Expectations) twins(c Cell, a Axes, base config.Config) []Cell {
	if x, _ := e.For(c); x != ExpectEither {
		return nil
	}
	var out []Cell
	for i := range e.Aimed {
		m := &e.Aimed[i]
		if !m.matches(c) {
			continue
		}
		twin := c
		twin.Aimed = m
		if d, err := time.ParseDuration(m.TTL); err == nil && !a.FixedFaultDuration {
			twin.FaultDuration = config.Duration(2 * d)
		}
		out = append(out, twin)
	}
	return out
}
