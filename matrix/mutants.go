package matrix

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/store"
)

// PresetMutants is `matrix --preset mutants`: every known-broken client
// variant under the fault or failpoint that exposes it, each beside the
// correct client under the same conditions and seeds as its control. All
// of them run with --check-lease, so that a variant whose bug is not
// noticing that its lease is gone differs from its control in that alone.
const PresetMutants = "mutants"

// Mutant is one entry of expectations.yaml's mutants: a variant, what
// exposes it, which checker must catch it, and where the bug comes from.
// Fields left empty take the matrix's flags.
type Mutant struct {
	Backend   string `yaml:"backend" json:"backend"`
	Variant   string `yaml:"variant" json:"variant"`
	Nemesis   string `yaml:"nemesis" json:"nemesis"`
	Failpoint string `yaml:"failpoint,omitempty" json:"failpoint,omitempty"`
	Fence     string `yaml:"fence,omitempty" json:"fence,omitempty"`
	Work      string `yaml:"work,omitempty" json:"work,omitempty"`
	Think     string `yaml:"think,omitempty" json:"think,omitempty"`
	TTL       string `yaml:"ttl,omitempty" json:"ttl,omitempty"`
	OpTimeout string `yaml:"op_timeout,omitempty" json:"op_timeout,omitempty"`
	// TimeLimit and NemesisInterval, when set, give a variant whose
	// sections are long the time to complete enough of them before the
	// first fault.
	TimeLimit       string `yaml:"time_limit,omitempty" json:"time_limit,omitempty"`
	NemesisInterval string `yaml:"nemesis_interval,omitempty" json:"nemesis_interval,omitempty"`
	// Caught is the checker that must judge the variant's runs invalid.
	Caught string `yaml:"caught" json:"caught"`
	Source string `yaml:"source" json:"source"`
	// Survives, when set, says why no fault of this build exposes the
	// variant reliably: the preset still runs it and counts it, and the
	// matrix exits 1 while it survives.
	Survives string `yaml:"survives,omitempty" json:"survives,omitempty"`
}

// exposure names the conditions, e.g. kill-client@acquired.
func (m *Mutant) exposure() string {
	s := m.Nemesis
	if m.Failpoint != "" {
		s += "@" + m.Failpoint
	}
	if m.Work != "" {
		s += ",work=" + m.Work
	}
	if m.Think != "" {
		s += ",think=" + m.Think
	}
	if m.Fence != "" && m.Fence != string(store.FenceNone) {
		s += ",fence-" + m.Fence
	}
	return s
}

// apply sets the mutant's conditions on a run's configuration.
func (m *Mutant) apply(cfg *config.Config) {
	cfg.Failpoint, cfg.CheckLease = m.Failpoint, true
	if m.Fence != "" {
		cfg.Fence = store.Fence(m.Fence)
	}
	if m.Work != "" {
		cfg.Work = m.Work
	}
	if m.Think != "" {
		cfg.Think = m.Think
	}
	if m.TTL != "" {
		d, _ := time.ParseDuration(m.TTL)
		cfg.TTL = config.Duration(d)
		// Faults last two TTLs, as --fault-duration's default says.
		cfg.FaultDuration = config.Duration(2 * d)
	}
	for _, f := range []struct {
		set string
		to  *config.Duration
	}{{m.OpTimeout, &cfg.OpTimeout}, {m.TimeLimit, &cfg.TimeLimit}, {m.NemesisInterval, &cfg.NemesisInterval}} {
		if f.set != "" {
			d, _ := time.ParseDuration(f.set)
			*f.to = config.Duration(d)
		}
	}
}

// Args are the mutant's conditions as `run` flags, for the variant or
// its control, beside flags that fix everything else.
func (m *Mutant) Args(variant string) []string {
	args := []string{"--backend", m.Backend, "--variant", variant, "--nemesis", m.Nemesis, "--check-lease"}
	for _, f := range []struct{ flag, value string }{
		{"--failpoint", m.Failpoint}, {"--fence", m.Fence}, {"--work", m.Work}, {"--think", m.Think}, {"--ttl", m.TTL},
		{"--op-timeout", m.OpTimeout}, {"--time-limit", m.TimeLimit}, {"--nemesis-interval", m.NemesisInterval},
	} {
		if f.value != "" {
			args = append(args, f.flag, f.value)
		}
	}
	if m.TTL != "" {
		d, _ := time.ParseDuration(m.TTL)
		args = append(args, "--fault-duration", (2 * d).String())
	}
	return args
}

// check refuses an entry that could not be run or judged.
func (m *Mutant) check(i int) error {
	if m.Backend == "" || m.Variant == "" || m.Nemesis == "" || m.Caught == "" || m.Source == "" {
		return fmt.Errorf("mutant %d: backend, variant, nemesis, caught and source are required", i+1)
	}
	if m.Variant == config.Correct {
		return fmt.Errorf("mutant %d: the correct client is every mutant's control, not a mutant", i+1)
	}
	for _, d := range []string{m.TTL, m.OpTimeout, m.TimeLimit, m.NemesisInterval} {
		if _, err := time.ParseDuration(d); d != "" && err != nil {
			return fmt.Errorf("mutant %d: %w", i+1, err)
		}
	}
	return nil
}

