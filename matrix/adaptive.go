package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
)

// FlagsOf is the digest of everything a cell's runs are configured with
// but their seed: the grid's shared flags and the cell's own axes. Runs
// of a cell pool across invocations and machines only when it matches,
// so a measurement at another time limit, TTL or rate of faults never
// decides this one.
func FlagsOf(c Cell, base config.Config) string {
	cfg := c.config(base)
	cfg.Seed = 0
	return digest(cfg)
}

// record is the cell as its runs' test.json keeps it.
func (c Cell) record(flags string) *rundir.Cell {
	spec, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("matrix: encode cell: %v", err)) // a Cell is plain data
	}
	return &rundir.Cell{Name: c.Name(), Flags: flags, Spec: spec}
}

// Until runs each cell until its runs decide its class (matrix
// --until-decided).
type Until struct {
	Rule StopRule
	// Prior are the cell's runs that earlier invocations measured, one
	// per seed, and how many stored runs were judged by no compatible
	// revision (catalog.CellRuns).
	Prior func(cell, flags string) (runs []catalog.CellRun, stale int, err error)
}

// RunUntilDecided runs every cell, parallel at a time, until its class is
// decided (Until.Rule), going on from the runs Until.Prior gives: run i of
// a cell has seed SeedOf + i, and a later invocation takes the cell's next
// seed not yet run. A run that was interrupted counts for nothing, and
// its seed is run again next time.
func RunUntilDecided(ctx context.Context, cells []Planned, parallel int, base config.Config, opts runner.Options, exp *Expectations, u Until, run Runner, log io.Writer) []CellResult {
	return runAll(ctx, cells, parallel, opts, log, func(ctx context.Context, p Planned, o runner.Options, l io.Writer) CellResult {
		return decideCell(ctx, p, base, o, exp, u, run, l)
	})
}

func decideCell(ctx context.Context, p Planned, base config.Config, opts runner.Options, exp *Expectations, u Until, run Runner, log io.Writer) CellResult {
	c := p.Cell
	cr := CellResult{Index: p.Index, Cell: c}
	cr.Expect, cr.Reason = exp.For(c)
	// A finding is an invalid run where the literature's rule expects
	// none: the rule decides it, not an earlier measurement.
	ruled, _ := exp.RuleFor(c)
	flags := FlagsOf(c, base)
	prior, stale, err := u.Prior(c.Name(), flags)
	if err != nil {
		cr.Outcome, cr.Error = Undecided, err.Error()
		fmt.Fprintf(log, "%s: %v\n", c.Name(), err)
		return cr
	}
	if stale > 0 {
		fmt.Fprintf(log, "%s: %d stored run(s) were judged by no revision compatible with this one: they count once `lockbench check` judges them again\n", c.Name(), stale)
	}
	used := map[int64]bool{}
	for _, r := range prior {
		used[r.Seed] = true
		cr.Prior = cr.Prior.Add(tallyOf(r.Verdict, ""))
	}
	t := cr.Prior
	first := SeedOf(base.Seed, c)
	var next int64
	for ctx.Err() == nil {
		if d := u.Rule.Decide(t, ruled); d.Decided() {
			break
		}
		for used[first+next] {
			next++
		}
		cfg := c.config(base)
		cfg.Seed = first + next
		used[cfg.Seed] = true
		o := opts
		o.Cell = c.record(flags)
		fmt.Fprintf(log, "%s run %d (seed %d): %s\n", c.Name(), t.Runs()+1, cfg.Seed, u.Rule.Decide(t, ruled))
		rep, err := run(ctx, cfg, o)
		r := result(cfg, rep, err)
		cr.Runs = append(cr.Runs, r)
		logRunError(log, c, err)
		if errors.Is(err, runner.ErrInterrupted) || ctx.Err() != nil {
			break
		}
		t = t.Add(tallyOf(r.Verdict, r.Evidence))
	}
	d := u.Rule.Decide(t, ruled)
	cr.Decision = &d
	if t.Judged > 0 {
		cr.DetectionRate = float64(t.Invalid) / float64(t.Judged)
	}
	switch {
	case d.Class == ClassOpen:
		cr.Outcome = Undecided
	case d.Class == ClassFinding:
		cr.Outcome = Contradicted
	case d.Class == ClassValid && t.Weak == t.Judged:
		cr.Outcome = Unexercised
	default:
		cr.Outcome = Met
	}
	fmt.Fprintf(log, "%s: %s\n", c.Name(), d)
	return cr
}

// logRunError says why a run has no verdict, where the run's own lines
// (its results directory, its faults) cannot: a teardown that failed
// after the history was written leaves no report to read it in.
func logRunError(log io.Writer, c Cell, err error) {
	if err != nil {
		fmt.Fprintf(log, "%s: the run ended without a verdict: %v\n", c.Name(), err)
	}
}

// tallyOf is one run's tally.
func tallyOf(v checkers.Verdict, evidence string) Tally {
	switch v {
	case checkers.Invalid:
		return Tally{Invalid: 1, Judged: 1}
	case checkers.Valid:
		t := Tally{Judged: 1}
		if evidence == checkers.WeakEvidence {
			t.Weak = 1
		}
		return t
	}
	return Tally{Errors: 1}
}
