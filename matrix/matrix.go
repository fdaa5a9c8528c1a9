package matrix

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/store"
)

// Cell is one combination of the grid, or one client of the mutants
// preset (a known-broken variant or the correct client as its control,
// under the fault that exposes the variant).
type Cell struct {
	Backend  string `json:"backend"`
	Workload string `json:"workload"`
	Nemesis  string `json:"nemesis"`
	Fence    string `json:"fence"`
	Store    string `json:"store"`
	// Mutant is set on the cells of the mutants preset.
	Mutant *Mutant `json:"mutant,omitempty"`
	// Variant is the client this cell runs: Mutant's variant, or the
	// correct client as its control.
	Variant string `json:"variant,omitempty"`
}

// Name is how matrix.md and JUnit name the cell.
func (c Cell) Name() string {
	if c.Mutant != nil {
		return fmt.Sprintf("%s/%s/%s", c.Backend, c.Variant, c.Mutant.exposure())
	}
	if c.Store != config.DefaultStore {
		return fmt.Sprintf("%s/%s/%s/store-%s", c.Backend, c.Workload, c.Nemesis, c.Store)
	}
	return fmt.Sprintf("%s/%s/%s/fence-%s", c.Backend, c.Workload, c.Nemesis, c.Fence)
}

// Axes are the values a grid spans.
type Axes struct {
	Backends, Workloads, Nemeses, Fences, Stores []string
}

// Skipped is a combination the grid leaves out, and why.
type Skipped struct {
	Cell   Cell   `json:"cell"`
	Reason string `json:"reason"`
}

// Grid expands the axes into cells, leaving out the combinations `run`
// refuses (a fence for a lock without tokens, --store etcd without etcd, a
// fault with nothing to act on), for the reason it gives.
// base supplies everything else a run needs.
func Grid(a Axes, base config.Config) ([]Cell, []Skipped) {
	var cells []Cell
	var skipped []Skipped
	for _, b := range a.Backends {
		for _, w := range a.Workloads {
			for _, n := range a.Nemeses {
				for _, st := range a.Stores {
					for _, f := range a.Fences {
						c := Cell{Backend: b, Workload: w, Nemesis: n, Fence: f, Store: st}
						cfg := c.config(base)
						if err := runner.Validate(&cfg); err != nil {
							skipped = append(skipped, Skipped{Cell: c, Reason: strings.TrimPrefix(err.Error(), config.ErrUsage.Error()+": ")})
							continue
						}
						cells = append(cells, c)
					}
				}
			}
		}
	}
	return cells, skipped
}

func (c Cell) config(base config.Config) config.Config {
	cfg := base
	cfg.Backend, cfg.Workload, cfg.Nemesis = c.Backend, c.Workload, []string{c.Nemesis}
	cfg.Fence, cfg.Store = store.Fence(c.Fence), c.Store
	if c.Mutant != nil {
		c.Mutant.apply(&cfg)
		cfg.Variant = c.Variant
	}
	return cfg
}

// RunResult is one run of a cell.
type RunResult struct {
	Verdict checkers.Verdict `json:"verdict"`
	Dir     string           `json:"dir"`
	Seed    int64            `json:"seed"`
	// FirstAnomaly is when the first anomaly happened, in seconds since
	// the run began; absent when there was none.
	FirstAnomaly *float64 `json:"first_anomaly_s,omitempty"`
	// CyclesPerSec is 0 for a run Stopped at its first anomaly, whose
	// cycles over a cut-short run measure nothing comparable.
	CyclesPerSec float64 `json:"cycles_per_s"`
	// Stopped is set when --stop-at-first-anomaly ended the run early.
	Stopped bool   `json:"stopped_at_first_anomaly,omitempty"`
	Error   string `json:"error,omitempty"`
	// Evidence is checkers.WeakEvidence for a valid run whose faults never
	// put a holder past its lease.
	Evidence string `json:"evidence,omitempty"`
	// Invalid are the checkers that judged the run invalid.
	Invalid []string `json:"invalid,omitempty"`
}