// MutantCells are the preset's cells: each variant, then its control.
func (e *Expectations) MutantCells() []Cell {
	var cells []Cell
	for i := range e.Mutants {
		m := &e.Mutants[i]
		fence := m.Fence
		if fence == "" {
			fence = string(store.FenceNone)
		}
		for _, v := range []string{m.Variant, config.Correct} {
			cells = append(cells, Cell{Backend: m.Backend, Workload: config.Workloads[0], Nemesis: m.Nemesis, Fence: fence,
				Store: config.DefaultStore, Mutant: m, Variant: v})
		}
	}
	return cells
}

// Mutants are the preset's cells, each checked as `run` would check it:
// an entry that names a variant, fault or failpoint this build lacks is
// refused, not left out.
func Mutants(e *Expectations, base config.Config) ([]Cell, error) {
	cells := e.MutantCells()
	if len(cells) == 0 {
		return nil, fmt.Errorf("the expectations list no mutants")
	}
	for _, c := range cells {
		cfg := c.config(base)
		if err := runner.Validate(&cfg); err != nil {
			return nil, fmt.Errorf("mutant %s: %w", c.Name(), err)
		}
	}
	return cells, nil
}

// mutantExpectation is what a mutant cell must give: the variant caught by
// its checker in every run, the control valid in every run.
func mutantExpectation(c Cell) (string, string) {
	m := c.Mutant
	if c.Variant == config.Correct {
		return ExpectValid, fmt.Sprintf("the correct client, with --check-lease, under the conditions that expose %s", m.Variant)
	}
	return ExpectInvalid, fmt.Sprintf("%s must be caught by the %s checker in every run (%s)", m.Variant, m.Caught, m.Source)
}

// judgeMutant: a variant is caught by a run whose named checker judged it
// invalid, and survives every other run; a control must be valid in every
// run, weak evidence or not (a correct client opens no window to see).
func (cr *CellResult) judgeMutant() {
	var caught, invalid, unknown int
	for _, r := range cr.Runs {
		switch {
		case slices.Contains(r.Invalid, cr.Cell.Mutant.Caught):
			caught++
			invalid++
		case r.Verdict == checkers.Invalid:
			invalid++
		case r.Verdict != checkers.Valid:
			unknown++
		}
	}
	n := len(cr.Runs)
	if n > 0 {
		cr.DetectionRate = float64(caught) / float64(n)
	}
	control := cr.Cell.Variant == config.Correct
	switch {
	case n == 0:
		cr.Outcome = Undecided
	case control && invalid > 0, !control && caught < n && unknown == 0:
		cr.Outcome = Contradicted
	case control && unknown == 0, !control && caught == n:
		cr.Outcome = Met
	default:
		cr.Outcome = Undecided
	}
}

// mutationTable is matrix.md's table of the mutants preset: per variant,
// the runs that caught it, the median time to its first detection, and its
// control's verdicts.
func mutationTable(b *strings.Builder, cells []CellResult) {
	// Keyed by value: a merged matrix reads its cells back from JSON.
	controls := map[Mutant]CellResult{}
	for _, c := range cells {
		if c.Cell.Mutant != nil && c.Cell.Variant == config.Correct {
			controls[*c.Cell.Mutant] = c
		}
	}
	var killed, variants, caughtRuns, runs int
	var rows strings.Builder
	for _, c := range cells {
		m := c.Cell.Mutant
		if m == nil || c.Cell.Variant == config.Correct {
			continue
		}
		variants++
		caught := 0
		var first []float64
		for _, r := range c.Runs {
			if slices.Contains(r.Invalid, m.Caught) {
				caught++
				if r.FirstAnomaly != nil {
					first = append(first, *r.FirstAnomaly)
				}
			}
		}
		runs += len(c.Runs)
		caughtRuns += caught
		if caught == len(c.Runs) && caught > 0 {
			killed++
		}
		median := "—"
		if len(first) > 0 {
			sort.Float64s(first)
			median = fmt.Sprintf("%.1f s", first[len(first)/2])
			if len(first)%2 == 0 {
				median = fmt.Sprintf("%.1f s", (first[len(first)/2-1]+first[len(first)/2])/2)
			}
		}
		var verdicts []string
		for _, r := range controls[*m].Runs {
			verdicts = append(verdicts, string(r.Verdict))
		}
		fmt.Fprintf(&rows, "| %s | %s | %s | %s | %d / %d | %s | %s |\n", m.Backend, m.Variant, m.exposure(), m.Caught,
			caught, len(c.Runs), median, strings.Join(verdicts, " "))
	}
	if variants == 0 {
		return
	}
	fmt.Fprintf(b, "## Mutation score\n\n%d of %d variants caught in every run; %d of %d variant runs caught.\n\n", killed, variants, caughtRuns, runs)
	b.WriteString("| backend | variant | fault | checker | runs caught / runs | median time to first detection | control's verdicts |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	b.WriteString(rows.String())
	b.WriteString("\n")
}
