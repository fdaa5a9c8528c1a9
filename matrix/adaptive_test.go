package matrix

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
)

// fakeCatalog stands in for the catalog: the runs recorded, by cell and flags.
type fakeCatalog struct {
	mu   sync.Mutex
	runs map[string][]catalog.CellRun
	// calls counts the runs started, interruptAt the call that is cut short.
	calls, interruptAt int
	cancel             context.CancelFunc
}

func (s *fakeCatalog) prior(cell, flags string) ([]catalog.CellRun, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.runs[cell+"\x00"+flags]), 0, nil
}

// run gives a verdict that is a function of the seed alone: the cell
// whose backend is nolock is invalid in 9 of 10 seeds, the others valid.
func (s *fakeCatalog) run(_ context.Context, cfg config.Config, o runner.Options) (*rundir.Results, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	v := checkers.Valid
	if cfg.Backend == "nolock" && cfg.Seed%10 != 0 {
		v = checkers.Invalid
	}
	rep := &rundir.Results{Verdict: v}
	if s.calls == s.interruptAt {
		s.cancel()
		return rep, runner.ErrInterrupted
	}
	k := o.Cell.Name + "\x00" + o.Cell.Flags
	s.runs[k] = append(s.runs[k], catalog.CellRun{Seed: cfg.Seed, Verdict: v, Start: time.Unix(int64(s.calls), 0)})
	return rep, nil
}

// A measurement interrupted and resumed ends with the seeds, the run
// count and the decisions of one that was not, and an interrupted run
// counts for nothing: its seed is run again.
func TestUntilDecidedResumes(t *testing.T) {
	exp, err := LoadExpectations("")
	if err != nil {
		t.Fatal(err)
	}
	cells, _ := Grid(Axes{Backends: []string{"cas", "nolock"}, Workloads: []string{"counter"}, Nemeses: []string{"none"},
		Fences: []string{"none"}, Stores: []string{"lockbench"}}, shardBase, nil)
	if len(cells) != 2 {
		t.Fatalf("%d cells", len(cells))
	}
	rule := StopRule{MinRuns: 4, MaxRuns: 6, MaxCIRuns: 3, Flake: 0.01}
	whole := &fakeCatalog{runs: map[string][]catalog.CellRun{}}
	u := Until{Rule: rule, Prior: whole.prior}
	one := RunUntilDecided(context.Background(), Plan(cells), 1, shardBase, runner.Options{Out: io.Discard}, exp, u, whole.run, io.Discard)

	for _, cut := range []int{1, 3, 5, 7} {
		split := &fakeCatalog{runs: map[string][]catalog.CellRun{}, interruptAt: cut}
		ctx, cancel := context.WithCancel(context.Background())
		split.cancel = cancel
		u := Until{Rule: rule, Prior: split.prior}
		first := RunUntilDecided(ctx, Plan(cells), 1, shardBase, runner.Options{Out: io.Discard}, exp, u, split.run, io.Discard)
		cancel()
		if len(first) == len(cells) && first[len(first)-1].Outcome != Undecided {
			t.Errorf("cut at run %d: the first invocation decided every cell", cut)
		}
		split.interruptAt = 0
		again := RunUntilDecided(context.Background(), Plan(cells), 1, shardBase, runner.Options{Out: io.Discard}, exp, u, split.run, io.Discard)
		for i, c := range cells {
			k := c.Name() + "\x00" + FlagsOf(c, shardBase)
			var a, b []int64
			for _, r := range whole.runs[k] {
				a = append(a, r.Seed)
			}
			for _, r := range split.runs[k] {
				b = append(b, r.Seed)
			}
			if !slices.Equal(a, b) {
				t.Errorf("cut at run %d, %s: seeds %v, uninterrupted %v", cut, c.Name(), b, a)
			}
			if *again[i].Decision != *one[i].Decision {
				t.Errorf("cut at run %d, %s: %s, uninterrupted %s", cut, c.Name(), again[i].Decision, one[i].Decision)
			}
		}
	}
	// What the rule decides of these cells: cas valid in 4, nolock invalid
	// (its seeds ending in 0 are valid) or either at 6.
	for _, r := range one {
		if r.Decision == nil || !r.Decision.Decided() {
			t.Errorf("%s undecided: %+v", r.Cell.Name(), r.Decision)
		}
	}
	if d := one[0].Decision; d.Class != ClassValid || d.Tally.Judged != 4 {
		t.Errorf("cas: %s, want valid in 4", d)
	}
	// A third invocation has nothing left to run.
	calls := whole.calls
	RunUntilDecided(context.Background(), Plan(cells), 1, shardBase, runner.Options{Out: io.Discard}, exp, u, whole.run, io.Discard)
	if whole.calls != calls {
		t.Errorf("a decided grid ran %d more runs", whole.calls-calls)
	}
}

// A finding: an invalid run in a cell whose rule expects valid ends the
// cell at once and fails the matrix.
func TestUntilDecidedFinding(t *testing.T) {
	exp, err := LoadExpectations("")
	if err != nil {
		t.Fatal(err)
	}
	cells, _ := Grid(Axes{Backends: []string{"cas"}, Workloads: []string{"counter"}, Nemeses: []string{"none"},
		Fences: []string{"none"}, Stores: []string{"lockbench"}}, shardBase, nil)
	if want, _ := exp.RuleFor(cells[0]); want != ExpectValid {
		t.Fatalf("the cas cell expects %s", want)
	}
	n := 0
	bad := func(_ context.Context, cfg config.Config, o runner.Options) (*rundir.Results, error) {
		n++
		v := checkers.Valid
		if n == 3 {
			v = checkers.Invalid
		}
		return &rundir.Results{Verdict: v}, nil
	}
	u := Until{Rule: DefaultStopRule, Prior: func(string, string) ([]catalog.CellRun, int, error) { return nil, 0, nil }}
	rs := RunUntilDecided(context.Background(), Plan(cells), 1, shardBase, runner.Options{Out: io.Discard}, exp, u, bad, io.Discard)
	if rs[0].Decision.Class != ClassFinding || len(rs[0].Runs) != 3 || Exit(rs) != 1 {
		t.Errorf("%s after %d runs, exit %d: want a finding after 3, exit 1", rs[0].Decision, len(rs[0].Runs), Exit(rs))
	}
}