// Outcomes of a cell against its expectation.
const (
	Met          = "met"
	Contradicted = "contradicted"
	Undecided    = "unknown"
	// Unexercised: every run was valid, but no fault ever reached a
	// holder, so the runs could not have shown what the cell is about.
	Unexercised = "unexercised"
)

// CellResult is a cell's runs and what they say against the expectation.
type CellResult struct {
	// Index is the cell's place in the grid.
	Index         int         `json:"index"`
	Cell          Cell        `json:"cell"`
	Expect        string      `json:"expect"`
	Reason        string      `json:"reason"`
	Runs          []RunResult `json:"runs"`
	Outcome       string      `json:"outcome"`
	DetectionRate float64     `json:"detection_rate"`
	Seconds       float64     `json:"seconds"`
}

// Runner runs one test; runner.Run in production.
type Runner func(ctx context.Context, cfg config.Config, opts runner.Options) (*rundir.Results, error)

// Run runs every cell runs times, parallel cells at a time (each run on
// its own network; 1 leaves the machine's cores to one cluster), and judges
// each cell as soon as its runs are done. The results are in the order of
// cells, whatever order they finished in. Run i of the cell at place p of
// the grid has seed base.Seed + p×runs + i, whichever shard runs it.
func Run(ctx context.Context, cells []Planned, runs, parallel int, base config.Config, opts runner.Options, exp *Expectations, run Runner, log io.Writer) []CellResult {
	out := make([]CellResult, len(cells))
	ran := make([]bool, len(cells))
	lines := &lineWriter{w: log}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				o, l := opts, log
				if parallel > 1 {
					// Runs side by side print line by line, each of a
					// run's lines saying whose it is (the cell's own
					// lines start with its name already).
					l = lines.prefixed("")
					o.Out = lines.prefixed(cells[i].Cell.Name() + ": ")
				}
				out[i] = runCell(ctx, cells[i], runs, base, o, exp, run, l)
				ran[i] = true
			}
		}()
	}
feed:
	for i := range cells {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	var done []CellResult
	for i, r := range out {
		if ran[i] {
			done = append(done, r)
		}
	}
	return done
}

// runCell runs one cell's runs, one after the other, and judges it.
func runCell(ctx context.Context, p Planned, runs int, base config.Config, opts runner.Options, exp *Expectations, run Runner, log io.Writer) CellResult {
	c := p.Cell
	cr := CellResult{Index: p.Index, Cell: c}
	cr.Expect, cr.Reason = exp.For(c)
	began := time.Now()
	// A mutant's control runs its variant's seeds (MutantCells puts it
	// right after the variant): only the client may differ between them.
	place := p.Index
	if c.Mutant != nil && c.Variant == config.Correct {
		place--
	}
	for i := 0; i < runs && ctx.Err() == nil; i++ {
		cfg := c.config(base)
		cfg.Seed = base.Seed + int64(place*runs+i)
		fmt.Fprintf(log, "%s run %d/%d (seed %d)\n", c.Name(), i+1, runs, cfg.Seed)
		rep, err := run(ctx, cfg, opts)
		cr.Runs = append(cr.Runs, result(cfg, rep, err))
	}
	cr.Seconds = time.Since(began).Seconds()
	cr.judge()
	fmt.Fprintf(log, "%s: %s (expected %s)\n", c.Name(), cr.Outcome, cr.Expect)
	return cr
}

// lineWriter passes whole lines to w, one writer at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// prefixed is a writer that holds back a line until it ends, then writes
// it to w after prefix.
func (l *lineWriter) prefixed(prefix string) io.Writer {
	return &prefixWriter{to: l, prefix: prefix}
}

type prefixWriter struct {
	to      *lineWriter
	prefix  string
	pending []byte
}

