package matrix

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/store"
)

// mutantBase is what `make mutants` gives every mutant that leaves a flag
// out.
func mutantBase() config.Config {
	return config.Config{Concurrency: 3, TTL: config.Duration(time.Second), TimeLimit: config.Duration(10 * time.Second),
		NemesisInterval: config.Duration(3 * time.Second), FaultDuration: config.Duration(2 * time.Second), Seed: 1500,
		Work: "uniform:0-200ms", OpTimeout: config.Duration(time.Second), CheckTimeout: config.Duration(time.Minute), Nodes: 5}
}

// Every mutant of the built-in expectations names a variant of its
// backend, a fault and failpoint that can strike it, and a checker that
// exists; its cells run it and the correct client under the same
// configuration, both with --check-lease.
func TestBuiltInMutants(t *testing.T) {
	exp, err := LoadExpectations("")
	if err != nil {
		t.Fatal(err)
	}
	cells, err := Mutants(exp, mutantBase())
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2*len(exp.Mutants) {
		t.Fatalf("%d cells for %d mutants", len(cells), len(exp.Mutants))
	}
	var names []string
	for _, c := range checkers.All(0) {
		names = append(names, c.Name())
	}
	for i := 0; i < len(cells); i += 2 {
		v, ctl := cells[i], cells[i+1]
		m := v.Mutant
		if !slices.Contains(names, m.Caught) {
			t.Errorf("%s: caught by %q, which is no checker", m.Variant, m.Caught)
		}
		if v.Variant != m.Variant || ctl.Variant != config.Correct || ctl.Mutant != m {
			t.Errorf("cells %s and %s are not a variant and its control", v.Name(), ctl.Name())
		}
		a, b := v.config(mutantBase()), ctl.config(mutantBase())
		if !a.CheckLease || !b.CheckLease {
			t.Errorf("%s: runs without --check-lease", v.Name())
		}
		a.Variant = b.Variant
		if a.TestName() != b.TestName() || a.Work != b.Work || a.Failpoint != b.Failpoint || a.TTL != b.TTL || a.Fence != b.Fence {
			t.Errorf("%s and its control differ in more than the variant: %+v vs %+v", v.Name(), a, b)
		}
		if want, _ := exp.For(v); want != ExpectInvalid {
			t.Errorf("%s expects %s", v.Name(), want)
		}
		if want, _ := exp.For(ctl); want != ExpectValid {
			t.Errorf("%s expects %s", ctl.Name(), want)
		}
	}
}

// A mutant whose variant this build lacks is refused, not left out.
func TestMutantsRefuseUnknownVariants(t *testing.T) {
	exp := &Expectations{Mutants: []Mutant{{Backend: "redis", Variant: "shared-key", Nemesis: "pause", Caught: "fence", Source: "x"}}}
	if _, err := Mutants(exp, mutantBase()); err == nil || !strings.Contains(err.Error(), "no client variant") {
		t.Errorf("got %v, want the variant refused", err)
	}
	bad := Mutant{Backend: "redis", Variant: "correct", Nemesis: "pause", Caught: "fence", Source: "x"}
	if err := bad.check(0); err == nil {
		t.Error("the correct client accepted as a mutant")
	}
}

// mutantRun stands in for runner.Run: the variant is caught in the runs
// listed (by their number, from the seed of the first, first), the control
// invalid in those listed.
func mutantRun(first int64, caughtRuns, badControl map[int64]bool, caught string) Runner {
	return func(_ context.Context, cfg config.Config, _ runner.Options) (*rundir.Results, error) {
		rep := &rundir.Results{Verdict: checkers.Valid, Checkers: []checkers.Result{{Checker: "progress", Valid: checkers.Valid}}}
		variant, i := cfg.Variant != config.Correct, cfg.Seed-first
		if variant && caughtRuns[i] || !variant && badControl[i] {
			rep.Verdict = checkers.Invalid
			rep.Checkers = append(rep.Checkers, checkers.Result{Checker: caught, Valid: checkers.Invalid,
				Anomalies: []checkers.Anomaly{{Time: (i + 1) * 1e9}}})
		}
		return rep, nil
	}
}

func TestMutantScore(t *testing.T) {
	m := &Mutant{Backend: "redis", Variant: "no-renew", Nemesis: string(config.NoFault), Caught: "fence", Source: "x"}
	cells := []Cell{
		{Backend: "redis", Workload: "counter", Nemesis: "none", Fence: string(store.FenceNone), Store: "lockbench", Mutant: m, Variant: m.Variant},
		{Backend: "redis", Workload: "counter", Nemesis: "none", Fence: string(store.FenceNone), Store: "lockbench", Mutant: m, Variant: config.Correct},
	}
	exp := &Expectations{}
	base := mutantBase()
	// The variant's runs are 0..4, and its control's the same seeds.
	first := SeedOf(base.Seed, cells[0])
	if SeedOf(base.Seed, cells[1]) != first {
		t.Fatal("the control does not run its variant's seeds")
	}
	for _, c := range []struct {
		name        string
		caught, bad map[int64]bool
		variant     string
		control     string
		exit        int
		table       string
	}{
		{"caught every time", map[int64]bool{0: true, 1: true, 2: true, 3: true, 4: true}, nil, Met, Met, 0,
			"| redis | no-renew | none | fence | 5 / 5 | 3.0 s | valid valid valid valid valid |"},
		{"survives a run", map[int64]bool{0: true, 1: true, 3: true, 4: true}, nil, Contradicted, Met, 1,
			"| redis | no-renew | none | fence | 4 / 5 | 3.0 s |"},
		{"control invalid", map[int64]bool{0: true, 1: true, 2: true, 3: true, 4: true}, map[int64]bool{2: true}, Met, Contradicted, 1,
			"valid valid invalid valid valid |"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := Run(context.Background(), Plan(cells), 5, 1, base, runner.Options{}, exp, mutantRun(first, c.caught, c.bad, m.Caught), new(strings.Builder))
			if rs[0].Outcome != c.variant || rs[1].Outcome != c.control || Exit(rs) != c.exit {
				t.Errorf("outcomes %s, %s, exit %d; want %s, %s, exit %d", rs[0].Outcome, rs[1].Outcome, Exit(rs), c.variant, c.control, c.exit)
			}
			md := Markdown(t.TempDir(), Summary{Runs: 5, Cells: rs})
			if !strings.Contains(md, c.table) || !strings.Contains(md, "## Mutation score") {
				t.Errorf("matrix.md lacks %q:\n%s", c.table, md)
			}
		})
	}
}

// A run of the variant that another checker, not the one named, judged
// invalid did not catch the mutant it is about.
func TestMutantCaughtByTheNamedChecker(t *testing.T) {
	cr := CellResult{Cell: Cell{Mutant: &Mutant{Caught: "progress"}, Variant: "setnx-expire"},
		Runs: []RunResult{{Verdict: checkers.Invalid, Invalid: []string{"fence"}}}}
	cr.judge()
	if cr.Outcome != Contradicted || cr.DetectionRate != 0 {
		t.Errorf("outcome %s, rate %.1f: want the mutant to survive", cr.Outcome, cr.DetectionRate)
	}
}