// Write may be called from a run's goroutines at once.
func (p *prefixWriter) Write(b []byte) (int, error) {
	p.to.mu.Lock()
	defer p.to.mu.Unlock()
	p.pending = append(p.pending, b...)
	for {
		i := bytes.IndexByte(p.pending, '\n')
		if i < 0 {
			return len(b), nil
		}
		_, err := fmt.Fprintf(p.to.w, "%s%s", p.prefix, p.pending[:i+1])
		p.pending = p.pending[i+1:]
		if err != nil {
			return len(b), err
		}
	}
}

func result(cfg config.Config, rep *rundir.Results, err error) RunResult {
	r := RunResult{Seed: cfg.Seed, Verdict: checkers.Unknown}
	if err != nil {
		r.Error = err.Error()
	}
	if rep == nil {
		return r
	}
	r.Verdict, r.Dir, r.Evidence, r.Stopped = rep.Verdict, rep.Dir, rep.Evidence, rep.Stopped != nil
	if err != nil {
		// An interrupted or broken run judged its partial history: that
		// is no verdict on the cell.
		r.Verdict = checkers.Unknown
	}
	if n, ok := checkers.SectionsCompleted(rep.Checkers); ok && !r.Stopped {
		r.CyclesPerSec = float64(n) / cfg.TimeLimit.D().Seconds()
	}
	for _, c := range rep.Checkers {
		if c.Valid != checkers.Invalid {
			continue
		}
		r.Invalid = append(r.Invalid, c.Checker)
		for _, a := range c.Anomalies {
			t := float64(a.Time) / 1e9
			if r.FirstAnomaly == nil || t < *r.FirstAnomaly {
				r.FirstAnomaly = &t
			}
		}
	}
	return r
}

// judge decides the cell: an expected anomaly is met once any run finds it
// (a run that misses it proves nothing), an expected safe cell is
// contradicted by any invalid run.
//
// A cell whose runs were all valid but weak evidence (no fault reached a
// holder) is unexercised, whatever it expected: it neither meets nor
// contradicts anything.
func (cr *CellResult) judge() {
	if cr.Cell.Mutant != nil {
		cr.judgeMutant()
		return
	}
	var invalid, unknown, weak int
	for _, r := range cr.Runs {
		switch r.Verdict {
		case checkers.Invalid:
			invalid++
		case checkers.Valid:
			if r.Evidence == checkers.WeakEvidence {
				weak++
			}
		default:
			unknown++
		}
	}
	if len(cr.Runs) > 0 {
		cr.DetectionRate = float64(invalid) / float64(len(cr.Runs))
	}
	switch {
	case len(cr.Runs) == 0:
		cr.Outcome = Undecided
	case weak > 0 && weak == len(cr.Runs):
		cr.Outcome = Unexercised
	case cr.Expect == ExpectEither:
		cr.Outcome = Met
		if unknown == len(cr.Runs) {
			cr.Outcome = Undecided
		}
	case cr.Expect == ExpectInvalid && invalid > 0, cr.Expect == ExpectValid && invalid == 0 && unknown == 0:
		cr.Outcome = Met
	case cr.Expect == ExpectValid && invalid > 0, cr.Expect == ExpectInvalid && unknown == 0:
		cr.Outcome = Contradicted
	default:
		cr.Outcome = Undecided
	}
}

// Exit is the matrix's exit code: 1 when a cell contradicted its
// expectation, else 2 when one was undecided or unexercised, else 0.
func Exit(results []CellResult) int {
	code := 0
	for _, r := range results {
		switch r.Outcome {
		case Contradicted:
			return 1
		case Undecided, Unexercised:
			code = 2
		}
	}
	return code
}

// relDir is a run's directory relative to the matrix files, for links.
func relDir(base, dir string) string {
	if rel, err := filepath.Rel(base, dir); err == nil {
		return rel
	}
	return dir
}
